"""RUN001: a stop needs a retrospective of the same lane filed since the lane's last start
(seed 001 Step 8 Q2 and 003 Step 8: the 2026-05-21 gemma4-jax premature stop)."""

from __future__ import annotations

import pytest

from tests.rules_wiki import LANE, MODEL_DIR, assert_finds, findings, frontmatter, write

LANE_LOG = f"{LANE}/log.md"


def lane_log(*entries: str) -> str:
    return "".join(f"## {e}\n\n" for e in entries)


SESSION = lane_log("[2026-06-09] stop | /stop-experiment", "[2026-06-05] loop-iteration | idle", "[2026-06-01] start | begin")


def retro(created: str, **keys) -> str:
    return frontmatter(created=created, **keys) + "# retrospective\n\nWhat we learned.\n"


CASES = [
    ("pass-global-retro", {LANE_LOG: SESSION, "wiki/retrospectives/r.md": retro("2026-06-08", model="gemma4", lane="tpu")}, 0),
    ("pass-lane-retro", {LANE_LOG: SESSION, f"{LANE}/retrospectives/2026-06-09-s1.md": retro("2026-06-09")}, 0),
    ("pass-no-stop", {LANE_LOG: lane_log("[2026-06-01] start | begin")}, 0),
    ("no-retro", {LANE_LOG: SESSION}, 1),
    ("retro-of-other-lane", {LANE_LOG: SESSION, "wiki/retrospectives/r.md": retro("2026-06-08", model="gemma4", lane="jax")}, 1),
    ("retro-of-other-lane-dir", {LANE_LOG: SESSION, f"{MODEL_DIR}/jax/retrospectives/r.md": retro("2026-06-08")}, 1),
    ("retro-from-earlier-session", {LANE_LOG: SESSION, "wiki/retrospectives/r.md": retro("2026-05-30", model="gemma4", lane="tpu")}, 1),
    ("retro-after-the-stop", {LANE_LOG: SESSION, "wiki/retrospectives/r.md": retro("2026-06-10", model="gemma4", lane="tpu")}, 1),
    (
        "second-session-needs-its-own",
        {
            LANE_LOG: lane_log("[2026-06-20] stop | s2", "[2026-06-15] start | s2", *SESSION.replace("## ", "").split("\n\n")[:-1]),
            "wiki/retrospectives/r.md": retro("2026-06-09", model="gemma4", lane="tpu"),
        },
        1,
    ),
    ("compound-stop", {LANE_LOG: lane_log("[2026-06-09] loop-iteration + stop | v045 and close", "[2026-06-01] start | b")}, 1),
    (
        "model-name-form-matches-folder",
        {
            "wiki/experiments/llama3_8B_autoresearch_optimization/tpu/log.md": SESSION,
            "wiki/retrospectives/r.md": retro("2026-06-09", model="llama3-8b", lane="tpu"),
        },
        0,
    ),
]


@pytest.mark.parametrize("case,files,expected", CASES, ids=[c[0] for c in CASES])
def test_run001(tmp_path, case, files, expected):
    write(tmp_path, files)
    assert_finds(tmp_path, "RUN001", expected)


def test_run001_points_at_the_stop_entry(tmp_path):
    write(tmp_path, {LANE_LOG: SESSION})
    (finding,) = findings(tmp_path, "RUN001")
    assert finding.path == LANE_LOG and finding.line == 1 and "2026-06-01" in finding.message


@pytest.mark.parametrize(
    "rel,keys,expected",
    [
        ("wiki/retrospectives/r.md", {"model": "gemma4", "lane": "tpu"}, 0),
        ("wiki/retrospectives/r.md", {}, 1),
        ("wiki/retrospectives/r.md", {"model": "gemma4"}, 1),
        (f"{LANE}/retrospectives/r.md", {}, 0),
        (f"{LANE}/retrospectives/r.md", {"model": "gemma4", "lane": "tpu"}, 0),
        (f"{LANE}/retrospectives/r.md", {"lane": "jax"}, 1),
        (f"{LANE}/retrospectives/r.md", {"model": "llama3_8B", "lane": "jax"}, 2),
    ],
)
def test_run002_retrospective_names_its_lane(tmp_path, rel, keys, expected):
    write(tmp_path, {rel: retro("2026-06-09", **keys)})
    assert_finds(tmp_path, "RUN002", expected)


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
