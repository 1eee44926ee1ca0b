"""The lint engine: suppressions, baseline, since, per-file ignores, selection, the
content-hash cache, the worker pool, PATH runs, output formats and exit codes.

Findings come from LNK001 (a broken link works on any page kind) and WK001 so that the
tests do not depend on the domain rules.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from tests.lint_support import NOTE, cli, cli_process, codes, git, write
from wikiengine.core.errors import WikiError
from wikiengine.lint import lint
from wikiengine.lint.baseline import BASELINE_FILE, message_hash
from wikiengine.lint.cache import CACHE_DIR, CACHE_FILE
from wikiengine.lint.config import LintConfig, load_config
from wikiengine.lint.finding import Finding
from wikiengine.lint.registry import REGISTRY

BROKEN = "See [gone](gone.md).\n"


def run(root, paths=None, config=None, **kw):
    kw.setdefault("base", None)
    return lint(root, paths, config or LintConfig(select=["WK", "LNK"]), **kw)


# --- inline suppressions ------------------------------------------------------------------


def test_disable_comment_silences_its_line_and_the_next(tmp_path):
    write(tmp_path, {
        NOTE: "# n\n\n<!-- wiki-lint: disable LNK001 -->\n" + BROKEN + "\n" + BROKEN,
    })
    result = run(tmp_path)
    assert [(f.code, f.line) for f in result.findings] == [("LNK001", 6)]
    assert result.suppressed == 1


def test_disable_comment_on_the_same_line(tmp_path):
    write(tmp_path, {NOTE: "# n\n\nSee [gone](gone.md). <!-- wiki-lint: disable LNK001 -->\n"})
    assert codes(run(tmp_path)) == []


def test_disable_file_silences_the_whole_file(tmp_path):
    write(tmp_path, {NOTE: "<!-- wiki-lint: disable-file LNK001 -->\n# n\n\n" + BROKEN * 3})
    assert codes(run(tmp_path)) == []


def test_unused_and_unknown_suppressions_are_wk100(tmp_path):
    write(tmp_path, {
        "wiki/notes/ok.md": "# ok\n",
        NOTE: "# n\n\n<!-- wiki-lint: disable LNK001,XYZ999 -->\nNo links here.\n",
    })
    found = run(tmp_path).findings
    assert [(f.code, f.line, f.message) for f in found] == [
        ("WK100", 3, "suppression of unknown rule XYZ999"),
        ("WK100", 3, "unused suppression of LNK001"),
    ]


def test_suppression_inside_code_is_an_example_not_a_directive(tmp_path):
    write(tmp_path, {
        NOTE: "# n\n\n```markdown\n<!-- wiki-lint: disable LNK001 -->\n```\n\n"
        "Write `<!-- wiki-lint: disable LNK001 -->` above the line.\n\n" + BROKEN,
    })
    assert codes(run(tmp_path)) == ["LNK001"]


def test_suppression_of_an_unselected_rule_is_not_called_unused(tmp_path):
    write(tmp_path, {NOTE: "# n\n\n<!-- wiki-lint: disable PRG001 -->\ntext\n"})
    assert codes(run(tmp_path)) == []


def test_fix_removes_unused_suppressions(tmp_path, capsys):
    write(tmp_path, {NOTE: "# n\n\n<!-- wiki-lint: disable LNK001 -->\nNo links.\n"})
    status, out, _ = cli(capsys, tmp_path, "--select", "WK,LNK", "--fix", "--no-cache")
    assert status == 0, out
    assert (tmp_path / NOTE).read_text() == "# n\n\nNo links.\n"


# --- baseline ------------------------------------------------------------------------------


def test_baseline_accepts_old_findings_and_fails_new_ones(tmp_path, capsys):
    write(tmp_path, {NOTE: "# n\n\n" + BROKEN})
    status, out, _ = cli(capsys, tmp_path, "--select", "WK,LNK", "--write-baseline")
    assert status == 0 and "1 entry" in out
    entries = json.loads((tmp_path / BASELINE_FILE).read_text())["entries"]
    assert entries[0]["path"] == NOTE and entries[0]["code"] == "LNK001" and entries[0]["count"] == 1
    assert cli(capsys, tmp_path, "--select", "WK,LNK")[0] == 0
    # an edit elsewhere moves the finding to another line: still accepted
    write(tmp_path, {NOTE: "# n\n\nMore text.\n\n" + BROKEN})
    status, out, _ = cli(capsys, tmp_path, "--select", "WK,LNK")
    assert status == 0, out
    # a new finding fails
    write(tmp_path, {NOTE: "# n\n\n" + BROKEN + "And [other](other.md).\n"})
    status, out, _ = cli(capsys, tmp_path, "--select", "WK,LNK")
    assert status == 1 and "other.md" in out and "gone.md" not in out


def test_stale_baseline_entry_is_wk101(tmp_path, capsys):
    write(tmp_path, {NOTE: "# n\n\n" + BROKEN})
    cli(capsys, tmp_path, "--select", "WK,LNK", "--write-baseline")
    write(tmp_path, {NOTE: "# n\n\nFixed.\n"})
    status, out, _ = cli(capsys, tmp_path, "--select", "WK,LNK")
    assert status == 1
    assert f"{NOTE}:1:1: WK101 baseline entry LNK001" in out


def test_unreadable_baseline_is_exit_2(tmp_path, capsys):
    write(tmp_path, {NOTE: "# n\n", BASELINE_FILE: "{not json"})
    status, _, err = cli(capsys, tmp_path)
    assert status == 2 and BASELINE_FILE in err


def test_message_hash_ignores_line_references():
    assert message_hash("duplicate (first on line 3)") == message_hash("duplicate (first on line 40)")
    assert message_hash("a") != message_hash("b")


# --- since ---------------------------------------------------------------------------------


def test_since_grandfathers_older_pages(tmp_path, capsys):
    write(tmp_path, {
        "wiki.toml": '[rules.LNK001]\nsince = "2026-01-01"\n',
        "wiki/notes/old.md": "---\ncreated: 2025-06-01\n---\n# old\n\n" + BROKEN,
        "wiki/notes/new.md": "---\ncreated: 2026-02-01\n---\n# new\n\n" + BROKEN,
        "wiki/notes/2025-03-01-named.md": "# named by date\n\n" + BROKEN,
        "wiki/notes/undated.md": "# no date\n\n" + BROKEN,
    })
    result = lint(tmp_path, config=load_config(tmp_path), base=None)
    assert sorted(f.path for f in result.findings) == ["wiki/notes/new.md", "wiki/notes/undated.md"]
    assert result.grandfathered == 2


def test_since_falls_back_to_the_first_commit_time(tmp_path):
    write(tmp_path, {"wiki.toml": '[rules.LNK001]\nsince = "2000-01-01"\n', NOTE: "# n\n\n" + BROKEN})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "old", "--date", "1999-06-01T00:00:00")
    result = lint(tmp_path, config=load_config(tmp_path))
    assert codes(result) == ["LNK001"]  # the committer date is now, after 2000
    (tmp_path / "wiki.toml").write_text('[rules.LNK001]\nsince = "2999-01-01"\n')
    assert codes(lint(tmp_path, config=load_config(tmp_path))) == []


def test_bad_since_is_a_configuration_error(tmp_path, capsys):
    write(tmp_path, {"wiki.toml": '[rules.LNK001]\nsince = "last year"\n', NOTE: "# n\n"})
    status, _, err = cli(capsys, tmp_path)
    assert status == 2 and "since must be a date" in err


# --- configuration -------------------------------------------------------------------------


def test_per_file_ignores_select_and_ignore(tmp_path, capsys):
    write(tmp_path, {
        "pyproject.toml": '[tool.wiki]\nignore = ["WK100"]\n[tool.wiki.per-file-ignores]\n"wiki/legacy/*" = ["LNK"]\n',
        "wiki/legacy/old.md": "# old\n\n" + BROKEN,
        NOTE: "# n\n\n" + BROKEN,
    })
    result = lint(tmp_path, config=load_config(tmp_path), base=None)
    assert [f.path for f in result.findings] == [NOTE]
    assert cli(capsys, tmp_path, "--ignore", "LNK001")[0] == 0
    assert cli(capsys, tmp_path, "--select", "WK001")[0] == 0


@pytest.mark.parametrize(
    "toml, words",
    [
        ('select = ["NOPE"]\n', "names no rule"),
        ('ignore = "LNK001"\n', "must be a list"),
        ("select = [\n", "cannot read configuration"),
        ('surprise = 1\n', "unknown configuration key"),
        ('additive-marker = "("\n', "not a usable regular expression"),
        ('[rules.ZZZ001]\nsince = "2026-01-01"\n', "no such rule"),
    ],
)
def test_bad_configuration_is_exit_2_with_one_line(tmp_path, toml, words):
    write(tmp_path, {"wiki.toml": toml, NOTE: "# n\n"})
    proc = cli_process(tmp_path)
    assert proc.returncode == 2
    assert words in proc.stderr and "Traceback" not in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


# --- cache ---------------------------------------------------------------------------------


def test_warm_run_reads_the_cache_and_sees_edits(tmp_path):
    write(tmp_path, {NOTE: "# n\n\n" + BROKEN, "wiki/notes/b.md": "# b\n"})
    first = run(tmp_path)
    assert (tmp_path / CACHE_DIR / CACHE_FILE).is_file()
    assert run(tmp_path).findings == first.findings
    # same size, same second: the racy-timestamp rule re-hashes it
    write(tmp_path, {NOTE: "# n\n\nSee [gone](gone.mx).\n"})
    assert [f.message for f in run(tmp_path).findings] == [
        "link 'gone.mx' points to wiki/notes/gone.mx, which does not exist"
    ]
    (tmp_path / "wiki/notes/gone.mx").write_text("now it exists\n")
    assert run(tmp_path).findings == []  # cross-file: the link target appeared


def test_cache_from_elsewhere_is_ignored(tmp_path):
    """A committed (or planted) .wiki_cache is not signed with this user's key: never loaded."""
    write(tmp_path, {NOTE: "# n\n\n" + BROKEN})
    run(tmp_path)
    cache = tmp_path / CACHE_DIR / CACHE_FILE
    data = bytearray(cache.read_bytes())
    data[40] ^= 0xFF
    cache.write_bytes(bytes(data))
    assert codes(run(tmp_path)) == ["LNK001"]
    for planted in (tmp_path / CACHE_DIR / "schemas").glob("*") if (tmp_path / CACHE_DIR / "schemas").is_dir() else []:
        planted.write_bytes(b"0" * 32 + b"raise SystemExit('executed')\n")
    assert codes(run(tmp_path, config=LintConfig(select=["WK", "LNK"]))) == ["LNK001"]


def test_pool_and_serial_runs_agree(tmp_path, monkeypatch):
    from wikiengine.lint import runner

    files = {f"wiki/notes/p{i:03}.md": f"# p{i}\n\n[next](p{i + 1:03}.md)\n" for i in range(60)}
    files["wiki/notes/bad.md"] = b"# bad \xff\n"
    write(tmp_path, files)
    monkeypatch.setattr(runner, "POOL_THRESHOLD", 10)
    pooled = run(tmp_path, use_cache=False, jobs=2)
    serial = run(tmp_path, use_cache=False, jobs=1)
    assert pooled.findings == serial.findings
    assert sorted(set(codes(serial))) == ["LNK001", "WK001"]


def _linked_notes(tmp_path, pages: int = 60):
    files = {f"wiki/notes/p{i:03}.md": f"# p{i}\n\n[next](p{i + 1:03}.md)\n" for i in range(pages)}
    files["wiki/notes/bad.md"] = b"# bad \xff\n"
    return write(tmp_path, files)


def _forks(monkeypatch) -> list[int]:
    """The pids of the children the run forks, noted as it forks them."""
    from wikiengine.lint import runner

    pids, fork = [], runner.os.fork

    def noting():
        pid = fork()
        if pid:
            pids.append(pid)
        return pid

    monkeypatch.setattr(runner.os, "fork", noting)
    return pids


def _reaped(pids: list[int]) -> bool:
    """Has every one of ``pids`` ended and been waited for (none running, no zombie)?"""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            continue
        return False
    return True


@pytest.mark.parametrize("jobs", [2, 3])
def test_the_parent_analyses_beside_its_children_and_leaves_none_behind(tmp_path, monkeypatch, jobs):
    from wikiengine.lint import runner

    _linked_notes(tmp_path)
    monkeypatch.setattr(runner, "POOL_THRESHOLD", 10)
    analyse_chunk, parent, analysed_by = runner._analyse_chunk, os.getpid(), tmp_path / "analysed-by"
    analysed_by.mkdir()

    def noting(chunk):  # a child waits with its first chunk until the parent has taken one
        (analysed_by / str(os.getpid())).touch()
        waited = time.monotonic()
        while os.getpid() != parent and not (analysed_by / str(parent)).exists() and time.monotonic() - waited < 60:
            time.sleep(0.01)
        return analyse_chunk(chunk)

    monkeypatch.setattr(runner, "_analyse_chunk", noting)
    forked = _forks(monkeypatch)
    pooled = run(tmp_path, use_cache=False, jobs=jobs)
    assert pooled.findings == run(tmp_path, use_cache=False, jobs=1).findings
    analysed = {p.name for p in analysed_by.iterdir()}
    assert str(parent) in analysed and analysed <= {str(parent), *map(str, forked)}  # the parent took chunks too
    assert len(forked) == jobs - 1 and _reaped(forked)


@pytest.mark.parametrize("how", ["raises", "killed"])
def test_what_a_failed_child_did_not_send_is_analysed_by_the_parent(tmp_path, monkeypatch, how):
    import signal

    from wikiengine.lint import runner

    _linked_notes(tmp_path)
    monkeypatch.setattr(runner, "POOL_THRESHOLD", 10)
    analyse_chunk, parent = runner._analyse_chunk, os.getpid()

    def failing(chunk):
        done = analyse_chunk(chunk)
        if os.getpid() != parent:  # the child fails after its first chunk, the parent goes on
            if how == "killed":
                os.kill(os.getpid(), signal.SIGKILL)
            raise RuntimeError("a bug in a rule")
        return done

    monkeypatch.setattr(runner, "_analyse_chunk", failing)
    forked = _forks(monkeypatch)
    assert run(tmp_path, use_cache=False, jobs=2).findings == run(tmp_path, use_cache=False, jobs=1).findings
    assert len(forked) == 1 and _reaped(forked)


@pytest.mark.parametrize("short_of", ["processes", "temporary files"])
def test_without_a_child_the_parent_analyses_every_file(tmp_path, monkeypatch, short_of):
    import tempfile

    from wikiengine.lint import runner

    _linked_notes(tmp_path)
    monkeypatch.setattr(runner, "POOL_THRESHOLD", 10)

    def refused(*args, **kwargs):
        raise OSError(11, "Resource temporarily unavailable")

    if short_of == "processes":
        monkeypatch.setattr(runner.os, "fork", refused)
    else:
        monkeypatch.setattr(tempfile, "TemporaryFile", refused)
    assert run(tmp_path, use_cache=False, jobs=2).findings == run(tmp_path, use_cache=False, jobs=1).findings


def test_a_pass_left_unfinished_kills_its_children(tmp_path, monkeypatch):
    from wikiengine.lint import runner
    from wikiengine.lint.cache import LintCache

    _linked_notes(tmp_path, pages=100)
    monkeypatch.setattr(runner, "POOL_THRESHOLD", 10)
    analyse_chunk, parent = runner._analyse_chunk, os.getpid()
    monkeypatch.setattr(runner, "_analyse_chunk",
                        lambda chunk: analyse_chunk(chunk) if os.getpid() == parent else time.sleep(600))
    store, stored = LintCache.store, []

    def failing(self, rel, entry, record):  # the parent's side fails (an interrupt, a full disk)
        stored.append(rel)
        if len(stored) == 5:
            raise KeyboardInterrupt
        return store(self, rel, entry, record)

    monkeypatch.setattr(LintCache, "store", failing)
    forked = _forks(monkeypatch)
    started = time.monotonic()
    with pytest.raises(KeyboardInterrupt) as interrupted:
        run(tmp_path, jobs=2)
    # killed, not awaited, as the exception left the pass: not only once its traceback (which
    # holds the pass's frames, and so its generator) is let go
    assert interrupted.traceback and time.monotonic() - started < 60
    assert len(forked) == 1 and _reaped(forked)


def test_pooled_entries_reach_the_parent_with_their_paths_interned(tmp_path, monkeypatch):
    """A child's entries travel as marshal: a path linked from pages of different chunks
    arrives as one interned string (pickle gave each chunk its own copy), stored once."""
    from wikiengine.lint import runner
    from wikiengine.lint.cache import LintCache

    files = {f"wiki/notes/p{i:03}.md": f"# p{i}\n\n[all](common-target.md) [next](p{i + 1:03}.md)\n" for i in range(90)}
    write(tmp_path, files)
    monkeypatch.setattr(runner, "POOL_THRESHOLD", 10)
    stored, store = {}, LintCache.store

    def storing(self, rel, entry, record):
        stored[rel] = record
        return store(self, rel, entry, record)

    monkeypatch.setattr(LintCache, "store", storing)
    pooled = run(tmp_path, jobs=2)
    parts = [part for record in stored.values() for part in record[2]["LNK001"][1] if part == "common-target.md"]
    assert len(parts) == 90 and len({id(part) for part in parts}) == 1
    assert pooled.findings == run(tmp_path, use_cache=False, jobs=1).findings


def test_path_run_reports_only_those_files_but_sees_the_wiki(tmp_path):
    write(tmp_path, {
        "wiki/notes/a.md": "# a\n\n[b](b.md) " + BROKEN,
        "wiki/notes/b.md": "# b\n\n" + BROKEN,
        "wiki/notes/Case.md": "# c\n",
        "wiki/notes/case.md": "# c\n",
    })
    result = run(tmp_path, ["wiki/notes/a.md", "wiki/notes/case.md"])
    assert result.files_checked == 2
    assert sorted((f.path, f.code) for f in result.findings) == [
        ("wiki/notes/a.md", "LNK001"), ("wiki/notes/case.md", "WK003"),
    ]


# --- command line --------------------------------------------------------------------------


def test_exit_codes_and_text_output(tmp_path, capsys):
    write(tmp_path, {NOTE: "# n\n"})
    status, out, _ = cli(capsys, tmp_path)
    assert status == 0 and out.startswith("All checks passed")
    write(tmp_path, {NOTE: "# n\n\n" + BROKEN})
    status, out, _ = cli(capsys, tmp_path)
    lines = out.splitlines()
    assert status == 1
    assert lines[0] == f"{NOTE}:3:5: LNK001 link 'gone.md' points to wiki/notes/gone.md, which does not exist"
    assert lines[1] == "Found 1 finding in 1 of 1 file."


def test_json_sarif_and_statistics(tmp_path, capsys):
    write(tmp_path, {NOTE: "# n\n\n" + BROKEN + BROKEN, "wiki/bad.md": b"\xff"})
    status, out, _ = cli(capsys, tmp_path, "--format", "json")
    rows = json.loads(out)
    assert status == 1 and {r["code"] for r in rows} == {"LNK001", "WK001"}
    assert all({"path", "line", "code", "message"} <= set(r) for r in rows)
    status, out, _ = cli(capsys, tmp_path, "--format", "sarif")
    log = json.loads(out)
    assert log["version"] == "2.1.0"
    results = log["runs"][0]["results"]
    assert len(results) == 3
    assert {r["id"] for r in log["runs"][0]["tool"]["driver"]["rules"]} == {"LNK001", "WK001"}
    region = results[0]["locations"][0]["physicalLocation"]["region"]
    assert region["startLine"] >= 1
    status, out, _ = cli(capsys, tmp_path, "--statistics")
    assert out.splitlines()[0].split()[:2] == ["2", "LNK001"]
    write(tmp_path, {NOTE: "# n\n", "wiki/bad.md": "# fine now\n"})
    status, out, _ = cli(capsys, tmp_path, "--statistics")
    assert status == 0 and out == "No findings to count: all checks passed (2 files).\n"


def test_list_rules_and_explain_every_rule(capsys):
    listing = main_out(capsys, "--list-rules").splitlines()
    assert [line.split()[0] for line in listing[: len(REGISTRY)]] == sorted(REGISTRY)
    assert listing[-2].startswith("[*]  fixable") and listing[-1].startswith("git  git-aware")
    for code in REGISTRY:
        text = main_out(capsys, "--explain", code)
        assert text.startswith(f"# {code} (")
        for part in ("## What it does", "## Why is this bad?", "## Example", "## Options"):
            assert part in text, (code, part)


def main_out(capsys, *args):
    from wikiengine._cli.main import main

    capsys.readouterr()
    assert main(["lint", *args]) == 0
    return capsys.readouterr().out


def test_explain_unknown_rule_is_exit_2(capsys):
    from wikiengine._cli.main import main

    assert main(["lint", "--explain", "NOPE1"]) == 2
    assert "no rule" in capsys.readouterr().err


def test_git_aware_rules_outside_git_give_one_notice(tmp_path, capsys):
    write(tmp_path, {NOTE: "# n\n"})
    status, _, err = cli(capsys, tmp_path, "--select", "EXP007")
    assert status == 0
    assert err.count("notice: not a git repository") == 1


def test_bad_since_revision_is_exit_2(tmp_path, capsys):
    write(tmp_path, {NOTE: "# n\n"})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "one")
    status, _, err = cli(capsys, tmp_path, "--select", "EXP007", "--since", "no-such-rev")
    assert status == 2 and "unknown git revision" in err


def test_load_config_prefers_wiki_toml(tmp_path):
    write(tmp_path, {"wiki.toml": 'ignore = ["LNK"]\n', "pyproject.toml": '[tool.wiki]\nignore = ["WK"]\n'})
    assert load_config(tmp_path).ignore == ["LNK"]
    with pytest.raises(WikiError):
        load_config(tmp_path, tmp_path / "missing.toml")


def test_cache_survives_a_touch_without_change(tmp_path):
    write(tmp_path, {NOTE: "# n\n\n" + BROKEN})
    first = run(tmp_path).findings
    later = time.time() + 5
    os.utime(tmp_path / NOTE, (later, later))
    assert run(tmp_path).findings == first


# --- fixes ---------------------------------------------------------------------------------

LANE = "wiki/experiments/gemma4_autoresearch_optimization/tpu"


class _AddNotes:
    """A fixable test rule: every experiment page should have a '## Notes' section."""

    code = "ZZZ001"
    name = "notes-section"
    summary = "an experiment page has no Notes section"
    kinds = ("experiment",)
    needs_git = False
    fixable = True
    since = None
    cache_wiki = True

    def prepare(self, ctx):
        pass

    def check_page(self, info, ctx):
        if info.page.section("Notes") is None:
            yield Finding(info.rel, 1, 1, self.code, "no Notes section", True)

    def check_wiki(self, ctx):
        return ()

    def collect(self, info, ctx):
        return None

    @classmethod
    def has_collect(cls):
        return False

    def fix(self, info, ctx):
        return info.page.with_section_body("Notes", "\n")


def test_fix_applies_safe_fixes_but_never_on_a_verdict_page(tmp_path, monkeypatch, capsys):
    import wikiengine.lint.registry as rules

    monkeypatch.setitem(rules.REGISTRY, "ZZZ001", "tests.test_lint_engine:_AddNotes")
    stub = f"{LANE}/2026-06-01-v001-stub.md"
    verdict = f"{LANE}/2026-06-02-v002-done.md"
    write(tmp_path, {
        stub: "---\nstatus: in_progress\n---\n# stub\n\n## Setup\n\nx\n",
        verdict: "---\nstatus: supported\n---\n# done\n\n## Setup\n\nx\n",
    })
    before = (tmp_path / verdict).read_bytes()
    status, out, _ = cli(capsys, tmp_path, "--select", "ZZZ001", "--fix", "--no-cache")
    assert status == 1
    assert out.splitlines()[0] == f"{verdict}:1:1: ZZZ001 no Notes section"
    assert "Fixed 1 finding." in out
    assert (tmp_path / stub).read_text().endswith("## Setup\n\nx\n## Notes\n\n")
    assert (tmp_path / verdict).read_bytes() == before


def test_cached_runs_match_uncached_runs_on_the_example_wiki_as_it_changes(tmp_path):
    """The caching contract holds for every registered rule: after edits to pages that other
    pages depend on (model pages, logs, programs), a warm run finds what a cold run finds."""
    import shutil
    from pathlib import Path

    repo = Path(__file__).resolve().parent.parent
    root = tmp_path / "copy"
    shutil.copytree(repo / "wiki", root / "wiki")
    if (repo / "memory").is_dir():
        shutil.copytree(repo / "memory", root / "memory")
    config = load_config(repo)

    def both():
        warm = lint(root, config=config, base=None)
        cold = lint(root, config=config, base=None, use_cache=False)
        assert [f.render() for f in warm.findings] == [f.render() for f in cold.findings]
        return cold

    both()
    edited = 0
    for rel in sorted(p.relative_to(root).as_posix() for p in (root / "wiki").rglob("*.md")):
        if rel.startswith("wiki/rules/"):
            continue
        path = root / rel
        lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
        if len(lines) > 6 and rel.rsplit("/", 1)[-1] in ("log.md", "program.md") or "/models/" in rel:
            del lines[len(lines) // 2]
            path.write_text("".join(lines), encoding="utf-8")
            edited += 1
            both()
    assert edited >= 3


def test_changed_lints_only_pages_changed_since_the_base(tmp_path, capsys):
    write(tmp_path, {"wiki/notes/old.md": "# old\n\n" + BROKEN, "wiki/notes/keep.md": "# keep\n"})
    git(tmp_path, "init", "-q")
    git(tmp_path, "add", ".")
    git(tmp_path, "commit", "-q", "-m", "cursor")
    write(tmp_path, {"wiki/notes/new.md": "# new\n\n[x](missing.md)\n", "wiki/notes/keep.md": "# keep\n\nedited\n"})
    status, out, _ = cli(capsys, tmp_path, "--select", "LNK", "--since", "HEAD", "--changed")
    assert status == 1
    assert "wiki/notes/new.md" in out and "old.md" not in out
    assert "in 1 of 2 files" in out


def test_wiki_in_a_subdirectory_of_the_repository(tmp_path):
    """GitView paths are relative to the wiki root, not to the repository's top level."""
    from wikiengine.lint.gitview import GitView

    repo = tmp_path / "repo"
    root = write(repo / "docs", {NOTE: "# n\n", "wiki/notes/gone-soon.md": "# g\n"})
    git(repo, "init", "-q")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "one")
    write(root, {NOTE: "# n\n\nedited\n"})
    (root / "wiki/notes/gone-soon.md").unlink()
    view = GitView.open(root)
    assert view.changes == {NOTE: "M", "wiki/notes/gone-soon.md": "D"}
    assert view.base_text(NOTE) == "# n\n"
    assert view.commit_times(NOTE) is not None


def test_commit_times_of_a_folders_pages_are_those_of_the_whole_trees_history(tmp_path, monkeypatch):
    """:meth:`GitView.commit_times_of` lists only the folder that holds the pages asked (a lane's),
    yet walks the commits of the whole tree's history: in a wiki below the repository's top, a
    stub added on a branch and again on main (the merge keeps the lane as main has it, and the
    branch's other page) is first committed when the branch added it, as the whole walk says.
    A pathspec of the lane would simplify the branch away (main's time, a day later)."""
    from wikiengine.lint.gitview import GitView

    repo = tmp_path / "repo"
    lane = "wiki/experiments/m_autoresearch_optimization/jax"
    stub, older = f"{lane}/2026-01-02-v002-stub.md", f"{lane}/2026-01-01-v001-base.md"
    root = write(repo / "docs", {older: "# base\n", "wiki/notes/a.md": "# a\n"})

    def dated(day: int) -> None:
        for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
            monkeypatch.setenv(name, f"2026-01-{day:02d}T00:00:00+00:00")

    def commit(day: int, message: str) -> None:
        dated(day)
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", message)

    git(repo, "init", "-q", "-b", "main")
    commit(1, "base")
    git(repo, "checkout", "-q", "-b", "side")
    write(root, {stub: "# stub\n", "wiki/notes/side.md": "# side\n"})
    commit(2, "the stub, on the branch")
    git(repo, "checkout", "-q", "main")
    write(root, {stub: "# stub\n", "wiki/notes/main.md": "# main\n"})
    commit(3, "the same stub, on main")
    dated(4)
    git(repo, "merge", "-q", "--no-ff", "-m", "merge", "side")
    whole = GitView.open(root)
    expected = {rel: whole.commit_times(rel) for rel in (stub, older)}
    assert expected[stub][0].day == 2 and expected[older][0].day == 1
    lane_only = GitView.open(root)
    assert lane_only.commit_times_of([stub, older]) == expected
    assert lane_only.commit_times_of([]) == {}
    assert list(lane_only._times) == [lane]  # the lane's names alone were listed
    assert lane_only.commit_times_of([f"{lane}/none.md"]) == {f"{lane}/none.md": None}  # served by that pass
    assert lane_only.commit_times_of(["wiki/notes/a.md"])["wiki/notes/a.md"][0].day == 1
    assert list(lane_only._times) == [lane, "."]  # a second folder: the whole tree, once
    assert lane_only.commit_times_of([stub]) == {stub: expected[stub]}


def test_times_since_a_commit_are_those_of_the_commits_after_it_on_one_line(tmp_path, monkeypatch):
    """:meth:`GitView.times_since`: the commit times of the commits after an earlier base, where
    the base descends from it by commits of one parent each; None for a merge among them, a
    base behind or beside it, or a commit git does not know."""
    from wikiengine.lint.gitview import GitView

    root = tmp_path

    def commit(day: int, message: str) -> str:
        for name in ("GIT_AUTHOR_DATE", "GIT_COMMITTER_DATE"):
            monkeypatch.setenv(name, f"2026-01-{day:02d}T00:00:00+00:00")
        git(root, "add", ".")
        git(root, "commit", "-q", "-m", message)
        return git(root, "rev-parse", "HEAD").strip()

    write(root, {"wiki/notes/a.md": NOTE})
    git(root, "init", "-q", "-b", "main")
    first = commit(1, "one")
    write(root, {"wiki/notes/b.md": NOTE, "wiki/notes/a.md": NOTE + "More.\n"})
    commit(2, "two")
    write(root, {"wiki/notes/b.md": NOTE + "More.\n"})
    last = commit(3, "three")
    since = GitView.open(root).times_since(first)
    assert {rel: (a.day, b.day) for rel, (a, b) in since.items()} == {"wiki/notes/a.md": (2, 2),
                                                                       "wiki/notes/b.md": (2, 3)}
    assert GitView.open(root).times_since(last) is None  # the base itself
    assert GitView.open(root, first).times_since(last) is None  # a base behind it
    assert GitView.open(root).times_since("0" * 40) is None  # not a commit git knows
    git(root, "checkout", "-q", "-b", "side", first)
    write(root, {"wiki/notes/c.md": NOTE})
    commit(4, "side")
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-ff", "-m", "merge", "side")
    assert GitView.open(root).times_since(first) is None  # a merge among them
    assert GitView.open(root).times_since(last) is None


def test_commit_times_of_a_name_git_would_quote_are_found_by_either_pass(tmp_path):
    """Names outside ASCII (a lane named ``jäx``) are read as they are (``-z``), so a lane's pass
    and the whole tree's find the same times: git quotes such a name, and a name relative to
    the lane holds the odd byte where one relative to the root does too, or not."""
    from wikiengine.lint.gitview import GitView

    stubs = ["wiki/experiments/m_autoresearch_optimization/jäx/2026-01-02-v002-stub.md",
             "wiki/experiments/m_autoresearch_optimization/jax/2026-01-02-v002-stüb.md"]
    root = write(tmp_path, {stub: "# stub\n" for stub in stubs})
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    for stub in stubs:
        whole, lane_only = GitView.open(root).commit_times(stub), GitView.open(root).commit_times_of([stub])[stub]
        assert whole is not None and lane_only == whole


def test_a_dirty_submodule_is_not_a_change_a_moved_one_is(tmp_path):
    """GitView does not ask a checked-out submodule for its status (a git process walking it):
    edits inside it are no change of the wiki; a submodule moved to another commit is."""
    from wikiengine.lint.gitview import GitView

    root = write(tmp_path / "wiki-repo", {NOTE: "# n\n"})
    sub = write(root / "raw" / "code" / "lib", {"a.py": "x = 1\n"})
    for repo in (sub, root):
        git(repo, "init", "-q")
        git(repo, "add", ".")
        git(repo, "commit", "-q", "-m", "one")
    write(sub, {"a.py": "x = 2\n", "new.py": "y = 1\n"})
    assert GitView.open(root).changes == {}
    git(sub, "commit", "-q", "-am", "two")
    assert GitView.open(root).changes == {"raw/code/lib": "M"}


def test_lint_opens_its_view_without_untracked_files_and_finds_the_same(tmp_path, capsys):
    """A lint run's rules never ask about added files: its view leaves the untracked ones out
    (no git ls-files walking the tree); --changed still lists them as targets."""
    from wikiengine.lint.gitview import GitView

    root = write(tmp_path, {NOTE: "# n\n"})
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    write(root, {"wiki/notes/new.md": "# new\n\n[x](missing.md)\n", NOTE: "# n\n\nedited\n"})
    assert GitView.open(root).changes == {NOTE: "M", "wiki/notes/new.md": "A"}
    assert GitView.open(root, untracked=False).changes == {NOTE: "M"}
    status, out, _ = cli(capsys, root, "--select", "LNK", "--changed")
    assert status == 1 and "wiki/notes/new.md" in out and "in 1 of 2 files" in out
    assert codes(lint(root, ["wiki/notes/new.md"], LintConfig(select=["LNK", "WK"]))) == ["LNK001"]


def test_base_texts_reads_several_files_from_one_git_process(tmp_path):
    from wikiengine.lint.gitview import GitView

    root = write(tmp_path, {NOTE: "# n\n", "wiki/notes/other.md": "# o\n\nline two\n"})
    git(root, "init", "-q")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    write(root, {NOTE: "# n\n\nedited\n", "wiki/notes/new.md": "# new\n"})
    view = GitView.open(root)
    texts = view.base_texts(["wiki/notes/new.md", "wiki/notes/other.md", NOTE])
    assert texts == {"wiki/notes/new.md": None, "wiki/notes/other.md": "# o\n\nline two\n", NOTE: "# n\n"}
    assert view.base_texts([]) == {}


def test_the_hash_of_a_file_list_tells_a_name_with_a_newline_from_two_paths():
    """A folder may be named ``a.md<newline>wiki``: joined with newlines, its page's path hashed as
    two others do, and a run snapshot, the kind index or the folder listing kept for one list
    would have been taken for the other."""
    from wikiengine.lint.context import list_digest

    assert list_digest(["wiki/a.md\nwiki/b.md"]) != list_digest(["wiki/a.md", "wiki/b.md"])
