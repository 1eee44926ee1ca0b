"""Check (read only): what one wake sees in the store, at the compute backend and in git.

Every store read of a wake is pinned to the one head commit read first (RELIABILITY
row 7). The raw bytes become a :class:`StoreSnapshot`; the checks of seed section 1 are
pure functions over it, declared in :data:`CHECKS` in the seed's order. Liveness comes
from the compute backend's session status, never from the pointer; a failed status or
quota call is UNKNOWN (rows 17, 24, 29).

The run's own records are evidence beside the store: each ended session's log (its
checkpoint digests and exit record, :mod:`wikiengine.step.relay.records`), the digests and exit
records memory already holds, and the store's pointer history since the last wake. The
append-only memory tables are checked row by row against the commit that introduced each
row (:func:`append_only_edits`).
"""

from __future__ import annotations

import datetime as dt
import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.core.median import median
from wikiengine.core.secrets import redact
from wikiengine.executors.compute import ComputeBackend, ComputeError, SessionState
from wikiengine.executors.store import (
    CheckpointStore,
    Pointer,
    StoreCommit,
    StoreError,
    StoreUnavailableError,
    checkpoint_message,
    checkpoint_path,
    final_message,
    pointer_message,
    unique_keys,
)
from wikiengine.model import memory
from wikiengine.model.memory import AssetRow, parse_iso
from wikiengine.model.state import RelayState
from wikiengine.step.relay.decide import Finding, Observations, SessionView, Settings
from wikiengine.step.relay.records import FINAL_KEY, parse_session_log, plain_text

MANIFEST = "manifest.json"
CURSOR = "cursor.json"
TRAINER_STATE = "trainer_state.json"
HISTORY_DEPTH = 20
LOG_LINES = 400  # enough for every event line of a session (one per save, plus plan and end)


@dataclass(frozen=True)
class StoreSnapshot:
    """The raw store facts of one wake, all read at ``head``."""

    head: str
    commits: tuple[StoreCommit, ...]  # newest first, up to HISTORY_DEPTH
    pointer: Pointer | None
    pointer_error: str | None = None
    files: tuple[str, ...] = ()  # names under the pointer's checkpoint folder
    manifest: bytes | None = None
    cursor: bytes | None = None
    trainer_state: bytes | None = None


def read_snapshot(store: CheckpointStore) -> StoreSnapshot:
    """Read the head, the history, the pointer and the checkpoint's small files, pinned to the head."""
    head = store.head()
    commits = tuple(store.list_commits(head)[:HISTORY_DEPTH])
    try:
        pointer = store.read_pointer(head)
    except StoreUnavailableError:
        raise  # unknown, not malformed
    except StoreError as exc:
        return StoreSnapshot(head, commits, None, pointer_error=str(exc))
    if pointer is None:
        return StoreSnapshot(head, commits, None)
    folder = checkpoint_path(pointer.step) + "/"
    names = tuple(p[len(folder):] for p in store.list_files(folder, head))
    small = store.read_files([folder + name for name in (MANIFEST, CURSOR, TRAINER_STATE) if name in names], head)
    return StoreSnapshot(head, commits, pointer, None, names, *(small.get(folder + name)
                                                                for name in (MANIFEST, CURSOR, TRAINER_STATE)))


# ---------------------------------------------------------------- parsing outside JSON


class _NotNumber(str):
    """A JSON NaN/Infinity kept as its text, so a check can show it."""


def lenient_json(data: bytes) -> object:
    """JSON whose NaN/Infinity are kept as text markers; duplicate keys refused (ValueError)."""
    return json.loads(data.decode("utf-8"), object_pairs_hook=unique_keys(ValueError), parse_constant=_NotNumber)


def exact_int(value) -> bool:
    """An integer and nothing else: not a bool, not 262144.0, not NaN (row 10)."""
    return type(value) is int


def finite_number(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value)


# ---------------------------------------------------------------- the checks of seed section 1

# A check: (the snapshot, the run's settings, the pointer step seen at the last wake) -> findings.
CheckFn = Callable[[StoreSnapshot, Settings, int], list[Finding]]


def check_head_commit(snap: StoreSnapshot, settings: Settings, seen_step: int = 0) -> list[Finding]:
    """The head is ``latest -> N`` and the commit before it is ``checkpoint N`` (7-10 s earlier)."""
    if snap.pointer is None:
        return []
    step = snap.pointer.step
    titles = [c.title for c in snap.commits]
    if pointer_message(step) not in titles:
        return [Finding("head commit", "store_format", f"no '{pointer_message(step)}' commit in the recent history")]
    at = titles.index(pointer_message(step))
    found = []
    newer = titles[:at]
    if newer == [final_message(step)] and step == settings.max_steps:
        newer = []  # the last session's final/ commit follows latest -> max_steps
    if newer:
        # A checkpoint committed without its pointer (an interrupted save, or a session saving now): ignored (row 1).
        found.append(Finding("head commit", None, f"head is '{newer[0]}' above '{pointer_message(step)}': "
                             "not named by the pointer, ignored"))
    older = titles[at + 1:]
    if checkpoint_message(step) not in older:
        if len(snap.commits) < HISTORY_DEPTH:  # the whole history was read: the checkpoint commit never happened
            found.append(Finding("head commit", "checkpoint_incomplete", f"no '{checkpoint_message(step)}' commit "
                                 f"before '{pointer_message(step)}'"))
    elif older[0] != checkpoint_message(step):
        found.append(Finding("head commit", None, f"'{pointer_message(step)}' is preceded by '{older[0]}', not "
                             f"directly by '{checkpoint_message(step)}' (a pointer moved by hand?)"))
    return found


def check_pointer(snap: StoreSnapshot, settings: Settings, seen_step: int = 0) -> list[Finding]:
    """``latest.json.step`` equals N and ``path_in_repo`` is ``ckpt/checkpoint-N``."""
    if snap.pointer_error:
        return [Finding("latest.json", "store_format", snap.pointer_error)]
    if snap.pointer is None:
        return []
    if snap.pointer.path_in_repo != checkpoint_path(snap.pointer.step):
        return [Finding("latest.json", "store_format", f"path_in_repo {snap.pointer.path_in_repo!r} != "
                        f"{checkpoint_path(snap.pointer.step)!r}")]
    if snap.pointer.step > settings.max_steps:
        return [Finding("latest.json", "store_format", f"step {snap.pointer.step} > max_steps {settings.max_steps}")]
    return []


def check_checkpoint_files(snap: StoreSnapshot, settings: Settings, seen_step: int = 0) -> list[Finding]:
    """The folder exists with its manifest; the file set matches; the small files match their hashes (row 3)."""
    if snap.pointer is None or snap.pointer.step == 0:
        return []
    folder = checkpoint_path(snap.pointer.step)
    if not snap.files:
        return [Finding("checkpoint files", "checkpoint_incomplete", f"{folder} does not exist")]
    if snap.manifest is None:
        return [Finding("checkpoint files", "checkpoint_incomplete", f"{folder} has no manifest.json (partial)")]
    try:
        manifest = lenient_json(snap.manifest)
        listed = manifest["files"]
        assert isinstance(listed, dict)
    except (ValueError, KeyError, TypeError, AssertionError, UnicodeDecodeError):
        return [Finding("checkpoint files", "checkpoint_incomplete", f"{folder}/manifest.json is malformed")]
    present = set(snap.files) - {MANIFEST}
    found = []
    for name in sorted(set(listed) - present):
        found.append(Finding("checkpoint files", "checkpoint_incomplete", f"{name} is in the manifest but missing"))
    for name in sorted(present - set(listed)):
        found.append(Finding("checkpoint files", "checkpoint_incomplete", f"{name} is present but not in the manifest"))
    for name, data in ((CURSOR, snap.cursor), (TRAINER_STATE, snap.trainer_state)):
        entry = listed.get(name)
        if data is None or not isinstance(entry, dict):
            continue
        if hashlib.sha256(data).hexdigest() != entry.get("sha256") or len(data) != entry.get("size"):
            found.append(Finding("checkpoint files", "checkpoint_incomplete",
                                 f"{name}: sha256 or size differs from manifest.json (altered)"))
    return found


def _json_object(data: bytes, name: str) -> dict | Finding:
    """A store file that must hold one JSON object, or the finding that it does not."""
    try:
        obj = lenient_json(data)
    except (ValueError, UnicodeDecodeError) as exc:
        return Finding(name, "store_format", f"not valid JSON: {exc}")
    if not isinstance(obj, dict):
        return Finding(name, "store_format", "not a JSON object")
    return obj


def _cursor(snap: StoreSnapshot) -> dict | Finding | None:
    if snap.pointer is None or snap.pointer.step == 0 or snap.cursor is None:
        return None
    return _json_object(snap.cursor, "cursor.json")


def _arithmetic(key: str, per_step: int, label: str) -> CheckFn:
    def check(snap: StoreSnapshot, settings: Settings, seen_step: int = 0) -> list[Finding]:
        cursor = _cursor(snap)
        if cursor is None:
            return []
        if isinstance(cursor, Finding):
            return [cursor] if key == "tokens_consumed" else []
        value = cursor.get(key)
        n = snap.pointer.step
        expected = n * getattr(settings, per_step)
        if not exact_int(value) or value != expected:
            return [Finding(f"cursor.json.{key}", "token_arithmetic",
                            f"{value!r} ({type(value).__name__}) != {n} x {getattr(settings, per_step):,} = "
                            f"{expected} ({label})")]
        return []

    return check


def check_cursor_step(snap: StoreSnapshot, settings: Settings, seen_step: int = 0) -> list[Finding]:
    cursor = _cursor(snap)
    if not isinstance(cursor, dict):
        return []
    if not exact_int(cursor.get("step")) or cursor.get("step") != snap.pointer.step:
        return [Finding("cursor.json.step", "token_arithmetic", f"{cursor.get('step')!r} != pointer step "
                        f"{snap.pointer.step}")]
    return []


def check_hashes(snap: StoreSnapshot, settings: Settings, seen_step: int = 0) -> list[Finding]:
    """``dataset_files_sha`` / ``shuffle_perm_sha`` unchanged (row 11)."""
    cursor = _cursor(snap)
    if not isinstance(cursor, dict):
        return []
    found = []
    for key, pinned in (("dataset_files_sha", settings.dataset_files_sha),
                        ("shuffle_perm_sha", settings.shuffle_perm_sha)):
        if pinned is not None and cursor.get(key) != pinned:
            found.append(Finding(f"cursor.json.{key}", "cursor_hash_changed",
                                 f"{cursor.get(key)!r} != pinned {pinned!r}"))
    return found


def _trainer_state(snap: StoreSnapshot) -> dict | Finding | None:
    if snap.pointer is None or snap.pointer.step == 0:
        return None
    if snap.trainer_state is None:
        return Finding("trainer_state.json", "checkpoint_incomplete", "missing")
    return _json_object(snap.trainer_state, "trainer_state.json")


def check_trainer_state(snap: StoreSnapshot, settings: Settings, seen_step: int = 0) -> list[Finding]:
    """``global_step == N``, ``max_steps`` and ``save_steps`` as configured (row 12)."""
    state = _trainer_state(snap)
    if state is None:
        return []
    if isinstance(state, Finding):
        return [state]
    found = []
    for key, expected in (("global_step", snap.pointer.step), ("max_steps", settings.max_steps),
                          ("save_steps", settings.save_steps)):
        value = state.get(key)
        if not exact_int(value) or value != expected:
            found.append(Finding(f"trainer_state.json.{key}", "trainer_state_mismatch", f"{value!r} != {expected}"))
    return found


def _series(history: list, key: str) -> dict[int, object]:
    return {e["step"]: e.get(key) for e in history if isinstance(e, dict) and exact_int(e.get("step")) and key in e}


def _window_loss(losses: dict[int, object], end: int, width: int) -> float | None:
    values = [losses[s] for s in range(end - width + 1, end + 1) if s in losses]
    if not values or not all(finite_number(v) for v in values):
        return None
    return sum(values) / len(values)


def check_loss(snap: StoreSnapshot, settings: Settings, seen_step: int = 0) -> list[Finding]:
    """The loss at N is finite and lower than at the previous checkpoint; no jump beyond noise at a boundary.

    Only boundaries from ``seen_step`` on are new: one already judged (or cleared by a person
    with ``wiki unblock``) is not judged again at every wake.
    """
    state = _trainer_state(snap)
    if not isinstance(state, dict):
        return []
    history = state.get("log_history")
    if not isinstance(history, list):
        return [Finding("trainer_state.json.log_history", "store_format", "not a list")]
    n = snap.pointer.step
    losses = _series(history, "loss")
    if not finite_number(losses.get(n)):
        return [Finding("loss", "loss_not_finite", f"loss at step {n} is {losses.get(n)!r}: fails closed")]
    found = []
    width = settings.save_steps
    now, before = _window_loss(losses, n, width), _window_loss(losses, n - width, width)
    if n - width > 0 and before is not None and now is not None and not now < before:
        found.append(Finding("loss", None, f"mean loss of the last {width} steps {now:.4f} is not lower than at "
                             f"checkpoint {n - width} ({before:.4f})"))
    for key in ("loss", "grad_norm"):
        series = _series(history, key)
        first = max(settings.save_steps, -(-seen_step // settings.save_steps) * settings.save_steps)
        for boundary in range(first, n, settings.save_steps):
            jump = _discontinuity(series, boundary, settings)
            if jump:
                found.append(Finding(f"{key} at checkpoint {boundary}", "loss_discontinuity", jump))
    return found


def _discontinuity(series: dict[int, object], boundary: int, settings: Settings) -> str | None:
    """An upward jump from ``boundary`` to ``boundary + 1`` beyond ``loss_sigma`` sigmas of the noise before it."""
    a, b = series.get(boundary), series.get(boundary + 1)
    if not (finite_number(a) and finite_number(b)):
        return None
    window = [series.get(s) for s in range(max(1, boundary - 2 * settings.save_steps), boundary + 1)]
    if len(window) < 4 or not all(finite_number(v) for v in window):
        return None
    import statistics  # fractions, decimal: only where a checkpoint's loss is judged

    diffs = [y - x for x, y in zip(window, window[1:])]
    sigma = max(statistics.pstdev(diffs), 1e-3 * abs(a), 1e-9)
    mean = statistics.fmean(diffs)
    if (b - a) - mean > settings.loss_sigma * sigma:
        return (f"{a:.4f} at step {boundary} -> {b:.4f} at step {boundary + 1}: a jump of {b - a:+.4f} against "
                f"noise sigma {sigma:.4f} (k = {settings.loss_sigma:g})")
    return None


CHECKS: tuple[tuple[str, str, CheckFn], ...] = (
    ("head commit", "`latest -> N`, and the `checkpoint N` commit right before it", check_head_commit),
    ("latest.json", "step equals N, and path_in_repo is ckpt/checkpoint-N", check_pointer),
    ("checkpoint files", "manifest.json present; every file listed and present; hashes match", check_checkpoint_files),
    ("cursor.json.step", "equals N", check_cursor_step),
    ("cursor.json.tokens_consumed", "exactly N x tokens_per_step", _arithmetic("tokens_consumed", "tokens_per_step",
                                                                                 "tokens_per_step")),
    ("cursor.json.samples_consumed", "exactly N x samples_per_step",
     _arithmetic("samples_consumed", "samples_per_step", "samples_per_step")),
    ("dataset_files_sha / shuffle_perm_sha", "unchanged", check_hashes),
    ("trainer_state.json", "global_step == N, max_steps, save_steps", check_trainer_state),
    ("loss", "finite, lower than the previous checkpoint, continuous at boundaries", check_loss),
)


def run_checks(snap: StoreSnapshot, settings: Settings, seen_step: int = 0) -> tuple[Finding, ...]:
    """Every finding of the section 1 checks, in table order (``seen_step``: the pointer of the last wake)."""
    return tuple(f for _, _, check in CHECKS for f in check(snap, settings, seen_step))


# ---------------------------------------------------------------- compute


def slug_for(config: dict, run: str, job: str) -> str:
    """The slug a job launches under: ``<owner>/<slug_prefix><K>`` (``<run>-session<K>`` by default)."""
    compute = config.get("compute") or {}
    number = job.rsplit("-", 1)[-1]
    slug = f"{compute.get('slug_prefix') or run + '-session'}{number}"
    owner = compute.get("owner")
    return f"{owner}/{slug}" if owner else slug


def session_view(compute: ComputeBackend, job: str, ref: str, submitted_at: str | None) -> SessionView:
    """The backend's status of one launch; UNKNOWN when it cannot be told.

    For an ended session the log is read too: its exit record and checkpoint digests
    (:mod:`wikiengine.step.relay.records`); the reason shown is the exit record's, never a raw log line.
    """
    try:
        status = compute.status(ref)
    except ComputeError:
        return SessionView(job, ref, SessionState.UNKNOWN)
    submitted = parse_iso(submitted_at) if submitted_at else None
    record = None
    if status.state.ended and status.state != SessionState.GONE:
        try:
            record = parse_session_log(compute.log_tail(ref, LOG_LINES))
        except ComputeError:
            record = None
    reason = (record.describe() if record is not None else None) or status.failure_message or (
        f"exit code {status.exit_code}" if status.exit_code not in (None, 0) else None)
    reason = plain_text(redact(reason)) if reason else None  # outside text: no secret, no markup goes further
    return SessionView(job, ref, status.state, submitted, status.started_at, status.ended_at, reason, record,
                       status.version, status.kernel_id)


def claimed_view(compute: ComputeBackend, job: str, slug: str) -> SessionView:
    """Find a claimed launch at the backend by its slug: GONE only when the backend positively has none.

    The compute protocol's "unknown" (:mod:`wikiengine.executors.compute`): a listing that cannot be
    read raises, and a listed session whose state is UNKNOWN could be ours; both make the
    claim UNKNOWN, never GONE (seed: unknown is not gone).
    """
    try:
        sessions = compute.list_sessions()
    except ComputeError:
        return SessionView(job, slug, SessionState.UNKNOWN)
    for ref, _state in sessions:
        if ref == slug or ref.split("/")[-1] == slug.split("/")[-1]:
            return session_view(compute, job, ref, None)
    if any(state == SessionState.UNKNOWN for _, state in sessions):
        return SessionView(job, slug, SessionState.UNKNOWN)
    return SessionView(job, slug, SessionState.GONE)


# ---------------------------------------------------------------- the run's own records


def pointer_history_findings(snap: StoreSnapshot, seen_head: str | None) -> list[Finding]:
    """A ``latest -> M`` commit since the last seen head with M above the current pointer (seed section 5).

    The store's own history is evidence: a pointer that went 24 -> 20 between two wakes
    moved backwards even though no wake saw 24.
    """
    if snap.pointer is None:
        return []
    found = []
    for commit in snap.commits:
        if commit.id == seen_head:
            break
        step = _pointer_step_of(commit.title)
        if step is not None and step > snap.pointer.step:
            found.append(Finding("store history", "pointer_backwards",
                                 f"commit {commit.id[:12]} '{commit.title}' ({commit.date.isoformat()}) is above the "
                                 f"current latest -> {snap.pointer.step}"))
    return found


def _pointer_step_of(title: str) -> int | None:
    prefix = "latest -> "
    tail = title[len(prefix):] if title.startswith(prefix) else ""
    return int(tail) if tail.isdigit() else None


def exit_record_findings(pointer_step: int | None, records: dict[str, int]) -> list[Finding]:
    """A pointer below the end step a session recorded when it exited (seed section 5)."""
    if pointer_step is None:
        return []
    return [Finding(f"{job} exit record", "pointer_backwards", f"{job} recorded checkpoint {end} as committed; "
                    f"the store's pointer is latest -> {pointer_step}")
            for job, end in sorted(records.items()) if end > pointer_step]


def digest_findings(snap: StoreSnapshot, recorded: dict[str, str], views: list[SessionView]) -> list[Finding]:
    """Each session's own record against the digests in memory, then the store's manifest at the
    pointer against both (a checkpoint first seen now is still checked against its session's log)."""
    found = []
    known = dict(recorded)
    for view in views:
        for key, sha in sorted((view.record.digests if view.record else {}).items()):
            if known.setdefault(key, sha) != sha:
                name = "final/" if key == FINAL_KEY else checkpoint_path(int(key))
                found.append(Finding("checkpoint digest", "checkpoint_altered",
                                     f"{view.job}'s log records {name}/manifest.json as {sha[:16]}...; the run "
                                     f"recorded {known[key][:16]}... first"))
    if snap.pointer is not None and snap.manifest is not None:
        key = str(snap.pointer.step)
        now = hashlib.sha256(snap.manifest).hexdigest()
        if key in known and known[key] != now:
            found.append(Finding("checkpoint digest", "checkpoint_altered",
                                 f"{checkpoint_path(snap.pointer.step)}/manifest.json in the store has sha256 "
                                 f"{now[:16]}..., the run recorded {known[key][:16]}..."))
    return found


def new_digests(snap: StoreSnapshot | None, recorded: dict[str, str], views: list[SessionView]) -> tuple[
        tuple[str, str, str], ...]:
    """Digests not recorded yet: each session's own record first, then the manifest at the pointer."""
    fresh: dict[str, tuple[str, str]] = {}
    for view in views:
        for key, sha in (view.record.digests if view.record else {}).items():
            if key not in recorded:
                fresh.setdefault(key, (sha, view.job))
    if snap is not None and snap.pointer is not None and snap.pointer.step and snap.manifest is not None:
        key = str(snap.pointer.step)
        if key not in recorded:
            fresh.setdefault(key, (hashlib.sha256(snap.manifest).hexdigest(), "wake"))
    return tuple((key, sha, by) for key, (sha, by) in sorted(fresh.items(), key=lambda kv: _digest_order(kv[0])))


def _digest_order(key: str) -> tuple[int, int]:
    return (1, 0) if key == FINAL_KEY else (0, int(key))


def pointer_timing(snap: StoreSnapshot) -> tuple[dt.datetime | None, float | None]:
    """The store's time of the current pointer commit, and the median gap between pointer commits."""
    if snap.pointer is None:
        return None, None
    times = sorted(c.date for c in snap.commits if _pointer_step_of(c.title) is not None)
    moved = next((c.date for c in snap.commits if c.title == pointer_message(snap.pointer.step)), None)
    gaps = [(b - a).total_seconds() for a, b in zip(times, times[1:])]
    return moved, (median(gaps) if gaps else None)


# ---------------------------------------------------------------- the whole observation


def observe(now: dt.datetime, state: RelayState, settings: Settings, config: dict, store: CheckpointStore,
            compute: ComputeBackend, assets: list[AssetRow], immutable_edits: tuple[str, ...] = (),
            recorded: dict[str, str] | None = None, exit_ends: dict[str, int] | None = None) -> tuple[
            Observations, StoreSnapshot | None]:
    """Everything decide needs, read only (``recorded``: the checkpoint digests in memory; ``exit_ends``:
    the end step of each session's exit record in memory)."""
    recorded = recorded or {}
    try:
        snap = read_snapshot(store)
    except StoreError as exc:  # unavailable, or a history that cannot be listed: unknown
        return Observations(now, None, None, store_error=redact(str(exc))[:300], immutable_edits=immutable_edits), None
    findings = run_checks(snap, settings, state.last_seen_step)
    rewritten = False
    if state.store_head and state.store_head != snap.head:
        try:
            rewritten = not store.is_ancestor(state.store_head, snap.head)
        except StoreError:
            rewritten = True
    pointer_step = snap.pointer.step if snap.pointer else None
    views = [session_view(compute, a.job, a.ref, a.submitted_at) for a in assets[-2:]]
    last = views[-1] if views else None
    previous = views[-2] if len(views) > 1 else None
    ends = dict(exit_ends or {})
    ends.update({v.job: v.record.end_step for v in views if v.record is not None and v.record.end_step is not None})
    findings += tuple(pointer_history_findings(snap, None if rewritten else state.store_head)
                      + exit_record_findings(pointer_step, ends) + digest_findings(snap, recorded, views))
    moved_at, save_interval = pointer_timing(snap)
    claimed = None
    if state.claim is not None:
        recorded = {a.job for a in assets}
        if state.claim.job not in recorded:
            claimed = claimed_view(compute, state.claim.job, slug_for(config, state.run, state.claim.job))
    quota, quota_error = None, None
    try:
        quota = compute.quota()
    except ComputeError as exc:
        quota_error = redact(str(exc))[:200]
    plan_steps, plan_problems = _plan(pointer_step or 0, settings)
    obs = Observations(now, snap.head, pointer_step, findings, rewritten, last, previous, claimed, quota, plan_steps,
                       plan_problems, immutable_edits, None, quota_error, moved_at, save_interval)
    return obs, snap


def _plan(pointer_step: int, settings: Settings) -> tuple[int | None, tuple[str, ...]]:
    """The trainer's planner from the pointer and its own cross-check (seed: 'if the planner disagrees')."""
    from wikiengine.training.plan import PlanError, cross_check, plan_session

    try:
        plan = plan_session(pointer_step, settings.max_steps, settings.save_steps, settings.session_steps)
    except PlanError as exc:
        return None, (str(exc),)
    if plan.finished:
        return None, ()
    return plan.steps_to_run, tuple(cross_check(plan))


# ---------------------------------------------------------------- row 38: immutable pages since the trusted commit


IMMUTABLE_RULES = ["EXP007", "MEM002"]  # verdict pages; ledger rows


def immutable_edits_since(root: Path, trusted: str | None, head: str | None = None) -> tuple[str, ...]:
    """Immutable records changed since ``trusted`` (RELIABILITY row 38): ``wiki lint``'s EXP007
    (verdict pages) and MEM002 (ledger rows) over ``trusted..HEAD``, so an edit committed with
    ``--no-verify`` or in a web editor is caught at the next wake. When ``trusted`` is HEAD
    (``head``) and no page differs from it in the work tree, no page changed since it:
    nothing to re-lint (a no-op wake imports no linter)."""
    if not trusted:
        return ()
    from wikiengine.core.git import changed_paths

    if trusted == head and not any(path.endswith(".md") for path in changed_paths(root)):
        return ()
    from wikiengine.lint.config import LintConfig
    from wikiengine.lint.runner import lint

    try:
        result = lint(root, config=LintConfig(select=IMMUTABLE_RULES), base=trusted, use_cache=False, use_baseline=False)
    except WikiError as exc:
        return (f"cannot re-lint since the trusted commit {trusted[:12]}: {exc}",)
    return tuple(f.render() for f in result.findings if f.code in IMMUTABLE_RULES)


# ---------------------------------------------------------------- append-only tables, each row against its own commit

APPEND_ONLY = (  # (memory file, table section, its columns)
    (memory.QUOTA_FILE, memory.LEDGER_SECTION, memory.LEDGER_COLUMNS),
    (memory.ASSETS_FILE, memory.LAUNCHES_SECTION, memory.ASSET_COLUMNS),
    (memory.ASSETS_FILE, memory.SESSIONS_SECTION, memory.SESSION_COLUMNS),
    (memory.ASSETS_FILE, memory.CHECKPOINTS_SECTION, memory.CHECKPOINT_COLUMNS),
)
UNBLOCK_SUBJECT = "unblock: "


def append_only_edits(root: Path) -> tuple[str, ...]:
    """Rows of the append-only memory tables that differ at HEAD from the commit that introduced them.

    Each row is compared with its content in the first version of its file where it
    appeared, found by walking every commit that touched memory, so no pointer an editor
    can move (a ``trusted_commit`` in STATE.md) decides what is checked; an edit that was
    reverted leaves nothing to report. A ``wiki unblock`` commit (a person's recorded
    decision) accepts the tables as they stand at that commit.
    """
    from wikiengine.core import git

    paths = sorted({f"{memory.MEMORY_DIR}/{name}" for name, _, _ in APPEND_ONLY})
    log = git.out(root, "log", "--reverse", "--format=%H%x00%s", "--", *paths, f"{memory.MEMORY_DIR}/{memory.STATE_FILE}")
    commits = [line.split("\x00", 1) for line in log.splitlines() if "\x00" in line]
    if not commits:
        return ()
    blobs = iter(blob.decode("utf-8", errors="replace") if blob is not None else None
                 for blob in git.cat_file_batch(root, [f"{sha}:{path}" for sha, _ in commits for path in paths]))
    introduced: dict[tuple[str, str, int], tuple[tuple[str, ...], str]] = {}
    last: dict[tuple[str, str], list[tuple[str, ...]]] = {}
    changed_in: dict[tuple[str, str, int], str] = {}  # the first commit where a row left its first content
    seen: dict[str, str | None] = {}  # each table's text in the last commit walked
    for sha, subject in commits:
        accept = subject.startswith(UNBLOCK_SUBJECT)
        for path in paths:
            text = next(blobs)
            if not accept and path in seen and seen[path] == text:
                continue  # the same rows again change nothing (most commits here are STATE.md's alone)
            seen[path] = text
            for name, section, columns in APPEND_ONLY:
                rows = _table_rows(text, section, columns) if text is not None and path.endswith(name) else None
                if rows is None:
                    continue
                last[(path, section)] = rows
                for number, row in enumerate(rows):
                    key = (path, section, number)
                    if accept or key not in introduced:
                        introduced[key] = (row, sha)
                    if introduced[key][0] == row:
                        changed_in.pop(key, None)
                    else:
                        changed_in.setdefault(key, sha)
                for key in [k for k in introduced if k[:2] == (path, section) and k[2] >= len(rows)]:
                    if accept:
                        del introduced[key]
                    else:
                        changed_in.setdefault(key, sha)
    found = []
    for (path, section, number), (first, origin) in sorted(introduced.items()):
        rows = last.get((path, section), [])
        now = rows[number] if number < len(rows) else None
        if now != first:
            change = f"changed to '{' | '.join(now)}'" if now is not None else "removed"
            found.append(f"{path}: row {number + 1} of '## {section}' was '{' | '.join(first)}' when {origin[:12]} "
                         f"added it; {changed_in[(path, section, number)][:12]} {change}")
    return tuple(found)


def _table_rows(text: str, section: str, columns: tuple[str, ...]) -> list[tuple[str, ...]] | None:
    from wikiengine.core.page import parse_page

    try:
        page = parse_page(text, None)
        if page.section(section) is None:
            return []
        return [tuple(r.cells[c] for c in columns) for r in memory.parse_table(page, section, columns).rows]
    except WikiError:
        return None  # a malformed version is MEM001's finding, not this check's
