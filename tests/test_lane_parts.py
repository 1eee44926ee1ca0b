"""The wiki cut into lanes (lint/lane_parts.py): a whole-wiki run after an edit in one lane
runs the ``by_lane`` rules on that lane alone, takes the other lanes' findings from the cache,
and finds exactly what a run without the cache finds, also where a lane rule reads something
of the other lanes (EXP013's log-split date, RUN001's retrospectives filed in another folder)."""

from __future__ import annotations

import os
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.rules_wiki import LANE, MODEL_DIR, OTHER_LANE, experiment_page, write
from wikiengine.lint import lint
from wikiengine.lint.cache import LintCache
from wikiengine.lint.config import LintConfig
from wikiengine.lint.context import LintContext
from wikiengine.lint.lane_parts import REST, lane_spans, part_of, parts
from wikiengine.lint.registry import selected_rules


def _rows(result) -> list[tuple]:
    return [(f.path, f.line, f.code, f.message) for f in result.findings]


def _lint_both(root: Path, config: LintConfig | None = None):
    """A cached whole run and an uncached one; the cached one's result."""
    cached = lint(root, config=config, base=None)
    assert _rows(cached) == _rows(lint(root, config=config, base=None, use_cache=False))
    return cached


def _log(*headings: str) -> str:
    return "# log\n\n" + "".join(f"## {h}\n\nbody\n\n" for h in headings)


def test_lane_spans_cut_the_sorted_paths_at_lane_folders():
    files = sorted([
        "wiki/experiments/program.md",
        "wiki/experiments/m_autoresearch_optimization/program.md",
        "wiki/experiments/m_autoresearch_optimization/jax-b/x.md",
        "wiki/experiments/m_autoresearch_optimization/jax.old/y.md",
        "wiki/experiments/m_autoresearch_optimization/jax/a.md",
        "wiki/experiments/m_autoresearch_optimization/jax/experiments/b.md",
        "wiki/experiments/m_autoresearch_optimization/jax0/c.md",
        "wiki/experimentsX/q.md",
        "wiki/index.md",
        "wiki/models/m-jax.md",
    ])
    spans = {folder: files[start:end] for folder, start, end in lane_spans(files)}
    lanes = "wiki/experiments/m_autoresearch_optimization/"
    assert spans == {
        lanes + "jax-b/": [lanes + "jax-b/x.md"],
        lanes + "jax.old/": [lanes + "jax.old/y.md"],
        lanes + "jax/": [lanes + "jax/a.md", lanes + "jax/experiments/b.md"],
        lanes + "jax0/": [lanes + "jax0/c.md"],
    }
    assert {rel: part_of(rel) for rel in files} == {
        **{rel: REST for rel in files}, **{rel: folder for folder, members in spans.items() for rel in members}}
    rest = [part for part in parts(files, ["0" * 32] * len(files)) if part.name == REST][0]
    assert rest.files == ["wiki/experiments/m_autoresearch_optimization/program.md", "wiki/experiments/program.md",
                          "wiki/experimentsX/q.md", "wiki/index.md", "wiki/models/m-jax.md"]


_NAMES = st.sampled_from(["a", "b", "a-b", "a.b", "a0", "A", "experiments", "wiki", "x.md", "y.md"])
_PATHS = st.lists(st.lists(_NAMES, min_size=1, max_size=5).map(lambda names: "wiki/experiments/" + "/".join(names)),
                  max_size=30, unique=True)


@settings(max_examples=150, deadline=None)
@given(_PATHS, st.data())
def test_each_file_is_in_one_part_and_an_edit_moves_only_its_parts_key(paths, data):
    files = sorted(paths + ["wiki/index.md"])
    shas = [f"{i:032x}" for i in range(len(files))]
    cut = parts(files, shas)
    assert sorted(rel for part in cut for rel in part.files) == files
    for part in cut:
        for rel in part.files:
            pieces = rel.split("/")
            in_lane = len(pieces) >= 5 and rel.startswith("wiki/experiments/")
            assert part.name == ("/".join(pieces[:4]) + "/" if in_lane else REST)
    edited = data.draw(st.sampled_from(files))
    after = parts(files, [("f" * 32 if rel == edited else sha) for rel, sha in zip(files, shas)])
    moved = {part.name for part, again in zip(cut, after) if part.key != again.key}
    home = next(part.name for part in cut if edited in part.files)
    assert moved == ({part.name for part in cut} if home == REST else {home})


def _two_lanes(root: Path) -> Path:
    """Two lanes, each with a pair of pages that share an id (EXP008), committed to nothing."""
    return write(root, {
        f"{LANE}/experiments/2026-06-02-v042-splash.md": experiment_page(),
        f"{LANE}/experiments/2026-06-03-v042-remat.md": experiment_page(created="2026-06-03"),
        f"{OTHER_LANE}/experiments/2026-06-02-v007-scan.md": experiment_page(),
        "wiki/index.md": "# index\n",
    })


def _users(result) -> int:
    """How many rules or memos went through the lanes in this run."""
    return (result.stats.get("lane_parts_run", 0) + result.stats.get("lane_parts_reused", 0)) // 3  # 2 lanes + the rest


def test_an_edit_in_one_lane_judges_that_lane_alone(tmp_path):
    root = _two_lanes(tmp_path)
    first = _lint_both(root)
    assert [f.path for f in first.findings if f.code == "EXP008"] == [f"{LANE}/experiments/2026-06-03-v042-remat.md"]
    (root / f"{OTHER_LANE}/experiments/2026-06-09-v007-again.md").write_text(experiment_page(created="2026-06-09"))
    edited = _lint_both(root)
    assert {f.path for f in edited.findings if f.code == "EXP008"} == {
        f"{LANE}/experiments/2026-06-03-v042-remat.md", f"{OTHER_LANE}/experiments/2026-06-09-v007-again.md"}
    by_lane = [rule.code for rule in selected_rules(LintConfig()) if rule.by_lane]
    assert _users(edited) >= len(by_lane) > 0
    assert edited.stats["lane_parts_run"] == _users(edited)  # one part each: the edited lane


def test_an_edit_outside_the_lanes_judges_every_lane_again(tmp_path):
    root = _two_lanes(tmp_path)
    _lint_both(root)
    (root / "wiki/index.md").write_text("# index\n\nEdited.\n")
    edited = _lint_both(root)
    assert edited.stats["lane_parts_run"] == 3 * _users(edited) and "lane_parts_reused" not in edited.stats


def test_a_new_lane_judges_every_lane_again(tmp_path):
    root = _two_lanes(tmp_path)
    _lint_both(root)
    write(root, {f"{MODEL_DIR}/maxtext/experiments/2026-06-02-v001-base.md": experiment_page()})
    edited = lint(root, base=None)
    assert _rows(edited) == _rows(lint(root, base=None, use_cache=False))
    assert edited.stats["lane_parts_run"] > 0 and "lane_parts_reused" not in edited.stats


def test_the_log_split_read_from_another_lane_keys_exp013(tmp_path):
    """EXP013 takes a verdict as logged when the global log names it before the log split, the
    oldest entry of any lane log: an older entry in another lane's log moves the split, and the
    page's finding with it, while nothing of the page's own lane changed."""
    page = f"{LANE}/experiments/2026-06-02-v042-splash.md"
    root = write(tmp_path, {
        page: experiment_page(),
        f"{LANE}/log.md": _log("[2026-06-10] loop-iteration | v050-other on 2B/v5p-16: refuted"),
        f"{OTHER_LANE}/log.md": _log("[2026-06-20] start | session"),
        "wiki/log.md": _log("[2026-06-05] loop-iteration | v042-splash on 2B/v5p-16: supported"),
    })
    config = LintConfig(select=["EXP013"])
    assert _lint_both(root, config).findings == []
    (root / f"{OTHER_LANE}/log.md").write_text(_log("[2026-06-20] start | session", "[2026-06-01] start | session"))
    assert [f.path for f in _lint_both(root, config).findings] == [page]


def test_a_retrospective_in_another_folder_of_the_same_model_keys_run001(tmp_path):
    """RUN001 counts a retrospective of the lane's model and lane wherever it is filed: one under
    another model folder of the same model name (``Gemma4_...``) answers this lane's stop."""
    log, elsewhere = f"{LANE}/log.md", "wiki/experiments/Gemma4_autoresearch_optimization/tpu/retrospectives"
    retro = "---\ncreated: {day}\n---\n# retrospective\n"
    root = write(tmp_path, {log: _log("[2026-06-08] stop | frontier flat", "[2026-06-01] start | session"),
                            f"{elsewhere}/2026-05-01-retro.md": retro.format(day="2026-05-01")})  # an earlier session's
    config = LintConfig(select=["RUN001"])
    assert [f.path for f in _lint_both(root, config).findings] == [log]
    write(root, {f"{elsewhere}/2026-06-08-retro.md": retro.format(day="2026-06-08")})
    assert _lint_both(root, config).findings == []


def test_a_lanes_page_facts_are_read_from_that_lanes_table_alone(tmp_path):
    """Page facts asked of the whole wiki are tabled lane by lane: a later run that asks of one
    lane reads that lane's table, not the others', and computes nothing again."""
    root = _two_lanes(tmp_path)
    files = sorted(p.relative_to(root).as_posix() for p in (root / "wiki").rglob("*.md"))
    for path in (root / "wiki").rglob("*.md"):  # settled: out of the racy window, so tabled by their stat
        os.utime(path, ns=(path.stat().st_mtime_ns - 10**10,) * 2)
    asked: list[str] = []

    def run(rels: list[str]) -> tuple[dict, LintCache]:
        cache = LintCache.open(root, "fingerprint")
        cache.written_ns = cache.written_ns or 1
        ctx = LintContext(root, LintConfig(), files, files, cache=cache)
        values = ctx.pages_fact(rels, "T", lambda rel: asked.append(rel) or len(rel))
        cache.save(files)
        return values, cache

    everything, _cache = run(files)
    assert sorted(asked) == files and list(everything.items()) == [(rel, len(rel)) for rel in files]
    lanes = {part_of(rel) for rel in files} - {REST}
    assert len(lanes) == 2 and len(list((root / ".wiki_cache" / "tables").iterdir())) == 3  # the two lanes, the rest
    one = sorted(lanes)[0]
    mine = [rel for rel in files if rel.startswith(one)]
    asked.clear()
    values, cache = run(mine)
    assert values == {rel: len(rel) for rel in mine} and asked == []
    assert cache.stats["tables_read"] == 1 and cache.stats["page_facts_reused"] == len(mine)


def test_the_lanes_tables_of_page_facts_are_kept_side_by_side(tmp_path):
    """MOD004 tables each lane's filings, each lane in a table of its own: after an edit outside
    the lanes, each lane's rows are still there (one lane's call must not empty the other's)."""
    model = "---\nmodel: gemma4\nlane: {lane}\nupdated: 2026-06-01\n---\n# model\n"
    root = _two_lanes(tmp_path)
    write(root, {"wiki/models/gemma4-tpu.md": model.format(lane="tpu"),
                 "wiki/models/gemma4-jax.md": model.format(lane="jax")})
    for path in (root / "wiki").rglob("*.md"):  # settled: out of the racy window, so tabled by their stat
        os.utime(path, ns=(path.stat().st_mtime_ns - 10**10,) * 2)
    config = LintConfig(select=["MOD004"])
    first = _lint_both(root, config)
    assert {f.path for f in first.findings} == {"wiki/models/gemma4-tpu.md", "wiki/models/gemma4-jax.md"}
    (root / "wiki/index.md").write_text("# index\n\nEdited.\n")
    again = _lint_both(root, config)
    # the two lanes' filings, and the lanes' latest (lane_memo)
    assert first.stats["tabled"] == 3 and again.stats["tables_read"] == 3
    assert again.stats.get("tabled", 0) == 0 and again.stats["page_facts_reused"] == 3
