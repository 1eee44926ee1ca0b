"""RUN001: a stop needs a retrospective of the same lane filed since the lane's last start
(seed 001 Step 8 Q2 and 003 Step 8: the 2026-05-21 gemma4-jax premature stop)."""

from __future__ import annotations

from tests.rules_wiki import LANE, findings, write

LANE_LOG = f"{LANE}/log.md"


def lane_log(*entries: str) -> str:
    return "".join(f"## {e}\n\n" for e in entries)


SESSION = lane_log("[2026-06-09] stop | /stop-experiment", "[2026-06-05] loop-iteration | idle", "[2026-06-01] start | begin")


def test_run001_points_at_the_stop_entry(tmp_path):
    write(tmp_path, {LANE_LOG: SESSION})
    (finding,) = findings(tmp_path, "RUN001")
    assert finding.path == LANE_LOG and finding.line == 1 and "2026-06-01" in finding.message


def test_run001_finds_retrospectives_where_real_wikis_file_them(tmp_path):
    """wiki/analyses/<date>-<model>-<lane>-retrospective.md binds by its name (or its
    frontmatter), never by file time."""
    from tests.rules_wiki import findings, write

    log = ("# log\n\n## [2026-06-08] stop | frontier flat\n\n**Op**: stop\n\n"
           "## [2026-06-01] start | session begin\n\n**Op**: start\n")
    lane_log = "wiki/experiments/gemma4_autoresearch_optimization/tpu/log.md"
    retro = "---\ntype: analysis\ncreated: 2026-06-07\n---\n# retro\n"
    write(tmp_path, {lane_log: log, "wiki/analyses/2026-06-07-gemma4-tpu-retrospective.md": retro})
    assert findings(tmp_path, "RUN001") == [] and findings(tmp_path, "RUN002") == []
    other = tmp_path / "other"
    write(other, {lane_log: log, "wiki/analyses/2026-06-07-gemma4-jax-retrospective.md": retro})
    (found,) = findings(other, "RUN001")
    assert "no retrospective of gemma4/tpu" in found.message
