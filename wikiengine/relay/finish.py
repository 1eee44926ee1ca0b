"""The end of a run (seed section 4): verify, publish in a clean room, evaluate, report.

Each stage leaves its result on disk, so a finish interrupted anywhere resumes where it
stopped:

1. **verify** every kept checkpoint (``ckpt/checkpoint-*``) and ``final/`` when the store
   has one, byte for byte against their manifests (sha256 and size of every file);
2. **publish** the final weights to the publish directory, then check them in a clean
   room (:func:`executors.clean_room.run_clean`: HF_TOKEN popped, not just
   ``token=False``; HOME without ``.netrc``, token files or ``kaggle.json``): a child that
   asserts again that no token is reachable and re-verifies the published bytes;
3. **evaluate** the eval plan's tasks in order, a ``--limit 5`` smoke run first, each
   result saved under ``wiki/runs/<run>/eval/`` as it lands;
4. **report**: ``wiki/runs/<run>/report.md`` is written only when every task has its
   result: a partial table is never published.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from executors.store import checkpoint_path
from wikiengine.relay.decide import Emergency



@dataclass
class FinishResult:
    actions: list[str] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)  # files to commit with memory (relative to the root)
    complete: bool = False
    emergency: Emergency | None = None


def eval_dir(root: Path, run: str) -> Path:
    return Path(root) / "wiki" / "runs" / run / "eval"


def publish_dir(root: Path, run: str, config: dict) -> Path:
    directory = Path((config.get("publish") or {}).get("dir", ".wiki/published"))
    return (directory if directory.is_absolute() else Path(root) / directory) / run


# ---------------------------------------------------------------- 1. verify


def verify_all(store, revision: str, max_steps: int) -> tuple[list[int], dict[str, bytes]]:
    """Verify every checkpoint folder (and ``final/``) at ``revision``; return the steps and the final files.

    Raises :class:`training.checkpoint.CheckpointError` naming the first file that differs.
    """
    from training.checkpoint import CheckpointError, read_verified_from_store, verify_files

    steps = sorted({int(p.split("/")[1].split("-")[1]) for p in store.list_files("ckpt", revision)
                    if p.count("/") >= 2 and p.split("/")[1].startswith("checkpoint-")
                    and p.split("/")[1].split("-")[1].isdigit()})
    if max_steps not in steps:
        raise CheckpointError(f"{checkpoint_path(max_steps)} is not in the store")
    final_files = {}
    for step in steps:
        files = read_verified_from_store(store, step, revision)
        if step == max_steps:
            final_files = files
    names = store.list_files("final", revision)
    if names:
        files = {p.split("/", 1)[1]: store.read_file(p, revision) for p in names}
        if "manifest.json" not in files:
            raise CheckpointError("final/ has no manifest.json")
        verify_files(files["manifest.json"], files, max_steps)
    return steps, final_files


# ---------------------------------------------------------------- 2. publish


def run_in_clean_room(argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``argv`` through :func:`executors.clean_room.run_clean`: no credential reachable (row 47)."""
    from executors.clean_room import run_clean

    return run_clean(argv, timeout_s=600)


def publish(final_files: dict[str, bytes], target: Path, run: str) -> Path:
    """Write the final weights and their manifest to ``target`` (atomically, file by file)."""
    from training.checkpoint import atomic_write_bytes

    target.mkdir(parents=True, exist_ok=True)
    model = final_files["model.safetensors"]
    atomic_write_bytes(target / "model.safetensors", model)
    manifest = {"run": run, "files": {"model.safetensors": {"sha256": hashlib.sha256(model).hexdigest(),
                                                            "size": len(model)}}}
    atomic_write_bytes(target / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
    return target


def clean_room_check(directory: Path) -> dict:
    """In the clean room: no token reachable, and the published bytes match their manifest."""
    from executors.clean_room import is_secret_name

    leaked = sorted(k for k in os.environ if is_secret_name(k))
    if leaked:
        raise SystemExit(f"clean room: credential variables present: {', '.join(leaked)}")
    home = Path(os.environ.get("HOME", "/nonexistent"))
    for name in (".netrc", ".kaggle/kaggle.json", ".cache/huggingface/token"):
        if (home / name).exists():
            raise SystemExit(f"clean room: {name} is reachable")
    token = None
    try:
        from huggingface_hub import get_token

        token = get_token()
    except ImportError:
        pass
    if token is not None:
        raise SystemExit("clean room: huggingface_hub finds a token")
    manifest = json.loads((directory / "manifest.json").read_text())
    for name, entry in manifest["files"].items():
        data = (directory / name).read_bytes()
        if hashlib.sha256(data).hexdigest() != entry["sha256"] or len(data) != entry["size"]:
            raise SystemExit(f"clean room: {name} differs from the published manifest")
    return {"token": None, "verified": sorted(manifest["files"])}


# ---------------------------------------------------------------- 3. evaluate, 4. report


def trainer_config_json(config: dict) -> str:
    """The trainer's run-config JSON from a program config (only the keys the trainer knows)."""
    import dataclasses as dc

    from training.config import RunConfig

    known = {f.name for f in dc.fields(RunConfig)} - {"extra"}
    return json.dumps({k: v for k, v in config.items() if k in known}, indent=2, sort_keys=True) + "\n"


def evaluate(model_dir: Path, config: dict, out: Path) -> subprocess.CompletedProcess:
    """Run the eval plan (smoke first, then each task in order, saved as it lands)."""
    tasks = list(config.get("eval_plan") or [])
    with tempfile.TemporaryDirectory(prefix="eval-config-") as tmp:
        config_path = Path(tmp) / "run.json"
        config_path.write_text(trainer_config_json(config))
        argv = [sys.executable, "-m", "training.evaluate", "--model", str(model_dir), "--config", str(config_path),
                "--tasks", ",".join(tasks), "--out-dir", str(out), "--smoke-limit", "5"]
        from executors.clean_room import clean_environment

        home = Path(tmp) / "home"
        home.mkdir()
        env = clean_environment(os.environ, home)  # the eval needs no credential and gets none
        return subprocess.run(argv, capture_output=True, text=True, timeout=3600, env=env)


def results(out: Path, tasks: list[str]) -> dict[str, dict]:
    """The full (non-smoke) results present, by task."""
    found = {}
    for task in tasks:
        path = out / f"{task}.json"
        if path.exists():
            found[task] = json.loads(path.read_text())
    return found


def report_text(run: str, steps: list[int], published: Path, tasks: list[str], found: dict[str, dict]) -> str:
    """The report: only called with every task's result (never a partial table)."""
    missing = [t for t in tasks if t not in found]
    if missing:
        raise ValueError(f"refusing a partial eval table: {', '.join(missing)} missing")
    lines = [f"# {run}: final report", "", "## Checkpoints", "",
             f"Verified byte for byte against their manifests: {', '.join(str(s) for s in steps)}.", "",
             "## Published", "", f"Final weights: `{published.name}/model.safetensors`, checked in a clean room "
             "(no token reachable).", "", "## Evaluation", "", "| task | value | samples | tokens |",
             "| --- | --- | --- | --- |"]
    for task in tasks:
        r = found[task]
        lines.append(f"| {task} | {r['value']:.4f} | {r['samples']} | {r['tokens']} |")
    return "\n".join(lines) + "\n"


def finish_run(run, state, clock) -> FinishResult:
    """Every stage of seed section 4 that has not already left its result."""
    from executors.store import StoreError
    from training.checkpoint import CheckpointError

    from wikiengine.memory import atomic_write_text

    result = FinishResult()
    store, config, root = run.store, run.config, run.root
    head = store.head()
    try:
        steps, final_files = verify_all(store, head, run.settings.max_steps)
    except (CheckpointError, StoreError) as exc:
        result.emergency = Emergency("checkpoint_incomplete", f"final verification failed: {str(exc)[:200]}",
                                     str(exc))
        result.actions.append("final verification failed")
        return result
    result.actions.append(f"verified checkpoints {', '.join(map(str, steps))} against their manifests")
    target = publish(final_files, publish_dir(root, state.run, config), state.run)
    from executors.clean_room import CleanRoomError

    try:
        check = run_in_clean_room([sys.executable, "-m", "wikiengine.relay.finish", "clean-room-check", str(target)])
    except CleanRoomError as exc:
        check = subprocess.CompletedProcess([], 3, "", str(exc))
    if check.returncode != 0:
        result.emergency = Emergency("publish_failed", "the clean-room check failed",
                                     (check.stderr or check.stdout)[-2000:])
        result.actions.append("clean-room check failed")
        return result
    result.actions.append(f"published {target.relative_to(root) if target.is_relative_to(root) else target} "
                          "(clean room: no token)")
    tasks = list(config.get("eval_plan") or [])
    out = eval_dir(root, state.run)
    if tasks:
        done = evaluate(target, config, out)
        found = results(out, tasks)
        result.paths += [str(p.relative_to(root)) for p in sorted(out.glob("*.json"))]
        if done.returncode != 0 or len(found) < len(tasks):
            result.actions.append(f"eval incomplete ({len(found)}/{len(tasks)} tasks): "
                                  f"{(done.stderr or '').strip()[-200:]}")
            return result
        result.actions.append(f"evaluated {', '.join(tasks)} (smoke --limit 5 first)")
    found = results(out, tasks)
    report = Path(root) / "wiki" / "runs" / state.run / "report.md"
    atomic_write_text(report, report_text(state.run, steps, target, tasks, found))
    result.paths.append(str(report.relative_to(root)))
    result.actions.append(f"filled {report.relative_to(root)}")
    result.complete = True
    return result


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "clean-room-check":
        print(json.dumps(clean_room_check(Path(sys.argv[2]))))
        raise SystemExit(0)
    print("usage: python -m wikiengine.relay.finish clean-room-check DIR", file=sys.stderr)
    raise SystemExit(2)
