"""The Slurm lane backend: each workload a batch job named after it, and a folder.

Everything goes through Slurm's own commands: ``sbatch --parsable`` submits,
``scontrol show job -o`` reads every job the controller holds (pending, running, and
ended within ``MinJobAge``), ``scancel`` stops. The job name is the workload name and
the comment ``wikiengine:track=N``, so a launch whose answer was lost is found by name
and adopted, never submitted twice. A command that cannot reach the controller, or
does not answer within ``command_timeout_s``, is :class:`ComputeUnavailableError`:
unknown, never "no workloads" and never "gone".

One workload is one folder ``.wiki/lane-runs/<model folder>/<lane>/<workload name>/``
(the wiki's folder must be on a filesystem the compute nodes see):

- ``spec.json``: what to run, written before anything is submitted;
- ``job.sh``: the batch script: it records ``start-<job id>.json`` when it starts,
  runs ``argv`` (no shell) with the spec's variables and the artifact paths, and records
  ``exit-<job id>.json`` with the exit code when the command returns (a job Slurm killed
  has none: its ``ExitCode`` comes from ``scontrol``);
- ``jobs.json``: the job ids submitted for it, one per attempt;
- ``log.txt``: the job's output (every attempt appends); ``progress``: ``$PROGRESS_PATH``;
  ``artifacts/``: ``$ARTIFACT_DIR`` with ``$METRICS_PATH``, ``$XPROF_PATH``, ``$HLO_PATH``;
- ``deleted.json``: written by delete before it cancels (a cancel without it was done
  behind the lane's back, and says so);
- ``final-<job id>.json``: the ended state as this backend first read it from Slurm.

States: ``PENDING`` is ``queued`` (the reason says why: a drained node, resources);
``RUNNING``/``COMPLETING`` ``running``; ``COMPLETED`` ``succeeded``; ``FAILED``,
``TIMEOUT``, ``CANCELLED``, ``OUT_OF_MEMORY``, ``DEADLINE`` ``failed`` with a reason;
``PREEMPTED``/``NODE_FAIL`` ``preempted`` and ``REQUEUED`` (or pending again after a
requeue) ``retrying`` (:mod:`executors.preemption`). A job the controller no longer
knows (``MinJobAge``) is read from its folder: the final state this backend saw (a
``PREEMPTED`` job stays ``preempted``), else its exit record, else ``failed`` with a reason.

A track is one slot: a launch while another job of the lane's track is in flight is a
:class:`~wikiengine.executors.compute.CapacityError`. ``timeout_s`` becomes ``--time``
(whole minutes, rounded up: Slurm ends the job, state ``TIMEOUT``).
"""

from __future__ import annotations

import datetime as dt
import functools
import math
import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.atomic import atomic_write_json, atomic_write_text
from wikiengine.core.clock import now_iso, utc_iso
from wikiengine.core.identity import MAX_WORKLOAD_LEN, NAME_RE
from wikiengine.core.locks import FileLock
from wikiengine.executors import preemption
from wikiengine.executors.clean_room import clean_environment
from wikiengine.executors.compute_errors import CapacityError, ComputeError, ComputeUnavailableError
from wikiengine.executors.lane_backend import (
    ARTIFACT_ENV,
    IN_FLIGHT,
    LaneWorkload,
    LaunchConflict,
    LaunchSpec,
    WorkloadNotFound,
    check_spec,
    parse_workload_name,
    split_workload_name,
)
from wikiengine.executors.run_folder import newest_mtime_iso, read_state, tail_lines

LOCK_TIMEOUT_S = 30.0
COMMENT = "wikiengine:track="
_FIELD_RE = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:]*)=")
_EXIT_RE = re.compile(r"(\d+):(\d+)")
_GRES_RE = re.compile(r"[A-Za-z0-9_]+(:[A-Za-z0-9_.-]+)*")
_SETTING_RE = re.compile(r"[A-Za-z0-9_.-]+")
_FAILED_REASONS = {
    "TIMEOUT": "timed out: Slurm ended it at its time limit",
    "OUT_OF_MEMORY": "out of memory: Slurm's memory limit killed it",
    "DEADLINE": "Slurm ended it at its deadline",
    "FAILED": None,
}
_GPUS_RE = re.compile(r"gpu(?::[A-Za-z0-9_.-]+)?:(\d+)")
_TRANSIENT_RE = re.compile(r"Unable to contact|timed out|Socket|Connection refused|try again", re.IGNORECASE)
_LANE_RE = re.compile(r"^(.*)-v\d{3,}-")
_RUNNING = ("RUNNING", "COMPLETING", "SIGNALING", "STAGE_OUT", "RESIZING")


@dataclass(frozen=True)
class SlurmJob:
    """One job as ``scontrol show job -o`` reports it."""

    job_id: int
    name: str
    state: str
    reason: str
    restarts: int
    exit_code: int | None  # 128 + N for a job killed by signal N
    submitted: str | None
    started: str | None
    ended: str | None
    track: int | None
    partition: str


def parse_show_job(text: str) -> list[SlurmJob]:
    """The jobs of ``scontrol show job -o`` output (one ``Key=Value ...`` line per job)."""
    jobs = []
    for line in text.splitlines():
        if "JobId=" not in line:
            continue  # "No jobs in the system"
        marks = list(_FIELD_RE.finditer(line))
        fields = {m.group(1): line[m.end(): marks[i + 1].start() if i + 1 < len(marks) else len(line)].strip()
                  for i, m in enumerate(marks)}
        try:
            job_id = int(fields["JobId"])
        except (KeyError, ValueError):
            continue
        comment = fields.get("Comment", "")
        track = int(comment[len(COMMENT):]) if comment.startswith(COMMENT) and comment[len(COMMENT):].isdigit() else None
        jobs.append(SlurmJob(job_id, fields.get("JobName", ""), fields.get("JobState", "UNKNOWN"),
                             fields.get("Reason", "None"), _int(fields.get("Restarts")) or 0,
                             _exit_code(fields.get("ExitCode", "")), _time(fields.get("SubmitTime")),
                             _time(fields.get("StartTime")), _time(fields.get("EndTime")), track,
                             fields.get("Partition", "")))
    return jobs


def _int(text: str | None) -> int | None:
    try:
        return int(text) if text is not None else None
    except ValueError:
        return None


def _exit_code(text: str) -> int | None:
    """``ExitCode=code:signal`` as a shell-style code (128 + signal when a signal ended it)."""
    match = _EXIT_RE.fullmatch(text.strip())
    if match is None:
        return None
    code, sig = int(match.group(1)), int(match.group(2))
    return 128 + sig if sig else code


def _time(text: str | None) -> str | None:
    """A Slurm time (the controller's local time, no zone) as ISO 8601 UTC; None for Unknown/None."""
    if not text or text in ("Unknown", "None", "N/A"):
        return None
    try:
        moment = dt.datetime.fromisoformat(text)
    except ValueError:
        return None
    return utc_iso(moment.astimezone(dt.UTC))


def job_state(job: SlurmJob, exit_record: dict | None, deleted: bool) -> tuple[str, int | None, str | None]:
    """``(state, exit_code, reason)`` of one job (the module docstring's table)."""
    base = job.state.split()[0].upper()
    disruption = preemption.slurm(base, job.restarts)
    recorded = exit_record.get("exit_code") if isinstance(exit_record, dict) else None
    recorded = recorded if isinstance(recorded, int) and not isinstance(recorded, bool) else None
    if disruption == preemption.RETRYING:
        return preemption.RETRYING, None, f"Slurm restarts it ({base}, restart {job.restarts}, {job.reason})"
    if disruption == preemption.PREEMPTED:
        return preemption.PREEMPTED, job.exit_code, f"{base}: the cluster took it away (not the run's failure)"
    if base in ("PENDING", "CONFIGURING"):
        return "queued", None, None if job.reason in ("None", "") else f"pending: {job.reason}"
    if base in _RUNNING:
        return "running", None, None
    if base == "COMPLETED":
        return "succeeded", 0, None
    if base == "CANCELLED":
        why = "deleted by the lane" if deleted else "cancelled outside the lane (scancel behind its back)"
        return "failed", recorded if recorded is not None else job.exit_code, why
    if base in _FAILED_REASONS:
        code = recorded if recorded is not None else job.exit_code
        return "failed", code, _FAILED_REASONS[base] or (f"exited with code {code}" if code else "Slurm says FAILED")
    return base.lower(), None, f"Slurm state {base}"  # neither finished nor in flight: unknown to the lane


class SlurmLaneBackend:
    """Slurm batch jobs of one lane (see the module docstring).

    ``partition``, ``account`` and ``gres`` (``gpu:N``) go to every ``sbatch``; ``env``
    adds variables to the Slurm commands' environment (``SLURM_CONF``).
    """

    def __init__(self, root: Path, model_dir: str, lane: str, *, partition: str | None = None,
                 account: str | None = None, gres: str | None = None, env: dict[str, str] | None = None,
                 command_timeout_s: float = 30.0, cancel_wait_s: float = 30.0):
        for label, value, pattern in (("partition", partition, _SETTING_RE), ("account", account, _SETTING_RE),
                                      ("gres", gres, _GRES_RE)):
            if value is not None and not pattern.fullmatch(str(value)):
                raise ComputeError(f"slurm {label} {value!r} is not a plain Slurm name")
        self.root = Path(root)
        self.folder = self.root / ".wiki" / "lane-runs" / model_dir / lane
        self.partition, self.account, self.gres = partition, account, gres
        self.env = dict(env or {})
        self.command_timeout_s, self.cancel_wait_s = command_timeout_s, cancel_wait_s
        # what max_chip_hours burns: the GPUs of --gres gpu[:type]:N, else the one slot a track is
        gpus = _GPUS_RE.fullmatch(gres or "")
        self.chips = int(gpus.group(1)) if gpus else 1

    @classmethod
    def from_config(cls, config: dict, root: Path, model_dir: str, lane: str) -> SlurmLaneBackend:
        """The backend of a session: ``partition``, ``account``, ``gres`` from ``config``."""
        return cls(root, model_dir, lane, partition=config.get("partition"), account=config.get("account"),
                   gres=config.get("gres"))

    # ------------------------------------------------------------------ Slurm's commands

    def _command(self, argv: list[str], what: str, env: dict | None = None) -> subprocess.CompletedProcess:
        """Run one Slurm command; no answer (missing, timed out) is unknown, never an empty answer."""
        try:
            return subprocess.run(argv, capture_output=True, text=True, timeout=self.command_timeout_s,
                                  env=env or {**os.environ, **self.env}, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise ComputeUnavailableError(f"slurm: {what} did not answer within {self.command_timeout_s:g}s") from None
        except OSError as exc:
            raise ComputeUnavailableError(f"slurm: cannot run {argv[0]}: {exc.strerror or exc}") from None

    def jobs(self) -> list[SlurmJob]:
        """Every job the controller holds (ComputeUnavailableError when it cannot say)."""
        done = self._command(["scontrol", "show", "job", "-o"], "scontrol show job")
        if done.returncode != 0:
            first = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[0]
            raise ComputeUnavailableError(f"slurm: scontrol show job: {first}")
        return parse_show_job(done.stdout)

    def check_partition(self) -> None:
        """The controller answers and knows the partition (ComputeError names which is wrong)."""
        if not self.partition:
            return
        done = self._command(["scontrol", "show", "partition", "-o", self.partition], "scontrol show partition")
        if done.returncode != 0:
            said = (done.stderr.strip() or done.stdout.strip() or f"exit {done.returncode}").splitlines()[0]
            if "not found" in said.lower() or "invalid partition" in said.lower():
                raise ComputeError(f"slurm has no partition {self.partition!r}: {said}")
            raise ComputeUnavailableError(f"slurm: scontrol show partition {self.partition}: {said}")

    # ------------------------------------------------------------------ reading

    def list_workloads(self, prefix: str) -> list[LaneWorkload]:
        by_name: dict[str, list[SlurmJob]] = {}
        for job in self.jobs():
            if parse_workload_name(job.name, prefix) is not None:
                by_name.setdefault(job.name, []).append(job)
        try:
            recorded = [e.name for e in self.folder.iterdir() if e.is_dir() and parse_workload_name(e.name, prefix)]
        except FileNotFoundError:
            recorded = []
        except OSError as exc:
            raise ComputeUnavailableError(f"lane runs folder {self.folder} is unreadable: {exc}") from None
        found = []
        listing_again = functools.cache(self.jobs)  # asked at most once more, for all the names
        for name in sorted(set(by_name) | set(recorded)):
            workload = self._workload(name, by_name.get(name, []), listing_again)
            if workload is not None:
                found.append(workload)
        return found

    def status(self, name: str) -> LaneWorkload | None:
        self._check_name(name)
        return self._workload(name, [job for job in self.jobs() if job.name == name])

    def logs(self, name: str, tail: int = 200) -> str:
        folder = self._folder(name)
        if not folder.is_dir():
            raise WorkloadNotFound(f"no slurm workload {name}")
        return tail_lines(folder / "log.txt", tail)

    def artifacts(self, name: str) -> dict[str, str]:
        folder = self._folder(name)
        spec = read_state(folder / "spec.json")
        if spec is None:
            raise WorkloadNotFound(f"no slurm workload {name}")
        return {key: spec["env"][env] for key, env in ARTIFACT_ENV.items()}

    def _workload(self, name: str, held: list[SlurmJob], listing_again=None) -> LaneWorkload | None:
        """The workload from the controller's jobs of its name (``held``) and its folder; None:
        neither knows it. A job the folder names and ``held`` lacks may have been submitted after
        that listing was taken: the controller is asked again (``listing_again``, else
        :meth:`jobs`) before the job is taken for one it forgot."""
        folder = self.folder / name
        spec = read_state(folder / "spec.json")
        submitted = [int(j) for j in (read_state(folder / "jobs.json") or {}).get("jobs", []) if isinstance(j, int)]
        ids = sorted(set(submitted) | {job.job_id for job in held})
        if not ids and spec is None:
            return None
        vid, slug = split_workload_name(name)
        command = shlex.join(spec["argv"]) if spec and isinstance(spec.get("argv"), list) else None
        log = folder / "log.txt"
        log_tail = tail_lines(log, 200)
        if not ids:
            return LaneWorkload(name, vid, slug, "queued", None, None, None, log_tail, None,
                                "launch was interrupted before sbatch answered: launch it again", None, command,
                                chips=self.chips, attempt=0)
        newest = max(ids)
        job = next((j for j in held if j.job_id == newest), None)
        if job is None and not (folder / f"final-{newest}.json").exists():
            held = [j for j in (listing_again or self.jobs)() if j.name == name]
            job = next((j for j in held if j.job_id == newest), None)
        attempt = len(ids) + sum(j.restarts for j in held)
        exit_record = read_state(folder / f"exit-{newest}.json")
        progress = newest_mtime_iso(folder / "progress", log, folder / f"start-{newest}.json")
        if job is None:  # the controller forgot it (MinJobAge): the folder is all that is left
            return self._forgotten(name, folder, newest, exit_record, attempt, log_tail, progress, command)
        state, code, reason = job_state(job, exit_record, (folder / "deleted.json").exists())
        ended = state not in IN_FLIGHT
        if ended and folder.is_dir() and not (folder / f"final-{newest}.json").exists():
            atomic_write_json(folder / f"final-{newest}.json", {  # what Slurm said, for after it forgets
                "state": state, "exit_code": code, "reason": reason, "started": job.started, "ended": job.ended,
                "attempt": attempt, "slurm_state": job.state})
        return LaneWorkload(name, vid, slug, state, code, job.started, job.ended if ended else None,
                            log_tail, progress or job.started, reason, None, command, chips=self.chips, attempt=attempt)

    def _forgotten(self, name: str, folder: Path, job_id: int, exit_record: dict | None, attempt: int,
                   log_tail: str, progress: str | None, command: str | None) -> LaneWorkload:
        """A job the controller no longer holds: the final state this backend saw (``final-<id>.json``),
        else the exit record the job wrote, else failed with a reason."""
        vid, slug, chips = *split_workload_name(name), self.chips
        final = read_state(folder / f"final-{job_id}.json")
        if final is not None:
            code = final.get("exit_code") if isinstance(final.get("exit_code"), int) else None
            return LaneWorkload(name, vid, slug, str(final.get("state")), code, final.get("started"), final.get("ended"),
                                log_tail, progress, final.get("reason"), None, command, chips=chips,
                                attempt=max(attempt, int(final.get("attempt") or 1)))
        code = exit_record.get("exit_code") if exit_record else None
        if isinstance(code, int):
            state, reason = ("succeeded" if code == 0 else "failed"), None
        else:
            state, reason = "failed", f"Slurm no longer knows job {job_id} and it left no exit record"
        return LaneWorkload(name, vid, slug, state, code if isinstance(code, int) else None,
                            (read_state(folder / f"start-{job_id}.json") or {}).get("at"),
                            (exit_record or {}).get("at") or progress, log_tail, progress, reason, None, command,
                            chips=chips, attempt=attempt)

    # ------------------------------------------------------------------ acting

    def launch(self, spec: LaunchSpec) -> LaneWorkload:
        check_spec(spec)
        folder = self._folder(spec.name)
        try:
            self.folder.mkdir(parents=True, exist_ok=True)
            with self._lock():
                recorded = read_state(folder / "spec.json")
                if recorded is not None and recorded.get("argv") != list(spec.argv):
                    raise LaunchConflict(f"{spec.name} already ran another command: use the next retry suffix")
                jobs = self.jobs()
                current = self._workload(spec.name, [j for j in jobs if j.name == spec.name])
                if current is not None and current.attempt > 0:
                    if current.state != preemption.PREEMPTED or spec.attempt <= current.attempt:
                        return current  # adopt: it was launched before (this attempt or a later one)
                lane = _lane_prefix(spec.name)
                busy = sorted({j.name for j in jobs if j.track == spec.track and j.name != spec.name
                               and _lane_prefix(j.name) == lane and job_state(j, None, False)[0] in IN_FLIGHT})
                if busy:
                    raise CapacityError(f"track {spec.track} is busy with {busy[0]}: one run per track at a time")
                if recorded is None:
                    folder.mkdir(exist_ok=True)
                    atomic_write_json(folder / "spec.json", self._spec_record(folder, spec))
                self._submit(folder, spec, {j.job_id for j in jobs if j.name == spec.name})
        except OSError as exc:
            raise ComputeUnavailableError(f"cannot launch {spec.name}: {exc}") from None
        workload = self.status(spec.name)
        if workload is None:
            raise ComputeUnavailableError(f"slurm: {spec.name} was submitted but is not visible: re-read it")
        return workload

    def delete(self, name: str) -> None:
        folder = self._folder(name)
        jobs = [j for j in self.jobs() if j.name == name]
        live = [j for j in jobs if job_state(j, None, False)[0] in IN_FLIGHT]
        if not live:
            return
        if folder.is_dir() and not (folder / "deleted.json").exists():
            atomic_write_json(folder / "deleted.json", {"at": now_iso()})
        ids = [str(j.job_id) for j in live]
        done = self._command(["scancel", *ids], f"scancel {' '.join(ids)}")
        if done.returncode != 0 and "Invalid job id" not in done.stderr:
            raise ComputeUnavailableError(f"slurm: scancel {' '.join(ids)}: {done.stderr.strip()}")
        _wait(lambda: not any(j.name == name and job_state(j, None, False)[0] in IN_FLIGHT
                              for j in self.jobs()), self.cancel_wait_s,
              f"slurm: scancel {' '.join(ids)} was asked but the job is still there: unknown")

    # ------------------------------------------------------------------ helpers

    def _check_name(self, name: str) -> None:
        if not NAME_RE.fullmatch(name) or len(name) >= MAX_WORKLOAD_LEN:
            raise ComputeError(f"bad workload name {name!r}: [a-z]([-a-z0-9]*[a-z0-9])? under {MAX_WORKLOAD_LEN} characters")

    def _folder(self, name: str) -> Path:
        self._check_name(name)
        return self.folder / name

    def _lock(self) -> FileLock:
        return FileLock(self.folder / ".lane.lock", timeout=LOCK_TIMEOUT_S, error=ComputeUnavailableError,
                        busy=f"{self.folder}: another launch holds the lane's lock")

    def _spec_record(self, folder: Path, spec: LaunchSpec) -> dict:
        base = Path(spec.artifact_dir) if spec.artifact_dir else folder / "artifacts"
        base = base if base.is_absolute() else self.root / base
        base.mkdir(parents=True, exist_ok=True)
        paths = {"artifact_dir": str(base), "metrics": str(base / "metrics.json"), "xprof": str(base / "xprof"),
                 "hlo": str(base / "hlo")}
        env = dict(spec.env) | {var: paths[key] for key, var in ARTIFACT_ENV.items()}
        env.update(PROGRESS_PATH=str(folder / "progress"), WORKLOAD_NAME=spec.name, TRACK=str(spec.track))
        return {"name": spec.name, "vid": spec.vid, "slug": spec.slug, "track": spec.track, "argv": list(spec.argv),
                "env": env, "cwd": str(self.root), "timeout_s": float(spec.timeout_s), "submitted": now_iso()}

    def _script(self, folder: Path, record: dict) -> str:
        q = shlex.quote
        exports = "".join(f"export {name}={q(value)}\n" for name, value in sorted(record["env"].items()))
        stamp = '$(date -u +%Y-%m-%dT%H:%M:%SZ)'
        return (
            "#!/bin/bash\n"
            f"# {record['name']}: written by wikiengine's slurm lane backend\n"
            f"F={q(str(folder))}\n"
            f'printf \'{{"job_id": %s, "restart": %s, "at": "%s"}}\\n\' "$SLURM_JOB_ID" "${{SLURM_RESTART_COUNT:-0}}" '
            f'"{stamp}" > "$F/start-$SLURM_JOB_ID.json"\n'
            f"cd {q(record['cwd'])} || exit 127\n"
            f"{exports}"
            f"{shlex.join(record['argv'])}\n"
            "code=$?\n"
            f'printf \'{{"exit_code": %s, "at": "%s"}}\\n\' "$code" "{stamp}" > "$F/exit-$SLURM_JOB_ID.json.tmp" '
            '&& mv "$F/exit-$SLURM_JOB_ID.json.tmp" "$F/exit-$SLURM_JOB_ID.json"\n'
            'exit "$code"\n'
        )

    def _submit(self, folder: Path, spec: LaunchSpec, before: set[int]) -> None:
        """``sbatch --parsable`` the job; its id goes to ``jobs.json``. A lost answer is found by name."""
        record = read_state(folder / "spec.json")
        atomic_write_text(folder / "job.sh", self._script(folder, record))
        os.chmod(folder / "job.sh", 0o755)
        minutes = max(1, math.ceil(spec.timeout_s / 60))
        argv = ["sbatch", "--parsable", f"--job-name={spec.name}", f"--comment={COMMENT}{spec.track}",
                f"--output={folder / 'log.txt'}", "--open-mode=append", f"--time={minutes}", "--requeue",
                f"--chdir={self.root}", "--export=ALL"]
        argv += [f"--partition={self.partition}"] * bool(self.partition) + [f"--account={self.account}"] * bool(
            self.account) + [f"--gres={self.gres}"] * bool(self.gres)
        home = folder / "home"
        home.mkdir(exist_ok=True)
        env = clean_environment({**os.environ, **self.env}, home)  # what the job inherits: no credential
        try:
            done = self._command([*argv, str(folder / "job.sh")], f"sbatch {spec.name}", env=env)
        except ComputeUnavailableError:
            done = None  # the answer was lost: the job may exist; it is found by name below
        job_id = _int(done.stdout.strip().split(";")[0]) if done is not None and done.returncode == 0 else None
        if job_id is None:
            found = sorted({j.job_id for j in self.jobs() if j.name == spec.name} - before)
            if not found:
                why = "no answer" if done is None else (done.stderr.strip() or f"exit {done.returncode}")
                if done is not None and done.returncode != 0 and not _TRANSIENT_RE.search(why):
                    raise ComputeError(f"slurm: sbatch refused {spec.name}: {why.splitlines()[0]}")
                raise ComputeUnavailableError(f"slurm: sbatch {spec.name}: {why.splitlines()[0]}")
            job_id = found[-1]
        jobs = (read_state(folder / "jobs.json") or {}).get("jobs", [])
        atomic_write_json(folder / "jobs.json", {"jobs": [*jobs, job_id]})


def _lane_prefix(name: str) -> str:
    """``<USER_PREFIX>-<MODEL_NAME>-<LANE>`` of a workload name ("" when it is none)."""
    match = _LANE_RE.match(name)
    return match.group(1) if match else ""


def _wait(predicate, deadline_s: float, unknown: str) -> None:
    import time

    end = time.monotonic() + deadline_s
    while not predicate():
        if time.monotonic() > end:
            raise ComputeUnavailableError(unknown)
        time.sleep(0.2)
