"""WK001-WK003, WK100, WK101: a failing and a passing page for each engine rule."""

from __future__ import annotations

import os
import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tests.lint_support import NOTE, cli, use_schema, write
from wikiengine.core import schemas
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig


def run(root, select):
    return lint(root, config=LintConfig(select=select), base=None, use_cache=False)


@pytest.mark.parametrize(
    "content, line, words",
    [
        (b"# bad \xff\n", 1, "not valid UTF-8"),
        ("---\nstatus: a\nstatus: b\n---\n# x\n", 3, "duplicate key 'status'"),
        ("---\nstatus: a\n# never closed\n", 1, "unterminated frontmatter"),
        ("---\n- a list\n---\n", 2, "not a mapping"),
        ("---\nx: !!python/object:os.system ls\n---\n", 2, "tags are not allowed"),
    ],
)
def test_wk001_unreadable_page(tmp_path, content, line, words):
    write(tmp_path, {NOTE: content})
    found = run(tmp_path, ["WK001"]).findings
    assert [(f.code, f.line) for f in found] == [("WK001", line)]
    assert words in found[0].message


def test_wk001_passes_a_readable_page(tmp_path):
    write(tmp_path, {NOTE: "---\nstatus: a\n---\n# fine\n"})
    assert run(tmp_path, ["WK001"]).findings == []


@pytest.fixture
def hypothesis_schema(tmp_path, monkeypatch):
    """A schema for the 'hypothesis' kind, independent of the repository's own schemas."""
    use_schema(monkeypatch, tmp_path, "hypothesis", {
        "type": "object",
        "required": ["status", "created"],
        "properties": {
            "status": {"enum": ["open", "closed"]},
            "created": {"type": "string", "pattern": "^\\d{4}-\\d{2}-\\d{2}$"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "additionalProperties": False,
    })
    yield
    schemas.load_schema.cache_clear()
    schemas._validator.cache_clear()


def test_wk002_names_the_key_and_its_line(tmp_path, hypothesis_schema):
    write(tmp_path / "w", {
        "wiki/hypotheses/h.md": "---\ncreated: 2026-01-02\ntags:\n  - a\n  - 7\nstatus: maybe\n---\n# h\n",
    })
    found = run(tmp_path / "w", ["WK002"]).findings
    assert [(f.line, f.message) for f in found] == [
        (5, "frontmatter tags/1: 7 is not of type 'string' [schema hypothesis]"),
        (6, "frontmatter status: 'maybe' is not one of ['open', 'closed'] [schema hypothesis]"),
    ]


def test_wk002_missing_key_and_no_frontmatter(tmp_path, hypothesis_schema):
    write(tmp_path / "w", {"wiki/hypotheses/h.md": "# no frontmatter\n"})
    found = run(tmp_path / "w", ["WK002"]).findings
    assert [f.line for f in found] == [1, 1]
    assert {"'status' is a required property", "'created' is a required property"} == {
        f.message.split(": ", 1)[1].split(" [")[0] for f in found
    }


def test_row42_wk002_yaml_typing_no_and_octal_are_caught(tmp_path, hypothesis_schema):
    """Row 42: `status: no` loads as a bool and `created: 052` as an int; the schema says so."""
    write(tmp_path / "w", {"wiki/hypotheses/h.md": "---\nstatus: no\ncreated: 052\n---\n"})
    found = run(tmp_path / "w", ["WK002"]).findings
    assert [f.line for f in found] == [2, 3]
    assert "False is not one of" in found[0].message and "42 is not of type 'string'" in found[1].message


def test_wk002_passes_a_valid_page(tmp_path, hypothesis_schema):
    write(tmp_path / "w", {"wiki/hypotheses/h.md": "---\nstatus: open\ncreated: 2026-01-02\n---\n# h\n"})
    assert run(tmp_path / "w", ["WK002"]).findings == []


def test_wk003_case_collision_and_reserved_name(tmp_path):
    write(tmp_path, {"wiki/notes/Remat.md": "# a\n", "wiki/notes/remat.md": "# b\n", "wiki/notes/aux.md": "# c\n"})
    found = run(tmp_path, ["WK003"]).findings
    assert sorted((f.path, f.message.split(":")[0]) for f in found) == [
        ("wiki/notes/Remat.md", "path collides with wiki/notes/remat.md on a case-insensitive or normalising file system"),
        ("wiki/notes/aux.md", "path is not portable"),
        ("wiki/notes/remat.md", "path collides with wiki/notes/Remat.md on a case-insensitive or normalising file system"),
    ]


def test_wk003_nfd_name_collides_with_nfc(tmp_path):
    write(tmp_path, {"wiki/notes/caf\u00e9.md": "# a\n", "wiki/notes/cafe\u0301.md": "# b\n"})
    found = run(tmp_path, ["WK003"]).findings
    assert len(found) >= 2 and all(f.code == "WK003" for f in found)


def test_wk003_passes_portable_names(tmp_path):
    write(tmp_path, {"wiki/notes/remat.md": "# a\n", "wiki/notes/remat-2.md": "# b\n"})
    assert run(tmp_path, ["WK003"]).findings == []


def test_wk003_is_kept_while_the_paths_and_the_links_are_the_same(tmp_path):
    """WK003 reads paths, not pages: an edit keeps its findings (it does not run again), while a
    link retargeted, or a page turned into a link in a folder the walk kept from the last run,
    is judged again, as an uncached run judges it."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "o.md").write_text("# o\n")
    root = write(tmp_path / "repo", {"wiki/notes/in.md": "# in\n", "wiki/notes/Slug.md": "# s\n",
                                     "wiki/other/b.md": "# b\n"})
    link, other = root / "wiki/notes/link.md", root / "wiki/other/b.md"
    link.symlink_to(outside / "o.md")
    for folder in (root / "wiki", root / "wiki/notes", root / "wiki/other"):  # settled: the walk keeps their listing
        os.utime(folder, ns=(folder.stat().st_mtime_ns - 10**10,) * 2)
    config = LintConfig(select=["WK003"])

    def both():
        cached = lint(root, config=config, base=None)
        assert cached.findings == lint(root, config=config, base=None, use_cache=False).findings
        return cached, {(f.path, f.message.split(" ")[3]) for f in cached.findings}

    assert both()[1] == {("wiki/notes/link.md", "symbolic")}
    both()
    (root / "wiki/notes/in.md").write_text("# in, edited\n")
    edited, found = both()
    assert found == {("wiki/notes/link.md", "symbolic")} and "wiki_run:WK003" not in edited.stats
    link.unlink()
    link.symlink_to(root / "wiki/notes/in.md")
    assert both()[1] == set()
    other.unlink()
    other.symlink_to(outside / "o.md")
    assert both()[1] == {("wiki/other/b.md", "symbolic")}


_PART = st.lists(st.sampled_from([*"abcAB.- _:?<\u00e9", "e\u0301", "con", "Aux", "lpt1", "\x07"]),
                 min_size=1, max_size=6).map("".join)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.lists(_PART, min_size=1, max_size=3).map("/".join), min_size=1, max_size=6, unique=True))
def test_wk003_a_list_judged_at_once_is_portable_only_where_each_path_is(paths):
    """WK003 looks at the whole list first (0.4 s path by path at 50,000 pages, each time one is
    added): a list it calls portable has no path that folds onto another and no component the
    rule reports, as the path-by-path loop judges them, and of ASCII paths it says exactly that."""
    from wikiengine.lint.rules.portable_path import _portable, _problem

    files = sorted(paths)
    folded = {unicodedata.normalize("NFC", rel).casefold() for rel in files}
    each = len(folded) == len(files) and not any(_problem(part) for rel in files for part in rel.split("/"))
    if _portable(files):
        assert each
    if all(rel.isascii() for rel in files):
        assert _portable(files) == each  # for ASCII names, the same verdict: the loop runs only on a finding


def test_wk100_fails_and_passes(tmp_path):
    write(tmp_path, {NOTE: "# n\n<!-- wiki-lint: disable LNK001 -->\nplain\n"})
    assert [f.code for f in run(tmp_path, ["WK100", "LNK"]).findings] == ["WK100"]
    write(tmp_path, {NOTE: "# n\n<!-- wiki-lint: disable LNK001 -->\n[x](missing.md)\n"})
    assert run(tmp_path, ["WK100", "LNK"]).findings == []


def test_wk101_fails_and_passes(tmp_path, capsys):
    write(tmp_path, {NOTE: "# n\n[x](missing.md)\n"})
    cli(capsys, tmp_path, "--select", "LNK,WK101", "--write-baseline")
    assert cli(capsys, tmp_path, "--select", "LNK,WK101")[0] == 0
    write(tmp_path, {NOTE: "# n\n"})
    status, out, _ = cli(capsys, tmp_path, "--select", "LNK,WK101")
    assert status == 1 and "WK101" in out
