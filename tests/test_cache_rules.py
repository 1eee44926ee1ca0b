"""The lint cache keeps each rule's results apart and is read lazily (issue 28).

Each test counts what a run had to do (``LintResult.stats``: files analysed in full,
files re-analysed for some rules, ``rerun:<CODE>``, cross-file rules run or reused,
pages whose links were judged again, shards read) and compares the findings with a run
that uses no cache at all: the cache may only spare work, never change an answer.
"""

from __future__ import annotations

import importlib.util
import marshal
import os
import shutil
import time
from pathlib import Path

import pytest

from tests.rule_fixtures import build, setup_of
from wikiengine.lint import lint
from wikiengine.lint.cache import CACHE_DIR, INDEX_DIR, SHARD_DIR, SHARDS, record_shard_of, shard_of
from wikiengine.lint.config import SHARED_OPTIONS, LintConfig
from wikiengine.lint.context import discover
from wikiengine.lint.registry import REGISTRY

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    """A generated wiki of 100 experiment pages, 10 of them broken (every rule family has pages)."""
    spec = importlib.util.spec_from_file_location("gen_wiki", BENCHMARKS / "gen_wiki.py")
    gen_wiki = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_wiki)
    root = tmp_path_factory.mktemp("template") / "wiki"
    gen_wiki.generate(root, 100, seed=3, broken_fraction=0.1)
    return root


@pytest.fixture
def wiki(template, tmp_path) -> Path:
    root = tmp_path / "wiki"
    shutil.copytree(template, root)
    return root


def run(root: Path, config: LintConfig | None = None, paths: list[str] | None = None, **kw):
    return lint(root, paths, config or LintConfig(), base=None, **kw)


def rendered(result) -> list[str]:
    return [f.render() for f in result.findings]


def uncached(root: Path, config: LintConfig | None = None, paths: list[str] | None = None) -> list[str]:
    return rendered(run(root, config, paths, use_cache=False))


def reruns(stats: dict) -> dict[str, int]:
    return {key.split(":", 1)[1]: value for key, value in stats.items() if key.startswith("rerun:")}


def wiki_runs(stats: dict) -> set[str]:
    return {key.split(":", 1)[1] for key in stats if key.startswith("wiki_run:")}


def experiment_pages(root: Path) -> list[str]:
    return sorted(p.relative_to(root).as_posix() for p in (root / "wiki" / "experiments").rglob("*-v*.md"))


def edit(root: Path, rel: str, text: str = "\nEdited.\n") -> None:
    path = root / rel
    path.write_text(path.read_text(encoding="utf-8") + text, encoding="utf-8")


# --- (a) a --select run keeps the other rules' entries ------------------------------------


def test_a_select_run_then_a_full_run_reuses_every_other_rules_entries(wiki):
    first = run(wiki)
    files = first.files_checked
    assert first.stats["analysed"] == files
    selected = run(wiki, LintConfig(select=["LNK", "WK"]))
    assert rendered(selected) == uncached(wiki, LintConfig(select=["LNK", "WK"]))
    assert selected.stats.get("analysed", 0) == 0 and reruns(selected.stats) == {}
    again = run(wiki)
    assert rendered(again) == rendered(first)
    # warm, not cold: no file analysed, no cross-file rule run again
    assert again.stats.get("analysed", 0) == 0 and reruns(again.stats) == {} and wiki_runs(again.stats) == set()
    assert again.stats["wiki_rules_reused"] > 20


def test_a_page_edited_under_a_select_run_is_analysed_by_the_other_rules_alone_later(wiki):
    run(wiki)
    page = experiment_pages(wiki)[0]
    edit(wiki, page, "\nSee [gone](gone-page.md).\n")
    selected = run(wiki, LintConfig(select=["LNK"]))
    assert selected.stats["analysed"] == 1
    assert rendered(selected) == uncached(wiki, LintConfig(select=["LNK"]))
    full = run(wiki)
    assert rendered(full) == uncached(wiki)
    assert full.stats.get("analysed", 0) == 0 and full.stats["reanalysed"] == 1
    assert "LNK001" not in reruns(full.stats) and set(reruns(full.stats)) >= {"EXP001", "WK001"}
    assert any(f"{page}:" in line and "LNK001" in line for line in rendered(full))


def test_a_page_first_parsed_for_a_cross_file_rule_keeps_its_suppressions_later(wiki):
    """A PATH run's cross-file rule may parse a page that is not a target (no rule ran on
    it, its suppressions were not read): the next run analyses it with every rule."""
    from wikiengine.lint import runner
    from wikiengine.lint.registry import selected_codes

    note = "wiki/notes/quiet.md"
    (wiki / "wiki" / "notes").mkdir(parents=True, exist_ok=True)
    (wiki / note).write_text("# quiet\n\n<!-- wiki-lint: disable-file LNK001 -->\n[x](gone.md)\n", encoding="utf-8")
    config = LintConfig()
    ctx = runner._open_context(wiki, [experiment_pages(wiki)[0]], config, selected_codes(config), True, None)
    assert ctx.info(note).page is not None  # parsed outside the per-file pass
    ctx.cache.save(ctx.files)
    later = run(wiki)
    assert rendered(later) == uncached(wiki)
    assert not any(line.startswith(note) for line in rendered(later))


def test_an_ignore_run_keeps_the_ignored_rules_entries(wiki):
    first = run(wiki)
    ignored = run(wiki, LintConfig(ignore=["EXP"]))
    assert rendered(ignored) == uncached(wiki, LintConfig(ignore=["EXP"]))
    assert not any(" EXP" in line for line in rendered(ignored))
    again = run(wiki)
    assert rendered(again) == rendered(first) and again.stats.get("analysed", 0) == 0 and reruns(again.stats) == {}


# --- (b) a rule's changed options recompute that rule alone --------------------------------


def test_b_a_page_rules_options_recompute_that_rule_only(wiki):
    run(wiki)
    config = LintConfig(rules={"CON002": {"titles": ["Superseded"]}, "MOD003": {"sections": ["Variants"]}})
    changed = run(wiki, config)
    assert rendered(changed) == uncached(wiki, config)
    assert reruns(changed.stats) == {"CON002": changed.files_checked, "MOD003": changed.files_checked}
    assert changed.stats.get("analysed", 0) == 0 and wiki_runs(changed.stats) == set()
    back = run(wiki)  # the old options again: recomputed once more, the rest still reused
    assert rendered(back) == uncached(wiki) and set(reruns(back.stats)) == {"CON002", "MOD003"}


def test_b_a_shared_option_recomputes_every_rule(wiki):
    run(wiki)
    config = LintConfig(rules={"EXP002": {"sections": ["Hypothesis", "Setup"]}})  # EXP004 reads it too
    changed = run(wiki, config)
    assert rendered(changed) == uncached(wiki, config)
    assert {"EXP002", "EXP004", "LNK001", "WK001"} <= set(reruns(changed.stats))


def test_b_a_cross_file_rules_options_recompute_that_rule_only(wiki):
    run(wiki)
    config = LintConfig(rules={"HYP004": {"days": 1}})
    changed = run(wiki, config)
    assert rendered(changed) == uncached(wiki, config)
    assert wiki_runs(changed.stats) == {"HYP004"} and reruns(changed.stats) == {}


def test_b_since_and_per_file_ignores_filter_without_recomputing(wiki):
    first = run(wiki)
    page = next(line.split(":", 1)[0] for line in rendered(first))
    config = LintConfig(per_file_ignores={page: ["EXP", "WK"]}, rules={"EXP001": {"since": "2000-01-01"}})
    filtered = run(wiki, config)
    assert rendered(filtered) == uncached(wiki, config)
    assert reruns(filtered.stats) == {} and wiki_runs(filtered.stats) == set()


@pytest.mark.parametrize("code", sorted(REGISTRY))
def test_b_every_option_a_rule_reads_is_its_own_or_shared(tmp_path, code, monkeypatch):
    """A rule's fingerprint holds its own options and :data:`SHARED_OPTIONS`: a rule that
    read another rule's option without it being listed would keep stale cached findings
    when that option changed. Each rule runs alone on its fixture wiki, every read recorded."""
    reads: set[tuple[str, str]] = set()
    real = LintConfig.option

    def recording(self, rule_code, name, default=None):
        reads.add((rule_code, name))
        return real(self, rule_code, name, default)

    monkeypatch.setattr(LintConfig, "option", recording)
    setup = setup_of(code)
    root = build(code, tmp_path / "wiki")
    ran = {code, *setup.get("select", [])}  # the codes a fixture runs beside its rule read their own
    lint(root, config=LintConfig(select=sorted(ran)), base=setup.get("base"), use_cache=False)
    assert reads, "the recording saw no read at all (since is read for every rule)"
    foreign = {(c, name) for c, name in reads if c not in ran and (c, name) not in SHARED_OPTIONS}
    assert foreign == set(), f"{code} reads options of other rules: add them to SHARED_OPTIONS"


# --- (c) an edit re-judges only the pages it affects --------------------------------------


def test_c_editing_one_page_rejudges_only_that_pages_links(wiki):
    first = run(wiki)
    assert first.stats["link_pages_judged"] == first.files_checked
    page = experiment_pages(wiki)[5]
    edit(wiki, page, "\nSee [nowhere](nowhere.md) and [the log](log.md).\n")
    after = run(wiki)
    assert after.stats["analysed"] == 1 and after.stats["link_pages_judged"] == 1
    assert rendered(after) == uncached(wiki)
    assert any(line.startswith(f"{page}:") and "nowhere.md" in line for line in rendered(after))


def test_c_a_link_target_that_appears_rejudges_the_pages_and_clears_the_finding(wiki):
    page = experiment_pages(wiki)[7]
    edit(wiki, page, "\nSee [later](later-note.txt).\n")
    before = run(wiki)
    assert any("LNK001 link 'later-note.txt'" in line for line in rendered(before))
    # not a page: no page changed, but a target's verdict did, so every page's links are judged again
    (wiki / page).parent.joinpath("later-note.txt").write_text("later\n", encoding="utf-8")
    after = run(wiki)
    assert not any("later-note.txt" in line for line in rendered(after))
    assert rendered(after) == uncached(wiki)
    assert after.stats.get("analysed", 0) == 0 and after.stats["link_pages_judged"] == after.files_checked


def test_c_an_unchanged_wiki_writes_no_cache(wiki):
    # pages older than the racy window (2 s before a cache write), whenever the template was made:
    # a page written within it is hashed again and its entry rewritten, by design
    old = time.time() - 60
    for path in wiki.rglob("*"):
        os.utime(path, (old, old), follow_symlinks=False)
    run(wiki)
    index = wiki / CACHE_DIR / "lint.marshal"
    stamp = index.stat().st_mtime_ns
    again = run(wiki)
    assert index.stat().st_mtime_ns == stamp and again.stats.get("link_pages_judged", 0) == 0


# --- (d) a PATH run reads only the entries it needs ---------------------------------------


def test_d_a_path_run_reads_only_the_shards_of_its_pages(wiki):
    run(wiki)
    pages = experiment_pages(wiki)[:3]
    config = LintConfig(select=["WK", "LNK"])
    result = run(wiki, config, pages)
    assert rendered(result) == uncached(wiki, config, pages)
    assert 0 < result.stats["shards_read"] <= len({record_shard_of(p) for p in pages})
    assert result.stats.get("analysed", 0) == 0


def test_d_a_lanes_pages_share_one_record_shard_and_the_other_files_are_spread_by_path():
    """A lane rule after an edit reads the edited lane's records: one shard, not every one."""
    lane = "wiki/experiments/gemma4_autoresearch_optimization/tpu/"
    pages = [lane + "2026-06-02-v042-splash.md", lane + "experiments/2026-06-03-v043-blocks.md",
             lane + "notes/deep/2026-06-04-v044-remat.md"]
    assert len({record_shard_of(rel) for rel in pages}) == 1 and record_shard_of(pages[0]) >= SHARDS
    others = [lane + "program.md", "wiki/models/gemma4-tpu.md", "wiki/experiments/program.md", "log.md"]
    assert all(record_shard_of(rel) == shard_of(rel) < SHARDS for rel in others)
    lanes = [f"wiki/experiments/m{n}_autoresearch_optimization/jax/" for n in range(200)]
    assert len({record_shard_of(folder + "x.md") for folder in lanes}) > SHARDS // 2  # spread over the 64


def test_d_a_path_run_with_every_rule_reads_a_fraction_of_the_shards(wiki):
    run(wiki)
    pages = experiment_pages(wiki)[10:15]
    result = run(wiki, paths=pages)
    assert rendered(result) == uncached(wiki, paths=pages)
    shards = len(list((wiki / CACHE_DIR / SHARD_DIR).glob("*.marshal")))
    assert result.stats.get("shards_read", 0) < shards // 2


def test_d_a_path_run_reads_the_index_shards_of_its_pages_a_warm_run_all(wiki):
    run(wiki)
    assert run(wiki).stats["index_read"] == len(list((wiki / CACHE_DIR / INDEX_DIR).glob("*.marshal")))
    pages = experiment_pages(wiki)[:3]
    config = LintConfig(select=["WK", "LNK"])
    result = run(wiki, config, pages)
    assert rendered(result) == uncached(wiki, config, pages)
    assert result.stats["index_read"] == len({shard_of(p) for p in pages})
    assert result.stats.get("analysed", 0) == 0


def test_d_a_path_run_reads_no_record_shard_for_the_pages_it_analyses(wiki):
    run(wiki)
    pages = experiment_pages(wiki)[:3]
    for page in pages:
        edit(wiki, page)
    config = LintConfig(select=["WK"])  # per-file rules: no other page looked up
    result = run(wiki, config, pages)
    assert rendered(result) == uncached(wiki, config, pages)
    assert result.stats["analysed"] == 3 and result.stats.get("shards_read", 0) == 0
    assert rendered(run(wiki)) == uncached(wiki)  # a whole run then merges what it made with the shards


def test_d_a_whole_run_reads_the_index_at_once_with_the_collector_paused(wiki, monkeypatch):
    import gc

    from wikiengine.lint.cache import LintCache

    run(wiki)
    paused = []
    real = LintCache._read_index
    monkeypatch.setattr(LintCache, "_read_index", lambda self, number: paused.append(not gc.isenabled()) or real(self, number))
    result = run(wiki)
    assert len(paused) == 64 and all(paused) and gc.isenabled() and result.stats["index_read"] > 0


def test_d_a_tampered_index_shard_costs_its_pages_alone(wiki):
    run(wiki)
    page = experiment_pages(wiki)[3]
    shard = wiki / CACHE_DIR / INDEX_DIR / f"{shard_of(page):02d}.marshal"
    data = bytearray(shard.read_bytes())
    data[-5] ^= 0xFF
    shard.write_bytes(bytes(data))
    again = run(wiki)
    in_shard = [rel for rel in discover(wiki) if shard_of(rel) == shard_of(page)]
    assert rendered(again) == uncached(wiki)
    shards = len(list((wiki / CACHE_DIR / INDEX_DIR).glob("*.marshal")))
    assert again.stats["analysed"] == len(in_shard) and again.stats["index_read"] == shards - 1


def test_d_a_path_run_reads_no_memo_and_a_warm_run_reuses_them(wiki):
    """The memos (the link verdicts, the kind index) serve whole-wiki runs: a PATH run
    leaves their file unread; a warm run reads it and judges no page's links again."""
    run(wiki)
    pages = experiment_pages(wiki)[:5]
    path_run = run(wiki, paths=pages)
    assert rendered(path_run) == uncached(wiki, paths=pages) and path_run.stats.get("memos_read", 0) == 0
    warm = run(wiki)
    assert warm.stats["memos_read"] == 1 and warm.stats.get("link_pages_judged", 0) == 0
    assert rendered(warm) == uncached(wiki)


# --- (e) a tampered or unsigned shard is ignored ------------------------------------------


def test_e_a_tampered_or_unsigned_shard_is_ignored(wiki):
    run(wiki)
    page = experiment_pages(wiki)[3]
    edit(wiki, page, "\nSee [gone](gone-again.md).\n")
    config = LintConfig(select=["WK", "LNK"])
    want = uncached(wiki, config, [page])
    shard = wiki / CACHE_DIR / SHARD_DIR / f"{record_shard_of(page):02d}.marshal"
    run(wiki, config)  # the edit is analysed and its shard rewritten
    data = bytearray(shard.read_bytes())
    data[-5] ^= 0xFF  # in the records: the signature no longer matches
    shard.write_bytes(bytes(data))
    tampered = run(wiki, config, [page])
    assert rendered(tampered) == want and tampered.stats.get("shards_read", 0) == 0
    # unsigned: plain marshal data that claims the page has no links
    shard.write_bytes(marshal.dumps({"format": 4, "records": {page: ["x", None, {}]}}))
    unsigned = run(wiki, config, [page])
    assert rendered(unsigned) == want and unsigned.stats.get("shards_read", 0) == 0
    # a pipe where the shard was (a commit cannot make one, a hostile local process can): never opened
    shard.unlink()
    os.mkfifo(shard)
    piped = run(wiki, config, [page])
    assert rendered(piped) == want and piped.stats.get("shards_read", 0) == 0


# --- findings identical, cold and warm, over a sequence of edits and selections -----------


def test_every_step_of_an_edit_and_select_sequence_matches_an_uncached_run(wiki):
    pages = experiment_pages(wiki)
    steps = [
        (LintConfig(), None),
        (LintConfig(select=["EXP"]), None),
        (LintConfig(), lambda: edit(wiki, pages[1], "\nstatus: nonsense\n")),
        (LintConfig(ignore=["LNK", "WK"]), lambda: (wiki / pages[2]).unlink()),
        (LintConfig(rules={"EXP002": {"sections": ["Setup"]}}), None),
        (LintConfig(), lambda: edit(wiki, pages[4], "\n[x](../../missing.md)\n")),
        (LintConfig(select=["LNK"]), lambda: (wiki / pages[4]).write_text("# replaced\n", encoding="utf-8")),
        (LintConfig(), None),
    ]
    for number, (config, change) in enumerate(steps):
        if change is not None:
            change()
        assert rendered(run(wiki, config)) == uncached(wiki, config), f"step {number}"


# --- what a cross-file rule declares it reads ---------------------------------------------


def test_krn005_is_cached_by_the_receipts_it_reads_and_never_waits_on_a_pipe(tmp_path):
    root = build("KRN005", tmp_path / "wiki")
    config = LintConfig(select=["KRN005"])
    first = run(root, config)
    assert rendered(first) == uncached(root, config) and wiki_runs(first.stats) == {"KRN005"}
    assert wiki_runs(run(root, config).stats) == set()  # nothing changed: reused
    receipts = root / "wiki/kernel_experiments/layernorm/pallas/receipts"
    (receipts / "v002-cand2-full.json").write_bytes((receipts / "v001-cand2-full.json").read_bytes())
    appeared = run(root, config)  # a cited receipt appeared (no page changed): the rule runs again
    assert wiki_runs(appeared.stats) == {"KRN005"} and rendered(appeared) == uncached(root, config)
    (receipts / "v002-cand2-full.json").unlink()
    os.mkfifo(receipts / "v002-cand2-full.json")
    piped = run(root, config)
    assert wiki_runs(piped.stats) == {"KRN005"} and rendered(piped) == uncached(root, config)


def test_krn003_is_cached_until_a_branch_moves(tmp_path):
    from tests.rules_wiki import git

    root = build("KRN003", tmp_path / "wiki")
    config = LintConfig(select=["KRN003"])
    assert wiki_runs(run(root, config).stats) == {"KRN003"}
    assert wiki_runs(run(root, config).stats) == set()
    (root / "wiki" / "notes").mkdir(parents=True, exist_ok=True)
    (root / "wiki" / "notes" / "elsewhere.md").write_text("# elsewhere\n", encoding="utf-8")
    elsewhere = run(root, config)  # another page: the rule runs, each kernel page's answer is reused (no git log)
    assert wiki_runs(elsewhere.stats) == {"KRN003"} and elsewhere.stats.get("page_facts_reused", 0) >= 2
    assert rendered(elsewhere) == uncached(root, config)
    git(root, "checkout", "-q", "kernel/layernorm-v002")
    for n in (2, 3):
        git(root, "commit", "-q", "--allow-empty", "-m", f"cand{n}(layernorm v002): more rows")
    git(root, "checkout", "-q", "main")
    moved = run(root, config)  # no page changed; the branch has its candidates now
    assert wiki_runs(moved.stats) == {"KRN003"} and rendered(moved) == uncached(root, config)
    assert not any("v002" in line for line in rendered(moved))


def test_run003_is_cached_until_a_stop_authorization_changes(tmp_path):
    root = build("RUN003", tmp_path / "wiki")
    config = LintConfig(select=["RUN003"])
    assert wiki_runs(run(root, config).stats) == {"RUN003"}
    assert wiki_runs(run(root, config).stats) == set()
    record = root / "wiki/experiments/qwen3_autoresearch_optimization/torchax/.stop-authorized"
    record.write_text("ALL-CLEAR qwen3/torchax session 2 wiki=1a2b3c4d code=5e6f7a8b\n", encoding="utf-8")
    changed = run(root, config)
    assert wiki_runs(changed.stats) == {"RUN003"} and rendered(changed) == uncached(root, config)
    assert not any("torchax" in line for line in rendered(changed))


def test_a_path_run_keeps_the_pages_a_cross_file_rule_parsed(wiki):
    """A writer lints the few files it wrote; IDX001 then counts every page's `type:`. The pages
    that run parsed are kept (frontmatter and type), so the next writer's run parses none: before,
    a PATH run saved them only past a number of analysed files, and every writer parsed the wiki."""
    index = "wiki/index.md"
    # every page past the racy window (2 s before a cache write), in which a page is hashed again by
    # design: a loaded run of the file could start this test that soon after the template was made
    old = time.time() - 60
    for path in wiki.rglob("*.md"):
        os.utime(path, (old, old))
    run(wiki, paths=[experiment_pages(wiki)[1]])  # a cache already there, as after any earlier writer
    (wiki / index).write_text("# Index\n\n## Experiments (2)\n\n- [one](experiments/one.md)\n", encoding="utf-8")
    first = run(wiki, paths=[index])
    assert first.stats["recorded"] >= 90  # the 100 experiment pages, parsed for their type
    again = run(wiki, paths=[index])
    assert again.stats.get("recorded", 0) == 0 and again.stats["page_facts_reused"] >= 90
    assert rendered(again) == rendered(first) == uncached(wiki, paths=[index])
    assert any("IDX001" in line for line in rendered(again))  # the rule did judge: 2 said, 100 there
    page = experiment_pages(wiki)[0]
    text = (wiki / page).read_text(encoding="utf-8")
    (wiki / page).write_text(text.replace("\n---\n", "\ntype: observation\n---\n", 1), encoding="utf-8")
    moved = run(wiki, paths=[index])  # one page's type changed: it alone is read again
    assert moved.stats["recorded"] == 1 and rendered(moved) == uncached(wiki, paths=[index])


def test_a_path_run_keeps_the_new_stat_keys_of_unchanged_pages(wiki, tmp_path):
    """A checkout or a copy gives pages new stat keys over the same bytes. A PATH run that hashes
    them again (IDX001 asks every page for its type) keeps the new keys, so the next run reads
    none: before, only a whole-wiki run saved them, and every writer re-read the wiki."""
    index = "wiki/index.md"
    (wiki / index).write_text("# Index\n\n## Experiments (2)\n\n- [one](experiments/one.md)\n", encoding="utf-8")
    old = time.time() - 3600  # past the racy window: only the stat key can send a page to be hashed
    for path in wiki.rglob("*.md"):
        os.utime(path, (old, old))
    run(wiki)
    copy = tmp_path / "copy"
    shutil.copytree(wiki, copy)  # the same bytes and times, new inodes
    first = run(copy, paths=[index])
    assert first.stats["rekeyed"] >= 90
    again = run(copy, paths=[index])
    assert again.stats.get("rekeyed", 0) == 0 and again.stats["page_facts_reused"] >= 90
    assert rendered(again) == rendered(first) == uncached(copy, paths=[index])


def test_a_path_run_on_the_index_opens_no_shard_of_the_pages_it_counts_and_follows_each_type_change(wiki):
    """IDX001 asks every page for its type at each write to the index (a writer's re-lint, twice
    when the index had a finding already). Settled pages answer from one table checked by lstat:
    the run opens no cache shard. A page edited since, even one the table holds, is asked again."""
    index = "wiki/index.md"
    (wiki / index).write_text("# Index\n\n## Experiments (100)\n", encoding="utf-8")  # right: 100 pages
    old = time.time() - 3600  # past the racy window: the table may vouch for every page
    for path in wiki.rglob("*.md"):
        os.utime(path, (old, old))
    run(wiki)
    counts = LintConfig(select=["IDX001"])
    quiet = run(wiki, counts, paths=[index])
    assert quiet.stats["page_facts_reused"] >= 100
    # the index page's own entry and record, and nothing for the pages it counts (64 shards of each)
    assert quiet.stats.get("index_read", 0) <= 1 and quiet.stats.get("shards_read", 0) <= 1
    assert rendered(quiet) == uncached(wiki, counts, paths=[index])
    assert rendered(run(wiki, paths=[index])) == uncached(wiki, paths=[index])
    page = experiment_pages(wiki)[0]
    text = (wiki / page).read_text(encoding="utf-8")
    (wiki / page).write_text(text.replace("type: experiment\n", "type: observation\n", 1), encoding="utf-8")
    moved = run(wiki, paths=[index])  # the edit is seen at once, though the page is too recent to table
    assert rendered(moved) == uncached(wiki, paths=[index])
    assert rendered(quiet) == [] and any("says 100, but the wiki has 99 experiment pages" in line for line in rendered(moved))
    os.utime(wiki / page, (old + 60, old + 60))  # settled under its new key: tabled with its new type
    assert run(wiki, paths=[index]).stats["tabled"] == 1
    kept = run(wiki, paths=[index])  # a PATH run keeps the rows it tabled, though it saves no analysis
    assert kept.stats.get("tabled", 0) == 0 and rendered(kept) == rendered(moved)



def test_the_global_logs_entry_is_judged_again_when_a_lane_log_moves_the_log_split(wiki):
    """The global log's LOG003 findings hang on the log-split date (the lane logs' oldest entry),
    not on its bytes alone: its entry is taken only while the lane logs are as they were, so a
    lane log that gains an older entry, or is removed, gives the findings of a run without the cache."""
    global_log = wiki / "wiki" / "log.md"
    global_log.write_text(global_log.read_text(encoding="utf-8")
                          + "\n## [2021-06-01] loop-iteration | v009-old: refuted\n", encoding="utf-8")
    run(wiki)
    assert not [f for f in run(wiki).findings if f.code == "LOG003"] and run(wiki).stats.get("analysed", 0) == 0
    lane_logs = sorted((wiki / "wiki" / "experiments").rglob("log.md"))
    older = lane_logs[0].read_text(encoding="utf-8")
    lane_logs[0].write_text(older + "\n## [2020-01-01] note | older than any\n", encoding="utf-8")
    moved = run(wiki)
    assert [f.code for f in moved.findings if f.path == "wiki/log.md" and f.code == "LOG003"] == ["LOG003"]
    assert rendered(moved) == uncached(wiki)
    lane_logs[0].unlink()  # the split moves back: the finding goes
    gone = run(wiki)
    assert not [f for f in gone.findings if f.code == "LOG003"] and rendered(gone) == uncached(wiki)
