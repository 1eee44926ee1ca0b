"""One training session: plan from the pointer, train, save on the grid, stop in time.

Command line (what a compute backend or a rendered bootstrap runs)::

    python -m wikiengine.training.session --store STORE --config RUN.json
        [--out DIR] [--quota-left-hours H] [--timeout-seconds S] [--device cpu|cuda]
        [--threads N] [--no-progress]

    torchrun --nproc-per-node N -m wikiengine.training.session ...   # data parallel, same arithmetic

- ``--store``: the checkpoint store: a local git store directory
  (:class:`executors.local_store.LocalGitStore`), ``hf://owner/name`` (a Hub dataset
  repository), or a JSON store mapping for :func:`executors.registry.make_store`; env
  ``WIKI_STORE``. See :func:`open_store`.
- ``--config``: a run config JSON (:mod:`wikiengine.training.config`); env ``WIKI_RUN_CONFIG``.
- ``--out``: the local output directory (checkpoints before upload); env
  ``WIKI_SESSION_OUT``, default ``./session-out``.
- ``--quota-left-hours``: the accelerator quota left; env ``QUOTA_LEFT_HOURS`` (the one
  line a bootstrap changes per launch). ``--timeout-seconds``: the platform's session
  timeout; env ``SESSION_TIMEOUT_SECONDS``. The time budget is the smaller of the two,
  less ``save_margin_s``; the session stops at the last save that fits it.
- ``--threads``: torch intra-op threads on the CPU (env ``WIKI_TORCH_THREADS``; default
  torch's choice). One thread is fastest for the ``tiny`` preset on a shared machine.

Standard output carries one JSON object per line: ``plan``, ``checkpoint`` (after each
pointer commit, with the sha256 of the manifest the session wrote), ``final`` (the
``final/`` folder committed after ``latest -> max_steps``), ``quarantine`` /
``unnamed_checkpoint`` reports, and last ``{"event": "session_end", "start_step",
"end_step", "reason", ...}``: the session's exit record, which the wake reads. Progress (step,
loss, tokens per second) goes to standard error.

Exit codes: 0 normal stop (reason ``boundary``, ``max_steps``, ``time`` or
``finished``), 2 bad input (config, arguments), 3 refused to start (planner
disagreement, unreadable pointer, checkpoint failing verification, pins or arithmetic
differing, not enough free space; a checkpoint that fails verification or disagrees with
the run ends with reason ``checkpoint_corrupt``, which no retry can fix), 6 stopped mid-session because the store is not where
this session left it: the stale-stop guard fired (reason ``stale_pointer``: another
writer moved the branch) or a save failed with an unknown outcome (reason ``store_error``),
8 crashed (reason ``crashed``), 130 interrupted (``core.errors.ExitCode``).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.collector import collector_paused
from wikiengine.core.errors import ExitCode, WikiError

EXIT_OK, EXIT_BAD_INPUT, EXIT_REFUSED, EXIT_STALE = ExitCode.OK, ExitCode.BAD_INPUT, ExitCode.REFUSED, ExitCode.STALE
CORRUPT = "checkpoint_corrupt"  # the session_end reason of a refusal no retry can fix


class SessionExit(WikiError):
    """Stop the session with an exit code, a reason and one line of explanation."""

    def __init__(self, code: int, reason: str, message: str):
        super().__init__(message)
        self.code = self.exit_code = code
        self.reason = reason


@dataclass(frozen=True)
class SessionArgs:
    """The parsed command line and environment of a session."""

    store: str
    config: str
    out: Path
    quota_left_hours: float | None
    timeout_seconds: float | None
    device: str | None  # None: cuda where torch sees one, else cpu (asked once the run config is read)
    progress: bool
    threads: int | None = None


def parse_args(argv: list[str] | None) -> SessionArgs:
    """Read the command line, falling back to the environment; SessionExit(2) on bad input."""
    parser = _Parser(prog="python -m wikiengine.training.session", description="Run one training session of a relay run.")
    parser.add_argument("--store", default=os.environ.get("WIKI_STORE"))
    parser.add_argument("--config", default=os.environ.get("WIKI_RUN_CONFIG"))
    parser.add_argument("--out", default=os.environ.get("WIKI_SESSION_OUT", "session-out"))
    parser.add_argument("--quota-left-hours", default=os.environ.get("QUOTA_LEFT_HOURS"))
    parser.add_argument("--timeout-seconds", default=os.environ.get("SESSION_TIMEOUT_SECONDS"))
    parser.add_argument("--device", default=None)
    parser.add_argument("--threads", default=os.environ.get("WIKI_TORCH_THREADS"))
    parser.add_argument("--no-progress", action="store_true")
    ns = parser.parse_args(argv)
    threads = None
    if ns.threads not in (None, ""):
        if not str(ns.threads).isdigit() or int(ns.threads) < 1:
            raise SessionExit(EXIT_BAD_INPUT, "bad_input", f"--threads must be a positive integer: {ns.threads!r}")
        threads = int(ns.threads)
    if not ns.store:
        raise SessionExit(EXIT_BAD_INPUT, "bad_input", "no store: pass --store or set WIKI_STORE")
    if not ns.config:
        raise SessionExit(EXIT_BAD_INPUT, "bad_input", "no run config: pass --config or set WIKI_RUN_CONFIG")
    return SessionArgs(ns.store, ns.config, Path(ns.out), _positive("quota-left-hours", ns.quota_left_hours),
                       _positive("timeout-seconds", ns.timeout_seconds), ns.device, not ns.no_progress, threads)


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, exit 2, no usage dump
        raise SessionExit(EXIT_BAD_INPUT, "bad_input", message)


def _positive(name: str, value: str | None) -> float | None:
    if value is None or value == "":
        return None
    try:
        number = float(value)
    except ValueError:
        raise SessionExit(EXIT_BAD_INPUT, "bad_input", f"--{name} is not a number: {value!r}") from None
    if not math.isfinite(number) or number < 0:
        raise SessionExit(EXIT_BAD_INPUT, "bad_input", f"--{name} must be a finite non-negative number: {value!r}")
    return number


def _default_device() -> str:
    import torch  # imported already: by _torch_device, or with torch.distributed by Dist

    return "cuda" if torch.cuda.is_available() else "cpu"


def _torch_device(args: SessionArgs, world: Dist) -> str:
    """Set this rank's torch threads and device (``--device``, else cuda where torch sees one);
    the device the trainer uses."""
    with collector_paused(keep=__name__ == "__main__"):  # this process's first torch, its objects kept for good
        import torch

    if args.threads:
        torch.set_num_threads(args.threads)
    chosen = args.device or _default_device()
    if chosen != "cuda":
        return chosen
    torch.cuda.set_device(world.local_rank)
    return f"cuda:{world.local_rank}"


def emit(event: str, **fields) -> None:
    """Print one JSON event line on standard output (rank 0 only)."""
    print(json.dumps({"event": event, **fields}, sort_keys=False), flush=True)


# ---------------------------------------------------------------- distributed helpers

class Dist:
    """World size, rank and object broadcast; a no-op in a single process."""

    def __init__(self, device: str | None):
        self.world_size = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.local_rank = int(os.environ.get("LOCAL_RANK", "0"))
        self.dist = None  # torch.distributed, imported for a process group only
        if self.world_size > 1:
            with collector_paused(keep=__name__ == "__main__"):  # a rank's first torch (core/collector.py)
                import torch.distributed as dist

            self.dist = dist
            if not dist.is_initialized():
                dist.init_process_group("nccl" if (device or _default_device()) == "cuda" else "gloo")

    @property
    def is_main(self) -> bool:
        return self.rank == 0

    def broadcast(self, obj):
        """Rank 0's ``obj`` on every rank."""
        if self.world_size == 1:
            return obj
        box = [obj]
        self.dist.broadcast_object_list(box, src=0)
        return box[0]

    def close(self, clean: bool = True) -> None:
        """Leave the process group; after a clean end, wait for every rank first (a gloo peer
        that exits while another still tears down can abort it)."""
        if self.world_size > 1 and self.dist.is_initialized():
            if clean:
                self.dist.barrier()
            self.dist.destroy_process_group()


# ---------------------------------------------------------------- the session

def open_store(spec: str):
    """The checkpoint store named by ``spec``.

    - a directory: a local git store (:class:`executors.local_store.LocalGitStore`);
    - ``hf://owner/name``: the Hub dataset repository ``owner/name`` (the ``hub`` extra);
    - a JSON object: a store mapping for :func:`executors.registry.make_store`
      (``{"kind": "hub", "repo_id": ..., ...}`` or ``{"kind": "local-git", "path": ...}``),
      relative paths resolved from the working directory.

    A token is never part of the spec: the Hub client reads ``HF_TOKEN`` itself.
    """
    from wikiengine.executors.store import StoreError, StoreFormatError, strict_json

    try:
        if spec.lstrip().startswith("{") or spec.startswith("hf://"):
            from wikiengine.executors.registry import BackendConfigError, make_store

            if spec.startswith("hf://"):
                mapping = {"kind": "hub", "repo_id": spec[len("hf://"):]}
            else:
                mapping = strict_json(spec.encode(), "--store")
                if not isinstance(mapping, dict):
                    raise SessionExit(EXIT_BAD_INPUT, "bad_input", "--store JSON must be an object")
            try:
                return make_store(mapping, root=Path.cwd())
            except BackendConfigError as exc:
                raise SessionExit(EXIT_BAD_INPUT, "bad_input", str(exc)) from None
        from wikiengine.executors.local_store import LocalGitStore

        return LocalGitStore(spec)
    except StoreFormatError as exc:
        raise SessionExit(EXIT_BAD_INPUT, "bad_input", str(exc)) from None
    except StoreError as exc:
        raise SessionExit(EXIT_REFUSED, "store_unreadable", str(exc)) from None


def time_budget_s(args: SessionArgs, margin_s: float) -> float | None:
    """The seconds this session may use: min(quota, timeout) less the save margin."""
    limits = [v for v in (args.quota_left_hours * 3600 if args.quota_left_hours is not None else None,
                          args.timeout_seconds) if v is not None]
    return max(0.0, min(limits) - margin_s) if limits else None


def run_session(args: SessionArgs, store=None, status: dict | None = None) -> dict:
    """Run one session; return the ``session_end`` record. Raises SessionExit to refuse or stop.

    ``status`` (optional) is updated with ``start_step`` and ``end_step`` (the last step
    whose pointer commit landed) as the session goes, for the report of a stopped session.
    """
    status = {} if status is None else status
    from wikiengine.training.config import ConfigError, load_config

    started = time.monotonic()
    try:
        config = load_config(args.config)  # a bad config is refused before torch is imported (1.3 s of CPU)
    except ConfigError as exc:
        raise SessionExit(EXIT_BAD_INPUT, "bad_input", str(exc)) from None
    world = Dist(args.device)
    try:
        record = _run_in_world(args, config, world, store, status, started)
    except SessionExit:
        world.close(clean=True)  # every rank raises the same SessionExit: decisions are broadcast
        raise
    except BaseException:
        world.close(clean=False)
        raise
    world.close()
    return record


def _run_in_world(args: SessionArgs, config, world: Dist, store, status: dict, started: float) -> dict:
    """The body of :func:`run_session` once the process group (if any) is up: observe the store,
    plan from the pointer, check the data and the checkpoint to resume from, then train.
    A single process imports torch only once the store is read and the plan made: a store it
    cannot read, a finished run or no time left is answered without it (1.3 s of CPU)."""
    device = _torch_device(args, world) if world.world_size > 1 else None  # ranks broadcast on their device
    session = _Session(args, config, world, store, status)
    revision, pointer_step = session.observe()
    plan, budget_s = session.plan(revision, pointer_step)
    if plan.finished:
        if world.is_main and plan.pointer_step == config.max_steps and not session.store.list_files("final", revision):
            # the last session stopped before its final/ commit: write it from the verified checkpoint
            session.final_from_store(plan.pointer_step, revision)
        return {"event": "session_end", "start_step": plan.resume_step, "end_step": plan.resume_step,
                "reason": "finished"}
    device = device or _torch_device(args, world)
    corpus = _pinned_corpus(config)
    files, shared_copy = session.resume_files(plan.pointer_step, revision, corpus)
    trainer = _restored_trainer(config, device, world, corpus, files, plan.pointer_step)
    del files
    return session.train(trainer, plan, _Timings(started, budget_s), revision, shared_copy)


class _Session:
    """The steps of one session once its process group is up. Rank 0 reads the store and
    decides; every decision is broadcast, so that every rank goes on, or leaves, together."""

    def __init__(self, args: SessionArgs, config, world: Dist, store, status: dict):
        self.args, self.config, self.world, self.status = args, config, world, status
        self.store = store  # rank 0 opens it in observe (the other ranks never touch it)
        self.out = Path(args.out)

    def observe(self) -> tuple[str, int]:
        """``(revision, pointer_step)``: one store revision and the pointer's step, agreed by every rank."""
        from wikiengine.executors.store import StoreError, checkpoint_path

        observed = None
        if self.world.is_main:
            try:
                self.store = self.store or open_store(self.args.store)
                revision = self.store.head()
                pointer = self.store.read_pointer(revision)
            except SessionExit as exc:  # every rank must leave together
                observed = ("exit", exc.code, exc.reason, exc.message)
            except StoreError as exc:
                observed = ("exit", EXIT_REFUSED, "refused", f"pointer unreadable: {exc}")
            else:
                observed = ("ok", revision, pointer.step if pointer else 0,
                            pointer.path_in_repo if pointer else None)
        observed = self.world.broadcast(observed)
        if observed[0] == "exit":
            raise SessionExit(*observed[1:])
        _, revision, pointer_step, pointer_path = observed
        if pointer_path is not None and pointer_path != checkpoint_path(pointer_step):
            raise SessionExit(EXIT_REFUSED, "refused",
                              f"latest.json path_in_repo {pointer_path!r} is not {checkpoint_path(pointer_step)!r}")
        return revision, pointer_step

    def plan(self, revision: str, pointer_step: int):
        """``(plan, budget_s)``: the plan from the pointer, cross-checked, announced by rank 0."""
        from wikiengine.training.plan import PlanError, cross_check, plan_session

        config = self.config
        budget_s = time_budget_s(self.args, config.save_margin_s)
        try:
            plan = plan_session(pointer_step, config.max_steps, config.save_steps, config.session_steps,
                                budget_s=budget_s)
        except PlanError as exc:
            raise SessionExit(EXIT_REFUSED, "refused", f"planner: {exc}") from None
        self.status.update(start_step=plan.resume_step, end_step=plan.resume_step)
        if budget_s is not None and budget_s <= 0 and not plan.finished:
            raise SessionExit(EXIT_REFUSED, "refused", "no time budget left (quota or timeout within the save margin)")
        problems = cross_check(plan)
        if problems:
            raise SessionExit(EXIT_REFUSED, "refused", f"planner arithmetic disagrees: {problems[0]}")
        if self.world.is_main:
            emit("plan", revision=revision, pointer_step=plan.pointer_step, resume_step=plan.resume_step,
                 boundary=plan.boundary, steps_to_run=plan.steps_to_run,
                 steps_left_in_run=config.max_steps - plan.resume_step,
                 save_points=list(plan.save_points),
                 budget_s=budget_s, world_size=self.world.world_size, tokens_per_step=config.tokens_per_step)
            _report_unnamed(self.store, revision, plan.pointer_step)
        return plan, budget_s

    def final_from_store(self, step: int, revision: str) -> None:
        """Rank 0: commit ``final/`` from the verified checkpoint at ``step`` in the store."""
        from wikiengine.executors.store import StoreError, checkpoint_path
        from wikiengine.training.checkpoint import CheckpointError, read_verified_from_store, write_checkpoint

        try:
            files = read_verified_from_store(self.store, step, revision)
        except (CheckpointError, StoreError) as exc:
            raise SessionExit(EXIT_REFUSED, CORRUPT, f"{checkpoint_path(step)}: {exc}") from None
        write_checkpoint(self.out, step, _without_manifest(files))
        _commit_final(self.store, step, self.out, revision)

    def resume_files(self, step: int, revision: str, corpus):
        """``(files, shared_copy)``: the verified checkpoint at the pointer on every rank (None for
        a fresh run), and rank 0's copy for the other ranks (None when there is none to remove).

        Rank 0 reads and verifies the checkpoint; under DDP the other ranks read a local copy
        of the verified bytes (same machine) and check it against the manifest again.
        """
        from wikiengine.executors.store import StoreError, checkpoint_path
        from wikiengine.training.checkpoint import (
            CURSOR_NAME,
            TRAINER_STATE_NAME,
            CheckpointError,
            read_cursor,
            read_trainer_state,
            read_verified_from_store,
            read_verified_local,
            write_checkpoint,
        )

        world, files, verdict = self.world, None, None
        if world.is_main:
            verdict = _free_space_problem(self.out, self.config.preset)
        if world.is_main and step and verdict is None:
            try:
                files = read_verified_from_store(self.store, step, revision)
                cursor = read_cursor(files[CURSOR_NAME])
                state = read_trainer_state(files[TRAINER_STATE_NAME])
            except (CheckpointError, StoreError) as exc:
                verdict = ("refuse", f"{checkpoint_path(step)}: {exc}", CORRUPT)
            else:
                problem = _resume_problem(cursor, state, step, self.config, corpus)
                if problem:
                    verdict = ("refuse", f"{checkpoint_path(step)}: {problem}", CORRUPT)
                elif world.world_size > 1:
                    shared = write_checkpoint(self.out / "resume", step, _without_manifest(files))
                    verdict = ("shared", str(shared))
        verdict = world.broadcast(verdict)
        if verdict is not None and verdict[0] == "refuse":
            raise SessionExit(EXIT_REFUSED, verdict[2] if len(verdict) > 2 else "refused", verdict[1])
        if verdict is not None and not world.is_main:
            files = read_verified_local(Path(verdict[1]), step)
        return files, (Path(verdict[1]) if verdict is not None and world.is_main else None)

    def train(self, trainer, plan, timings: _Timings, revision: str, shared_copy: Path | None) -> dict:
        """Train to the boundary, saving on the grid; stop at the last save that fits the budget.
        The ``session_end`` record."""
        world, config = self.world, self.config
        progress = _progress_bar(plan) if world.is_main and self.args.progress else None
        last_commit = revision
        reason = "boundary" if plan.boundary < config.max_steps else "max_steps"
        save_points = list(plan.save_points)
        try:
            while trainer.step < plan.boundary:
                tick = time.monotonic()
                entry = trainer.train_step()
                timings.steps.append(time.monotonic() - tick)
                if shared_copy is not None:  # every rank has passed the first all-reduce: their copies are read
                    shutil.rmtree(shared_copy.parent, ignore_errors=True)
                    shared_copy = None
                if progress is not None:
                    progress.update(1)
                    progress.set_postfix(loss=f"{entry['loss']:.4f}", tok_s=f"{entry['tokens_per_second']:.0f}")
                if trainer.step in save_points:
                    tick = time.monotonic()
                    last_commit = self.save(trainer, last_commit)
                    self.status["end_step"] = trainer.step
                    timings.saves.append(time.monotonic() - tick)
                remaining = [p for p in save_points if p > trainer.step]
                if timings.budget_s is not None and remaining:
                    # would the next save still fit? if not, stop now: at a save when we just made one,
                    # otherwise (the first interval is already too long) the steps since the last save are dropped
                    if not world.broadcast(timings.next_save_fits(trainer.step, remaining[0])):
                        reason = "time"
                        break
        finally:
            if progress is not None:
                progress.close()
        if world.is_main and self.status["end_step"] == config.max_steps:
            last_commit = _commit_final(self.store, config.max_steps, self.out, last_commit)
        return {"event": "session_end", "start_step": plan.resume_step, "end_step": self.status["end_step"],
                "reason": reason, "pointer_commit": last_commit}

    def save(self, trainer, last_commit: str) -> str:
        """The checkpoint of this step, committed by rank 0; the pointer commit, on every rank."""
        checkpoint_files = trainer.checkpoint_files()
        verdict = None
        if self.world.is_main:
            verdict = _save_and_commit(self.store, trainer.step, checkpoint_files, self.args.out, last_commit,
                                       trainer.log_history[-1])
        verdict = self.world.broadcast(verdict)
        if verdict[0] != "ok":
            raise SessionExit(EXIT_STALE, "stale_pointer" if verdict[0] == "stale" else verdict[0], verdict[1])
        return verdict[1]


@dataclass
class _Timings:
    """What the stop-in-time check reads: the session's start, its budget, each step's and save's seconds."""

    started: float
    budget_s: float | None
    steps: list[float] = field(default_factory=list)
    saves: list[float] = field(default_factory=list)

    def next_save_fits(self, step: int, next_save: int) -> bool:
        from wikiengine.training.plan import next_save_fits

        per_step = sorted(self.steps)[len(self.steps) // 2]
        return next_save_fits(step, next_save, time.monotonic() - self.started, self.budget_s, per_step,
                              max(self.saves, default=0.0))


def _pinned_corpus(config):
    """The training data, refused when it is not the data the config pins."""
    from wikiengine.training.data import DataError, open_corpus

    try:
        corpus = open_corpus(config.corpus, config.seq_len, config.seed)
    except DataError as exc:
        raise SessionExit(EXIT_REFUSED, "refused", str(exc)) from None
    for name, pinned, actual in (("dataset_files_sha", config.dataset_files_sha, corpus.files_sha),
                                 ("shuffle_perm_sha", config.shuffle_perm_sha, corpus.perm_sha)):
        if pinned and pinned != actual:
            raise SessionExit(EXIT_REFUSED, "refused", f"{name} of the data is {actual}, the config pins {pinned}")
    return corpus


def _restored_trainer(config, device: str, world: Dist, corpus, files: dict | None, step: int):
    """A trainer at ``step``: restored from the checkpoint's ``files``, or fresh when there are none."""
    from wikiengine.executors.store import checkpoint_path
    from wikiengine.training.checkpoint import CheckpointError
    from wikiengine.training.trainer import Trainer

    trainer = Trainer(config, device, rank=world.rank, world_size=world.world_size, corpus=corpus)
    if files is not None:
        try:
            trainer.restore(files, step)
        except CheckpointError as exc:
            raise SessionExit(EXIT_REFUSED, CORRUPT, f"{checkpoint_path(step)}: {exc}") from None
        if trainer.rng_fallback and world.is_main:
            emit("warning", detail="the checkpoint was saved with another world size: data order and arithmetic "
                                   "are unchanged, RNG streams are not bitwise those of an uninterrupted run")
    return trainer


def _progress_bar(plan):
    """Progress on standard error (rank 0)."""
    from tqdm import tqdm

    return tqdm(total=plan.boundary, initial=plan.resume_step, desc="train", unit="step", file=sys.stderr,
                dynamic_ncols=True, mininterval=0.5)


def _without_manifest(files: dict[str, bytes]) -> dict[str, bytes]:
    """A verified checkpoint's files to write again (``write_checkpoint`` writes a fresh manifest)."""
    from wikiengine.training.checkpoint import MANIFEST_NAME

    return {k: v for k, v in files.items() if k != MANIFEST_NAME}


def _save_and_commit(store, step, files, out_dir, last_commit, entry):
    """Rank 0: write checkpoint-N locally, then the two commits, guarded. Returns a verdict tuple."""
    from wikiengine.executors.store import StaleParentError, StoreError, checkpoint_path
    from wikiengine.training.checkpoint import rotate_local, write_checkpoint

    local = write_checkpoint(out_dir, step, files)
    try:
        head = store.head()
        if head != last_commit:  # the stale-stop guard: someone else moved the branch
            return ("stale", f"the store moved to {head[:12]} since our last commit {last_commit[:12]}: "
                             "another session is writing; stopping")
        checkpoint_commit = store.commit_checkpoint(step, local, parent=last_commit)
        pointer_commit = store.commit_pointer(step, parent=checkpoint_commit)
    except StaleParentError as exc:
        return ("stale", f"commit refused: {exc}")
    except StoreError as exc:
        return ("store_error", f"store error while saving step {step} (its outcome is unknown; "
                               f"the next session plans from the pointer): {exc}")
    for line in rotate_local(out_dir, {step}, Path(out_dir) / "quarantine"):
        emit("quarantine", detail=line)
    # manifest_sha256 is the session's own record of what it wrote: the wake keeps it and the
    # finish verifies the store against it, not against the store's own manifest (seed section 4)
    emit("checkpoint", step=step, path_in_repo=checkpoint_path(step), checkpoint_commit=checkpoint_commit,
         pointer_commit=pointer_commit, manifest_sha256=_manifest_sha(local),
         loss=entry["loss"], grad_norm=entry["grad_norm"],
         tokens_per_second=round(entry["tokens_per_second"], 1))  # the logged interval: non-finite is null
    return ("ok", pointer_commit)


def _manifest_sha(directory: Path) -> str:
    from wikiengine.training.checkpoint import MANIFEST_NAME, sha256_hex

    return sha256_hex((Path(directory) / MANIFEST_NAME).read_bytes())


def _commit_final(store, step, out_dir, last_commit) -> str:
    """Rank 0, after ``latest -> max_steps``: commit ``final/`` (the final weights, cursor and
    trainer state with their manifest, from the verified local checkpoint); emit ``final``."""
    from wikiengine.executors.store import StaleParentError, StoreError
    from wikiengine.training.checkpoint import FINAL_FILES, read_verified_local, write_checkpoint

    files = read_verified_local(Path(out_dir) / f"checkpoint-{step}", step)
    local = write_checkpoint(Path(out_dir) / "final", step, {k: files[k] for k in FINAL_FILES})
    try:
        commit = store.commit_final(step, local, parent=last_commit)
    except StaleParentError as exc:
        raise SessionExit(EXIT_STALE, "stale_pointer", f"final/ commit refused: {exc}") from None
    except StoreError as exc:
        raise SessionExit(EXIT_STALE, "store_error", f"store error while saving final/ (outcome unknown): {exc}") \
            from None
    emit("final", step=step, path_in_repo="final", commit=commit, manifest_sha256=_manifest_sha(local))
    return commit


def _resume_problem(cursor, state, step, config, corpus) -> str | None:
    """The first way the checkpoint's cursor and trainer state disagree with the run; None if none."""
    checks = (
        (cursor.step == step, f"cursor.json step {cursor.step} != pointer step {step}"),
        (state["global_step"] == step, f"trainer_state.json global_step {state['global_step']} != {step}"),
        (state["max_steps"] == config.max_steps,
         f"trainer_state.json max_steps {state['max_steps']} != {config.max_steps}"),
        (state["save_steps"] == config.save_steps,
         f"trainer_state.json save_steps {state['save_steps']} != {config.save_steps}"),
        (cursor.tokens_per_step == config.tokens_per_step,
         f"cursor.json tokens_per_step {cursor.tokens_per_step} != {config.tokens_per_step}"),
        (cursor.samples_per_step == config.samples_per_step,
         f"cursor.json samples_per_step {cursor.samples_per_step} != {config.samples_per_step}"),
        (cursor.seed == config.seed, f"cursor.json seed {cursor.seed} != {config.seed}"),
        (cursor.dataset_files_sha == corpus.files_sha,
         f"cursor.json dataset_files_sha {cursor.dataset_files_sha} != data {corpus.files_sha}"),
        (cursor.shuffle_perm_sha == corpus.perm_sha,
         f"cursor.json shuffle_perm_sha {cursor.shuffle_perm_sha} != data {corpus.perm_sha}"),
    )
    for ok, message in checks:
        if not ok:
            return message
    return None


def _report_unnamed(store, revision: str, pointer_step: int) -> None:
    """Report checkpoint folders the pointer does not name beyond it (RELIABILITY row 1).

    They come from an interrupted save (checkpoint committed, pointer not moved). They are
    never loaded; a later save of the same step replaces the folder (the old bytes stay in
    the store's history).
    """
    from wikiengine.executors.store import CHECKPOINT_PREFIX, checkpoint_message

    steps = set()
    for path in store.list_files("ckpt", revision):
        folder = path.split("/")[1] if path.count("/") >= 2 else ""
        if folder.startswith("checkpoint-") and folder[len("checkpoint-"):].isdigit():
            steps.add(int(folder[len("checkpoint-"):]))
    unnamed = sorted(s for s in steps if s > pointer_step)
    if not unnamed:
        return
    commits = {c.title: c.id for c in reversed(store.list_commits(revision))}  # newest wins
    for step in unnamed:
        emit("unnamed_checkpoint", path_in_repo=f"{CHECKPOINT_PREFIX}{step}", pointer_step=pointer_step,
             commit=commits.get(checkpoint_message(step)),
             action="quarantined: the pointer does not name it, so it is never loaded; "
                    "its bytes stay in the store's history at that commit")


def _free_space_problem(out_dir: Path, preset: str) -> tuple[str, str] | None:
    """``("refuse", why)`` when the output disk cannot hold two checkpoints and a temp copy."""
    from wikiengine.training.presets import parameter_count

    parameters = parameter_count(preset)
    needed = parameters * 4 * 3 * 3  # weights + two Adam moments, fp32; three copies at the peak
    Path(out_dir).mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(out_dir).free
    if free < needed:
        return ("refuse", f"not enough free space in {out_dir}: {free // 2**20} MiB free, {needed // 2**20} MiB needed")
    return None


def main(argv: list[str] | None = None, store=None) -> int:
    """The command line: run a session, print ``session_end`` last, return the exit code."""
    status: dict = {}
    is_main = int(os.environ.get("RANK", "0")) == 0
    try:
        args = parse_args(argv)
        record = run_session(args, store=store, status=status)
    except SessionExit as exc:
        print(f"error: {exc.message}", file=sys.stderr, flush=True)
        if is_main:
            emit("session_end", start_step=status.get("start_step"), end_step=status.get("end_step"),
                 reason=exc.reason, detail=exc.message)
        return exc.code
    except KeyboardInterrupt:
        print("error: interrupted", file=sys.stderr)
        return ExitCode.INTERRUPTED
    except Exception as exc:  # a bug or an environment failure: one line, never a traceback
        if os.environ.get("WIKI_DEBUG"):
            raise
        first = str(exc).strip().splitlines()[0][:300] if str(exc).strip() else ""
        print(f"error: {type(exc).__name__}: {first} (set WIKI_DEBUG=1 for the traceback)", file=sys.stderr, flush=True)
        if is_main:
            emit("session_end", start_step=status.get("start_step"), end_step=status.get("end_step"),
                 reason="crashed", detail=f"{type(exc).__name__}: {first}")
        return ExitCode.CRASHED
    if int(os.environ.get("RANK", "0")) == 0:
        print(json.dumps(record), flush=True)
    return EXIT_OK


if __name__ == "__main__":
    code = main()
    if int(os.environ.get("WORLD_SIZE", "1")) > 1:
        # A rank leaves without the interpreter's teardown: gloo's worker threads, still alive
        # there, can abort it ("terminate called without an active exception", SIGABRT after a
        # clean end; pytorch/pytorch#190489). Its outputs are written and flushed by now.
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    from wikiengine.core.process_end import end_now

    raise SystemExit(end_now(code, hooks=True))  # torch's teardown is 0.5 s of CPU; every output is written and closed
