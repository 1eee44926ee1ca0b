"""Shared fixtures for the relay tests: synthetic checkpoints in a real LocalGitStore, a fake
compute backend, and a scaffolded wiki repository. (No tests here.)"""

from __future__ import annotations

import datetime as dt
import json
import os
import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.run_once import built_in_process
from wikiengine.executors.compute import (
    CapacityError,
    ComputeUnavailableError,
    LaunchRecord,
    Quota,
    SessionState,
    SessionStatus,
)
from wikiengine.executors.local_store import LocalGitStore
from wikiengine.model import memory
from wikiengine.training.checkpoint import build_manifest

T0 = dt.datetime(2026, 9, 21, 3, 0, tzinfo=dt.UTC)
FILES_SHA = "53df4708526da5c8"
PERM_SHA = "c6f617b96f502d96"

CONFIG = {
    "preset": "tiny", "max_steps": 24, "save_steps": 4, "session_steps": 8, "samples_per_step": 8, "seq_len": 64,
    "tokens_per_step": 512, "dataset_files_sha": FILES_SHA, "shuffle_perm_sha": PERM_SHA, "session_timeout_s": 600,
    "store": {"kind": "local-git", "path": "store"},
    "compute": {"kind": "local-process", "accelerator": "gpu", "slug_prefix": "tiny-session"},
    "quota": {"session_hours": 1.0, "reserve_hours": 0.5},
    "relay": {"check_every_s": 60, "claim_ttl_s": 300},
    "bootstrap": {"repo": "/nonexistent/src", "rev": "c237b478076f68da43dabd3403daa5639286899e",
                  "launcher_sha256": "5fb14bc3" + "0" * 56, "session_args": ["--config", "{tree}/run.json"]},
}


def loss_at(step: int) -> float:
    return 5.0 - 0.1 * step


def checkpoint_files(step: int, config: dict = CONFIG, **overrides) -> dict[str, bytes]:
    """A synthetic but well-formed checkpoint of ``step`` (cursor, trainer state, manifest)."""
    cursor = {"step": step, "tokens_consumed": step * config["tokens_per_step"],
              "samples_consumed": step * config["samples_per_step"], "tokens_per_step": config["tokens_per_step"],
              "samples_per_step": config["samples_per_step"], "seq_len": config["seq_len"], "seed": 1234, "epoch": 0,
              "sample_in_epoch": step * config["samples_per_step"], "dp_world_size": 1,
              "dataset_files_sha": FILES_SHA, "shuffle_perm_sha": PERM_SHA}
    cursor.update(overrides.pop("cursor", {}))
    history = [{"step": s, "loss": loss_at(s), "grad_norm": 1.0 + 0.01 * (s % 3)} for s in range(1, step + 1)]
    for s, value in overrides.pop("losses", {}).items():
        history[s - 1]["loss"] = value
    state = {"global_step": step, "max_steps": config["max_steps"], "save_steps": config["save_steps"],
             "log_history": history}
    state.update(overrides.pop("state", {}))
    files = {
        "model.safetensors": f"weights {step}".encode(), "optimizer.pt": b"opt", "scheduler.pt": b"sched",
        "rng_state.pth": b"rng",
        "cursor.json": overrides.pop("cursor_bytes", None) or json.dumps(cursor).encode(),
        "trainer_state.json": overrides.pop("state_bytes", None) or json.dumps(state).encode(),
    }
    files["manifest.json"] = build_manifest(files, step)
    return files


def save_checkpoint(store: LocalGitStore, step: int, files: dict[str, bytes] | None = None, tmp: Path = None,
                    pointer: bool = True) -> str:
    """Commit checkpoint ``step`` then ``latest -> step`` (the trainer's two commits)."""
    files = files or checkpoint_files(step)
    directory = Path(tmp or store.path.parent) / f".ckpt-src-{step}"
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    for name, data in files.items():
        (directory / name).write_bytes(data)
    head = store.commit_checkpoint(step, directory, parent=store.head())
    return store.commit_pointer(step, parent=head) if pointer else head


def final_files(step: int, config: dict = CONFIG) -> dict[str, bytes]:
    """``final/`` as the last session writes it: the weights, cursor and trainer state of ``step``."""
    from wikiengine.training.checkpoint import FINAL_FILES

    files = {k: v for k, v in checkpoint_files(step, config).items() if k in FINAL_FILES}
    files["manifest.json"] = build_manifest(files, step)
    return files


def save_final(store: LocalGitStore, step: int, files: dict[str, bytes] | None = None) -> str:
    """Commit ``final/`` after ``latest -> step`` (the last session's last commit)."""
    files = files or final_files(step)
    directory = Path(store.path.parent) / ".final-src"
    directory.mkdir(parents=True, exist_ok=True)
    for old in directory.iterdir():
        old.unlink()
    for name, data in files.items():
        (directory / name).write_bytes(data)
    return store.commit_final(step, directory, parent=store.head())


def checkpoint_event(step: int, files: dict[str, bytes] | None = None, event: str = "checkpoint") -> str:
    """The session's own log line for a checkpoint it wrote (``training.session``'s ``checkpoint`` event)."""
    import hashlib

    files = files or (final_files(step) if event == "final" else checkpoint_files(step))
    return json.dumps({"event": event, "step": step, "manifest_sha256": hashlib.sha256(files["manifest.json"])
                       .hexdigest()})


@dataclass
class FakeCompute:
    """A compute backend whose sessions and quota a test sets directly."""

    quota_left: float | None = 20.0
    refresh_at: dt.datetime | None = dt.datetime(2026, 9, 26, tzinfo=dt.UTC)
    sessions: dict[str, SessionStatus] = field(default_factory=dict)
    launches: list = field(default_factory=list)
    status_fails: bool = False
    refuse_capacity: bool = False
    clock: object = None  # the platform's (server's) clock
    on_launch: object = None  # a hook a fault test uses to kill the wake mid-launch
    timeout_s: float | None = None  # like a real platform: a session past its timeout is killed
    logs: dict[str, list[str]] = field(default_factory=dict)  # each session's output lines
    hidden: set = field(default_factory=set)  # launched but not yet visible (Kaggle shows a new session late)
    cancelled: list = field(default_factory=list)

    def launch(self, request):
        if self.refuse_capacity:
            raise CapacityError("Maximum batch GPU session count of 2 reached")
        if self.on_launch:
            self.on_launch(request)
        now = self.clock() if self.clock else T0
        self.launches.append(request)
        self.sessions[request.slug] = SessionStatus(SessionState.RUNNING, started_at=now)
        return LaunchRecord(ref=request.slug, version=1, kernel_id=str(len(self.launches)), submitted_at=now)

    def _enforce_timeouts(self):
        if self.timeout_s is None or self.clock is None:
            return
        for ref, status in list(self.sessions.items()):
            deadline = (status.started_at or T0) + dt.timedelta(seconds=self.timeout_s)
            if status.state.alive and self.clock() > deadline:
                self.sessions[ref] = SessionStatus(SessionState.CANCELLED, status.started_at, deadline, None,
                                                   "session timeout")

    def status(self, ref):
        if self.status_fails:
            return SessionStatus(SessionState.UNKNOWN)
        self._enforce_timeouts()
        if ref in self.hidden:
            return SessionStatus(SessionState.GONE)
        return self.sessions.get(ref, SessionStatus(SessionState.GONE))

    def log_tail(self, ref, lines=200):
        return "\n".join(self.logs.get(ref, [])[-lines:])

    def log(self, ref, line):
        self.logs.setdefault(ref, []).append(line)

    def cancel(self, ref):
        self.cancelled.append(ref)
        old = self.sessions[ref]
        if old.state.alive:
            now = self.clock() if self.clock else T0
            self.sessions[ref] = SessionStatus(SessionState.CANCELLED, old.started_at, now, None,
                                               "cancelled through the backend")

    def quota(self):
        if self.quota_left is None:
            raise ComputeUnavailableError("quota endpoint timed out")
        return Quota(used_hours=30 - self.quota_left, total_hours=30.0, refresh_at=self.refresh_at)

    def list_sessions(self):
        if self.status_fails:
            raise ComputeUnavailableError("listing timed out")
        self._enforce_timeouts()
        return [(ref, status.state) for ref, status in self.sessions.items() if ref not in self.hidden]

    def end(self, ref, state=SessionState.COMPLETE, at=None, started=None, failure=None):
        old = self.sessions[ref]
        self.sessions[ref] = SessionStatus(state, started or old.started_at, at or (old.started_at or T0)
                                           + dt.timedelta(hours=1), 0 if state == SessionState.COMPLETE else 1,
                                           failure)


def stale_lock(path: Path) -> None:
    """A git lock file as a killed git leaves it: empty, and older than a starting git's."""
    path.write_text("")
    os.utime(path, (time.time() - 60, time.time() - 60))


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@t.invalid", *args], cwd=root,
                          capture_output=True, text=True, check=True).stdout


def pinned_launcher_repo(src: Path, launcher: str, message: str) -> tuple[str, str, str]:
    """A git repository at ``src`` whose ``training/launcher.py`` is ``launcher``: (repo, rev, its sha256)."""
    from wikiengine.training.launch import launcher_sha

    (src / "training").mkdir(parents=True)
    (src / "training" / "launcher.py").write_text(launcher)
    git(src, "init", "--quiet")
    git(src, "add", "-A")
    git(src, "commit", "--quiet", "-m", message)
    rev = git(src, "rev-parse", "HEAD").strip()
    return str(src), rev, launcher_sha(src, rev)


def make_wiki(root: Path, config: dict = CONFIG, run: str = "tiny") -> LocalGitStore:
    """A git repository with wiki/runs/<run>/program.md, empty memory and a fresh store; committed.
    Scaffolded once per configuration in a process and copied: a scaffold is 11 git processes, and
    the relay tests make hundreds."""
    key = json.dumps([config, run], sort_keys=True, default=str)
    template = built_in_process(f"relay-wiki {key}", lambda folder: _scaffold(folder, config, run))
    shutil.copytree(template, root, symlinks=True, dirs_exist_ok=True)
    return LocalGitStore(root / "store")


def _scaffold(root: Path, config: dict, run: str) -> None:
    (root / "wiki" / "runs" / run).mkdir(parents=True)
    (root / "wiki" / "runs" / "program.md").write_text("# Runs\n\n## Session grid\n\nSessions end on the grid.\n")
    (root / "wiki" / "runs" / run / "program.md").write_text(
        f"# {run}\n\n## Config\n\n```yaml\n{yaml.safe_dump(config, sort_keys=False)}```\n")
    memory.scaffold(root, run, T0)
    (root / ".gitignore").write_text("store/\n.wiki-step.lock\n.wiki/\n")
    LocalGitStore.create(root / "store")
    git(root, "init", "--quiet", "--initial-branch=main")
    git(root, "config", "user.name", "tester")
    git(root, "config", "user.email", "tester@wikiengine.invalid")
    git(root, "add", "-A")
    git(root, "commit", "--quiet", "-m", "scaffold")


class Clock:
    """A clock a test moves by hand."""

    def __init__(self, start: dt.datetime = T0):
        self.now = start

    def __call__(self) -> dt.datetime:
        return self.now

    def advance(self, **delta) -> None:
        self.now += dt.timedelta(**delta)
