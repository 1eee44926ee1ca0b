"""The end of a run (seed section 4): verify, publish in a clean room, evaluate, report.

Each stage leaves its result on disk, so a finish interrupted anywhere resumes where it
stopped:

1. **verify** every kept checkpoint (``ckpt/checkpoint-*``) and ``final/`` (required),
   byte for byte against their manifests (sha256 and size of every file), and each
   manifest against the digest the run itself recorded in ``memory/ASSETS.md`` (a
   session's own log, or the wake that first saw the checkpoint): a store whose files
   and manifest were rewritten together still fails, naming the checkpoint;
2. **publish** the final weights to the publish directory, then check them in a clean
   room (:func:`executors.clean_room.run_clean`: HF_TOKEN popped, not just
   ``token=False``; HOME without ``.netrc``, token files or ``kaggle.json``): a child that
   asserts again that no token is reachable and re-verifies the published bytes;
3. **evaluate** the eval plan's tasks in order, a ``--limit 5`` smoke run first, each
   result saved under ``wiki/runs/<run>/eval/`` as it lands;
4. **report**: only when every task has its result (a partial table is never
   published): when the run names a template (``report: {template: docs/final-report.md}``)
   its ``<!-- PENDING: name -->`` ... ``<!-- /PENDING -->`` blocks (``checkpoints``,
   ``published``, ``evaluation``, ``summary``) are filled in place; otherwise
   ``wiki/runs/<run>/report.md`` is written.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.errors import ExitCode
from wikiengine.executors.store import FINAL_PATH, checkpoint_path
from wikiengine.step.relay.decide import Emergency
from wikiengine.step.relay.records import FINAL_KEY


@dataclass
class FinishResult:
    """What finishing a relay session did, and the files to commit with memory."""

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


def verify_all(store, revision: str, max_steps: int, recorded: dict[str, str]) -> tuple[list[int], dict[str, bytes]]:
    """Verify every checkpoint folder and ``final/`` at ``revision``; return the steps and the final files.

    Each folder's bytes must match its manifest, and each manifest the digest in ``recorded``
    (checkpoint step as text, or ``"final"``); the last checkpoint and ``final/`` must have a
    recorded digest, and every recorded checkpoint must still be in the store. Raises
    :class:`training.checkpoint.CheckpointError` naming the checkpoint and the file that differs.
    """
    from wikiengine.training.checkpoint import (
        FINAL_FILES,
        MANIFEST_NAME,
        CheckpointError,
        read_verified_from_store,
        verify_files,
    )

    steps = sorted({int(p.split("/")[1].split("-")[1]) for p in store.list_files("ckpt", revision)
                    if p.count("/") >= 2 and p.split("/")[1].startswith("checkpoint-")
                    and p.split("/")[1].split("-")[1].isdigit()})
    if max_steps not in steps:
        raise CheckpointError(f"{checkpoint_path(max_steps)} is not in the store")
    missing = sorted(int(k) for k in recorded if k.isdigit() and int(k) not in steps)
    if missing:
        raise CheckpointError(f"{checkpoint_path(missing[0])}: recorded by the run, missing from the store")
    for key in (str(max_steps), FINAL_KEY):
        if key not in recorded:
            name = "final/" if key == FINAL_KEY else checkpoint_path(max_steps)
            raise CheckpointError(f"{name}: the run recorded no digest of it (no session log, no wake saw it): "
                                  "it cannot be verified against the run's own record")
    final_files = {}
    for step in steps:
        try:
            files = read_verified_from_store(store, step, revision)
        except CheckpointError as exc:
            raise CheckpointError(f"{checkpoint_path(step)}: {exc}") from None
        _check_digest(checkpoint_path(step), files[MANIFEST_NAME], recorded.get(str(step)))
        if step == max_steps:
            final_files = files
    names = store.list_files(FINAL_PATH, revision)
    if not names:
        raise CheckpointError("final/ is not in the store (the last session writes it after the last checkpoint)")
    files = {p.split("/", 1)[1]: data for p, data in store.read_files(names, revision).items()}
    if MANIFEST_NAME not in files:
        raise CheckpointError("final/ has no manifest.json")
    try:
        verify_files(files[MANIFEST_NAME], files, max_steps, required=FINAL_FILES)
    except CheckpointError as exc:
        raise CheckpointError(f"final/: {exc}") from None
    _check_digest("final/", files[MANIFEST_NAME], recorded[FINAL_KEY])
    if files["model.safetensors"] != final_files["model.safetensors"]:
        raise CheckpointError(f"final/model.safetensors differs from {checkpoint_path(max_steps)}/model.safetensors")
    return steps, final_files


def _check_digest(name: str, manifest: bytes, recorded: str | None) -> None:
    from wikiengine.training.checkpoint import CheckpointError, sha256_hex

    if recorded is not None and sha256_hex(manifest) != recorded:
        raise CheckpointError(f"{name}: manifest.json has sha256 {sha256_hex(manifest)[:16]}..., the run recorded "
                              f"{recorded[:16]}... (the checkpoint and its manifest were rewritten)")


# ---------------------------------------------------------------- 2. publish


def run_in_clean_room(argv: list[str]) -> subprocess.CompletedProcess:
    """Run ``argv`` through :func:`executors.clean_room.run_clean`: no credential reachable (row 47)."""
    from wikiengine.executors.clean_room import run_clean

    return run_clean(argv, timeout_s=600)


def publish(final_files: dict[str, bytes], target: Path, run: str) -> Path:
    """Write the final weights and their manifest to ``target`` (atomically, file by file)."""
    from wikiengine.core.atomic import atomic_write_bytes

    target.mkdir(parents=True, exist_ok=True)
    model = final_files["model.safetensors"]
    atomic_write_bytes(target / "model.safetensors", model)
    manifest = {"run": run, "files": {"model.safetensors": {"sha256": hashlib.sha256(model).hexdigest(),
                                                            "size": len(model)}}}
    atomic_write_bytes(target / "manifest.json", (json.dumps(manifest, indent=2) + "\n").encode())
    return target


def clean_room_check(directory: Path) -> dict:
    """In the clean room: no token reachable, and the published bytes match their manifest."""
    from wikiengine.executors.clean_room import is_secret_name

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

    from wikiengine.training.config import RunConfig

    known = {f.name for f in dc.fields(RunConfig)} - {"extra"}
    return json.dumps({k: v for k, v in config.items() if k in known}, indent=2, sort_keys=True) + "\n"


def evaluate(model_dir: Path, config: dict, out: Path) -> subprocess.CompletedProcess:
    """Run the eval plan (smoke first, then each task in order, saved as it lands)."""
    tasks = list(config.get("eval_plan") or [])
    with tempfile.TemporaryDirectory(prefix="eval-config-") as tmp:
        config_path = Path(tmp) / "run.json"
        config_path.write_text(trainer_config_json(config))
        argv = [sys.executable, "-m", "wikiengine.training.evaluate", "--model", str(model_dir), "--config", str(config_path),
                "--tasks", ",".join(tasks), "--out-dir", str(out), "--smoke-limit", "5"]
        from wikiengine.executors.clean_room import clean_environment

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


REPORT_BLOCKS = ("checkpoints", "published", "evaluation", "summary")
_PENDING = re.compile(r"^<!-- PENDING: ([a-z_]+) -->[ \t]*\r?\n(.*?)^<!-- /PENDING -->[ \t]*\r?$", re.M | re.S)


def report_blocks(run: str, steps: list[int], published: Path, tasks: list[str], found: dict[str, dict]) -> dict[
        str, str]:
    """The report's four blocks as markdown: only with every task's result (never a partial table)."""
    missing = [t for t in tasks if t not in found]
    if missing:
        raise ValueError(f"refusing a partial eval table: {', '.join(missing)} missing")
    table = ["| task | value | samples | tokens |", "| --- | --- | --- | --- |"]
    table += [f"| {t} | {found[t]['value']:.4f} | {found[t]['samples']} | {found[t]['tokens']} |" for t in tasks]
    return {
        "checkpoints": "Verified byte for byte against their manifests and the digests the run recorded: "
                       f"{', '.join(str(s) for s in steps)}, and final/.",
        "published": f"Final weights: `{published.name}/model.safetensors`, checked in a clean room (no token "
                     "reachable).",
        "evaluation": "\n".join(table) if tasks else "No eval plan.",
        "summary": f"Run {run} finished at step {steps[-1]} and is complete.",
    }


def report_text(run: str, steps: list[int], published: Path, tasks: list[str], found: dict[str, dict]) -> str:
    """A new report (when the run names no template)."""
    blocks = report_blocks(run, steps, published, tasks, found)
    lines = [f"# {run}: final report", ""]
    for title, name in (("Checkpoints", "checkpoints"), ("Published", "published"), ("Evaluation", "evaluation"),
                        ("Summary", "summary")):
        lines += [f"## {title}", "", blocks[name], ""]
    return "\n".join(lines)


def fill_report(template: str, blocks: dict[str, str]) -> str:
    """``template`` with each ``<!-- PENDING: name -->`` ... ``<!-- /PENDING -->`` block replaced by
    ``blocks[name]`` (between ``<!-- filled: name -->`` markers); every other byte is kept.

    Raises ValueError for a template with no pending block, an unknown block name, or an
    opening marker without its closer.
    """
    names = _PENDING.findall(template)
    if not names:
        raise ValueError("the report template has no '<!-- PENDING: name -->' ... '<!-- /PENDING -->' block")
    unknown = sorted({name for name, _ in names} - set(REPORT_BLOCKS))
    if unknown:
        raise ValueError(f"the report template has an unknown PENDING block {unknown[0]!r} "
                         f"(known: {', '.join(REPORT_BLOCKS)})")
    filled = _PENDING.sub(lambda m: f"<!-- filled: {m.group(1)} -->\n{blocks[m.group(1)]}\n<!-- /filled -->",
                          template)
    if "<!-- PENDING:" in filled:
        raise ValueError("the report template has a '<!-- PENDING: name -->' without its '<!-- /PENDING -->'")
    return filled


def report_path(root: Path, run: str, config: dict) -> tuple[Path, bool]:
    """Where the report goes: the template the run names (``report.template``, filled in place), or
    ``wiki/runs/<run>/report.md``. The template must lie inside the wiki repository."""
    template = (config.get("report") or {}).get("template")
    if not template:
        return Path(root) / "wiki" / "runs" / run / "report.md", False
    path = (Path(root) / template).resolve()
    if not path.is_relative_to(Path(root).resolve()):
        raise ValueError(f"report.template {template!r} is outside the wiki repository")
    return path, True


def finish_run(run, state, clock) -> FinishResult:
    """Every stage of seed section 4 that has not already left its result."""
    from wikiengine.core.atomic import atomic_write_text
    from wikiengine.executors.store import StoreError
    from wikiengine.training.checkpoint import CheckpointError

    result = FinishResult()
    store, config, root = run.store, run.config, run.root
    head = store.head()
    from wikiengine.model.memory import read_digests

    recorded = {key: d.manifest_sha256 for key, d in read_digests(root).items()}
    try:
        steps, final_files = verify_all(store, head, run.settings.max_steps, recorded)
    except (CheckpointError, StoreError) as exc:
        result.emergency = Emergency("checkpoint_altered", f"final verification failed: {str(exc)[:200]}",
                                     str(exc))
        result.actions.append("final verification failed")
        return result
    result.actions.append(f"verified checkpoints {', '.join(map(str, steps))} and final/ against their manifests and "
                          "the digests the run recorded")
    target = publish(final_files, publish_dir(root, state.run, config), state.run)
    from wikiengine.executors.clean_room import CleanRoomError

    try:
        check = run_in_clean_room([sys.executable, "-m", "wikiengine.step.relay.finish", "clean-room-check", str(target)])
    except CleanRoomError as exc:
        check = subprocess.CompletedProcess([], ExitCode.REFUSED, "", str(exc))
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
    try:
        report, templated = report_path(root, state.run, config)
        if templated:
            text = fill_report(report.read_text(encoding="utf-8"), report_blocks(state.run, steps, target, tasks,
                                                                                 found))
        else:
            text = report_text(state.run, steps, target, tasks, found)
    except (OSError, ValueError) as exc:
        result.actions.append(f"report not written: {exc}")
        return result
    atomic_write_text(report, text)
    where = report.relative_to(Path(root).resolve()) if templated else report.relative_to(root)
    result.paths.append(str(where))
    result.actions.append(f"filled the PENDING blocks of {where}" if templated else f"filled {where}")
    result.complete = True
    return result


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "clean-room-check":
        print(json.dumps(clean_room_check(Path(sys.argv[2]))))
        raise SystemExit(ExitCode.OK)
    print("usage: python -m wikiengine.step.relay.finish clean-room-check DIR", file=sys.stderr)
    raise SystemExit(ExitCode.BAD_INPUT)
