"""A hypothesis state machine over lane wakes (issue 10): random new stubs, wakes, wakes
killed at a commit, backend outages, run completions and verdicts, over two tracks.

Invariants after every step: no workload was launched without its stub committed before
it; no v-id was dispatched twice (one launch and one dispatch record per v-id); a page
whose verdict was filed is not in progress; every filed page has exactly one lane-log
entry naming it; the lane lints clean.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from tests.test_lane_step import LANE, MemoryBackend
from tests.test_lane_writers import PROPOSAL, REPO
from wikiengine.lint.runner import lint
from wikiengine.model import experiment as ex
from wikiengine.step import txn as lane_txn
from wikiengine.step import writers as lw
from wikiengine.step.lane.start import start_session
from wikiengine.step.lane.wake import wake

pytestmark = pytest.mark.slow


class Killed(BaseException):
    """A SIGKILL stand-in: nothing catches it."""


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


class CheckingBackend(MemoryBackend):
    """The in-memory backend, recording every launch of a name it did not have and whether
    that v-id's stub was committed at HEAD at that moment."""

    def __init__(self, root: Path, artifacts: Path):
        super().__init__(artifacts)
        self.root = root
        self.unstubbed: list[str] = []

    def launch(self, spec):
        if spec.name not in self.runs:
            if spec.vid == "v000":  # an A/A run: its committed aa-dispatch record is its stub
                journal = git(self.root, "show", f"HEAD:{LANE.journal}")
                stubbed = '"op":"aa-dispatch"' in journal and f'"workload":"{spec.name}"' in journal
            else:
                stubbed = f"-{spec.vid}-" in git(self.root, "ls-tree", "-r", "--name-only", "HEAD", "--", LANE.dir)
            if not stubbed:
                self.unstubbed.append(spec.name)
        return super().launch(spec)


class LaneWakes(RuleBasedStateMachine):
    def __init__(self):
        super().__init__()
        import tempfile

        self.tmp = Path(tempfile.mkdtemp(prefix="lane-model-"))
        root = self.root = self.tmp / "repo"
        root.mkdir()
        shutil.copytree(REPO / "wiki", root / "wiki")
        shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
        program = root / LANE.program
        program.write_text(program.read_text().replace(
            "wake_interval_s: 600\n", 'wake_interval_s: 600\nlaunch_cmd: "python -m bench --config {config}"\n'))
        (root / ".gitignore").write_text(".wiki/\n")
        git(root, "init", "-q")
        git(root, "add", "-A")
        git(root, "commit", "-qm", "init")
        start_session(root, LANE, parallelism="2")
        self.backend = CheckingBackend(root, self.tmp / "art")
        self.made = 0

    def teardown(self):
        try:
            assert self.lint_findings(use_cache=False) == self.lint_findings(use_cache=True)
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def _views(self):
        return {d["track"]: d for d in wake(self.root, dry_run=True, backend=self.backend).decisions}

    @initialize()
    def both_tracks_have_a_stub(self):
        self.new(1)
        self.new(2)

    @rule(track=st.sampled_from([1, 2]))
    def new(self, track):
        if self.backend.down or self._views()[track]["decision"] != "need_hypothesis":
            return
        self.made += 1
        path = self.tmp / f"p{self.made}.md"
        path.write_text(PROPOSAL.format(tag=f"m{self.made}"))
        lw.new_experiment(self.root, LANE, slug=f"e{self.made}", variant="2B/v5p-16", proposal_path=path, track=track)

    @rule()
    def wake(self):
        wake(self.root, backend=self.backend)

    @rule(nth=st.integers(min_value=1, max_value=3))
    def wake_killed(self, nth):
        real = lane_txn._commit
        calls = []

        def dying(root, paths, message, probe=None):
            calls.append(message)
            if len(calls) == nth:
                raise Killed(message)
            return real(root, paths, message, probe)

        lane_txn._commit = dying
        try:
            wake(self.root, backend=self.backend)
        except Killed:
            pass
        finally:
            lane_txn._commit = real

    @rule(down=st.booleans())
    def outage(self, down):
        self.backend.down = down

    @rule(data=st.data())
    def complete(self, data):
        running = sorted(n for n, w in self.backend.runs.items() if w.state == "running")
        if running:
            name = data.draw(st.sampled_from(running))
            self.backend.finish(name, exit_code=data.draw(st.sampled_from([0, 0, 1])))

    @precondition(lambda self: not self.backend.down)
    @rule(data=st.data())
    def run_through(self, data):
        """A whole iteration in one step: every run finishes, a wake processes, verdicts filed."""
        for name, run in sorted(self.backend.runs.items()):
            if run.state == "running":
                self.backend.finish(name, exit_code=data.draw(st.sampled_from([0, 0, 1])))
        wake(self.root, backend=self.backend)
        self.verdict(data)

    @precondition(lambda self: not self.backend.down)
    @rule(data=st.data())
    def verdict(self, data):
        owed = [d for d in self._views().values() if d["decision"] == "need_verdict"]
        if not owed:
            return
        vid = data.draw(st.sampled_from([d["vid"] for d in owed]))
        record = [json.loads(ln) for ln in (self.root / LANE.journal).read_text().splitlines()
                  if json.loads(ln).get("op") == "complete" and json.loads(ln).get("vid") == vid][-1]
        assert record["exit_code"] is not None or record["state"] is None  # the engine's evidence
        filed = lw.file_experiment(self.root, LANE, vid, verdict=data.draw(st.sampled_from(ex.VERDICTS)),
                                   reason="model step")
        if record["exit_code"] not in (None, 0):
            assert filed["verdict"] == "invalid", filed  # a crash is invalid whatever was asked

    @invariant()
    def every_launch_had_a_committed_stub(self):
        assert self.backend.unstubbed == []

    @invariant()
    def no_vid_dispatched_twice(self):
        assert len(self.backend.launches) == len(set(self.backend.launches))
        journal = self.root / LANE.journal
        records = [json.loads(ln) for ln in journal.read_text().splitlines()] if journal.is_file() else []
        dispatched = [r["vid"] for r in records if r.get("op") == "dispatch"]
        assert len(dispatched) == len(set(dispatched))

    @invariant()
    def filed_pages_are_closed_and_logged_once(self):
        log = (self.root / LANE.log).read_text()
        journal = self.root / LANE.journal
        filed = {json.loads(ln)["vid"] for ln in journal.read_text().splitlines()
                 if json.loads(ln).get("op") == "file"} if journal.is_file() else set()
        for page in lw.lane_pages(self.root, LANE):
            if page.exp_id in filed:
                assert ex.is_filed(page.frontmatter), page.rel
            if ex.is_filed(page.frontmatter) and page.exp_id in filed:
                assert log.count(f"] loop-iteration | {page.exp_id}-") == 1, page.exp_id

    @invariant()
    def lints_clean(self):
        if (lane_txn.redo_path(self.root, LANE)).exists():
            return  # a killed wake's write is pending: the next writer replays it first
        # through the lint cache, as `wiki lint` reads a wiki (an uncached lint after every step
        # was most of this model's CPU); teardown lints the last state uncached as well and must
        # find the same, so the cache cannot hide a finding from this law
        assert self.lint_findings(use_cache=True) == []

    def lint_findings(self, *, use_cache: bool) -> list[str]:
        return [f.render() for f in lint(self.root, base=None, use_cache=use_cache).findings if f.code != "EXP011"]


LaneWakes.TestCase.settings = settings(max_examples=10, stateful_step_count=20, deadline=None,
                                       suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
test_lane_wakes = LaneWakes.TestCase
