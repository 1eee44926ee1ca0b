"""A sandbox for untrusted code: candidate kernels and anything else the engine measures (rows 77, 78).

:func:`run_confined` runs one command with:

- its own scratch working directory, a temporary directory outside every repository,
  holding the files the caller hands over, with a fresh ``HOME`` and ``TMPDIR`` inside
  it; removed afterwards;
- a clean-room environment: ``PATH`` (the interpreter's directory and the system's),
  ``LANG``, the fresh ``HOME``/``TMPDIR``/``XDG_*``, and only what the caller adds (a
  ``PYTHONPATH`` entry, thread counts); no variable of the caller's passes through, so no
  token, no ``HF_``/``KAGGLE_``/``AWS_``/``GOOGLE_`` variable, no user ``HOME``;
- resource limits: ``RLIMIT_AS`` (address space), ``RLIMIT_CPU``, ``RLIMIT_FSIZE``,
  ``RLIMIT_NPROC`` set to the user's current task count plus a margin (the kernel does
  not enforce it for root), no core files; a wall-clock deadline;
- its own session, under a warden process (:mod:`wikiengine.core.warden`) that is a child
  subreaper: at the end every process the command started, ``setsid`` and double-forked
  ones included, is killed and reaped, so nothing of the run outlives it;
- where the kernel offers Landlock (``landlock_create_ruleset``; ABI 1 and later), a
  file-system domain: read and execute only the system trees, the interpreter's prefixes
  and the trees the caller lists, and of ``/proc`` only its own entry and the system-wide
  files (never another process's ``environ``: Landlock's ptrace scoping does not cover
  that read on every kernel); write only the scratch directory and ``/dev/null``; from
  ABI 4 no TCP bind or connect, from ABI 6 no signal and no abstract socket outside the
  domain. Without Landlock (``Outcome.confinement["landlock"] == 0``) the command runs with
  the user's file permissions: the fresh HOME hides ``~`` but an absolute path still reaches
  the user's files, and the caller's own checks (the repository guard) must catch a write.

A cgroup is not used: a writable cgroup v2 is rare for an unprivileged agent, and the
subreaper gives the same guarantee for the processes (not for memory, which ``RLIMIT_AS``
bounds per process). Stdlib only.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.errors import WikiError

WARDEN = Path(__file__).with_name("warden.py")
# /proc only for the child itself (the rules are made in the child, where /proc/self is its own
# directory) and the system-wide files a runtime reads: never another process's environ or cmdline
PROC_READ = ("/proc/self", "/proc/thread-self", "/proc/cpuinfo", "/proc/meminfo", "/proc/stat", "/proc/sys",
             "/proc/filesystems", "/proc/loadavg")
SYSTEM_READ = ("/usr", "/lib", "/lib64", "/lib32", "/bin", "/sbin", "/etc", "/sys", *PROC_READ,
               "/dev/urandom", "/dev/random", "/dev/zero")
SYSTEM_WRITE = ("/dev/null",)
MAX_OUTPUT = 16 * 1024 * 1024
WARDEN_GRACE_S = 30.0


class SandboxError(WikiError):
    """The sandbox itself failed (not the command inside it)."""


@dataclass(frozen=True)
class Limits:
    """The resource limits a sandboxed child runs under (``None``: that limit is not set)."""

    wall_s: float = 900.0
    cpu_s: int | None = 900
    address_space: int | None = 16 << 30
    file_size: int | None = 256 << 20
    processes: int = 64  # more tasks than the user runs now


@dataclass(frozen=True)
class Outcome:
    """What came of one confined run."""

    returncode: int | None  # negative: killed by that signal; None: cut at the deadline
    stdout: str
    stderr: str
    timed_out: bool
    killed: int  # processes still alive at the end, killed by the warden
    survivors: list[int] = field(default_factory=list)  # pids the warden could not kill (never expected)
    confinement: dict = field(default_factory=dict)  # what held: landlock ABI, subreaper, nproc, limits

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.timed_out


def python_read_paths() -> list[str]:
    """The interpreter's trees: its prefixes and the directory of its real executable."""
    places = {sys.prefix, sys.base_prefix, sys.exec_prefix, sys.base_exec_prefix,
              os.path.dirname(os.path.realpath(sys.executable))}
    return sorted(p for p in places if p)


def clean_environment(home: Path, tmp: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The command's whole environment: nothing of the caller's but what is named here."""
    path = os.pathsep.join(dict.fromkeys([os.path.dirname(sys.executable), "/usr/local/bin", "/usr/bin", "/bin"]))
    env = {"PATH": path, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "HOME": str(home), "TMPDIR": str(tmp),
           "XDG_CONFIG_HOME": str(home / ".config"), "XDG_CACHE_HOME": str(home / ".cache"),
           "PYTHONNOUSERSITE": "1", "PYTHONDONTWRITEBYTECODE": "1"}
    env.update(extra or {})
    return env


def user_tasks(uid: int | None = None) -> int:
    """The tasks (threads) the user runs now: what ``RLIMIT_NPROC`` counts."""
    uid = os.getuid() if uid is None else uid
    count = 0
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/status", encoding="ascii", errors="replace") as handle:
                fields = dict(line.split(":", 1) for line in handle if ":" in line)
        except OSError:
            continue
        if int(fields.get("Uid", "-1").split()[0]) == uid:
            count += int(fields.get("Threads", "1").strip() or 1)
    return count


def _remove_tree(path: Path) -> None:
    """Remove the scratch tree, whatever modes the command left on it."""
    def unlock(_func, failed, _exc):
        parent = os.path.dirname(failed)
        os.chmod(parent, stat.S_IRWXU)
        if os.path.isdir(failed) and not os.path.islink(failed):
            os.chmod(failed, stat.S_IRWXU)
            shutil.rmtree(failed, ignore_errors=True)
        else:
            os.unlink(failed)

    shutil.rmtree(path, onerror=unlock)


def _read_capped(path: Path) -> str:
    try:
        with open(path, "rb") as handle:
            return handle.read(MAX_OUTPUT).decode("utf-8", errors="replace")
    except OSError:
        return ""


def _spec(argv: Sequence[str], base: Path, env: dict, limits: Limits, read: Iterable[str], landlock: str) -> dict:
    work = base / "work"
    return {
        "argv": list(argv), "env": env, "cwd": str(work), "parent": os.getpid(),
        "stdout": str(base / "io" / "stdout"), "stderr": str(base / "io" / "stderr"),
        "limits": {"wall_s": limits.wall_s, "cpu_s": limits.cpu_s, "address_space": limits.address_space,
                   "file_size": limits.file_size, "nproc": user_tasks() + limits.processes},
        "landlock": {"mode": landlock, "read": [*SYSTEM_READ, *python_read_paths(), *read],
                     "write": [str(work), *SYSTEM_WRITE]},
    }


def _run_warden(spec: dict, limits: Limits) -> dict:
    """The warden's report; a SIGTERM (never a SIGKILL) when this process is interrupted,
    so that the warden still kills what the command started."""
    # the warden's own environment is empty: the child may see the warden's /proc entries
    warden = subprocess.Popen([sys.executable, "-I", "-S", str(WARDEN)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                              env={"LC_ALL": "C.UTF-8"})
    try:
        out, err = warden.communicate(json.dumps(spec), timeout=limits.wall_s + WARDEN_GRACE_S)
    except BaseException:
        warden.terminate()
        try:
            warden.wait(WARDEN_GRACE_S)
        finally:
            warden.kill()
        raise
    try:
        report = json.loads(out)
    except ValueError:
        raise SandboxError(f"the sandbox's warden failed: {(err.strip().splitlines() or ['no report'])[-1][:300]}") from None
    if report.get("error") and report.get("returncode") is None:
        raise SandboxError(f"the sandbox could not start the command: {report['error']}")
    return report


def run_confined(argv: Sequence[str], *, files: Mapping[str, bytes] | None = None,
                 env: Mapping[str, str] | None = None, limits: Limits = Limits(), read_paths: Iterable[str] = (),
                 landlock: str = "try") -> Outcome:
    """Run ``argv`` (``argv[0]`` an absolute path) confined as the module docstring says.

    ``files`` (name -> bytes) are written into the scratch directory, the command's working
    directory. ``env`` adds to the clean environment. ``read_paths`` are further trees the
    command may read under Landlock. ``landlock`` is ``"try"`` (use it where the kernel has
    it), ``"require"`` (refuse to run without it) or ``"off"``.
    """
    if landlock not in ("try", "require", "off"):
        raise SandboxError(f"landlock mode {landlock!r} is not try, require or off")
    base = Path(tempfile.mkdtemp(prefix="wiki-sandbox-"))
    try:
        for sub in ("work/home", "work/tmp", "io"):
            (base / sub).mkdir(parents=True)
        for name, data in (files or {}).items():
            target = base / "work" / name
            if target.parent != base / "work":
                raise SandboxError(f"sandbox file name {name!r} is not a plain file name")
            target.write_bytes(data)
        child_env = clean_environment(base / "work" / "home", base / "work" / "tmp", env)
        report = _run_warden(_spec(argv, base, child_env, limits, read_paths, landlock), limits)
        confinement = {"landlock": report.get("landlock", 0), "subreaper": report.get("subreaper", False),
                       "nproc_enforced": os.geteuid() != 0, "error": report.get("error")}
        return Outcome(report.get("returncode"), _read_capped(base / "io" / "stdout"),
                       _read_capped(base / "io" / "stderr"), bool(report.get("timed_out")),
                       int(report.get("killed", 0)), list(report.get("survivors", [])), confinement)
    finally:
        _remove_tree(base)
