"""The run contract as a lane wake reads it (issue 25).

Row 107: a metrics.json key that breaks ``schema/run-metrics.schema.json`` (``parity: yes``,
a digest that is not hex) is never evidence: the completion record drops it and says why.
Row 109: what a wake commits carries no path of this machine: the artifacts it records are
repository-relative, and the Setup's "Command that ran" shows the repository's paths
relative and the engine's interpreter as ``python``.
"""

from __future__ import annotations

import json
import sys

from tests.lane_runs import seed_band
from tests.test_lane_step import LANE, MemoryBackend, lane_wiki  # noqa: F401 - the fixture
from tests.test_lane_writers import V046, git, proposal, wiki  # noqa: F401 - the fixture lane_wiki uses
from wikiengine.step import writers as lw
from wikiengine.step.lane.start import start_session
from wikiengine.step.lane.wake import wake


def _one_run(root, backend, metrics: dict, launch_cmd: str | None = None) -> dict:
    """Start, stub, dispatch, finish with ``metrics`` and process one run; its completion record."""
    if launch_cmd:
        program = root / LANE.program
        program.write_text(program.read_text().replace('launch_cmd: "python -m bench --config {config} --frontier '
                                                       '{frontier}"', f"launch_cmd: {json.dumps(launch_cmd)}"))
        git(root, "commit", "-qam", "the lane's launch_cmd")
    start_session(root, LANE, parallelism="1")
    seed_band(root, LANE.dir, variant="2B/v5p-16", frontier=V046)
    lw.new_experiment(root, LANE, slug="t1", variant="2B/v5p-16", proposal_path=proposal(root, "t1"), track=1)
    wake(root, backend=backend)
    (name,) = backend.runs
    backend.finish(name, metrics=metrics)
    wake(root, backend=backend)
    records = [json.loads(ln) for ln in (root / LANE.journal).read_text().splitlines()]
    return [r for r in records if r["op"] == "complete"][-1]


def test_row107_a_metrics_key_that_breaks_the_schema_is_never_evidence(lane_wiki, tmp_path):
    backend = MemoryBackend(tmp_path / "art")
    record = _one_run(lane_wiki, backend, {"parity": "yes", "op_digest": "NOT-HEX", "frontier_op_digest": "NOT-HEX",
                                           "mfu": 43.1, "tuned": True})
    assert record["parity"] is None and "op_digest" not in record and record["metrics"] == {"mfu": 43.1}
    assert sorted(p.split(":")[0] for p in record["metrics_problems"]) == ["frontier_op_digest", "op_digest", "parity",
                                                                           "tuned"]
    need = [n for n in wake(lane_wiki, backend=backend, dry_run=True).needs if n["kind"] == "verdict"][0]
    assert need["inputs"]["parity"] is None  # the verdict owed rests on what was valid


def test_row109_committed_pages_carry_no_path_of_this_machine(lane_wiki, tmp_path):
    root = lane_wiki
    backend = MemoryBackend(root / ".wiki" / "art")  # artifacts inside the repository, as the local backend's are
    record = _one_run(root, backend, {"mfu": 43.1},
                      launch_cmd="{python} -m bench --config {config} --frontier {frontier} --out {artifacts}")
    assert set(record["artifacts"]) == {"metrics", "profile", "hlo"}
    assert all(not p.startswith("/") and (root / p).is_file() for p in record["artifacts"].values())
    page = (root / lw.find_page(root, LANE, "v048").rel).read_text()
    assert str(root) not in page and sys.executable not in page
    assert "**Command that ran**: `python -m bench --config .wiki/lane-configs/" in page
    assert "--out .wiki/lane-artifacts/" in page  # the stub declares gs:// (storage_root): a local run writes here
    filed = lw.file_experiment(root, LANE, "v048", verdict="supported", reason="seen")
    text = (root / filed["page"]).read_text()
    assert "Hypothesis-firing audit: CONFIRMED" in text  # the HLO dump was found through the relative path
    changed = git(root, "diff", "--name-only", "HEAD~4", "HEAD").split()
    for rel in changed:
        assert str(root) not in (root / rel).read_text(), rel
