"""RELIABILITY rows for `wiki lint`: 15 (duplicate keys), 42 (hostile YAML), 43 (schema
failures), 44 (hostile paths) and 49 (fuzzing the linter). Row 41 is in test_rules_lnk.py."""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.lint_support import NOTE, cli_process, hang_guard, use_schema, write
from wikiengine.core import schemas
from wikiengine.core.errors import SchemaError
from wikiengine.core.validators import compiled
from wikiengine.lint import lint
from wikiengine.lint.baseline import BASELINE_FILE
from wikiengine.lint.config import LintConfig

REPO = Path(__file__).resolve().parent.parent


def run(root, select=None, paths=None):
    return lint(root, paths, LintConfig(select=select or []), base=None, use_cache=False)


# --- row 15 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frontmatter",
    ["status: a\nstatus: b\n", "{k: 1, k: 2}\n", '{"k": 1, "k": 2}\n', "m:\n  x: 1\n  x: 2\n"],
)
def test_row15_duplicate_keys_in_frontmatter_are_wk001(tmp_path, frontmatter):
    write(tmp_path, {NOTE: f"---\n{frontmatter}---\n# n\n"})
    found = run(tmp_path, ["WK"]).findings
    assert [f.code for f in found] == ["WK001"] and "duplicate key" in found[0].message


def test_row15_duplicate_keys_in_the_baseline_are_exit_2(tmp_path):
    write(tmp_path, {NOTE: "# n\n", BASELINE_FILE: '{"version": 1, "entries": [], "entries": []}'})
    proc = cli_process(tmp_path)
    assert proc.returncode == 2 and "duplicate key 'entries'" in proc.stderr


# --- row 42 ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "frontmatter, words",
    [
        ("x: !!python/object/apply:os.system [ls]\n", "tags are not allowed"),
        ("x: !!binary aGVsbG8=\n", "tags are not allowed"),
        ("a: &a [1, 2]\nb: [*a, *a, *a]\n", "anchors and aliases"),
        ("a: &a [x]\nb: &b [*a, *a]\nc: &c [*b, *b]\nd: [*c, *c, *c, *c]\n", "anchors and aliases"),
        ("? [complex, key]\n: 1\n", "plain scalar"),
        ("x: [" * 5000 + "\n", ""),
    ],
)
def test_row42_hostile_yaml_is_one_finding_and_exit_1(tmp_path, frontmatter, words):
    write(tmp_path, {NOTE: f"---\n{frontmatter}---\n# n\n"})
    proc = cli_process(tmp_path, "--select", "WK001", "--no-cache")
    assert proc.returncode == 1, proc.stderr
    assert "Traceback" not in proc.stderr
    line = proc.stdout.splitlines()[0]
    assert line.startswith(f"{NOTE}:") and " WK001 " in line and words in line


def test_row42_linter_and_runtime_agree_on_typing(tmp_path, monkeypatch):
    """`no` is a bool and `052` an int to both: WK002 fails exactly when schemas.check raises."""
    from wikiengine.core.page import load_page

    use_schema(monkeypatch, tmp_path, "hypothesis",
               {"type": "object", "properties": {"status": {"type": "string"}, "id": {"type": "string"}}})
    cases = {"no": "status: no\n", "octal": "id: 052\n", "quoted": "status: 'no'\nid: '052'\n", "date": "id: 2026-01-02\n"}
    root = tmp_path / "w"
    write(root, {f"wiki/hypotheses/{name}.md": f"---\n{fm}---\n" for name, fm in cases.items()})
    flagged = {f.path for f in run(root, ["WK002"]).findings}
    for name in cases:
        rel = f"wiki/hypotheses/{name}.md"
        try:
            schemas.check(load_page(root / rel).frontmatter, "hypothesis")
            runtime_ok = True
        except SchemaError:
            runtime_ok = False
        assert (rel not in flagged) == runtime_ok, name
    assert flagged == {"wiki/hypotheses/no.md", "wiki/hypotheses/octal.md"}
    schemas.load_schema.cache_clear()
    schemas._validator.cache_clear()


# --- row 43 ----------------------------------------------------------------------------------

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12),
    lambda children: st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4),
    max_leaves=12,
)


def _documents(name):
    """Documents near the schema: its own keys with arbitrary values, plus arbitrary keys."""
    keys = sorted(schemas.load_schema(name).get("properties", {}))
    known = st.dictionaries(st.sampled_from(keys), JSON_VALUES, max_size=len(keys)) if keys else st.just({})
    return st.one_of(known, st.dictionaries(st.text(max_size=8), JSON_VALUES, max_size=3), JSON_VALUES)


@pytest.mark.parametrize("name", schemas.schema_names())
def test_row43_compiled_validator_conforms_to_jsonschema(name):
    """The fast path (fastjsonschema) and the explaining path (jsonschema) never disagree."""
    validate = compiled(name)

    @settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
    @given(_documents(name))
    def agree(document):
        try:
            validate(document)
            fast_ok = True
        except ValueError:
            fast_ok = False
        assert fast_ok == (not schemas.issues(document, name)), document

    agree()


def test_row43_schema_failure_is_a_clear_error_with_key_and_line(tmp_path):
    """The memory-state schema (a real one): the finding names the key and its line."""
    write(tmp_path, {"memory/STATE.md": "---\nrun: 7\n---\n# state\n"})
    found = [f for f in run(tmp_path, ["WK002"]).findings]
    assert found and all(f.path == "memory/STATE.md" and f.message.endswith("[schema memory-state]") for f in found)
    assert any(f.line == 2 and "frontmatter run" in f.message for f in found) or any(
        "required property" in f.message for f in found
    )


# --- row 44 ----------------------------------------------------------------------------------


def test_row44_hostile_paths_on_the_command_line_are_exit_2(tmp_path):
    root = write(tmp_path / "repo", {NOTE: "# n\n"})
    outside = tmp_path / "outside.md"
    outside.write_text("# o\n")
    os.symlink(outside, root / "wiki" / "link.md")
    cases = {
        "../outside.md": "outside the wiki repository",
        str(outside): "outside the wiki repository",
        "wiki/link.md": "outside the wiki repository",
        "wiki/missing.md": "no such file",
        "wiki/\x00nul.md": "NUL",
    }
    for arg, words in cases.items():
        proc = cli_process(root, "--root", str(root), "--", arg) if "\x00" not in arg else None
        if proc is None:
            from wikiengine._cli.lint import _targets
            from wikiengine.core.errors import WikiError

            with pytest.raises(WikiError, match=words):
                _targets(root, [arg])
            continue
        assert proc.returncode == 2, (arg, proc.stdout, proc.stderr)
        assert words in proc.stderr and "Traceback" not in proc.stderr, arg
        assert len(proc.stderr.strip().splitlines()) == 1


def test_row44_links_that_leave_the_repository_and_hostile_names(tmp_path):
    write(tmp_path, {
        NOTE: "# n\n\n[a](../../../etc/passwd) [b](..%2F..%2F..%2Fetc%2Fpasswd)\n",
        "wiki/notes/CON.md": "# reserved\n",
        "wiki/notes/Slug.md": "# s\n",
        "wiki/notes/slug.md": "# s\n",
    })
    found = {(f.path, f.code) for f in run(tmp_path, ["LNK", "WK003"]).findings}
    assert (NOTE, "LNK001") in found
    assert {("wiki/notes/CON.md", "WK003"), ("wiki/notes/Slug.md", "WK003"), ("wiki/notes/slug.md", "WK003")} <= found
    messages = [f.message for f in run(tmp_path, ["LNK"]).findings]
    assert all("outside the repository" in m for m in messages) and len(messages) == 2


# --- row 49 ----------------------------------------------------------------------------------

FRAGMENTS = [
    "---\n", "...\n", "status: supported\n", "status: in_progress\n", "verdict: refuted\n", "created: 2026-01-02\n",
    "created: [\n", "a: &x 1\n", "b: *x\n", "k: !!str v\n", "k: 1\nk: 2\n", "- item\n", "## Setup\n", "## Results\n",
    "## Verdict\n", "## Config\n", "## Hypothesis under test\n", "**Hypothesis**: x\n", "```yaml\n", "```\n",
    "~~~\n", "<!--\n", "-->\n", "<!-- wiki-lint: disable LNK001 -->\n", "<!-- wiki-lint: disable-file WK100,EXP001 -->\n",
    "[link](missing.md)\n", "[x][ref]\n", "[ref]: ../../../x\n", "| a | b |\n", "|---|---|\n", "| 1 | 2 |\n",
    "## [2026-01-02] loop-iteration | v001\n", "**Op**: start\n", "\ufeff", "\r\n", "\t## tab\n", "    ## indented\n",
    "> ## quoted\n", "Setext\n---\n", "===\n", "\x00", "# Title\n", "wake_interval_s: 30\n",
]
PAGE_PATHS = [
    NOTE, "wiki/experiments/program.md", "wiki/experiments/gemma4_autoresearch_optimization/tpu/program.md",
    "wiki/experiments/gemma4_autoresearch_optimization/tpu/2026-01-02-v001-x.md",
    "wiki/experiments/gemma4_autoresearch_optimization/tpu/log.md", "wiki/log.md", "wiki/models/gemma4-tpu.md",
    "wiki/hypotheses/h.md", "memory/STATE.md", "memory/QUOTA.md", "memory/ERRORS.md", "memory/ASSETS.md", ".env/c.md",
]
PAGES = st.one_of(
    st.lists(st.sampled_from(FRAGMENTS) | st.text(max_size=20), max_size=25).map("".join),
    st.binary(max_size=200).map(lambda b: b.decode("utf-8", errors="replace")),
)


@settings(max_examples=120, deadline=None, suppress_health_check=list(HealthCheck))
@given(pages=st.dictionaries(st.sampled_from(PAGE_PATHS), PAGES, min_size=1, max_size=4), raw=st.booleans())
def test_row49_fuzzed_wikis_give_findings_never_a_crash_or_hang(tmp_path_factory, pages, raw):
    root = tmp_path_factory.mktemp("fuzz")
    write(root, {rel: (text.encode("utf-8", errors="surrogatepass") + b"\xff" if raw else text) for rel, text in pages.items()})
    with hang_guard(60):
        result = lint(root, config=LintConfig(), base=None, use_cache=False, jobs=1)
    for finding in result.findings:
        assert finding.line >= 1 and finding.code and finding.message
        assert finding.path in pages or finding.path.endswith(".md")


def test_row44_symlinked_pages_that_leave_the_repository_or_never_end(tmp_path):
    outside = tmp_path / "secret.md"
    outside.write_text("# outside\n")
    root = write(tmp_path / "repo", {NOTE: "# n\n"})
    os.symlink(outside, root / "wiki" / "notes" / "escape.md")
    os.symlink("/dev/zero", root / "wiki" / "notes" / "zero.md")
    with hang_guard(60):
        found = {(f.path, f.code, f.message) for f in run(root, ["WK"]).findings}
    assert ("wiki/notes/escape.md", "WK003", "path is a symbolic link to a file outside the repository") in found
    assert ("wiki/notes/zero.md", "WK001", "symbolic link to a file outside the repository: not read") in found
    assert ("wiki/notes/escape.md", "WK001", "symbolic link to a file outside the repository: not read") in found
