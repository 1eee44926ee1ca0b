"""The one error root, its typed families, and the one table of exit codes.

Every error the project raises on purpose is a :class:`WikiError`: ``str(err)`` is the one
line a user sees (``path:line: message`` where known). A family says what kind of failure
it is, and the family, not the raiser, decides the exit status: executors raise their own
typed errors (``ComputeUnavailableError`` is a :class:`BackendUnavailable`), the command
line maps them with :func:`exit_code_of`, and a wake turns :class:`BackendUnavailable` into
"wait". Each :class:`ExitCode` value has exactly one meaning.

Stdlib only: the trainer imports this on remote machines (``python -S``).
"""

from __future__ import annotations

from enum import IntEnum
from pathlib import Path


class ExitCode(IntEnum):
    """The exit status of every ``wiki`` command and project process, one meaning each."""

    OK = 0  # did what was asked, or found nothing to do (including "locked": another wake runs)
    FINDINGS = 1  # a check ran and reports problems (lint, watch, kernel watch, docs --check)
    BAD_INPUT = 2  # input, usage or configuration is wrong; nothing was done
    REFUSED = 3  # a gate refused (close, stop, a session or bootstrap refused to start); nothing written
    REVIVED = 4  # watch: clean, and an idle session was revived
    BLOCKED = 5  # the relay run is blocked: `wiki unblock` is needed
    STALE = 6  # a training session stopped: the store moved, or a save's outcome is unknown
    BUSY = 7  # something is held or none is free: a lock, a cluster, a compile slot
    CRASHED = 8  # the measured program or the session crashed
    INCOMPLETE = 9  # the main effect is committed, a follow-up failed (pod teardown), or it ran out
    UNAVAILABLE = 69  # a backend, cluster or store cannot be reached now (EX_UNAVAILABLE); retry later
    INTERNAL = 70  # a bug (EX_SOFTWARE)
    INTERRUPTED = 130  # Ctrl-C


class WikiError(Exception):
    """The root: bad input unless a family says otherwise (a file that cannot be read, a
    target that does not exist, bad usage).

    ``str(err)`` is the one line a user sees: ``path:line: message`` where known.
    """

    exit_code: ExitCode = ExitCode.BAD_INPUT

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        super().__init__(message)
        self.message = message
        self.path = str(path) if path is not None else None
        self.line = line

    def __str__(self) -> str:
        where = ""
        if self.path:
            where = f"{self.path}:{self.line}: " if self.line else f"{self.path}: "
        return f"{where}{self.message}"


# -- bad input -------------------------------------------------------------------------------


class PageError(WikiError):
    """A markdown page cannot be parsed: encoding, frontmatter fence, YAML."""


class CascadeError(WikiError):
    """A program cascade cannot be resolved (missing root, duplicate section, bad config)."""


class SchemaError(WikiError):
    """A document does not validate against its JSON Schema."""


class GitError(WikiError):
    """A git command failed, could not start, or ran past its deadline."""


# -- families with their own exit status ------------------------------------------------------


class Refused(WikiError):
    """A gate refused: nothing was written (a close not earned, a stop the watcher did not
    authorize, a session that may not start)."""

    exit_code = ExitCode.REFUSED


class Busy(WikiError):
    """Something is held or none is free: a lock, a cluster, a compile slot. Retry later."""

    exit_code = ExitCode.BUSY


class LockBusy(Busy):
    """A lock stayed held by another process for as long as the caller would wait."""


class BackendError(WikiError):
    """An executor (store, compute backend, cluster) failed or refused what was asked."""


class BackendUnavailable(BackendError):
    """An executor cannot be reached now (network, 5xx, a deadline, a missing binary): a wake
    waits and tries again; the command line exits :attr:`ExitCode.UNAVAILABLE`."""

    exit_code = ExitCode.UNAVAILABLE


def exit_code_of(exc: BaseException) -> ExitCode:
    """The exit status of an exception that reached a process's boundary."""
    if isinstance(exc, WikiError):
        return ExitCode(exc.exit_code)
    if isinstance(exc, KeyboardInterrupt):
        return ExitCode.INTERRUPTED
    if isinstance(exc, BrokenPipeError):  # the reader went away (`wiki lint | head`): not a failure
        return ExitCode.OK
    return ExitCode.INTERNAL
