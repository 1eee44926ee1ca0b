"""`wiki demo [autoresearch|relay]`: the embedded defaults, end to end, on this machine."""

from __future__ import annotations

import argparse
import shutil
import sys
import tempfile
import time
from pathlib import Path

from wikiengine.core.errors import ExitCode
from wikiengine.demos import demo_git
from wikiengine.demos.scaffold import TINY_GRID

HELP = "run an autoresearch lane (default) or a tiny relay run end to end in a fresh directory"
DESCRIPTION = """\
  wiki demo [autoresearch] [DIR]
      scaffold a wiki with a model, a lane and a model page in the real format whose
      target is real (the throughput of a small torch training step, timed interleaved
      with the frontier, with a parity check and an op digest), start a session with
      two tracks on the local backend, and wake until a scripted proposal queue (a win,
      a loss, a change within noise, a crash, a numerics break, a silent no-op, a
      second win) is used up. Ends with the variant matrix, the lane log, RESULTS.tsv,
      wiki lint and the git log.
  wiki demo kernel [DIR]
      a kernel family on the CPU (a reference torch op, a scripted author whose
      candidates include a win, a parity failure, a silent no-op and a slower kernel),
      verified, filed and closed (a close first refused, then earned).
  wiki demo relay [DIR]
      scaffold the `tiny` relay run (wiki, memory, a local git checkpoint store, the
      pinned training sources) and run `wiki step` until it is complete; ends with
      STATE.md, the quota ledger, the git log, and the run's figures: the training
      loss (first and final) and the held-out eval.

DIR defaults to a new temporary directory. No account, no network.
"""
KINDS = ("autoresearch", "relay", "kernel")
PACKAGE_ROOT = Path(__file__).resolve().parents[2]
DEMO_NOTE = ("\n\nThe data is the corpus shipped with the package, the checkpoint store the git repository in\n"
             "`store/`, and every session a local process.")
MAX_WAKES = 30
POLL_S = 0.5
DEMO_RUN = "tiny"
DEMO_CONFIG = TINY_GRID


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser("demo", help=HELP, description=DESCRIPTION,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", nargs="*", metavar="[KIND] [DIR]",
                        help=f"which demo ({', '.join(KINDS)}; default autoresearch), and an empty or new directory "
                             "(default: a new temp dir)")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    parser.add_argument("--backend", choices=("local", "slurm"), default="local",
                        help="autoresearch: where the lane's runs go (slurm: the Slurm of this machine; docs/slurm.md)")
    parser.add_argument("--partition", metavar="P", help="autoresearch --backend slurm: the partition (default: "
                        "the cluster's default partition)")
    parser.add_argument("--json", action="store_true",
                        help='relay: print only {"root", "state", "wakes", "figures", "seconds"} at the end (each wake as wiki step --json)')
    parser.set_defaults(handler=run)


def pin_sources(target: Path, trainer_json: str) -> tuple[str, str]:
    """Commit the training sources and the run's trainer config into a git repository at ``target``.

    The bootstrap pins this repository's commit and the launcher's sha256, so every
    session runs exactly these bytes. Returns ``(rev, launcher_sha256)``.
    """
    from wikiengine.training.launch import launcher_sha

    target.mkdir(parents=True)
    for package in ("training", "executors"):
        shutil.copytree(PACKAGE_ROOT / package, target / package,
                        ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "gke", "tests"))
    (target / "run.json").write_text(trainer_json)
    demo_git(target, "init", "--quiet")
    demo_git(target, "add", "-A")
    demo_git(target, "commit", "--quiet", "-m", "pinned training sources and run config for the demo")
    rev = demo_git(target, "rev-parse", "HEAD").strip()
    return rev, launcher_sha(target, rev)


def demo_config(root: Path) -> dict:
    """The tiny run's program config, with the data pins computed from the shipped corpus."""
    from wikiengine.training.config import RunConfig
    from wikiengine.training.data import open_corpus

    trainer = RunConfig(**DEMO_CONFIG).validate()
    corpus = open_corpus("", trainer.seq_len, trainer.seed)
    trainer_json = RunConfig(**DEMO_CONFIG, dataset_files_sha=corpus.files_sha,
                             shuffle_perm_sha=corpus.perm_sha).validate().to_json()
    rev, sha = pin_sources(root / ".wiki" / "src", trainer_json)
    return {
        "preset": "tiny", **DEMO_CONFIG, "tokens_per_step": trainer.tokens_per_step,
        "dataset_files_sha": corpus.files_sha, "shuffle_perm_sha": corpus.perm_sha, "session_timeout_s": 600,
        "store": {"kind": "local-git", "path": "store"},
        "compute": {"kind": "local-process", "accelerator": "cpu", "state_dir": ".wiki/compute", "quota_hours": 1.0,
                    "slug_prefix": "tiny-session"},
        "quota": {"session_hours": 0.05, "reserve_hours": 0.01},
        "relay": {"check_every_s": 1, "claim_ttl_s": 0},
        "bootstrap": {"repo": str(root / ".wiki" / "src"), "rev": rev, "launcher_sha256": sha,
                      "session_args": ["--store", str(root / "store"), "--config", "{tree}/run.json",
                                       "--out", str(root / ".wiki" / "session-out"), "--no-progress"]},
        "eval_plan": ["heldout_loss", "heldout_perplexity", "next_token_accuracy"],
        "publish": {"dir": ".wiki/published"},
    }


def scaffold(root: Path) -> None:
    """Create the demo wiki, memory, store and git repository in ``root``."""
    from wikiengine.core.clock import utcnow
    from wikiengine.demos.scaffold import DEMO_TEMPLATE, run_program_text
    from wikiengine.executors.local_store import LocalGitStore
    from wikiengine.model import memory

    config = demo_config(root)
    shutil.copytree(DEMO_TEMPLATE / "wiki", root / "wiki", dirs_exist_ok=True)
    (root / "wiki" / "runs" / DEMO_RUN).mkdir(parents=True, exist_ok=True)
    (root / "wiki" / "runs" / DEMO_RUN / "program.md").write_text(run_program_text(DEMO_RUN, config, "wiki demo", DEMO_NOTE))
    LocalGitStore.create(root / "store", description="tiny demo checkpoint store")
    memory.scaffold(root, DEMO_RUN, utcnow())
    (root / ".gitignore").write_text(".wiki/\nstore/\n")
    demo_git(root, "init", "--quiet")
    demo_git(root, "add", ".gitignore", "wiki", "memory")
    demo_git(root, "commit", "--quiet", "-m", "demo: scaffold the tiny relay run (wiki, memory)")
    # wiki step commits with the repository's identity
    demo_git(root, "config", "user.name", "wiki demo")
    demo_git(root, "config", "user.email", "demo@wikiengine.invalid")


def watch_session(root: Path, progress: bool) -> None:
    """Poll the local backend until the last launched session ends, showing the pointer's progress."""
    from wikiengine.model import memory
    from wikiengine.model.state import RelayState
    from wikiengine.step.relay.wake import load_run

    state = RelayState.read(root)
    run = load_run(root, state)
    assets = memory.read_assets(root)
    if not assets:
        return
    ref = assets[-1].ref
    bar = None
    if progress:
        from tqdm import tqdm

        bar = tqdm(total=run.settings.max_steps, initial=state.last_seen_step, desc=f"  {assets[-1].job}",
                   unit="step", dynamic_ncols=True, leave=False, file=sys.stdout)
    try:
        while run.compute.status(ref).state.alive:
            if bar is not None:
                pointer = run.store.read_pointer(run.store.head())
                step = pointer.step if pointer else 0
                if step > bar.n:
                    bar.update(step - bar.n)
            time.sleep(POLL_S)
    finally:
        if bar is not None:
            bar.close()


def final_figures(root: Path) -> dict:
    """What an ML user looks for first: the training loss from the first logged interval to the
    last (the final trainer state in the store) and the held-out eval the finish wrote."""
    import json

    from wikiengine.executors.store import FINAL_PATH
    from wikiengine.model.state import RelayState
    from wikiengine.step.relay.finish import eval_dir, results
    from wikiengine.step.relay.wake import load_run
    from wikiengine.training.checkpoint import TRAINER_STATE_NAME

    state = RelayState.read(root)
    run = load_run(root, state)
    trainer = json.loads(run.store.read_file(f"{FINAL_PATH}/{TRAINER_STATE_NAME}", run.store.head()))
    losses = [(entry["step"], entry["loss"]) for entry in trainer["log_history"] if entry.get("loss") is not None]
    evaluation = results(eval_dir(root, state.run), list(run.config.get("eval_plan") or []))
    return {"loss": {"first": {"step": losses[0][0], "value": losses[0][1]},
                     "final": {"step": losses[-1][0], "value": losses[-1][1]}} if losses else None,
            "eval": {task: found["value"] for task, found in evaluation.items()}}


def figures_text(figures: dict) -> str:
    loss = figures["loss"]
    lines = ["==== the run's figures ===="]
    lines.append(f"training loss: {loss['first']['value']:.4f} at step {loss['first']['step']} -> "
                 f"{loss['final']['value']:.4f} at step {loss['final']['step']} (final)" if loss
                 else "training loss: none logged")
    lines += [f"eval {task}: {value:.4f}" for task, value in figures["eval"].items()] or ["eval: none ran"]
    return "\n".join(lines)


def demo_dir(given: Path | None) -> Path:
    from wikiengine.core.errors import WikiError

    root = (given or Path(tempfile.mkdtemp(prefix="wiki-demo-"))).resolve()
    if root.exists() and any(root.iterdir()):
        raise WikiError("the demo directory must be empty or new", root)
    root.mkdir(parents=True, exist_ok=True)
    return root


def _kind_and_dir(target: list[str]) -> tuple[str, Path | None]:
    from wikiengine.core.errors import WikiError

    kind = target[0] if target and target[0] in KINDS else "autoresearch"
    rest = target[1:] if target and target[0] in KINDS else target
    if len(rest) > 1:
        raise WikiError(f"wiki demo takes [KIND] [DIR] (KIND: {', '.join(KINDS)})")
    return kind, Path(rest[0]) if rest else None


def run(args) -> int:
    args.kind, args.dir = _kind_and_dir(args.target)
    if args.json and args.kind != "relay":
        from wikiengine.core.errors import WikiError

        raise WikiError("--json is for `wiki demo relay`: the other demos' output is their walkthrough")
    if (args.backend != "local" or args.partition) and args.kind != "autoresearch":
        from wikiengine.core.errors import WikiError

        raise WikiError("--backend and --partition are for `wiki demo autoresearch`")
    if args.kind == "kernel":
        from wikiengine.demos.kernel import run_command

        return run_command(args.dir)
    root = demo_dir(args.dir)
    if args.kind == "autoresearch":
        from wikiengine.demos.autoresearch import run_demo

        print(f"wiki demo autoresearch: an mlp / cpu lane in {root}")
        demo_git(root, "init", "--quiet")
        demo_git(root, "config", "user.name", "wiki demo")
        demo_git(root, "config", "user.email", "demo@wikiengine.invalid")
        started = time.monotonic()
        code = run_demo(root, lambda cwd, *a: demo_git(cwd, *a), progress=not args.no_progress, backend=args.backend,
                        partition=args.partition)
        print(f"demo {'complete' if code == 0 else 'FAILED'} in {time.monotonic() - started:.0f} s: {root}")
        return code
    return run_relay(root, args)


def run_relay(root: Path, args) -> int:
    from wikiengine.step.relay.wake import run_step

    started = time.monotonic()
    say = (lambda text: None) if args.json else print
    say(f"wiki demo: scaffolding a tiny relay run in {root}")
    scaffold(root)
    wakes = []
    for wake in range(1, MAX_WAKES + 1):
        result = run_step(root)
        wakes.append(result.as_json())
        say(f"\nwake {wake}: " + result.text())
        if result.decision in ("launch", "running", "adopt"):
            watch_session(root, not (args.no_progress or args.json))
        elif result.decision in ("wait", "locked"):
            time.sleep(POLL_S)
        if result.state == "complete":
            break
        if result.decision == "blocked":
            print("\nthe run is blocked: see memory/ERRORS.md", file=sys.stderr)
            return result.exit_code
    else:
        print(f"\nthe run did not complete in {MAX_WAKES} wakes", file=sys.stderr)
        return ExitCode.INCOMPLETE
    if args.json:
        import json

        print(json.dumps({"root": str(root), "state": result.state, "wakes": wakes, "figures": final_figures(root),
                          "seconds": round(time.monotonic() - started, 1)}, indent=2))
        return 0
    print("\n==== memory/STATE.md ====")
    print((root / "memory" / "STATE.md").read_text())
    print("==== memory/QUOTA.md (ledger) ====")
    print((root / "memory" / "QUOTA.md").read_text())
    print("==== git log --oneline ====")
    print(demo_git(root, "log", "--oneline"))
    print(figures_text(final_figures(root)))
    print(f"demo complete in {time.monotonic() - started:.0f} s: {root}")
    return 0

