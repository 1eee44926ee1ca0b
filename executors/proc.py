"""Whether a pid recorded in a run's folder still names the process it was recorded for.

The kernel reuses pids, so a record keeps the process's identity beside its pid
(:func:`identity_of`): when it started, in clock ticks since boot (``/proc/<pid>/stat``
field 22, set at fork and kept across exec), and the boot it started in. :func:`still_running`
asks whether that very process is alive and not a zombie.

A record written before identities were kept (or by another tool) is matched by its
command line naming the run's folder. Right after ``Popen`` returns, the child is still
inside exec and its command line reads empty (224 of 400 children read at once, on a
loaded 2-core machine): an empty command line of a process that is not a kernel thread
is a process between two programs, and counts as the one launched.
"""

from __future__ import annotations

import functools
from pathlib import Path

_KERNEL_THREAD = 0x00200000  # PF_KTHREAD in the stat's flags


@functools.lru_cache(maxsize=1)  # read once: no process outlives its boot
def boot_id() -> str | None:
    """This boot of the machine: ``CLOCK_MONOTONIC`` readings and start ticks compare only within one."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as handle:
            return handle.read().strip() or None
    except OSError:
        return None


def _stat(pid: int) -> list[str] | None:
    """The stat fields after the command name (``state`` first), None when there is no such process."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def identity_of(pid: int) -> dict:
    """What tells this process from a later one given the same pid: kept beside the pid in a record."""
    fields = _stat(pid)
    return {"start_ticks": int(fields[19]) if fields else None, "boot_id": boot_id()}


def still_running(pid: object, record: dict, folder: Path) -> bool:
    """``pid`` is alive, not a zombie, and is the process ``record`` was written for: the same
    start in the same boot when the record keeps them, else a command line naming ``folder``."""
    if not isinstance(pid, int) or isinstance(pid, bool) or pid <= 0:
        return False  # also a hand-edited "self", which would name the reader
    fields = _stat(pid)
    if not fields or fields[0] == "Z":
        return False
    ticks = record.get("start_ticks")
    if isinstance(ticks, int) and not isinstance(ticks, bool):
        return ticks == int(fields[19]) and record.get("boot_id") == boot_id()
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    if not cmdline:
        return not int(fields[6]) & _KERNEL_THREAD
    return str(folder).encode() in cmdline
