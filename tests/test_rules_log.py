"""LOG001-LOG005: two-tier logs (seed 003 Step 9b and 2(a): `## [YYYY-MM-DD] op | text`,
newest-first, loop-iteration entries in the lane's log only, compound ops)."""

from __future__ import annotations

import pytest

from tests.rules_wiki import LANE, experiment_page, findings, write
from wikiengine.lint.config import LintConfig
from wikiengine.lint.rules._logs import parse_heading
from wikiengine.lint.runner import lint

LANE_LOG = f"{LANE}/log.md"
GLOBAL_LOG = "wiki/log.md"
PAGE = {f"{LANE}/experiments/2026-06-02-v042-splash.md": experiment_page()}


def log(*headings: str) -> str:
    return "# log\n\n" + "".join(f"## {h}\n\nbody\n\n" for h in headings)


@pytest.mark.parametrize(
    "title,date,ops,problem",
    [
        ("[2026-06-05] run-experiment + CLOSING | v045: x", "2026-06-05", ("run-experiment", "CLOSING"), None),
        ("[2026-06-05] loop-iteration | v045-a on b: supported (+0.6%)", "2026-06-05", ("loop-iteration",), None),
        ("[2026-13-01] start | x", None, ("start",), "not a real"),
        ("[2026-06-05] two words | x", "2026-06-05", ("two words",), "not a word"),
    ],
)
def test_entry_heading_parsing(title, date, ops, problem):
    got_date, got_ops, _text, got_problem = parse_heading(title)
    assert (got_date, got_ops) == (date, ops)
    assert (got_problem is None) == (problem is None) and (problem is None or problem in got_problem)


def test_log_ops_come_from_configuration(tmp_path):
    write(tmp_path, {LANE_LOG: log("[2026-06-02] kernel-sweep | x")})
    assert len(findings(tmp_path, "LOG004")) == 1
    config = LintConfig(select=["LOG004"])
    config.log_ops["lane"] = ["kernel-sweep"]
    assert lint(tmp_path, config=config, base=None).findings == []


def test_seed_start_marker_and_loop_iteration_entries_lint_clean(tmp_path):
    """Seed Step 9b start marker and 2(a) loop-iteration line, verbatim shapes."""
    lane_log = (
        "## [2026-06-02] loop-iteration | v042-splash on 2B/v5p-16: supported (+2.4 MFU vs frontier)\n\n"
        "## [2026-06-01] start | /start-experiment session begin\n\n"
        "**Op**: start\n**Cluster pool**: alice-v5p-16\n**Parallelism**: 1\n"
        "**First-pick hypothesis**: splash attention\n**Notes**: session opened via /start-experiment.\n"
    )
    write(tmp_path, {**PAGE, LANE_LOG: lane_log})
    assert [f.render() for f in findings(tmp_path, "LOG")] == []


def test_since_grandfathers_log_findings_by_the_entry_date_not_the_log_date(tmp_path):
    """A log first committed long ago (its page date) gains a new bad entry: `since` must
    judge the entry by its own date, so only the old entry is grandfathered. An entry
    whose heading has no readable date is never grandfathered."""
    from tests.rules_wiki import commit_all, git_init

    write(tmp_path, {LANE_LOG: log("[2025-01-05] strat | old typo")})
    git_init(tmp_path)
    commit_all(tmp_path, "old log", date="2025-01-05T00:00:00Z")
    assert findings(tmp_path, "LOG004", base="HEAD", since="2026-07-01") == []  # the old entry: grandfathered
    write(tmp_path, {LANE_LOG: log("[2026-07-02] loop-iter | new typo", "[2025-01-05] strat | old typo")})
    found = findings(tmp_path, "LOG004", base="HEAD", since="2026-07-01")
    assert [(f.line, "loop-iter" in f.message) for f in found] == [(3, True)]
    write(tmp_path, {LANE_LOG: log("[2026-13-02] start | undated", "[2025-01-05] start | old")})
    assert [f.line for f in findings(tmp_path, "LOG001", base="HEAD", since="2026-07-01")] == [3]


def test_log003_entries_before_the_log_split_stay_where_they_are(tmp_path):
    from tests.rules_wiki import findings, write

    text = ("# log\n\n## [2026-06-09] loop-iteration | v050-x on 2B/v5p-16: refuted (-1%)\n\n"
            "## [2026-03-01] loop-iteration | v002-y on 2B/v5p-16: supported (+2%)\n")
    write(tmp_path, {"wiki/log.md": text})
    assert [f.line for f in findings(tmp_path, "LOG003")] == [3, 5]
    assert [f.line for f in findings(tmp_path, "LOG003", **{"split-date": "2026-05-01"})] == [3]
