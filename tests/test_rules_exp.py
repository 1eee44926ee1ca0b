"""EXP001-EXP011: experiment pages (seed 001/003 Step 9: stub, sections, four labelled
paragraphs, verdicts, BACKFILL, immutability). Each case is one page and the findings
of one rule on it; RELIABILITY row 38 is tested in a real temporary git repository."""

from __future__ import annotations

import pytest

from tests.rules_wiki import (
    LANE,
    NOT_RECOVERED,
    OTHER_LANE,
    assert_finds,
    commit_all,
    experiment_page,
    findings,
    git,
    git_init,
    write,
)
from wikiengine.lint.config import LintConfig
from wikiengine.lint.context import LintContext, discover
from wikiengine.lint.registry import rule_class

PAGE = f"{LANE}/2026-06-02-v042-splash.md"
SUB = f"{LANE}/experiments/2026-06-02-v042-splash.md"

# (case, code, {path: text}, rule options, expected number of findings): the cases that need
# rule options; every rule's fixture wiki (tests/test_rule_wikis.py) holds the others.
CASES = [
    (
        "exp001-old-scheme-declared", "EXP001", {f"{LANE}/2025-11-02-exp34-old.md": experiment_page(created="2025-11-02")},
        {"id-pattern": r"v\d{3,}|exp\d+"}, 0,
    ),
    ("exp002-custom-sections", "EXP002", {PAGE: experiment_page(sections={"Setup": None})}, {"sections": ["Verdict"]}, 0),
]


@pytest.mark.parametrize("case,code,files,options,expected", CASES, ids=[c[0] for c in CASES])
def test_experiment_rule(tmp_path, case, code, files, options, expected):
    write(tmp_path, files)
    assert_finds(tmp_path, code, expected, **options)


def test_findings_name_file_and_line(tmp_path):
    write(tmp_path, {PAGE: experiment_page(sections={"Profile": ""})})
    (finding,) = findings(tmp_path, "EXP004")
    text = (tmp_path / PAGE).read_text().splitlines()
    assert finding.path == PAGE and text[finding.line - 1] == "## Profile"


def _context(root):
    files = discover(root)
    return LintContext(root=root, config=LintConfig(), files=files, targets=files)


def test_exp002_fix_adds_missing_sections_to_a_stub_only(tmp_path):
    stub = experiment_page(status="in_progress", sections={"Profile": None, "HLO Dump": None, "Verdict": None})
    write(tmp_path, {PAGE: stub, f"{LANE}/2026-06-03-v043-done.md": experiment_page(created="2026-06-03", sections={"Profile": None})})
    ctx = _context(tmp_path)
    rule = rule_class("EXP002")()
    fixed = rule.fix(ctx.info(PAGE), ctx)
    assert [s.title for s in fixed.sections][-3:] == ["Profile", "HLO Dump", "Verdict"]
    assert fixed.to_text().startswith(stub)  # nothing else changed
    (tmp_path / PAGE).write_text(fixed.to_text())
    assert [f.path for f in findings(tmp_path, "EXP002")] == [f"{LANE}/2026-06-03-v043-done.md"]
    ctx = _context(tmp_path)
    assert rule.fix(ctx.info(f"{LANE}/2026-06-03-v043-done.md"), ctx) is None  # never on a verdict page


def test_exp002_fix_keeps_the_seed_order_and_only_stub_findings_are_fixable(tmp_path):
    stub = experiment_page(status="in_progress", sections={"Results": None})
    done = f"{LANE}/2026-06-03-v043-done.md"
    write(tmp_path, {PAGE: stub, done: experiment_page(created="2026-06-03", sections={"Results": None})})
    assert {(f.path, f.fixable) for f in findings(tmp_path, "EXP002")} == {(PAGE, True), (done, False)}
    ctx = _context(tmp_path)
    fixed = rule_class("EXP002")().fix(ctx.info(PAGE), ctx)
    assert [s.title for s in fixed.sections] == ["Hypothesis under test", "Setup", "Results", "Profile", "HLO Dump", "Verdict"]
    assert fixed.to_text().replace("## Results\n\n", "", 1) == stub


def test_seed_backfilled_page_lints_clean(tmp_path):
    """Seed Step 9 iteration 0: a BACKFILL page (verdict inconclusive, no Profile/HLO Dump)."""
    page = experiment_page(
        status="inconclusive", backfilled="true", reason="'backfilled — profile-analyzer not dispatched'",
        sections={"Hypothesis under test": NOT_RECOVERED, "Profile": "", "HLO Dump": "", "Verdict": "inconclusive\n"},
    )
    write(tmp_path, {PAGE: page})
    assert [f.render() for f in findings(tmp_path, "EXP")] == []


# --- git-aware: EXP007 (RELIABILITY row 38) and EXP011 ------------------------------------


def _repo(tmp_path, files):
    write(tmp_path, files)
    git_init(tmp_path)
    return commit_all(tmp_path, "file pages")


def test_row38_verdict_page_edit_committed_with_no_verify_is_flagged_since_rev(tmp_path):
    trusted = _repo(tmp_path, {PAGE: experiment_page()})
    path = tmp_path / PAGE
    path.write_text(path.read_text().replace("status: supported", "status: refuted").replace("**supported**", "**refuted**"))
    commit_all(tmp_path, "quietly flip the verdict", no_verify=True)
    assert findings(tmp_path, "EXP007", base="HEAD") == []  # HEAD itself is the edit: the hook would have run here
    found = findings(tmp_path, "EXP007", base=trusted)
    assert len(found) == 1 and found[0].path == PAGE and "changed" in found[0].message


def test_row38_wiki_lint_since_rev_exits_1_on_a_no_verify_verdict_edit(tmp_path, capsys):
    from wikiengine._cli import main as cli

    trusted = _repo(tmp_path, {PAGE: experiment_page()})
    assert cli.main(["lint", "--root", str(tmp_path), "--no-cache", "--select", "EXP007", "--since", trusted]) == 0
    (tmp_path / PAGE).write_text(experiment_page(mfu=99.0))
    commit_all(tmp_path, "inflate the result", no_verify=True)
    capsys.readouterr()
    assert cli.main(["lint", "--root", str(tmp_path), "--no-cache", "--select", "EXP007", "--since", trusted]) == 1
    out = capsys.readouterr().out
    assert f"{PAGE}:1:1: EXP007" in out
    assert cli.main(["lint", "--root", str(tmp_path), "--no-cache", "--select", "EXP007", "--since", "no-such-rev"]) == 2


def test_row38_uncommitted_edit_and_rename_of_verdict_page_are_flagged(tmp_path):
    _repo(tmp_path, {PAGE: experiment_page(status="filed", verdict="supported"), SUB.replace("v042", "v043"): experiment_page()})
    (tmp_path / PAGE).write_text((tmp_path / PAGE).read_text() + "\nA late note.\n")
    git(tmp_path, "mv", SUB.replace("v042", "v043"), SUB.replace("v042-splash", "v043-renamed"))
    found = {f.path: f.message for f in findings(tmp_path, "EXP007", base="HEAD")}
    assert "changed" in found[PAGE]
    assert "renamed from" in found[SUB.replace("v042-splash", "v043-renamed")]


def test_row38_deleted_verdict_page_is_reported_on_its_own_path(tmp_path):
    _repo(tmp_path, {PAGE: experiment_page(), f"{LANE}/log.md": "## [2026-06-02] loop-iteration | v042: supported\n"})
    (tmp_path / PAGE).unlink()
    (found,) = findings(tmp_path, "EXP007", base="HEAD")
    assert found.path == PAGE and "deleted" in found.message


def test_row38_staged_deletion_is_reported_by_a_precommit_run_on_the_other_staged_files(tmp_path, capsys):
    """pre-commit passes the staged files that exist: the deleted page is not among them,
    and neither is the lane log; the deletion must still be reported."""
    from wikiengine._cli import main as cli

    log = f"{LANE}/log.md"
    other = "wiki/notes/unrelated.md"  # unlike the page, so that git sees no rename
    _repo(tmp_path, {PAGE: experiment_page(), log: "## [2026-06-02] loop-iteration | v042: supported\n"})
    git(tmp_path, "rm", "-q", PAGE)
    write(tmp_path, {other: "# Unrelated\n\nA note.\n"})
    git(tmp_path, "add", other)
    capsys.readouterr()
    assert cli.main(["lint", "--root", str(tmp_path), "--select", "EXP007", str(tmp_path / other)]) == 1
    out = capsys.readouterr().out
    assert f"{PAGE}:1:1: EXP007 verdict page" in out and "deleted" in out
    assert log not in out and f"{other}:" not in out


def test_row38_assigning_the_verdict_and_editing_a_stub_are_allowed(tmp_path):
    _repo(tmp_path, {PAGE: experiment_page(status="in_progress")})
    (tmp_path / PAGE).write_text(experiment_page(status="supported"))
    assert findings(tmp_path, "EXP007", base="HEAD") == []
    commit_all(tmp_path, "verdict")
    (tmp_path / PAGE).write_text(experiment_page(status="supported") + "\nedit\n")
    assert len(findings(tmp_path, "EXP007", base="HEAD")) == 1


def test_row38_a_precommit_run_takes_the_base_verdicts_it_saw_before(tmp_path, monkeypatch):
    """The verdict of a page's text at the base is kept by that text's hash: the next pre-commit
    run over the same edits parses no base text, and a commit's new text is parsed again."""
    from wikiengine.lint import lint
    from wikiengine.lint.rules import experiment_immutable

    stub = SUB.replace("v042", "v043")
    _repo(tmp_path, {PAGE: experiment_page(), stub: experiment_page(status="in_progress")})
    for rel in (PAGE, stub):
        (tmp_path / rel).write_text((tmp_path / rel).read_text() + "\nA late note.\n")
    config = LintConfig(select=["EXP007"])
    real_parse, parsed = experiment_immutable.parse_page, []
    monkeypatch.setattr(experiment_immutable, "parse_page", lambda text, rel: parsed.append(rel) or real_parse(text, rel))

    def run() -> list[str]:
        parsed.clear()
        return [f.path for f in lint(tmp_path, [PAGE, stub], config=config).findings]

    assert run() == [PAGE] and sorted(parsed) == sorted([PAGE, stub])
    assert run() == [PAGE] and parsed == []
    commit_all(tmp_path, "the late notes", no_verify=True)
    (tmp_path / PAGE).write_text((tmp_path / PAGE).read_text() + "\nAnother.\n")
    assert run() == [PAGE] and parsed == [PAGE]  # the committed text is new


def test_a_lanes_conventions_are_kept_while_the_programs_are_the_same(tmp_path, monkeypatch):
    """A lane's page conventions are kept in a table of the cache: the next run over its pages
    resolves no program, and an edited program (in the cache's fingerprint) is resolved again."""
    from wikiengine.lint import lint
    from wikiengine.lint.rules import _experiments

    older = f"{LANE}/2026-04-02-exp34-splash-accepted.md"
    model_program = "wiki/experiments/gemma4_autoresearch_optimization/program.md"
    conventions = ("# Gemma4\n\n## Config\n\n```yaml\npage_conventions:\n  id_pattern: 'exp\\d+'\n"
                   "  required_sections: [Hypothesis under test, Setup, Results, Profile, Verdict]\n```\n")
    write(tmp_path, {older: experiment_page(created="2026-04-02", sections={"HLO Dump": None}),
                     "wiki/experiments/program.md": "# Root\n\n## Rules\n\nOne change.\n", model_program: conventions})
    config = LintConfig(select=["EXP001", "EXP002"])
    assert lint(tmp_path, [older], config=config).findings == []
    real = _experiments._resolved_conventions
    with monkeypatch.context() as patched:
        patched.setattr(_experiments, "_resolved_conventions", lambda *a: pytest.fail("a program was resolved"))
        assert lint(tmp_path, [older], config=config).findings == []
        assert lint(tmp_path, config=config).findings == []
    resolved = []
    monkeypatch.setattr(_experiments, "_resolved_conventions", lambda *a: resolved.append(a[1]) or real(*a))
    write(tmp_path, {model_program: "# Gemma4\n\n## Rules\n\nNo conventions of its own.\n"})
    assert {f.code for f in lint(tmp_path, [older], config=config).findings} == {"EXP001", "EXP002"}
    assert len(resolved) == 1  # the one lane, once: the table went with the old programs


def test_exp007_outside_git_is_skipped_with_a_notice(tmp_path):
    from wikiengine.lint import lint

    write(tmp_path, {PAGE: experiment_page()})
    result = lint(tmp_path, config=LintConfig(select=["EXP007"]))
    assert result.findings == [] and result.notices


def test_exp011_stale_stub_measured_from_commit_time(tmp_path):
    write(tmp_path, {PAGE: experiment_page(status="in_progress", created="2099-01-01")})
    git_init(tmp_path)
    commit_all(tmp_path, "old stub", date="2020-01-01T00:00:00Z")
    found = findings(tmp_path, "EXP011", base="HEAD")
    assert len(found) == 1 and "2020-01-01" in found[0].message
    assert findings(tmp_path, "EXP011", base="HEAD", **{"max-age-days": 100000}) == []
    assert findings(tmp_path, "EXP011", base="HEAD", **{"max-age-hours": 10_000_000}) == []


def test_exp011_a_stub_left_running_or_pending_is_stale_too(tmp_path):
    write(tmp_path, {PAGE: experiment_page(status="in_progress").replace("status: in_progress", "status: running")})
    git_init(tmp_path)
    commit_all(tmp_path, "old stub", date="2020-01-01T00:00:00Z")
    (found,) = findings(tmp_path, "EXP011", base="HEAD")
    assert found.message.startswith("running since 2020-01-01")


def test_exp011_a_stub_just_over_the_age_limit_is_stale_and_one_just_under_is_not(tmp_path):
    """A stub committed just over max-age-hours ago is stale; one just under is not (the
    rule passes over recent stubs by their epoch seconds before it makes datetimes)."""
    import datetime as dt

    write(tmp_path, {PAGE: experiment_page(status="in_progress")})
    git_init(tmp_path)
    now = dt.datetime.now(dt.UTC)
    for seconds, stale in ((3600 + 30, True), (3600 - 30, False)):  # (margins for a slow machine)
        moment = (now - dt.timedelta(seconds=seconds)).replace(microsecond=0)
        commit_all(tmp_path, "stub", date=moment.strftime("%Y-%m-%dT%H:%M:%SZ"))
        found = findings(tmp_path, "EXP011", base="HEAD", **{"max-age-hours": 1})
        assert [f.path for f in found] == ([PAGE] if stale else []), seconds
        git(tmp_path, "update-ref", "-d", "HEAD")  # the next commit is the stub's first again


def test_exp011_recent_stub_and_verdict_pages_pass(tmp_path):
    write(tmp_path, {PAGE: experiment_page(status="in_progress"), f"{LANE}/2026-06-03-v043-x.md": experiment_page(created="2026-06-03")})
    git_init(tmp_path)
    commit_all(tmp_path, "stub")
    assert findings(tmp_path, "EXP011", base="HEAD") == []
    git(tmp_path, "commit", "-q", "--amend", "-m", "old", date="2020-01-01T00:00:00Z")
    assert [f.path for f in findings(tmp_path, "EXP011", base="HEAD")] == [PAGE]



def test_exp011_after_a_commit_asks_the_commit_times_again_not_the_lanes(tmp_path, monkeypatch):
    """A commit moves the base and no page: the open stubs are the cache's, and their first
    commit times are carried over with the commits since, not walked from the start (a
    whole-wiki run at 50,000 pages judged every lane's pages again after each commit: 3 s of
    CPU, 0.3 s warm; then walked the whole history: 0.2 s); the times must still follow the base."""
    from wikiengine.lint import lint
    from wikiengine.lint.gitview import GitView

    committed = f"{OTHER_LANE}/2026-06-01-v041-old.md"
    write(tmp_path, {committed: experiment_page(status="in_progress")})
    git_init(tmp_path)
    commit_all(tmp_path, "an old stub", date="2020-01-01T00:00:00Z")
    write(tmp_path, {PAGE: experiment_page(status="in_progress")})  # not committed: never stale
    config = LintConfig(select=["EXP011"])
    for _ in range(2):
        assert [f.path for f in lint(tmp_path, config=config).findings] == [committed]
    git(tmp_path, "add", "-A")
    git(tmp_path, "commit", "-q", "-m", "the new stub, long ago", date="2021-01-01T00:00:00Z")
    walked = GitView._times_under
    monkeypatch.setattr(GitView, "_times_under", lambda view, folder: pytest.fail("walked the whole history"))
    after = lint(tmp_path, config=config)
    monkeypatch.setattr(GitView, "_times_under", walked)
    assert sorted(f.path for f in after.findings) == sorted([committed, PAGE])
    assert "2021-01-01" in next(f.message for f in after.findings if f.path == PAGE)
    assert not after.stats.get("lane_parts_run") and not after.stats.get("analysed")
    assert [f.render() for f in after.findings] == [f.render() for f in lint(tmp_path, config=config,
                                                                             use_cache=False).findings]


def test_exp011_after_a_merge_or_a_reset_walks_the_whole_history_again(tmp_path):
    """The first commit times are carried over only along commits of one parent each. A merge
    may prune a side of the history from the whole walk: here main filed a stub, a branch filed
    the same stub later and merged main in keeping its own tree, and main moved up to that
    merge. The walk follows the branch alone (the merge is its tree): the stub is first committed
    when the branch filed it. Carried over with the commits since, main's older commit would
    have stayed. A reset drops commits from the walk. There the times are walked again, and
    equal a run's without the cache."""
    from wikiengine.lint import lint

    write(tmp_path, {f"{OTHER_LANE}/2026-06-01-v041-done.md": experiment_page()})
    git_init(tmp_path)
    commit_all(tmp_path, "a verdict", date="2018-01-01T00:00:00Z")
    fork = git(tmp_path, "rev-parse", "HEAD")
    main = git(tmp_path, "rev-parse", "--abbrev-ref", "HEAD")
    config = LintConfig(select=["EXP011"])

    def agree() -> str:
        cached = [f.render() for f in lint(tmp_path, config=config).findings]
        assert cached == [f.render() for f in lint(tmp_path, config=config, use_cache=False).findings]
        (found,) = cached
        return found

    write(tmp_path, {PAGE: experiment_page(status="in_progress")})
    commit_all(tmp_path, "the stub, on main", date="2019-01-01T00:00:00Z")
    assert "since 2019-01-01" in agree()
    git(tmp_path, "checkout", "-q", "-b", "side", fork)
    write(tmp_path, {PAGE: experiment_page(status="in_progress")})
    commit_all(tmp_path, "the same stub, later, on a branch", date="2021-01-01T00:00:00Z")
    git(tmp_path, "merge", "-q", "-s", "ours", "-m", "main merged in", main, date="2021-02-01T00:00:00Z")
    git(tmp_path, "checkout", "-q", main)
    git(tmp_path, "merge", "-q", "--ff-only", "side")
    assert "since 2021-01-01" in agree()
    git(tmp_path, "reset", "-q", "--hard", "HEAD~1")  # the branch's commit, before the merge
    assert "since 2021-01-01" in agree()


def test_since_grandfathers_pages_by_their_created_date(tmp_path):
    """Adoption on an old wiki: `[tool.wiki.rules.EXP003] since = ...` silences older pages only."""
    bare = {"Hypothesis under test": "Splash should help.\n"}
    old = f"{LANE}/2026-06-02-v042-old.md"
    new = f"{LANE}/2026-07-02-v043-new.md"
    write(tmp_path, {old: experiment_page(sections=bare), new: experiment_page(created="2026-07-02", sections=bare)})
    assert len(findings(tmp_path, "EXP003")) == 2
    assert [f.path for f in findings(tmp_path, "EXP003", since="2026-07-01")] == [new]


def test_exp008_reports_the_later_page_naming_the_earlier(tmp_path):
    later = f"{LANE}/experiments/2026-06-05-v042-remat.md"
    write(tmp_path, {PAGE: experiment_page(), later: experiment_page(created="2026-06-05")})
    (found,) = findings(tmp_path, "EXP008")
    assert found.path == later and PAGE in found.message


def test_exp002_invalid_and_backfilled_pages_need_no_profile(tmp_path):
    no_profile = {"Profile": None, "HLO Dump": None, "Verdict": "**invalid** — crashed before step 0 (OOM).\n"}
    write(tmp_path, {PAGE: experiment_page(status="invalid", sections=no_profile)})
    assert findings(tmp_path, "EXP002") == []
    supported = tmp_path / "s"
    write(supported, {PAGE: experiment_page(sections={"Profile": None})})
    assert [f.message for f in findings(supported, "EXP002")] == ["missing required section '## Profile'"]


def test_exp002_verdict_plus_reasoning_is_the_verdict(tmp_path):
    page = experiment_page().replace("## Verdict\n", "## Verdict + reasoning\n")
    write(tmp_path, {PAGE: page})
    assert findings(tmp_path, "EXP002") == [] and findings(tmp_path, "EXP006") == []


def test_an_older_lane_describes_its_pages_in_its_program(tmp_path):
    """A model-level program's page_conventions (following the cascade) say that this lane
    names pages exp<NN> and has no HLO Dump: its pages are judged by that, not baselined."""
    older = f"{LANE}/2026-04-02-exp34-splash-accepted.md"
    page = experiment_page(created="2026-04-02", sections={"HLO Dump": None})
    conventions = ("# Gemma4\n\n## Config\n\n```yaml\npage_conventions:\n  id_pattern: 'exp\\d+'\n"
                   "  required_sections: [Hypothesis under test, Setup, Results, Profile, Verdict]\n```\n")
    write(tmp_path, {older: page})
    assert {f.code for f in findings(tmp_path, "EXP001")} == {"EXP001"}
    assert [f.message for f in findings(tmp_path, "EXP002")] == ["missing required section '## HLO Dump'"]
    write(tmp_path, {older: page, "wiki/experiments/program.md": "# Root\n\n## Rules\n\nOne change.\n",
                     "wiki/experiments/gemma4_autoresearch_optimization/program.md": conventions})
    assert findings(tmp_path, "EXP001") == [] and findings(tmp_path, "EXP002") == []
