"""The sandbox's warden: the small process between the caller and confined code (rows 77, 78).

Run as a script (``python -I -S warden.py``, stdlib only, nothing of the project imported),
it reads one JSON spec on stdin (see :mod:`wikiengine.core.sandbox`, which writes it) and:

1. makes itself a child subreaper (``prctl(PR_SET_CHILD_SUBREAPER)``), so every process
   the child leaves behind, a ``setsid`` or double-forked one included, is re-parented to
   the warden instead of to init; and asks for SIGTERM when its own caller dies;
2. forks the child, which, before ``execve``: starts its own session, applies the
   rlimits (``RLIMIT_AS``, ``RLIMIT_CPU``, ``RLIMIT_NPROC``, ``RLIMIT_FSIZE``, no core
   files), sets ``no_new_privs`` and, where the kernel has Landlock, restricts itself to
   reading the listed trees and writing only its scratch directory, with no TCP and no
   signals or abstract sockets outside its own domain;
3. waits for the child up to the wall-clock deadline, then kills every descendant it can
   find under itself in ``/proc`` with SIGKILL and reaps until it has no child left: with
   the subreaper bit, having no child means that nothing of the run is alive;
4. prints one JSON report on stdout: the exit status, whether the deadline struck, how
   many processes were killed at the end, which confinement held.

A SIGTERM to the warden (the caller interrupted or dead) ends the wait early; the
clean-up still runs.
"""

from __future__ import annotations

import ctypes
import json
import os
import resource
import signal
import sys
import time

PR_SET_PDEATHSIG = 1
PR_SET_NO_NEW_PRIVS = 38
PR_SET_CHILD_SUBREAPER = 36
SYS_LANDLOCK_CREATE_RULESET, SYS_LANDLOCK_ADD_RULE, SYS_LANDLOCK_RESTRICT_SELF = 444, 445, 446
LANDLOCK_CREATE_RULESET_VERSION = 1
LANDLOCK_RULE_PATH_BENEATH = 1
FS_EXECUTE, FS_WRITE_FILE, FS_READ_FILE, FS_READ_DIR = 1 << 0, 1 << 1, 1 << 2, 1 << 3
FS_TRUNCATE, FS_IOCTL_DEV = 1 << 14, 1 << 15
FILE_RIGHTS = FS_EXECUTE | FS_WRITE_FILE | FS_READ_FILE | FS_TRUNCATE | FS_IOCTL_DEV
READ_RIGHTS = FS_EXECUTE | FS_READ_FILE | FS_READ_DIR
NET_ALL = 0b11  # bind and connect TCP (ABI 4)
SCOPE_ALL = 0b11  # abstract unix sockets and signals (ABI 6)
CLEANUP_S = 10.0

_libc = ctypes.CDLL(None, use_errno=True)
_libc.syscall.restype = ctypes.c_long


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


class _PathBeneath(ctypes.Structure):
    _pack_ = 1
    _fields_ = [("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32)]


class _Deadline(BaseException):
    """The wait's deadline struck (a signal, like KeyboardInterrupt: never an error to catch)."""


class _Terminated(_Deadline):
    pass


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when Landlock is absent or disabled."""
    version = _libc.syscall(SYS_LANDLOCK_CREATE_RULESET, None, ctypes.c_size_t(0),
                            ctypes.c_uint32(LANDLOCK_CREATE_RULESET_VERSION))
    return max(int(version), 0)


def _fs_rights(abi: int) -> int:
    rights = (1 << 13) - 1  # ABI 1: execute .. make_sym
    if abi >= 2:
        rights |= 1 << 13  # refer
    if abi >= 3:
        rights |= FS_TRUNCATE
    if abi >= 5:
        rights |= FS_IOCTL_DEV
    return rights


def _check(result: int, what: str) -> int:
    if result < 0:
        raise OSError(ctypes.get_errno(), f"landlock {what}: {os.strerror(ctypes.get_errno())}")
    return result


def _add_rule(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except OSError:
        return  # a path this system does not have: nothing to allow
    try:
        if not os.path.isdir(path):
            rights &= FILE_RIGHTS
        rule = _PathBeneath(rights, fd)
        _check(_libc.syscall(SYS_LANDLOCK_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(LANDLOCK_RULE_PATH_BENEATH),
                             ctypes.byref(rule), ctypes.c_uint32(0)), f"add_rule {path}")
    finally:
        os.close(fd)


def restrict_filesystem(read: list[str], write: list[str]) -> int:
    """Landlock this process: read (and execute) ``read``, read and write ``write``, no TCP,
    no signals or abstract sockets outside its domain. Returns the ABI used (0: not available)."""
    abi = landlock_abi()
    if abi < 1:
        return 0
    handled = _fs_rights(abi)
    attr = _RulesetAttr(handled, NET_ALL if abi >= 4 else 0, SCOPE_ALL if abi >= 6 else 0)
    ruleset = _check(_libc.syscall(SYS_LANDLOCK_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)),
                                   ctypes.c_uint32(0)), "create_ruleset")
    try:
        for path in read:
            _add_rule(ruleset, path, READ_RIGHTS & handled)
        for path in write:
            _add_rule(ruleset, path, handled)
        _check(_libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
        _check(_libc.syscall(SYS_LANDLOCK_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "restrict_self")
    finally:
        os.close(ruleset)
    return abi


def _set_limits(limits: dict) -> None:
    for name, soft, hard in (("RLIMIT_AS", limits.get("address_space"), None),
                             ("RLIMIT_CPU", limits.get("cpu_s"), (limits.get("cpu_s") or 0) + 5),
                             ("RLIMIT_NPROC", limits.get("nproc"), None),
                             ("RLIMIT_FSIZE", limits.get("file_size"), None), ("RLIMIT_CORE", 0, None)):
        if soft is not None:
            resource.setrlimit(getattr(resource, name), (int(soft), int(hard if hard is not None else soft)))


def _child(spec: dict, status_fd: int) -> None:
    """In the forked child: confine, then exec. Never returns."""
    try:
        os.setsid()
        os.chdir(spec["cwd"])
        stdin = os.open(os.devnull, os.O_RDONLY)
        stdout = os.open(spec["stdout"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        stderr = os.open(spec["stderr"], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
        _set_limits(spec["limits"])
        _libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        confine = spec["landlock"]
        abi = restrict_filesystem(confine["read"], confine["write"]) if confine["mode"] != "off" else 0
        if confine["mode"] == "require" and abi < 1:
            raise OSError("Landlock is required but this kernel does not offer it")
        os.write(status_fd, json.dumps({"landlock": abi}).encode())
        os.close(status_fd)
        os.execve(spec["argv"][0], spec["argv"], spec["env"])
    except BaseException as exc:  # noqa: BLE001 - whatever failed, the warden hears it and the child ends
        try:
            os.write(status_fd, json.dumps({"error": f"{type(exc).__name__}: {exc}"}).encode())
        finally:
            os._exit(126)


def descendants(root_pid: int) -> list[int]:
    """Every live process under ``root_pid``, from the parent links in ``/proc``."""
    children: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as handle:
                stat = handle.read()
        except OSError:
            continue
        fields = stat[stat.rfind(b")") + 2:].split()
        children.setdefault(int(fields[1]), []).append(int(name))
    found, todo = [], [root_pid]
    while todo:
        for pid in children.get(todo.pop(), []):
            found.append(pid)
            todo.append(pid)
    return found


def _reap() -> bool:
    """Reap every exited child; False when the warden has no child left at all."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] != 0:
            pass
    except ChildProcessError:
        return False
    return True


def kill_all() -> tuple[int, list[int]]:
    """SIGKILL everything under this process and reap it: ``(killed, survivors)``."""
    killed: set[int] = set()
    end = time.monotonic() + CLEANUP_S
    while time.monotonic() < end:
        for pid in descendants(os.getpid()):
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        if not _reap():
            return len(killed), []
        time.sleep(0.005)
    return len(killed), descendants(os.getpid())


def _on_alarm(_signum, _frame):
    raise _Deadline


def _on_term(_signum, _frame):
    raise _Terminated


def wait_for(pid: int, wall_s: float) -> tuple[int | None, str | None]:
    """``(exit status, why the wait was cut)`` of the child ``pid``, reaping adopted orphans
    meanwhile. The status is negative for a signal; None when the deadline (``"deadline"``)
    or a SIGTERM to the warden (``"terminated"``) came first."""
    signal.signal(signal.SIGALRM, _on_alarm)
    signal.signal(signal.SIGTERM, _on_term)
    signal.setitimer(signal.ITIMER_REAL, max(wall_s, 0.001))
    try:
        while True:
            done, status = os.waitpid(-1, 0)
            if done == pid:
                return os.waitstatus_to_exitcode(status), None
    except _Terminated:
        return None, "terminated"
    except _Deadline:
        return None, "deadline"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def become_subreaper() -> bool:
    """Make this process the reaper of every orphan of its descendants (``setsid`` and
    double-forked ones included), so :func:`kill_all` finds them; False where refused."""
    return _libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0


def run(spec: dict) -> dict:
    """Start the child of ``spec``, wait, kill what is left: the report."""
    subreaper = become_subreaper()
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    if os.getppid() != spec["parent"]:
        return {"error": "the caller died before the child started"}
    status_read, status_write = os.pipe2(os.O_CLOEXEC)
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os.close(status_read)
        _child(spec, status_write)
    os.close(status_write)
    with os.fdopen(status_read, "rb") as pipe:
        setup = json.loads(pipe.read() or b"{}")
    returncode, cut = wait_for(pid, spec["limits"]["wall_s"] - (time.monotonic() - started))
    killed, survivors = kill_all()
    return {"returncode": returncode, "timed_out": cut == "deadline", "terminated": cut == "terminated", "wall_s": round(time.monotonic() - started, 3),
            "killed": killed, "survivors": survivors, "subreaper": subreaper, **setup}


def main() -> int:
    report = run(json.loads(sys.stdin.read()))
    sys.stdout.write(json.dumps(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
