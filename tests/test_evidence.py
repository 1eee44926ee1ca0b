"""Evidence, not testimony (issue 21): `wiki exp file` files from what the engine recorded.

Real lane sessions on the local backend: the runs are real processes of a small script
that writes its own metrics.json, crashes, hangs or SIGKILLs itself as its Setup says,
and the agent's side is a real `wiki exp file` process fed the wake's own owed command
(RELIABILITY rows 65-68). The A/A band is measured by real runs of the frontier.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import time

import pytest

from tests.test_lane_writers import LANE_DIR, MODEL_PAGE, git, wiki, wiki_cmd  # noqa: F401 - the fixture
from wikiengine.model.journal import parse_journal
from wikiengine.model.lanes import Lane
from wikiengine.step import writers as lw
from wikiengine.step.lane.start import start_session
from wikiengine.step.lane.wake import wake

LANE = Lane("gemma4_autoresearch_optimization", "tpu")
VARIANT = "2B/v5p-16"
RUN = textwrap.dedent("""\
    import argparse, json, os, pathlib, signal, sys, time
    parser = argparse.ArgumentParser()
    parser.add_argument("--config")
    parser.add_argument("--out")
    args = parser.parse_args()
    cfg = json.load(open(args.config))
    out = pathlib.Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    figures = {"mfu": cfg.get("mfu", 38.9)}
    figures.update(cfg.get("extra", {}))
    (out / "metrics.json").write_text(json.dumps(figures))
    (out / "profile.md").write_text("splash 19% of step time\\n")
    (out / "hlo.md").write_text("Hypothesis-firing audit: CONFIRMED.\\n")
    time.sleep(cfg.get("sleep", 0))
    if cfg.get("selfkill"):
        os.kill(os.getpid(), signal.SIGKILL)
    sys.exit(cfg.get("exit", 0))
""")
PROPOSAL = """\
**Hypothesis**: {slug} lifts MFU.

**Mechanism**: the {slug} change of the step ({slug}).

**Predicted signal**: MFU above 40.

**Falsification criterion**: MFU at or below 39.5.

## Setup

```yaml
{knobs}```
"""


@pytest.fixture()
def session(wiki):  # noqa: F811 - the fixture imported above
    """The example lane with a real launch_cmd and two A/A runs, session 1 started."""
    (wiki.parent / "run.py").write_text(RUN)
    program = wiki / LANE.program
    program.write_text(program.read_text().replace("wake_interval_s: 600\n", (
        "wake_interval_s: 600\nnoise_band_runs: 2\nhung_after_s: 3\n"
        f'launch_cmd: "{{python}} {wiki.parent / "run.py"} --config {{config}} --out {{artifacts}}"\n')))
    (wiki / ".gitignore").write_text(".wiki/\n")
    git(wiki, "add", "-A")
    git(wiki, "commit", "-qm", "lane launch_cmd")
    start_session(wiki, LANE, parallelism="1", backend="local")
    return wiki


def stub(root, slug: str, **knobs) -> str:
    import yaml

    path = root.parent / f"{slug}.md"
    path.write_text(PROPOSAL.format(slug=slug, knobs=yaml.safe_dump(knobs or {"mfu": 38.9})))
    return lw.new_experiment(root, LANE, slug=slug, variant=VARIANT, proposal_path=path, track=1)["vid"]


def drive(root, until, limit_s: float = 90.0):
    """Wake (as `wiki step` does) until ``until(result)`` holds; returns that wake's result."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        result = wake(root)
        if until(result):
            return result
        time.sleep(0.3)
    raise AssertionError(f"not reached in {limit_s} s: {result.decisions}")


def owed_verdict(root, vid: str) -> dict:
    result = drive(root, lambda r: any(n["kind"] == "verdict" and n["vid"] == vid for n in r.needs))
    return next(n for n in result.needs if n["kind"] == "verdict" and n["vid"] == vid)


def paste(root, need: dict, verdict: str, *extra: str) -> subprocess.CompletedProcess:
    """The agent pastes the owed command, choosing the verdict (and maybe adding figures)."""
    argv = need["command"].split()[1:]
    argv[argv.index("V")] = verdict
    argv[argv.index("TEXT")] = "agent says so"
    return subprocess.run([sys.executable, "-m", "wikiengine", *argv, "--json", *extra], cwd=root, capture_output=True,
                          text=True, timeout=120)


def journal(root) -> list[dict]:
    return parse_journal((root / LANE.journal).read_text())


@pytest.mark.waits
def test_row68_the_band_is_measured_by_aa_runs_before_the_first_dispatch(session):
    vid = stub(session, "batch-big", mfu=45.0)
    need = owed_verdict(session, vid)
    records = journal(session)
    ops = [r["op"] for r in records]
    band = next(r for r in records if r["op"] == "band")
    assert ops.count("aa-dispatch") == 2 and ops.index("band") < ops.index("dispatch")
    assert band["n"] == 2 and band["band"] >= 0 and band["variant"] == VARIANT
    assert "] noise-band | A/A band of 2B/v5p-16" in (session / LANE.log).read_text()
    assert need["command"].endswith("--verdict V --reason TEXT")
    inputs = need["inputs"]
    assert inputs["band_n"] == 2 and inputs["exit_code"] == 0 and inputs["value"] == 45.0
    assert inputs["strongest_verdict"] == "supported" and inputs["caps"] == []
    filed = json.loads(paste(session, need, "supported").stdout)
    assert filed["verdict"] == "supported" and filed["current_best_moved"] and filed["band_n"] == 2
    assert not list((session / LANE_DIR / "experiments").glob("*v000*"))


@pytest.mark.waits
def test_row65_the_agents_figures_annotate_and_never_move_current_best(session):
    vid = stub(session, "small-loss", mfu=38.0)
    need = owed_verdict(session, vid)
    done = paste(session, need, "supported", "--metric", "mfu=50000")
    filed = json.loads(done.stdout)
    assert filed["verdict"] == "inconclusive" and filed["value"] == 38.0 and not filed["current_best_moved"]
    page = (session / filed["page"]).read_text()
    assert "mfu: 38.0" in page and "mfu: 50000" not in page
    assert "Figures the agent passed to `wiki exp file` (its annotation, not evidence" in page and "mfu=50000" in page
    assert "50000" not in (session / MODEL_PAGE).read_text()
    assert "50000" not in (session / LANE.results).read_text()


@pytest.mark.parametrize("knobs,why", [
    ({"mfu": 45.0, "exit": 1}, "exited with code 1"),
    ({"mfu": 45.0, "selfkill": True}, "exited with code"),  # SIGKILL behind the engine
    ({"mfu": 45.0, "sleep": 60}, "the wake killed it"),  # hung: killed by the wake
])
@pytest.mark.waits
def test_row66_a_crashed_or_killed_run_is_invalid_whatever_the_flags(session, knobs, why):
    vid = stub(session, "crashy", **knobs)
    need = owed_verdict(session, vid)
    assert "invalid" == need["inputs"]["strongest_verdict"]
    done = paste(session, need, "supported", "--metric", "mfu=99", "--exit-code", "0")
    filed = json.loads(done.stdout)
    assert filed["verdict"] == "invalid" and not filed["current_best_moved"], filed
    assert any(why in c for c in filed["capped"]), filed["capped"]
    assert (session / LANE.results).read_text().splitlines()[-1].split("\t")[7] == "crash"


@pytest.mark.waits
def test_row67_a_stub_never_dispatched_or_in_flight_is_refused(session):
    vid = stub(session, "slow", mfu=45.0, sleep=30)
    head = git(session, "rev-parse", "HEAD").strip()
    early = wiki_cmd(session, "exp", "file", vid, "gemma4", "tpu", "--verdict", "supported", check=False)
    assert early.returncode == 2 and "never dispatched" in early.stderr and len(early.stderr.strip().splitlines()) == 1
    drive(session, lambda r: any(d["decision"] == "skip" and "aa_index" not in d for d in r.decisions))
    flying = wiki_cmd(session, "exp", "file", vid, "gemma4", "tpu", "--verdict", "supported", "--metric", "mfu=50",
                      check=False)
    assert flying.returncode == 2 and "in flight" in flying.stderr
    assert git(session, "status", "--porcelain", "--", "wiki") == ""
    assert git(session, "log", "--format=%s", f"{head}..HEAD").count("file") == 0


@pytest.mark.waits
def test_row68_a_negative_band_from_the_run_or_the_config_never_widens_a_win(session):
    vid = stub(session, "neg-band", mfu=38.95, extra={"noise_band": -50})
    need = owed_verdict(session, vid)
    filed = json.loads(paste(session, need, "supported").stdout)
    assert filed["noise_band"] >= 0
    program = session / LANE.program
    program.write_text(program.read_text().replace("noise_band_runs: 2\n", "noise_band_runs: 2\nnoise_band_pct: -1000\n"))
    refused = wiki_cmd(session, "exp", "file", vid, "gemma4", "tpu", "--verdict", "supported", check=False)
    assert refused.returncode == 2 and "noise_band_pct" in refused.stderr and "program.md:" in refused.stderr


def test_external_runs_are_at_most_inconclusive(session):
    vid = stub(session, "elsewhere", mfu=45.0)
    done = wiki_cmd(session, "exp", "file", vid, "gemma4", "tpu", "--verdict", "supported", "--external",
                    "--metric", "mfu=60", "--json")
    filed = json.loads(done.stdout)
    assert filed["verdict"] == "inconclusive" and not filed["current_best_moved"] and filed["value"] is None
    assert "external: true" in (session / filed["page"]).read_text()


@pytest.mark.waits
def test_equal_op_digests_cap_a_silent_no_op_whatever_hlo_the_agent_passes(session):
    vid = stub(session, "no-op", mfu=45.0, extra={"op_digest": "abcd1234", "frontier_op_digest": "abcd1234"})
    need = owed_verdict(session, vid)
    assert need["inputs"]["strongest_verdict"] == "inconclusive"
    hlo = session.parent / "hlo.md"
    hlo.write_text("Hypothesis-firing audit: CONFIRMED.\n")
    filed = json.loads(paste(session, need, "supported", "--hlo", str(hlo)).stdout)
    assert filed["verdict"] == "inconclusive" and any("silent no-op" in c for c in filed["capped"])
