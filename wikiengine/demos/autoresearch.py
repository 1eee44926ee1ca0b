"""`wiki demo autoresearch`: an autoresearch lane on the embedded default, end to end.

Scaffolds a wiki (root, model and lane programs, a model page in the real format, the
lane log) with an empty Baseline cell, starts a session with two tracks on the local
backend (whose first A/A runs of the baseline config measure the Baseline and the noise
band, and record both), and wakes until the scripted proposal queue (:mod:`wikiengine.training.autoresearch_queue`, which
stands in for the agent's judgement) is used up. The target is real: the throughput of a
small torch training step (:mod:`wikiengine.training.autoresearch_target`), timed interleaved with
the current frontier in one process, with a parity check and an op digest. Every write
goes through the lane writers and `wiki step`'s lane mode, exactly as an agent's would;
the demo only supplies what the agent owes (a proposal for an idle track, a verdict for a
processed run) and polls instead of sleeping 120 s between wakes.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

from wikiengine.core.errors import ExitCode
from wikiengine.model.lanes import Lane

LANE = Lane("mlp_autoresearch_optimization", "cpu")
VARIANT = "1.3M/cpu-2"
ROUNDS, SECONDS = 6, 1.5  # one run: about 6-10 s on two loaded cores
POLL_S = 1.0
MAX_WAKES = 400

ROOT_PROGRAM = """\
# Experiments program (root)

## Loop

One experiment per hypothesis: file the stub (`wiki exp new`) before anything runs, let
`wiki step` dispatch it, read its profile and HLO dump, file the verdict (`wiki exp file`).

## Verdicts

`supported` needs a delta beyond the noise band and a confirmed hypothesis-firing audit;
a crash or a parity failure is `invalid`; a silent no-op is at most `inconclusive`.

## Config

```yaml
parallelism: 2
wake_interval_s: 120
```
"""
MODEL_PROGRAM = """\
# MLP classifier program

USER_PREFIX = demo

## Setup

A 256 -> 1024 -> 1024 -> 64 MLP classifier trained with AdamW on seeded synthetic data.

## Mlp-specific CAN additions

- CAN change any knob of `training/autoresearch_knobs.py`; the math (batch aside) is fixed.
"""
LANE_PROGRAM = """\
# MLP on two CPU cores

## Setup

The step runs on the CPU with one torch thread. The candidate and the frontier run in one
process, their steps interleaved, so machine load cancels; parity is checked against a
float64 run of the same math.

## Config

```yaml
{config}```
"""
MODEL_PAGE = """\
---
type: model
title: MLP classifier on two CPU cores
model: mlp
architecture: mlp
lane: cpu
sizes: [1.3M]
hardwares: [cpu-2]
created: {date}
updated: {date}
---
# MLP classifier on two CPU cores

## Target metrics

Training throughput, `tps` (training samples per second, higher is better), at parity with the float64
reference.

## How to run

`wiki resolve mlp cpu` gives the lane program and its `launch_cmd`.

## Variant matrix

| Size | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp |
|---|---|---|---|---|---|---|
| 1.3M | cpu-2 | live | — | — | {open} | — |

## Cross-variant open hypotheses

The scripted queue of `training/autoresearch_queue.py`.

## Variant-specific open hypotheses

None.

## Retired hypotheses

None.

## Knobs translation matrix

| knob | what it changes |
|---|---|
| batch, micro_batch | samples per optimizer step; gradient accumulation |
| dtype | bfloat16 autocast |
| adamw, gelu, layout | the implementation of the same math |

## Iteration ladder

Batch first, then precision, then kernels.
"""


def say(text: str) -> None:
    print(text, flush=True)


def _lane_config() -> dict:
    from wikiengine.training.autoresearch_queue import baseline_config

    return {
        "launch_cmd": (f"{{python}} -m wikiengine.training.autoresearch_target --config {{config}} --frontier {{frontier}} "
                       f"--out {{artifacts}} --rounds {ROUNDS} --seconds {SECONDS}"),
        "target_metric": "tps", "higher_is_better": True, "wake_interval_s": 120,
        "hung_after_s": 300, "ceiling_s": 900, "baseline_config": baseline_config(),
    }


def scaffold(root: Path, git) -> None:
    """The wiki of the demo lane, committed."""
    from wikiengine.core import clock
    from wikiengine.training.autoresearch_queue import QUEUE

    today = clock.today()
    files = {
        "wiki/experiments/program.md": ROOT_PROGRAM,
        f"wiki/experiments/{LANE.model_dir}/program.md": MODEL_PROGRAM,
        LANE.program: LANE_PROGRAM.format(config=yaml.safe_dump(_lane_config(), sort_keys=False)),
        LANE.log: "# mlp / cpu lane log\n",
        "wiki/models/mlp-cpu.md": MODEL_PAGE.format(date=today, open=len(QUEUE)),
        "wiki/log.md": (f"# Wiki log\n\n## [{today}] lane-scaffold | mlp / cpu lane for wiki demo autoresearch\n\n"
                        "**Op**: lane-scaffold\n**Pages created**: the programs, wiki/models/mlp-cpu.md, the lane log\n"),
        ".gitignore": ".wiki/\nraw/profiles/\n.wiki_cache/\n",
    }
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "scaffold the mlp / cpu lane for wiki demo autoresearch")


def _frontier_config(root: Path) -> dict:
    """The knobs of the row's Current best (its Setup's yaml block), else the baseline's."""
    import re

    from wikiengine.core.page import parse_page
    from wikiengine.model.variant_matrix import CURRENT_BEST, cell_reference, parse_matrix
    from wikiengine.step.lane.wake import setup_config
    from wikiengine.training.autoresearch_queue import baseline_config

    rel = "wiki/models/mlp-cpu.md"
    matrix = parse_matrix(parse_page((root / rel).read_text(encoding="utf-8"), rel))
    ref = cell_reference(matrix.row(VARIANT).cell(CURRENT_BEST), rel, re.compile(r"(?P<id>v\d{3,}[a-z]?)"))
    if ref is None or not ref.target or not (root / ref.target).is_file():
        return baseline_config()
    return setup_config((root / ref.target).read_text(encoding="utf-8")) or baseline_config()


def proposal_file(folder: Path, proposal, frontier: dict) -> Path:
    config = proposal.config(frontier)
    change = ", ".join(f"{k}: {v}" for k, v in proposal.change.items())
    text = (proposal.hypothesis_section() + "\n## Setup\n\n"
            f"The frontier's knobs with {change}, measured interleaved against the frontier:\n\n"
            "```yaml\n" + yaml.safe_dump(config, sort_keys=True) + "```\n")
    path = folder / f"{proposal.slug}.md"
    path.write_text(text, encoding="utf-8")
    return path


def default_partition() -> str:
    """The Slurm cluster's default partition (``sinfo`` marks it with ``*``)."""
    import subprocess

    from wikiengine.core.errors import WikiError

    try:
        done = subprocess.run(["sinfo", "-h", "-o", "%P"], capture_output=True, text=True, timeout=30)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise WikiError(f"--backend slurm: sinfo did not answer ({exc}): is Slurm installed and running?") from None
    marked = [name.rstrip("*") for name in done.stdout.split() if name.endswith("*")]
    if done.returncode != 0 or not marked:
        raise WikiError(f"--backend slurm: no default partition ({(done.stderr or done.stdout).strip()[:200]}): "
                        "pass --partition P")
    return marked[0]


class ScriptedAgent:
    """What the agent would do with a wake's ``needs``: propose from the queue, file verdicts."""

    def __init__(self, root: Path):
        from wikiengine.training.autoresearch_queue import QUEUE

        self.root = root
        self.queue = list(QUEUE)
        self.by_vid: dict[str, object] = {}
        self.filed: dict[str, str] = {}  # slug -> the verdict the lane filed (supported: in the frontier)
        self.folder = root / ".wiki" / "proposals"
        self.folder.mkdir(parents=True, exist_ok=True)

    def ready(self):
        return next((p for p in self.queue if all(self.filed.get(a) == "supported" for a in p.after)), None)

    def drop_unreachable(self) -> list[str]:
        """Retire the proposals that wait on one filed other than supported (a loaded machine can
        widen the noise band past a win): they can never be proposed, as an agent would see."""
        dropped = []
        for proposal in list(self.queue):
            blocked = next((a for a in proposal.after if self.filed.get(a, "supported") != "supported"), None)
            if blocked is not None:
                self.queue.remove(proposal)
                dropped.append(f"dropped {proposal.slug}: it builds on {blocked}, filed {self.filed[blocked]}")
        return dropped

    def answer(self, needs: list[dict]) -> list[str]:
        from wikiengine.step import writers as lw

        done = self.drop_unreachable()
        for need in needs:
            if need["kind"] == "hypothesis":
                proposal = self.ready()
                if proposal is None:
                    continue
                path = proposal_file(self.folder, proposal, _frontier_config(self.root))
                result = lw.new_experiment(self.root, LANE, slug=proposal.slug, variant=VARIANT, proposal_path=path,
                                           track=need["track"])
                self.queue.remove(proposal)
                self.by_vid[result["vid"]] = proposal
                done.append(f"track {need['track']}: stub {result['vid']} {proposal.slug} ({proposal.outcome} expected)")
            elif need["kind"] == "verdict" and need["vid"] in self.by_vid:
                proposal = self.by_vid.pop(need["vid"])
                # the owed command needs only the judgement: the evidence is what the engine recorded
                result = lw.file_experiment(
                    self.root, LANE, need["vid"], verdict=proposal.requested_verdict,
                    reason=f"scripted agent: {proposal.outcome} expected; asked {proposal.requested_verdict}")
                self.filed[proposal.slug] = result["verdict"]
                capped = f" (asked {result['requested']}, capped)" if result["capped"] else ""
                moved = "; Current best moved" if result["current_best_moved"] else ""
                kind = f" ({result['invalid']})" if result.get("invalid") else ""
                done.append(f"track {need['track']}: filed {need['vid']} {proposal.slug}: {result['verdict']}{kind}{capped}"
                            f"{moved}")
        return done

    @property
    def finished(self) -> bool:
        return not self.queue and not self.by_vid


def run_demo(root: Path, git, progress: bool = True, backend: str = "local", partition: str | None = None) -> int:
    """Scaffold, start, and wake until the queue is used up; print what an agent would read.
    ``backend`` ``slurm`` runs the queue as batch jobs on the Slurm of this machine
    (``partition``: default the cluster's default one)."""
    import subprocess

    from wikiengine.step.engine import run_step
    from wikiengine.step.lane.start import start_session

    started = time.monotonic()
    scaffold(root, git)
    if backend == "slurm" and partition is None:
        partition = default_partition()
    session = start_session(root, LANE, parallelism="2", backend=backend, partition=partition,
                            first="batch 256 (the optimizer step's fixed cost)")
    say(f"session {session['session']} on {session['lane']}: tracks " + ", ".join(s["name"] for s in session["pool"]))
    for variant, how in session["empty_baselines"].items():
        say(f"Baseline of {variant}: {how}")
    agent = ScriptedAgent(root)
    wakes = 0
    while not agent.finished and wakes < MAX_WAKES:
        wakes += 1
        result = run_step(root)  # `wiki step`, as the agent runs it at each wake
        for action in result.actions:
            if not action.startswith("backfill skipped"):
                say(f"  wake {wakes}: {action}")
        for line in agent.answer(result.needs):
            say(f"  agent: {line}")
        if progress:
            running = [d for d in result.decisions if d["decision"] == "skip"]
            if running:
                print(f"\r  {time.monotonic() - started:5.0f} s: " + ", ".join(
                    f"t{d['track']} " + (f"A/A {d['aa_index']}" if "aa_index" in d else d["vid"]) + " running"
                    for d in running), end="", flush=True)
        time.sleep(POLL_S if not any(d["decision"] in ("dispatch", "process") for d in result.decisions) else 0)
    print()
    say(f"\nqueue used up after {wakes} wakes in {time.monotonic() - started:.0f} s")
    for title, path in (("wiki/models/mlp-cpu.md (variant matrix)", "wiki/models/mlp-cpu.md"),
                        (LANE.log, LANE.log), (LANE.results, LANE.results)):
        text = (root / path).read_text(encoding="utf-8")
        if path.endswith("mlp-cpu.md"):
            text = text.split("## Variant matrix", 1)[1].split("\n## ", 1)[0]
        say(f"\n==== {title} ====\n{text.strip()}")
    lint = subprocess.run([sys.executable, "-m", "wikiengine", "lint"], cwd=root, capture_output=True, text=True)
    say(f"\n==== wiki lint ====\n{(lint.stdout + lint.stderr).strip()}")
    say("\n==== git log --oneline ====\n" + git(root, "log", "--oneline").strip())
    return ExitCode.OK if lint.returncode == 0 and agent.finished else ExitCode.INCOMPLETE
