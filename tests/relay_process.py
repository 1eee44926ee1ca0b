"""Real `wiki step` processes on a real wiki, a real LocalGitStore and the real local-process
backend, whose sessions run a pinned, hash-checked launcher that writes checkpoints the way
``training.session`` does (synthetic bytes, the same commits and the same log events). No
tests here.

Each launch pops the next behaviour from ``<root>/.wiki/sessions.json`` (a list):
``{"save_every_s", "until", "linger_s", "exit", "losses"}`` (all optional): save every
``save_every_s`` from the pointer to ``until`` (default: the next session boundary), write
``final/`` at ``max_steps``, print the exit record, stay alive ``linger_s``, exit ``exit``.
A session whose pointer checkpoint fails verification refuses like ``training.session``
(exit 3, reason ``checkpoint_corrupt``).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

from test_relay_support import CONFIG, make_wiki, pinned_launcher_repo

TESTS = Path(__file__).resolve().parent

LAUNCHER = r'''
import hashlib, json, os, sys, time
from pathlib import Path
from wikiengine.executors.local_store import LocalGitStore
from wikiengine.training.checkpoint import CheckpointError, read_verified_from_store
from test_relay_support import checkpoint_files, final_files, CONFIG

store_path, spec_path, config_json = BOOTSTRAP["session_args"]
config = dict(CONFIG, **json.loads(config_json))
queue = json.loads(Path(spec_path).read_text())
spec = queue.pop(0) if queue else {}
Path(spec_path).write_text(json.dumps(queue))
store = LocalGitStore(store_path)

def emit(event, **fields):
    print(json.dumps({"event": event, **fields}), flush=True)

def commit(kind, step, files):
    directory = Path(store_path).parent / f".src-{os.getpid()}-{kind}-{step}"
    directory.mkdir(parents=True, exist_ok=True)
    for name, data in files.items():
        (directory / name).write_bytes(data)
    head = store.head()
    if kind == "final":
        return store.commit_final(step, directory, parent=head)
    return store.commit_pointer(step, parent=store.commit_checkpoint(step, directory, parent=head))

head = store.head()
pointer = store.read_pointer(head)
start = pointer.step if pointer else 0
if start:
    try:
        read_verified_from_store(store, start, head)
    except CheckpointError as exc:
        emit("session_end", start_step=start, end_step=start, reason="checkpoint_corrupt",
             detail=f"ckpt/checkpoint-{start}: {exc}")
        raise SystemExit(3)
grid = [config["session_steps"] * k for k in range(1, config["max_steps"] // config["session_steps"])]
until = spec.get("until") or min(b for b in grid + [config["max_steps"]] if b > start)
emit("plan", resume_step=start, boundary=until)
losses = {int(k): v for k, v in spec.get("losses", {}).items()}
step = start
for step in range(start + config["save_steps"], until + 1, config["save_steps"]):
    time.sleep(spec.get("save_every_s", 0.2))
    files = checkpoint_files(step, config, losses={s: v for s, v in losses.items() if s <= step})
    commit("checkpoint", step, files)
    emit("checkpoint", step=step, manifest_sha256=hashlib.sha256(files["manifest.json"]).hexdigest())
if step == config["max_steps"]:
    files = final_files(step, config)
    commit("final", step, files)
    emit("final", step=step, manifest_sha256=hashlib.sha256(files["manifest.json"]).hexdigest())
emit("session_end", start_step=start, end_step=step, reason="max_steps" if step == config["max_steps"] else "boundary")
time.sleep(spec.get("linger_s", 0))
raise SystemExit(spec.get("exit", 0))
'''


def pinned_launcher(tmp_path: Path) -> tuple[str, str, str]:
    """A git repository holding the fake session launcher; (repo, rev, sha256)."""
    return pinned_launcher_repo(tmp_path / "launcher-src", LAUNCHER, "fake session launcher")


def process_wiki(tmp_path: Path, sessions: list[dict], **overrides) -> Path:
    """A wiki whose run uses the local-process backend and the fake launcher; returns its root."""
    root = tmp_path / "wiki-repo"
    root.mkdir()
    repo, rev, sha = pinned_launcher(tmp_path)
    relay = dict(CONFIG["relay"], claim_ttl_s=0, check_every_s=1, max_clock_skew_s=0, clock_slack_s=0,
                 **overrides.pop("relay", {}))
    grid = {k: overrides.pop(k) for k in ("session_steps",) if k in overrides}
    compute = {"kind": "local-process", "accelerator": "cpu", "state_dir": ".wiki/compute", "quota_hours": 10,
               "slug_prefix": "tiny-session", **overrides.pop("compute", {})}
    config = dict(CONFIG, **grid, relay=relay, compute=compute,
                  bootstrap={"repo": repo, "rev": rev, "launcher_sha256": sha,
                             "session_args": [str(root / "store"), str(root / ".wiki" / "sessions.json"),
                                              json.dumps(grid)]}, **overrides)
    make_wiki(root, config)
    (root / ".wiki").mkdir(exist_ok=True)
    (root / ".wiki" / "sessions.json").write_text(json.dumps(sessions))
    return root


def env() -> dict:
    """The environment of a wiki step process (and so of its sessions): the tests' helpers importable."""
    paths = [str(TESTS), str(TESTS.parent)] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else [])
    return dict(os.environ, PYTHONPATH=os.pathsep.join(paths))


def wiki_step(root: Path, *args: str) -> tuple[int, dict, str]:
    """One real `wiki step --json` process: (exit code, its JSON, stderr)."""
    done = subprocess.run([sys.executable, "-m", "wikiengine", "step", "--json", "--root", str(root), *args],
                          capture_output=True, text=True, env=env(), timeout=300)
    try:
        out = json.loads(done.stdout) if done.stdout.strip() else {}
    except ValueError:
        out = {"raw": done.stdout}
    return done.returncode, out, done.stderr


def session_dir(root: Path, number: int) -> Path:
    return root / ".wiki" / "compute" / f"tiny-session{number}"


def wait_for(predicate, limit: float = 60.0, what: str = "condition"):
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def session_ended(root: Path, number: int) -> bool:
    return (session_dir(root, number) / "exit.json").exists()


def pointer_step(root: Path) -> int:
    from wikiengine.executors.local_store import LocalGitStore

    store = LocalGitStore(root / "store")
    pointer = store.read_pointer(store.head())
    return pointer.step if pointer else 0


def stop_all(root: Path) -> None:
    """Stop every session still running (a test's cleanup)."""
    from wikiengine.executors.local_compute import LocalProcessCompute

    compute = LocalProcessCompute(root / ".wiki" / "compute")
    try:
        for ref, state in compute.list_sessions():
            if state.alive:
                compute.cancel(ref)
    except Exception:  # noqa: BLE001 - cleanup only
        pass
