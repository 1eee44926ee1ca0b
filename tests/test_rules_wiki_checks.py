"""LNK001 (submodules, artifact paths), LNK002, IDX001, IDX002, CON001, CDB001, HYP002,
HYP003 and MOD004 on fixture wikis (``tests/rule_fixtures.py``): the findings compared whole."""

from __future__ import annotations

import json
import shutil

from tests.rule_fixtures import build, expected, rendered
from tests.rules_wiki import git
from wikiengine.lint import lint
from wikiengine.lint.baseline import BASELINE_FILE
from wikiengine.lint.config import LintConfig


def test_lnk001_checks_a_submodule_once_it_is_checked_out(tmp_path):
    """The fixture's absent submodule is unverifiable; checked out, its links are checked."""
    root = build("LNK001", tmp_path / "wiki")
    absent = root / "raw" / "code" / "absent"
    (absent / "pkg").mkdir(parents=True)
    (absent / "pkg" / "elsewhere.py").write_text("x = 1\n", encoding="utf-8")
    git(absent, "init", "-q")
    found = rendered(root, "LNK001")
    assert [f for f in found if "absent" in f] == [
        "wiki/codebases/present/catalog/pkg-a.md:16:13: LNK001 link '../../../../raw/code/absent/pkg/other.py#L40' "
        "points to raw/code/absent/pkg/other.py, which does not exist",
    ]


def test_lnk001_outside_git_reads_gitmodules_and_the_file_system(tmp_path):
    root = build("LNK001", tmp_path / "wiki")
    shutil.rmtree(root / ".git")
    assert rendered(root, "LNK001") == expected("LNK001")


def test_lnk001_artifact_paths_come_from_the_configuration(tmp_path):
    root = build("LNK001", tmp_path / "wiki")
    config = LintConfig(select=["LNK001"], artifact_paths=["raw/other/"])
    found = [f.render() for f in lint(root, config=config, base=None, use_cache=False).findings]
    assert sum("raw/profiles/2026-06-03-v024-splash" in f for f in found) == 2


def test_lnk002_is_silent_outside_git(tmp_path):
    root = build("LNK002", tmp_path / "wiki")
    shutil.rmtree(root / ".git")
    assert rendered(root, "LNK002") == []


def test_idx001_sections_option_counts_another_section_by_type(tmp_path):
    root = build("IDX001", tmp_path / "wiki")
    recent = "wiki/index.md:28:1: IDX001 '## Recent (2)' says 2, but the section lists 1"
    assert recent in rendered(root, "IDX001")
    assert rendered(root, "IDX001", sections=["Recent=concept"]) == [f for f in expected("IDX001") if f != recent]


def test_idx001_counts_the_pages_of_a_type_wherever_they_are_but_not_the_generated_silo_pages(tmp_path):
    """The pages of a type before, inside and after wiki/codebases/ are counted; the generated
    silo pages under wiki/codebases/<slug>/ are not, whatever their type."""
    wiki = tmp_path / "wiki"
    for rel in ("analyses/aa.md", "codebases/a.md", "codebases/b.md", "sources/zz.md", "codebases/a/overview/x.md"):
        (wiki / "wiki" / rel).parent.mkdir(parents=True, exist_ok=True)
        (wiki / "wiki" / rel).write_text("---\ntype: codebase\n---\n# page\n", encoding="utf-8")
    index = wiki / "wiki/index.md"
    for said in (4, 5):  # the section lists one page: its count is judged against the type's pages
        index.write_text(f"# Index\n\n## Codebases ({said})\n\n- [a](codebases/a.md)\n", encoding="utf-8")
        found = [f.render() for f in lint(wiki, ["wiki/index.md"], base=None, use_cache=False).findings
                 if f.code == "IDX001"]
        assert found == ([] if said == 4 else ["wiki/index.md:3:1: IDX001 '## Codebases (5)' says 5, but the wiki "
                                                "has 4 codebase pages and the section lists 1"])


def test_idx002_exclude_option_and_no_index(tmp_path):
    root = build("IDX002", tmp_path / "wiki")
    assert rendered(root, "IDX002", exclude=["wiki/analyses/*"]) == [expected("IDX002")[1]]
    (root / "wiki" / "index.md").unlink()
    assert rendered(root, "IDX002") == []


def test_idx002_on_paths_reports_there_what_the_whole_wiki_run_reports(tmp_path):
    """A PATH run (a writer's re-lint) reads the index's links first and stops once its targets
    are all linked; what it reports on them is what the whole wiki's run reports there."""
    root = build("IDX002", tmp_path / "wiki")
    whole = rendered(root, "IDX002")
    pages = sorted(p.relative_to(root).as_posix() for p in (root / "wiki").rglob("*.md"))
    config = LintConfig(select=["IDX002"])
    for use_cache in (False, True):
        for targets in [[rel] for rel in pages] + [pages[:2], pages[-2:], pages]:
            found = lint(root, targets, config=config, base=None, use_cache=use_cache).findings
            assert sorted(f.render() for f in found) == [f for f in whole if f.split(":", 1)[0] in targets], targets


def test_idx002_judges_paths_as_fnmatchcase_does_over_every_glob():
    """The globs matched as one regex (each path judged once) say what fnmatchcase says of each."""
    import fnmatch

    from wikiengine.lint.rules.orphan_page import DEFAULT_EXCLUDE, checked_pages

    paths = ["wiki/index.md", "wiki/concepts/a.md", "wiki/concepts/log.md", "wiki/README.md", "wiki/readme.md",
             "wiki/experiments/x/y.md", "wiki/codebases/jax.md", "wiki/codebases/jax/overview/a.md", "memory/STATE.md",
             "wiki/analyses/2026-[x].md", "wiki/analyses/a?b.md", "wiki/rules\\a.md", "wiki/a\nb.md", "wiki/sub/dir/c.md"]
    for exclude in (DEFAULT_EXCLUDE, DEFAULT_EXCLUDE + ("wiki/analyses/*", "*[[]x]*", "*?b.md", "wiki/sub/*/c.md"), ()):
        checked = checked_pages(exclude)
        for rel in paths * 2:  # the second time from the verdicts kept
            want = rel.startswith("wiki/") and not any(fnmatch.fnmatchcase(rel, glob) for glob in exclude)
            assert checked(rel) == want, (rel, exclude)


def test_cdb001_reads_the_pin_from_the_index_so_a_staged_bump_counts(tmp_path):
    root = build("CDB001", tmp_path / "wiki")
    git(root, "update-index", "--cacheinfo", "160000,0f1e2d3c4b5a000000000000000000000000000f,raw/code/jax")
    found = rendered(root, "CDB001")
    assert not any(f.startswith("wiki/codebases/jax.md:") for f in found)
    assert any(f.startswith("wiki/codebases/jax/catalog/core.md:6:1: CDB001 commit 384b34801168 is not") for f in found)


def test_baseline_written_without_submodules_is_not_stale_once_they_are_checked_out(tmp_path):
    """An older engine (or a wiki that ignored LNK001's submodule rule) baselined links into a
    submodule that was not checked out; checking it out resolves them, and the baseline
    must not then report those entries stale."""
    root = build("LNK001", tmp_path / "wiki")
    page = "wiki/codebases/present/catalog/pkg-a.md"
    message = ("link '../../../../raw/code/absent/pkg/other.py#L40' points to raw/code/absent/pkg/other.py, "
               "which does not exist")
    from wikiengine.lint.baseline import message_hash

    entries = [{"path": page, "code": "LNK001", "hash": message_hash(message), "count": 1, "message": message}]
    (root / BASELINE_FILE).write_text(json.dumps({"version": 1, "entries": entries}), encoding="utf-8")
    absent = root / "raw" / "code" / "absent"
    (absent / "pkg").mkdir(parents=True)
    (absent / "pkg" / "other.py").write_text("x = 1\n" * 50, encoding="utf-8")
    git(absent, "init", "-q")
    result = lint(root, config=LintConfig(select=["LNK001", "WK101"]), base=None, use_cache=False)
    assert sorted(f.code for f in result.findings) == ["LNK001", "LNK001", "LNK001"]  # the fixture's own three
    # An entry about an ordinary page that was fixed is still stale.
    entries.append({"path": page, "code": "LNK001", "hash": "0" * 16, "count": 1, "message": "link 'x.md' points to wiki/x.md, which does not exist"})
    (root / BASELINE_FILE).write_text(json.dumps({"version": 1, "entries": entries}), encoding="utf-8")
    result = lint(root, config=LintConfig(select=["LNK001", "WK101"]), base=None, use_cache=False)
    assert [f.code for f in result.findings].count("WK101") == 1


def test_tracked_tree_reads_files_and_gitlinks_from_the_index(tmp_path):
    from wikiengine.lint.gitview import TrackedTree

    root = build("CDB001", tmp_path / "wiki")
    tree = TrackedTree.read(root)
    assert tree.gitlinks == {
        "raw/code/maxtext": "9b04e7d1c2a3b4c5d6e7f8091a2b3c4d5e6f7081",
        "raw/code/jax": "384b34801168ab1fedb56c90448aab2a118549bc",
    }
    assert "wiki/codebases/jax.md" in tree.files and tree.has_directory("wiki/codebases/jax")
    assert not tree.has_directory("wiki/codebases/ja")
    (root / "wiki" / "new.md").write_text("# new\n", encoding="utf-8")
    git(root, "add", "wiki/new.md")
    assert "wiki/new.md" in TrackedTree.read(root).files  # staged counts: the index, not HEAD
    outside = tmp_path / "plain"
    outside.mkdir()
    assert TrackedTree.read(outside) is None


def test_baseline_written_with_a_submodule_is_not_stale_in_a_clone_without_it(tmp_path):
    root = build("LNK001", tmp_path / "wiki")
    result = lint(root, config=LintConfig(select=["LNK001"]), base=None, use_cache=False)
    from wikiengine.lint.baseline import write

    write(root / BASELINE_FILE, result.findings)
    shutil.rmtree(root / "raw" / "code" / "present")  # a clone without --recursive
    (root / "raw" / "code" / "present").mkdir()
    result = lint(root, config=LintConfig(select=["LNK001", "WK101"]), base=None, use_cache=False)
    assert result.findings == []
    assert result.baselined == 2  # the two broken wiki links still match; the submodule's one is not stale
