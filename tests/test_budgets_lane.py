"""Budgets, thrash and stall as gates in a real lane (issue 27 part B, RELIABILITY rows 120-124).

A real session on the local backend (the runs are processes of a small script): the wake
stops dispatching at ``max_experiments``, says which budget stopped it in ``needs`` and in
`wiki loop status`, owes a stall, and dispatches again once the program raises the budget.
Thrash gates `wiki exp new` and `wiki exp retry` (real CLI processes: exit 3, one line)
unless the agent says what changed, which the stub and the journal keep.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from tests.lane_runs import record_run
from tests.test_evidence import LANE, RUN, VARIANT, drive, journal, owed_verdict, paste, stub
from tests.test_lane_writers import git, proposal, wiki  # noqa: F401 - the fixture
from wikiengine.core.page import parse_page
from wikiengine.step import writers as lw
from wikiengine.step.audit import run_audit
from wikiengine.step.lane.start import start_session
from wikiengine.step.lane.wake import wake


def wiki_json(root, *args: str) -> tuple[int, dict | str]:
    """Exit code, and the JSON printed (exit 0), else the one error line."""
    done = subprocess.run([sys.executable, "-m", "wikiengine", *args, "--json"], cwd=root, capture_output=True,
                          text=True, timeout=120)
    if done.returncode == 0:
        return 0, json.loads(done.stdout)
    (line,) = done.stderr.splitlines()  # one line, never a traceback
    return done.returncode, line


def set_config(root, old: str, new: str, message: str) -> None:
    program = root / LANE.program
    program.write_text(program.read_text().replace(old, new))
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


@pytest.fixture()
def budget_session(wiki):  # noqa: F811 - the fixture imported above
    """The example lane with a real launch_cmd, two A/A runs, one experiment allowed and a
    stall after one filing without a frontier move; session 1 started."""
    (wiki.parent / "run.py").write_text(RUN)
    (wiki / ".gitignore").write_text(".wiki/\n")
    set_config(wiki, "wake_interval_s: 600\n", (
        "wake_interval_s: 600\nnoise_band_runs: 2\nhung_after_s: 30\nmax_experiments: 1\nstall_after_filings: 1\n"
        f'launch_cmd: "{{python}} {wiki.parent / "run.py"} --config {{config}} --out {{artifacts}}"\n'), "lane budgets")
    start_session(wiki, LANE, parallelism="1", backend="local")
    return wiki


@pytest.mark.waits
def test_row121_the_lane_stops_dispatching_at_max_experiments_and_resumes_when_the_program_raises_it(budget_session):
    root = budget_session
    first = stub(root, "first-try", mfu=38.9)
    filed = json.loads(paste(root, owed_verdict(root, first), "inconclusive").stdout)
    assert filed["verdict"] == "inconclusive" and not filed["current_best_moved"]
    idle = wake(root)
    stall = next(n for n in idle.needs if n["kind"] == "stall")  # one filing, no frontier move
    assert stall["inputs"]["filings"] == [first] and "rotate the hypothesis" in stall["command"]
    assert [n["kind"] for n in idle.needs] == ["budget", "stall"]  # past a budget no new stub is asked for
    second = stub(root, "second-try", mfu=39.0)  # another hypothesis: the stall is answered

    stopped = wake(root)
    (track,) = stopped.decisions
    assert track["decision"] == "budget" and track["vid"] == second
    assert "max_experiments: 1 of 1 experiments used" in track["reason"]
    assert not [r for r in journal(root) if r.get("op") == "dispatch" and r.get("vid") == second]
    (budget,) = stopped.needs
    assert budget["inputs"]["budget"] == "max_experiments" and budget["inputs"]["used"] == 1
    assert LANE.program in budget["command"] and "wiki loop stop" in budget["command"]

    # the backend's own times and chips, journalled at completion, are what chip hours burn
    complete = next(r for r in journal(root) if r.get("op") == "complete" and r.get("vid") == first)
    assert complete["chips"] == 1 and complete["started"] and complete["finished"] >= complete["started"]
    code, status = wiki_json(root, "loop", "status")
    assert code == 0 and status["budgets"]["max_experiments"] == {
        "used": 1.0, "limit": 1.0, "unit": "experiments", "exhausted": True, "note": ""}
    chips = status["budgets"]["max_chip_hours"]
    assert chips["limit"] is None and chips["used"] > 0 and "A/A calibration runs" in chips["note"]
    assert [t["decision"] for t in status["tracks"]] == ["budget"]
    text = subprocess.run([sys.executable, "-m", "wikiengine", "loop", "status"], cwd=root, capture_output=True,
                          text=True, timeout=120).stdout
    assert "budgets: max_experiments 1/1 experiments SPENT" in text

    set_config(root, "max_experiments: 1\n", "max_experiments: 2\n", "program: one more experiment")
    resumed = drive(root, lambda r: any(d["decision"] == "dispatch" for d in r.decisions))
    assert resumed.decisions[0]["vid"] == second
    assert [r for r in journal(root) if r.get("op") == "dispatch" and r.get("vid") == second]
    (again,) = [n for n in resumed.needs if n["kind"] == "budget"]  # the second was the last the program allows
    assert again["inputs"]["used"] == 2 and again["inputs"]["limit"] == 2


def _thrash(root, times: int = 3) -> list[str]:
    """``times`` stubs of one mechanism, each filed inconclusive from the wake's records."""
    vids = []
    for i in range(times):
        vid = lw.new_experiment(root, LANE, slug=f"same-{'abc'[i]}x", variant=VARIANT,
                                proposal_path=proposal(root, "same"), track=1)["vid"]
        record_run(root, LANE.dir, vid, variant=VARIANT, metrics={"mfu": 38.0})
        lw.file_experiment(root, LANE, vid, verdict="inconclusive", reason="no signal")
        vids.append(vid)
    return vids


def test_row122_a_thrashing_mechanism_refuses_exp_new_until_the_agent_says_what_changed(wiki):  # noqa: F811
    start_session(wiki, LANE, parallelism="1", launch_cmd="true")
    vids = _thrash(wiki)
    args = ["exp", "new", LANE.model_prefix, LANE.name, "--slug", "again", "--variant", VARIANT, "--proposal",
            str(proposal(wiki, "same")), "--track", "1"]
    head = git(wiki, "rev-parse", "HEAD")
    code, error = wiki_json(wiki, *args)
    assert code == 3 and f"3 invalid/inconclusive results in a row on this mechanism ({', '.join(vids)})" in error
    assert "--reformulated-because" in error and git(wiki, "rev-parse", "HEAD") == head
    # the watcher's finding is the same computation
    (finding,) = [f for f in run_audit(wiki, LANE).findings if f.check == "thrashing" and "mechanism" in f.message]
    assert ", ".join(vids) in finding.message and "--reformulated-because" in finding.correction
    # another mechanism is not gated
    assert lw.new_experiment(wiki, LANE, slug="other", variant=VARIANT, proposal_path=proposal(wiki, "other"),
                             track=2)["vid"]
    code, doc = wiki_json(wiki, *args, "--reformulated-because", "  block_q 1024 now with the   fused kernel ")
    assert code == 0
    page = parse_page((wiki / doc["page"]).read_text(), doc["page"])
    assert page.frontmatter["reformulated_because"] == "block_q 1024 now with the fused kernel"
    claim = next(r for r in journal(wiki) if r.get("op") == "claim" and r.get("vid") == doc["vid"])
    assert claim["reformulated_because"] == "block_q 1024 now with the fused kernel"


def test_row122_a_thrashing_vid_refuses_exp_retry_until_the_agent_says_what_changed(wiki):  # noqa: F811
    start_session(wiki, LANE, parallelism="1", launch_cmd="true")
    vids = _thrash(wiki)
    head = git(wiki, "rev-parse", "HEAD")
    code, error = wiki_json(wiki, "exp", "retry", vids[0], LANE.model_prefix, LANE.name)
    assert code == 3 and "--reformulated-because" in error and git(wiki, "rev-parse", "HEAD") == head
    code, error = wiki_json(wiki, "exp", "retry", vids[0], LANE.model_prefix, LANE.name, "--reformulated-because", "")
    assert code == 2 and "--reformulated-because is empty" in error
    code, doc = wiki_json(wiki, "exp", "retry", vids[0], LANE.model_prefix, LANE.name, "--reformulated-because",
                             "the profile capture is fixed")
    assert code == 0 and doc["retry_of"] == vids[0]
    record = next(r for r in journal(wiki) if r.get("op") == "retry" and r.get("vid") == doc["vid"])
    assert record["reformulated_because"] == "the profile capture is fixed"


def test_row122_thrash_k_in_the_program_moves_the_gate(wiki):  # noqa: F811
    set_config(wiki, "wake_interval_s: 600\n", "wake_interval_s: 600\nthrash_k: 4\n", "thrash_k 4")
    start_session(wiki, LANE, parallelism="1", launch_cmd="true")
    _thrash(wiki)
    assert lw.new_experiment(wiki, LANE, slug="fourth", variant=VARIANT, proposal_path=proposal(wiki, "same"),
                             track=1)["vid"]  # three in a row is not four
