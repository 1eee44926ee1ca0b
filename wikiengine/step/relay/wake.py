"""The relay mode of `wiki step`: check -> decide -> act -> write memory -> commit -> summary.

:func:`wake` is the mode's wake, run by :mod:`wikiengine.step.engine` under its lock;
:func:`run_step` runs it through the engine (``wiki step`` is a thin shell over that). The
decision's act is looked up in :data:`ACTS` (one method per decision); each act commits
the memory it changed with a message that says what happened, and an act re-run after a
crash at any point launches at most once (see :mod:`wikiengine.step.relay.act`).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.clock import utc_iso, utcnow
from wikiengine.core.errors import WikiError
from wikiengine.executors.compute import ComputeError
from wikiengine.model import memory
from wikiengine.model.state import RelayState as State
from wikiengine.step import engine
from wikiengine.step.relay import act
from wikiengine.step.relay.decide import Decision, Memory, Settings, decide
from wikiengine.step.relay.observe import append_only_edits, new_digests, observe, slug_for
from wikiengine.step.result import WakeResult
from wikiengine.step.txn import UndoRecord, recover

MEMORY_PATHS = tuple(f"{memory.MEMORY_DIR}/{name}" for name in memory.MEMORY_FILES)
RELAY_KEY = "relay"  # the name of the relay's write record (its lock is the engine's wake lock)


def StepResult(state: str, step: int | None, decision: str, reasons: list[str]) -> WakeResult:  # noqa: N802
    """A relay wake's :class:`~wikiengine.step.result.WakeResult` (the relay's own words for it)."""
    return WakeResult("relay", state, decision, reasons=list(reasons), step=step)


@dataclass
class Run:
    """What one wake works on: the wiki root, the run's program config and its backends."""

    root: Path
    config: dict
    settings: Settings
    store: object
    compute: object


def load_run(root: Path, state: State, store=None, compute=None) -> Run:
    """Resolve ``wiki/runs/<run>/program.md`` (validated, its written directories confined to
    the repository) and build its store and compute backends."""
    from wikiengine.model import cascade, runconfig, targets

    program = cascade.resolve(targets.target_for_run(root, state.run))
    config = program.config
    if not config:
        raise WikiError(f"wiki/runs/{state.run}/program.md has no ## Config yaml block")
    runconfig.check_confined(root, state.run, config, program.target.relative(program.config_origin.path))
    return Run(root, config, Settings.from_config(config), store or make_store(config, root),
               compute or make_compute(config, root))


def make_store(config: dict, root: Path):
    """The checkpoint store of the run's ``store`` block (``executors.registry``)."""
    from wikiengine.executors import registry
    from wikiengine.executors.store import StoreUnavailableError


    try:
        return registry.make_store(config["store"], root=root)
    except (registry.BackendConfigError, StoreUnavailableError) as exc:  # e.g. a local-git path that is no store
        raise WikiError(str(exc)) from None


def make_compute(config: dict, root: Path):
    """The compute backend of the run's ``compute`` block (``executors.registry``)."""
    from wikiengine.executors import registry

    try:
        return registry.make_compute(config["compute"], root=root)
    except registry.BackendConfigError as exc:
        raise WikiError(str(exc)) from None


def memory_of(state: State) -> Memory:
    claimed_at = memory.parse_iso(state.claim.claimed_at) if state.claim else None
    return Memory(state.status, state.session, state.last_seen_step, state.high_water_step, state.blocker,
                  state.claim.job if state.claim else None, claimed_at, state.store_head, state.reset_at,
                  state.unblocked_session or 0)


def run_step(root: Path, *, dry_run: bool = False, clock: Callable[[], dt.datetime] = utcnow, store=None,
             compute=None) -> WakeResult:
    """One relay wake through the step engine (it holds the wake lock): see the module docstring."""
    from wikiengine.step import engine as step_engine

    return step_engine.run_step(root, dry_run=dry_run, clock=clock, mode="relay", store=store, compute=compute)


def wake(root: Path, *, dry_run: bool = False, clock: Callable[[], dt.datetime] = utcnow, store=None,
         compute=None, **_unused) -> WakeResult:
    """The relay mode's wake (the engine's skeleton), without the lock."""
    return engine.wake(MODE, root, dry_run=dry_run, clock=clock, store=store, compute=compute)


@dataclass
class Relay:
    """What a relay wake works on, phase by phase."""

    state: State
    run: Run
    decision: Decision | None = None
    observations: object = None
    snap: object = None
    recorded: dict = field(default_factory=dict)
    edits: list = field(default_factory=list)
    head: str | None = None
    acts: Wake | None = None
    undo: UndoRecord | None = None


def _recover(wake: engine.Wake) -> None:
    """Discard the uncommitted memory writes of a wake that died mid-act (RELIABILITY rows 22, 39).

    Every effect outside memory (a launch) happens only after a commit that records its
    intent (the claim), so memory as last committed is always a consistent state to resume from.
    """
    done = recover(wake.root, RELAY_KEY)
    if done is not None:
        wake.recovered.append(f"recovered from a wake that died mid-act ({done.note}): uncommitted memory writes "
                              "discarded")


def _load(wake: engine.Wake) -> None:
    state = State.read(wake.root)
    wake.run = Relay(state, load_run(wake.root, state, wake.backends.get("store"), wake.backends.get("compute")))
    wake.result.state = state.status


def _observe(wake: engine.Wake) -> None:
    from wikiengine.core.git import current_head
    from wikiengine.step.relay.observe import immutable_edits_since

    relay, root = wake.run, wake.root
    relay.head = current_head(root)
    base = _relint_base(root, relay.state.trusted_commit, relay.head)
    relay.edits = immutable_edits_since(root, base, relay.head) + append_only_edits(root)
    relay.recorded = {key: d.manifest_sha256 for key, d in memory.read_digests(root).items()}
    exit_ends = {job: int(r["end_step"]) for job, r in memory.read_exit_records(root).items()
                 if r["end_step"].isdigit()}
    relay.observations, relay.snap = observe(wake.clock(), relay.state, relay.run.settings, relay.run.config,
                                             relay.run.store, relay.run.compute, memory.read_assets(root),
                                             relay.edits, relay.recorded, exit_ends)


def _decide(wake: engine.Wake) -> None:
    relay, result = wake.run, wake.result
    relay.decision = decision = decide(relay.observations, memory_of(relay.state), relay.run.settings)
    result.decision, result.step = decision.kind, decision.step
    result.reasons = wake.recovered + list(decision.reasons)
    result.decisions = [{"decision": decision.kind, "step": decision.step}]
    if decision.next_check_at is not None:
        result.next_wake_s = max(0, int((decision.next_check_at - wake.clock()).total_seconds()))


def _act(wake: engine.Wake) -> None:
    relay, decision = wake.run, wake.run.decision
    if wake.dry_run:
        wake.result.actions = [f"(dry run) {a}" for a in decision.actions]
        return
    state = relay.state
    if not relay.edits and relay.head:
        # the wiki re-linted clean up to here: the trusted commit rides along with the next memory write
        state = dataclasses.replace(state, trusted_commit=relay.head)
    relay.undo = UndoRecord(wake.root, RELAY_KEY, list(MEMORY_PATHS), f"{utc_iso(wake.clock())} {decision.kind}")
    relay.acts = acts = Wake(relay.run, state, decision, relay.observations, wake.clock, wake.result, snap=relay.snap,
                             recorded=relay.recorded, undo=relay.undo)
    acts.keep_run_records()
    acts.book_spent_rows()
    ACTS.get(decision.kind, Wake.observe_only)(acts)


def _record(wake: engine.Wake) -> None:
    relay = wake.run
    acts = relay.acts
    acts.commit(acts.message or f"step: {relay.decision.kind} at {_pointer_text(relay.decision.step)}")
    _record_own_commit(wake.root, wake.result.commits[-1] if wake.result.commits else relay.head)
    relay.undo.close()
    wake.result.state = acts.state.status


def _own_commit_path(root: Path) -> Path:
    from wikiengine.core.git import git_dir

    return git_dir(root) / "wiki-step-last-commit"


def _record_own_commit(root: Path, head: str | None) -> None:
    """Remember this wake's last memory commit, or the head it checked when it committed
    nothing (inside .git: this host's own record)."""
    if head:
        _own_commit_path(root).write_text(head + "\n")


def _relint_base(root: Path, trusted: str | None, head: str | None = None) -> str | None:
    """Where row 38's re-lint starts: this host's own last memory commit when HEAD (``head``)
    still descends from it (so rows this engine wrote after the trusted commit are protected
    too), else the trusted commit recorded in STATE.md."""
    path = _own_commit_path(root)
    if not trusted or not path.is_file():
        return trusted
    own = path.read_text().strip()
    from wikiengine.core.git import is_ancestor

    return own if is_ancestor(root, trusted, own) and is_ancestor(root, own, head or "HEAD") else trusted


def _pointer_text(step: int | None) -> str:
    return f"latest -> {step}" if step is not None else "no pointer"


MATERIAL = ("run", "status", "last_seen_step", "high_water_step", "session", "blocker", "resume_step", "reset_at",
            "next_command", "claim", "store_head", "unblocked_session", "next_check_at")


@dataclass
class Wake:
    """The acts of one wake on memory: each change is written atomically and committed with a message."""

    run: Run
    state: State
    decision: Decision
    obs: object
    clock: Callable[[], dt.datetime]
    result: WakeResult
    message: str | None = None
    written: State | None = None
    rows_appended: bool = False  # a row went into QUOTA.md or ASSETS.md (memory changed)
    snap: object = None  # the store snapshot the observations came from
    recorded: dict = field(default_factory=dict)  # the checkpoint digests in memory before this wake
    undo: UndoRecord | None = None  # what a crash discards: the memory writes since the last commit

    def __post_init__(self):
        self.written = self.state

    # ---------------------------------------------------------------- memory plumbing

    def changed(self) -> bool:
        return any(getattr(self.state, k) != getattr(self.written, k) for k in MATERIAL) or self.rows_appended

    def save_state(self) -> None:
        """Write STATE.md if anything material changed (a replayed wake writes nothing: row 33)."""
        if not self.changed():
            return
        now = self.clock()
        self.state = dataclasses.replace(self.state, updated_at=utc_iso(now))
        self.state.write(self.run.root, summary_body(self.state, self.decision))

    def commit(self, message: str) -> None:
        from wikiengine.core.git import commit_paths

        self.save_state()
        if self.undo is not None and self.undo.unchanged():
            sha = None  # memory was clean at the start (sanity) and nothing was written since: no git to ask
        else:
            sha = commit_paths(self.run.root, list(MEMORY_PATHS), message)
        self._committed(sha)

    def _committed(self, sha: str | None) -> None:
        if sha:
            self.result.commits.append(sha)
            if self.undo is not None:
                self.undo.checkpoint()
        self.written = self.state
        self.rows_appended = False

    def seen(self) -> None:
        """Fold the pointer and store head into memory (never lowering the high-water mark)."""
        obs, step = self.obs, self.decision.step
        if step is not None:
            self.state = dataclasses.replace(self.state, last_seen_step=step,
                                             high_water_step=max(self.state.high_water_step, step))
        if obs.store_head:
            self.state = dataclasses.replace(self.state, store_head=obs.store_head)

    # ---------------------------------------------------------------- acts

    def keep_run_records(self) -> None:
        """Record the run's own evidence the first time it is seen: checkpoint digests (a session's
        log, or the manifest at the pointer) and the exit record of each ended session."""
        views = [v for v in (self.obs.previous_session, self.obs.last_session) if v is not None]
        now = utc_iso(self.clock())
        for key, sha, by in new_digests(self.snap, self.recorded, views):
            memory.record_digest(self.run.root, key, sha, by, now)
            self.rows_appended = True
            self.result.actions.append(f"recorded the digest of checkpoint {key} ({by})")
        written = [act.record_exit(self.run.root, view) for view in views]  # each view, no short cut
        if any(written):
            self.rows_appended = True

    def book_spent_rows(self) -> None:
        """Every recorded session that ended gets exactly one outcome row for its booking."""
        for view in (self.obs.previous_session, self.obs.last_session):
            if view is not None and view.state.ended and act.book_spent(self.run.root, view, self.obs.quota,
                                                                        self.clock()):
                self.rows_appended = True
                self.result.actions.append(f"ledger: {view.job} spent (a new row)")

    def schedule_next_check(self) -> None:
        """Move a "next check at" that has passed to this decision's (a replay inside the interval changes nothing)."""
        due = self.state.next_check_at
        if self.decision.next_check_at is not None and (due is None or memory.parse_iso(due) <= self.clock()):
            self.state = dataclasses.replace(self.state, next_check_at=utc_iso(self.decision.next_check_at))

    def observe_only(self) -> None:
        """running / wait: fold what was seen into memory; no other effect."""
        self.seen()
        self.schedule_next_check()
        if self.decision.kind == "running":
            self.message = f"step: {self.obs.last_session.job} running at {_pointer_text(self.decision.step)}"

    def cancel_live_session(self) -> None:
        """A block stops everything (seed section 5): cancel the live session through the backend."""
        view = self.decision.cancel
        if view is None:
            return
        cancel = getattr(self.run.compute, "cancel", None)
        if cancel is None:
            self.result.actions.append(f"{view.job} ({view.ref}) is still running and this backend cannot cancel "
                                       "it: stop it by hand")
            return
        try:
            cancel(view.ref)
        except ComputeError as exc:
            from wikiengine.core.secrets import redact

            self.result.actions.append(f"could not cancel {view.job} ({view.ref}): {redact(str(exc))[:200]}; "
                                       "the next wake tries again")
            return
        self.result.actions.append(f"cancelled the live {view.job} ({view.ref}) through the backend")

    def blocked(self) -> None:
        self.cancel_live_session()
        self.state = dataclasses.replace(self.state, next_check_at=None)  # nothing is scheduled: a person decides
        if not self.decision.emergencies:
            return  # already blocked: stays blocked until `wiki unblock`
        kinds = {e.kind for e in self.decision.emergencies}
        if "history_rewritten" not in kinds:  # the last good store commit stays the reference
            self.seen()  # never lowers the high-water mark: a pointer that moved back stays an emergency
        self.state = act.record_emergencies(self.run.root, self.state, self.decision, self.clock())
        kinds = ", ".join(e.kind for e in self.decision.emergencies)
        self.result.actions += [f"wrote {e.kind} to ERRORS.md" for e in self.decision.emergencies]
        self.result.actions.append("blocked the run in STATE.md; launched nothing")
        self.message = f"step: blocked at {_pointer_text(self.decision.step)}: {kinds}"

    def release_claim(self) -> None:
        if self.decision.release_claim and self.state.claim is not None:
            job = self.state.claim.job
            self.state = act.release(self.run.root, self.state, self.obs.quota, self.clock(),
                                     "claimed launch never reached the backend")
            self.rows_appended = True
            self.result.actions.append(f"closed the claim of {job} as unspent")
            self.commit(f"step: close unspent claim of {job}")

    def adopt(self) -> None:
        self.seen()
        job = self.state.claim.job
        self.state = act.adopt(self.run.root, self.state, self.obs.claimed, self.run.settings.accelerator,
                               self.clock())  # with the version and kernel id the backend knows
        self.state = dataclasses.replace(self.state, next_check_at=utc_iso(self.decision.next_check_at))
        self.result.actions.append(f"recorded the in-flight {job} ({self.obs.claimed.ref}) in ASSETS.md")
        self.message = f"step: adopt {job} launched by an earlier wake"

    def park(self) -> None:
        self.release_claim()
        self.seen()
        d = self.decision
        self.state = dataclasses.replace(self.state, status="parked", resume_step=d.step or 0,
                                         reset_at=utc_iso(d.reset_at), next_command=act.next_command(),
                                         next_check_at=utc_iso(d.reset_at))
        if self.changed():
            self.result.actions.append(f"parked: resume at step {d.step or 0} after {utc_iso(d.reset_at)}")
        self.message = f"step: park at {_pointer_text(d.step)} until {utc_iso(d.reset_at)}"

    def launch(self) -> None:
        self.release_claim()
        self.seen()
        d, run = self.decision, self.run
        job = d.job
        script = act.bootstrap_text(run.config, self.obs.quota.left_hours)  # rendered and checked before booking
        self.state = dataclasses.replace(self.state, status="running", resume_step=None, reset_at=None,
                                         next_command=None)
        self.state = act.book(run.root, self.state, job, self.obs.quota, d.steps_to_run, self.clock())
        self.rows_appended = True
        self.result.actions.append(f"booked ledger row {self.state.claim.row} for {job}")
        self.commit(f"step: book {job} (ledger row {self.state.claim.row}) before launch")
        slug = slug_for(run.config, self.state.run, job)
        try:
            launched = act.launch(run.compute, run.config, slug, script)
        except act.LaunchRefused as exc:
            self.state = act.release(run.root, self.state, self.obs.quota, self.clock(),
                                     f"refused for capacity: {exc}")
            self.rows_appended = True
            self.result.actions.append(f"{job} refused for capacity: ledger row closed unspent")
            self.message = f"step: {job} refused for capacity; row closed unspent"
            return
        except ComputeError as exc:
            # The push may have landed with its answer lost: the committed claim stays, and the
            # next wake looks the job up at the backend (adopt) instead of launching again.
            from wikiengine.core.secrets import redact

            self.result.actions.append(f"{job}: launch outcome unknown ({redact(str(exc))[:200]}); the claim "
                                       "stays for the next wake")
            self.message = f"step: {job} launch outcome unknown; claim kept"
            return
        self.result.actions.append(f"launched {job} as {launched.ref}")
        self.state = act.record(run.root, self.state, job, launched, run.settings.accelerator, d.next_check_at)
        self.result.actions.append(f"recorded {job} in ASSETS.md; next check at {self.state.next_check_at}")
        self.message = f"step: launch {job.replace('-', ' ')} from {_pointer_text(d.step or 0)}"

    def finish(self) -> None:
        from wikiengine.step.relay import finish

        self.release_claim()
        self.seen()
        done = finish.finish_run(self.run, self.state, self.clock)
        self.result.actions += done.actions
        if done.emergency is not None:
            blocked = dataclasses.replace(self.decision, emergencies=(done.emergency,))
            self.state = act.record_emergencies(self.run.root, self.state, blocked, self.clock())
            self.result.decision = "blocked"
            self.message = f"step: blocked at {_pointer_text(self.decision.step)}: {done.emergency.kind}"
        elif done.complete:
            self.state = dataclasses.replace(self.state, status="complete", next_check_at=None)
            self.message = f"step: run complete at {_pointer_text(self.decision.step)}"
        else:
            self.message = f"step: finishing at {_pointer_text(self.decision.step)}: {done.actions[-1]}"
        self.commit_extra(done.paths)

    def commit_extra(self, paths: list[str]) -> None:
        """Commit files outside memory/ that an act wrote (eval results, the report) with the memory."""
        from wikiengine.core.git import commit_paths

        self.save_state()
        sha = commit_paths(self.run.root, list(MEMORY_PATHS) + paths, self.message)
        self._committed(sha)
        self.message = None


ACTS: dict[str, Callable[[Wake], None]] = {
    "running": Wake.observe_only,
    "wait": Wake.observe_only,
    "complete": lambda wake: None,
    "blocked": Wake.blocked,
    "adopt": Wake.adopt,
    "park": Wake.park,
    "launch": Wake.launch,
    "finish": Wake.finish,
}


def summary_body(state: State, decision: Decision) -> str:
    """The prose of STATE.md for people, rewritten by each wake that changes memory."""
    lines = ["", f"# {state.run}: {state.status}", ""]
    lines.append(f"Last wake: **{decision.kind}** at {_pointer_text(decision.step)} "
                 f"(high-water step {state.high_water_step}, session {state.session}).")
    lines.append("")
    lines += [f"- {reason}" for reason in decision.reasons]
    if state.status == "blocked":
        lines += ["", f"Blocked: {state.blocker}. See memory/ERRORS.md; a person clears it with "
                  "`wiki unblock --reason \"...\"`."]
    if state.status == "parked":
        lines += ["", f"Parked: resume at step {state.resume_step} after {state.reset_at}; then run "
                  f"`{state.next_command}`."]
    if state.next_check_at:
        lines += ["", f"Next check at {state.next_check_at}."]
    return "\n".join(lines) + "\n"


MODE = engine.Mode("relay", load=_load, observe=_observe, decide=_decide, act=_act, record=_record,
                   recover=_recover, owned_paths=lambda wake: list(MEMORY_PATHS))
