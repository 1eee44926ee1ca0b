"""One v-id, one page, one run (issue 23 part A; RELIABILITY rows 69, 70, 71).

Real lane sessions on the local backend: the runs are real processes of the evidence tests'
small script, the writers are real `wiki exp` processes, the second clone is a real `git
clone` merged back with `git pull`.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from tests.lane_runs import seed_band
from tests.test_evidence import LANE, PROPOSAL, RUN, VARIANT, journal
from tests.test_lane_writers import V046, git, lint_codes, wiki, wiki_cmd  # noqa: F401 - the fixture
from wikiengine.executors.lane_local import LocalLaneBackend
from wikiengine.model.journal import Expectation
from wikiengine.model.lane_queue import lane_queue
from wikiengine.step import writers as lw
from wikiengine.step.lane.decide import LaneLimits, TrackView, decide_track
from wikiengine.step.lane.start import start_session
from wikiengine.step.lane.wake import wake


def lane_repo(root: Path, tracks: int) -> Path:
    """The example lane with the evidence tests' run script as launch_cmd, a session of
    ``tracks`` tracks and a measured A/A band (the tests start at the dispatch)."""
    (root.parent / "run.py").write_text(RUN)
    program = root / LANE.program
    program.write_text(program.read_text().replace("wake_interval_s: 600\n", (
        "wake_interval_s: 600\n"
        f'launch_cmd: "{{python}} {root.parent / "run.py"} --config {{config}} --out {{artifacts}}"\n')))
    (root / ".gitignore").write_text(".wiki/\n")
    (root / ".gitattributes").write_text("*.jsonl merge=union\n")  # the journal is append-only: both sides' lines
    git(root, "add", "-A")
    git(root, "commit", "-qm", "lane launch_cmd")
    start_session(root, LANE, parallelism=str(tracks), backend="local")
    seed_band(root, LANE.dir, variant=VARIANT, frontier=V046)
    return root


def new(root: Path, slug: str, *extra: str, **knobs) -> dict:
    """`wiki exp new` as the agent runs it (a real process), its JSON answer."""
    path = root.parent / f"{slug}.md"
    path.write_text(PROPOSAL.format(slug=slug, knobs=yaml.safe_dump({"mfu": 39.0, **knobs})))
    out = wiki_cmd(root, "exp", "new", "gemma4", "tpu", "--slug", slug, "--variant", VARIANT, "--proposal", str(path),
                   "--json", *extra)
    return json.loads(out.stdout)


def decisions(result) -> list[tuple[str, str | None]]:
    return [(d["decision"], d["vid"]) for d in result.decisions]


def drive(root: Path, until, limit_s: float = 60.0):
    """Wake until ``until(result)`` holds (the runs are real processes: wait with a deadline)."""
    deadline = time.monotonic() + limit_s
    while True:
        result = wake(root)
        if until(result):
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"not reached in {limit_s} s: {result.decisions} {result.disagreements}")
        time.sleep(0.3)


def live_runs(root: Path, config_stem: str) -> list[int]:
    """Pids of the run processes alive for one stub of the lane at ``root`` (their argv names its
    config file, under ``root``: a second copy of the suite runs the same stub ids beside this one)."""
    configs = {f"{base}/.wiki/lane-configs/".encode() for base in (root, root.resolve())}
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            argv = (entry / "cmdline").read_bytes().split(b"\0")
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z" and any(a.endswith(f"/{config_stem}.json".encode()) and a.startswith(tuple(configs)) for a in argv) and b"run.py" in b" ".join(argv):
            found.append(int(entry.name))
    return found


@pytest.fixture()
def reaper():
    """Kills what a test left running, by pid (a run whose records a test deleted)."""
    pids: list[int] = []
    yield pids
    for pid in pids:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


# --- row 71: a track runs at most one v-id; stubs queue ------------------------------------------


@pytest.mark.waits
def test_row71_a_busy_track_queues_new_stubs_and_retries_and_still_processes_its_run(wiki):  # noqa: F811
    root = lane_repo(wiki, tracks=1)
    done = new(root, "quick-run", "--track", "1", mfu=39.0)
    drive(root, lambda r: any(n["kind"] == "verdict" and n["vid"] == done["vid"] for n in r.needs))
    lw.file_experiment(root, LANE, done["vid"], verdict="inconclusive", reason="seen")
    first = new(root, "long-run", "--track", "1", sleep=3)
    assert first["track"] == 1 and first["queued_after"] == []
    drive(root, lambda r: decisions(r) == [("skip", first["vid"])])
    second = new(root, "next-idea", "--track", "1", mfu=40.0)
    assert second["queued_after"] == [first["vid"]]
    retried = json.loads(wiki_cmd(root, "exp", "retry", done["vid"], "gemma4", "tpu", "--json").stdout)
    assert retried["track"] == 1 and retried["queued_after"] == [first["vid"], second["vid"]]
    again = wiki_cmd(root, "exp", "retry", first["vid"], "gemma4", "tpu", check=False)  # the run in flight itself
    assert again.returncode == 2 and "already in flight on track 1" in again.stderr
    shown = json.loads(wiki_cmd(root, "loop", "status", "--json").stdout)
    assert shown["queue"]["tracks"] == [{"track": 1, "active": first["vid"], "queued": [second["vid"], retried["vid"]]}]
    assert f"queued: track 1 after {first['vid']}: {second['vid']}, {retried['vid']}" in wiki_cmd(
        root, "loop", "status").stdout
    # the run in flight is still the track's: processed when it ends, nothing else launched meanwhile
    drive(root, lambda r: any(n["kind"] == "verdict" and n["vid"] == first["vid"] for n in r.needs))
    assert [r["vid"] for r in journal(root) if r["op"] == "dispatch"] == [done["vid"], first["vid"]]
    assert "**Command that ran**" in (root / lw.find_page(root, LANE, first["vid"]).rel).read_text()
    lw.file_experiment(root, LANE, first["vid"], verdict="inconclusive", reason="long run seen")
    after = wake(root)
    assert decisions(after) == [("dispatch", second["vid"])]  # first in, first out: the retry waits its turn
    assert after.queue["tracks"][0]["queued"] == [retried["vid"]]


def test_row71_a_stub_without_a_track_takes_an_idle_track_or_waits_in_the_lane_queue(wiki):  # noqa: F811
    root = lane_repo(wiki, tracks=2)
    one, two = new(root, "first-free", mfu=39.1), new(root, "second-free", mfu=39.2)
    three = new(root, "no-room", mfu=39.3)
    assert (one["track"], two["track"], three["track"]) == (1, 2, None)
    assert three["queued_after"] == [one["vid"], two["vid"]]
    printed = wiki_cmd(root, "exp", "new", "gemma4", "tpu", "--slug", "printed", "--variant", VARIANT,
                       "--proposal", str(_proposal(root, "printed", mfu=39.4))).stdout
    assert "queued for the first idle track after" in printed
    first = wake(root)
    assert decisions(first) == [("dispatch", one["vid"]), ("dispatch", two["vid"])]
    assert first.queue["lane"] == [three["vid"], lw.lane_pages(root, LANE)[-1].exp_id]
    drive(root, lambda r: any(n["kind"] == "verdict" and n["vid"] == one["vid"] for n in r.needs))
    lw.file_experiment(root, LANE, one["vid"], verdict="inconclusive", reason="seen")
    taken = wake(root)
    assert ("dispatch", three["vid"]) == decisions(taken)[0]
    (record,) = [r for r in journal(root) if r["op"] == "dispatch" and r["vid"] == three["vid"]]
    assert record["track"] == 1
    assert wake(root).queue["tracks"][0]["active"] == three["vid"]  # the dispatch record keeps the track it took


def _proposal(root: Path, slug: str, **knobs) -> Path:
    path = root.parent / f"{slug}.md"
    path.write_text(PROPOSAL.format(slug=slug, knobs=yaml.safe_dump(knobs)))
    return path


def test_row71_the_queue_is_first_in_first_out_and_a_filed_page_frees_its_track():
    records = [{"op": "claim", "vid": "v001", "track": 1}, {"op": "claim", "vid": "v002", "track": None},
               {"op": "claim", "vid": "v003", "track": 1}, {"op": "retry", "vid": "v001b", "track": 1},
               {"op": "claim", "vid": "v004", "track": None}]
    open_all = {v: "open" for v in ("v001", "v002", "v003", "v001b", "v004")}
    queue = lane_queue(records, open_all, 2)
    assert [(t.active, t.queued) for t in queue.tracks] == [("v001", ("v003", "v001b")), ("v002", ())]
    assert queue.waiting == ("v004",)
    freed = lane_queue(records + [{"op": "dispatch", "vid": "v004", "track": 2}], {**open_all, "v002": "filed"}, 2)
    assert freed.track(2).active == "v004" and freed.waiting == ()
    gone = lane_queue(records + [{"op": "dispatch", "vid": "v001", "track": 1}], {"v003": "open"}, 1)
    assert gone.track(1).active == "v001"  # its page is gone but its run may live: it holds the track



def test_row69_a_renumbered_stub_whose_claim_comes_first_waits_behind_the_run_in_flight():
    """Found by tests/test_lane_ids_model.py (hypothesis seed 226430143169337863286895402478903113782):
    clone B's stub of v048 merged before A's claim of v048, whose run was dispatched; renumber
    rewrote B's claim in place as v051, first on track 1, and the next wake launched it beside
    the run in flight. A dispatched stub holds its track until it is filed."""
    records = [{"op": "claim", "vid": "v051", "track": 1}, {"op": "claim", "vid": "v048", "track": 1},
               {"op": "claim", "vid": "v049", "track": 1}, {"op": "dispatch", "vid": "v048", "track": 1},
               {"op": "renumber", "vid": "v051", "from": "v048"}]
    pages = {"v048": "open", "v049": "open", "v051": "open"}
    assert lane_queue(records, pages, 1).track(1).active == "v048"
    completed = records + [{"op": "complete", "vid": "v048"}]  # its verdict still owed: it holds the track
    assert lane_queue(completed, pages, 1).track(1).active == "v048"
    assert lane_queue(completed, {**pages, "v048": "filed"}, 1).track(1).active == "v051"  # then claim order


# --- row 70: the backend's records deleted while a run lives ---------------------------------------


def test_row70_deleted_run_records_are_unknown_and_never_launched_twice(wiki, reaper):  # noqa: F811
    root = lane_repo(wiki, tracks=1)
    vid = new(root, "slow-run", "--track", "1", sleep=20)["vid"]
    drive(root, lambda r: decisions(r) == [("skip", vid)])
    reaper += live_runs(root, vid)
    assert len(reaper) == 1
    subprocess.run(["rm", "-rf", str(root / ".wiki")], check=True)  # a user cleans the work folders
    assert decisions(wake(root)) == [("skip", vid)]  # the records live in the git directory
    backend = LocalLaneBackend(root, LANE.model_dir, LANE.name)
    assert backend.folder.is_relative_to(root / ".git")
    subprocess.run(["rm", "-rf", str(backend.folder)], check=True)  # even those gone: unknown, not gone
    for _ in range(2):
        lost = wake(root)
        assert decisions(lost) == [("wait", vid)] and "never launched again" in lost.decisions[0]["reason"]
        assert any("no record of" in d for d in lost.disagreements)
    assert live_runs(root, vid) == reaper  # still the one run
    assert [r["op"] for r in journal(root) if r.get("vid") == vid].count("dispatch") == 1


def test_row70_a_lost_run_waits_until_its_ceiling_then_is_recorded_killed():
    limits = LaneLimits(hung_after_s=600, ceiling_s=3600, wake_interval_s=600)
    sent = Expectation("dispatch", "demo-gemma4-tpu-v048-x", at=1_000.0)
    lost = TrackView(1, vid="v048", page_state="open", expected=sent, workload=sent.name, backend_state=None,
                     launched=True)
    assert decide_track(lost, 2_000.0, limits).kind == "wait"
    assert decide_track(lost, 1_000.0 + 3601, limits).kind == "kill"
    never_seen = TrackView(1, vid="v048", page_state="open", expected=sent, workload=sent.name, backend_state=None)
    assert decide_track(never_seen, 2_000.0, limits).kind == "dispatch"  # a lost answer: asked again by name


# --- row 69: two clones allocate one v-id offline ---------------------------------------------------


def test_row69_two_clones_one_vid_is_never_dispatched_and_renumber_gives_the_later_page_a_new_id(wiki):  # noqa: F811
    root = lane_repo(wiki, tracks=2)
    other = root.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(other)], check=True)
    mine = new(root, "here-idea", "--track", "1", mfu=39.5)
    time.sleep(1.1)  # the other clone's stub is committed later
    theirs = new(other, "there-idea", "--track", "2", mfu=39.6)
    assert mine["vid"] == theirs["vid"]
    vid = mine["vid"]
    git(root, "pull", "-q", "--no-rebase", "--no-edit", str(other), "HEAD")
    step = subprocess.run([sys.executable, "-m", "wikiengine", "step", "--json"], cwd=root, capture_output=True,
                          text=True, timeout=120)
    result = json.loads(step.stdout)
    assert [t["decision"] for t in result["tracks"]] == ["wait", "wait"]
    (said,) = [d for d in result["disagreements"] if d.startswith(f"{vid} names 2 pages")]
    assert f"wiki exp renumber {vid} gemma4 tpu" in said
    assert not [r for r in journal(root) if r["op"] == "dispatch"]
    assert f"wiki exp renumber {vid}" in subprocess.run([sys.executable, "-m", "wikiengine", "step"], cwd=root,
                                                        capture_output=True, text=True, timeout=120).stdout
    head = git(root, "rev-parse", "HEAD").strip()
    done = json.loads(wiki_cmd(root, "exp", "renumber", vid, "gemma4", "tpu", "--json").stdout)
    assert git(root, "rev-parse", "HEAD~1").strip() == head and git(root, "status", "--porcelain", "--", "wiki") == ""
    (moved,) = done["renumbered"]
    assert done["kept"] == mine["page"] and moved["was"] == theirs["page"] and moved["vid"] != vid
    assert not (root / theirs["page"]).exists() and f"-{moved['vid']}-there-idea.md" in moved["page"]
    page = lw.find_page(root, LANE, moved["vid"])
    assert page.frontmatter["workload_name"] == f"demo-gemma4-tpu-{moved['vid']}-there-idea"
    assert page.frontmatter["title"] == f"{moved['vid']} there-idea" and f"# {moved['vid']}: there-idea" in page.text
    assert theirs["workload_name"] not in page.text
    claims = {r["vid"]: r for r in journal(root) if r["op"] == "claim"}
    assert claims[moved["vid"]]["page"] == moved["page"] and claims[vid]["page"] == mine["page"]
    assert any(r["op"] == "renumber" and r["from"] == vid for r in journal(root))
    assert f"] renumber | {vid} named 2 pages" in (root / LANE.log).read_text()
    assert not [c for c in lint_codes(root) if "EXP008" in c]
    fixed = wake(root)
    assert decisions(fixed) == [("dispatch", vid), ("dispatch", moved["vid"])]


def test_row69_renumber_rewrites_links_to_the_moved_page():
    from wikiengine.step.renumber import relink

    old, new = "wiki/experiments/m_autoresearch_optimization/t/experiments/2026-06-13-v048-b.md", \
        "wiki/experiments/m_autoresearch_optimization/t/experiments/2026-06-13-v050-b.md"
    text = ("- [v048 b](experiments/m_autoresearch_optimization/t/experiments/2026-06-13-v048-b.md)\n"
            "see [the run](experiments/m_autoresearch_optimization/t/experiments/2026-06-13-v048-b.md#results)\n"
            "and [v048 a](experiments/m_autoresearch_optimization/t/experiments/2026-06-13-v048-a.md)\n")
    out = relink(text, "wiki/index.md", old, new, "v048", "v050")
    assert out.splitlines() == [
        "- [v050 b](experiments/m_autoresearch_optimization/t/experiments/2026-06-13-v050-b.md)",
        "see [the run](experiments/m_autoresearch_optimization/t/experiments/2026-06-13-v050-b.md#results)",
        "and [v048 a](experiments/m_autoresearch_optimization/t/experiments/2026-06-13-v048-a.md)"]


def test_row69_renumber_of_an_id_with_one_page_is_refused(wiki):  # noqa: F811
    root = lane_repo(wiki, tracks=1)
    vid = new(root, "alone", "--track", "1")["vid"]
    refused = wiki_cmd(root, "exp", "renumber", vid, "gemma4", "tpu", check=False)
    assert refused.returncode == 2 and "nothing to renumber" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1


@pytest.mark.waits
def test_row69_a_vid_another_clone_already_runs_is_not_dispatched_again(wiki, tmp_path):  # noqa: F811
    from tests.test_lane_step import MemoryBackend

    root = lane_repo(wiki, tracks=2)
    other = root.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(other)], check=True)
    shared = MemoryBackend(tmp_path / "art")  # one pool of clusters both clones dispatch to
    mine = new(root, "here-idea", "--track", "1", mfu=39.5)
    assert decisions(wake(root, backend=shared)) == [("dispatch", mine["vid"]), ("need_hypothesis", None)]
    time.sleep(1.1)
    theirs = new(other, "there-idea", "--track", "2", mfu=39.6)
    assert theirs["vid"] == mine["vid"]
    seen = wake(other, backend=shared)
    assert decisions(seen)[1] == ("wait", theirs["vid"]) and shared.launches == [mine["workload_name"]]
    assert any(d.startswith(f"{mine['vid']} is on the backend as {mine['workload_name']}") and "wiki exp renumber" in d
               for d in seen.disagreements)
    git(other, "pull", "-q", "--no-rebase", "--no-edit", "-X", "theirs", str(root), "HEAD")
    done = json.loads(wiki_cmd(other, "exp", "renumber", mine["vid"], "gemma4", "tpu", "--json").stdout)
    assert done["kept"] == mine["page"] and done["renumbered"][0]["was"] == theirs["page"]
    fixed = wake(other, backend=shared)
    assert decisions(fixed) == [("skip", mine["vid"]), ("dispatch", done["renumbered"][0]["vid"])]
    assert len(shared.launches) == 2 and len({n.split("-")[3] for n in shared.launches}) == 2


@pytest.mark.waits
def test_row69_renumber_of_a_filed_page_amends_its_filing_and_renames_its_log_entry(wiki):  # noqa: F811
    root = lane_repo(wiki, tracks=2)
    other = root.parent / "clone"
    subprocess.run(["git", "clone", "-q", str(root), str(other)], check=True)
    mine = new(root, "here-idea", "--track", "1", mfu=39.5)
    time.sleep(1.1)
    theirs = new(other, "there-idea", "--track", "2", mfu=39.6)
    lw.file_experiment(other, LANE, theirs["vid"], verdict="inconclusive", reason="ran elsewhere", external=True,
                       metrics={"mfu": 39.6})
    before = lint_codes(root)
    git(root, "pull", "-q", "--no-rebase", "--no-edit", "-X", "ours", str(other), "HEAD")
    assert f"] loop-iteration | {theirs['vid']}-there-idea" in (root / LANE.log).read_text()
    (moved,) = json.loads(wiki_cmd(root, "exp", "renumber", mine["vid"], "gemma4", "tpu", "--json").stdout)["renumbered"]
    log = (root / LANE.log).read_text()
    assert f"] loop-iteration | {moved['vid']}-there-idea" in log
    assert f"] loop-iteration | {mine['vid']}-there-idea" not in log
    amend = [r for r in journal(root) if r["op"] == "amend"]
    assert [(r["vid"], r["page"]) for r in amend] == [(moved["vid"], moved["page"])]
    assert lint_codes(root) == before
