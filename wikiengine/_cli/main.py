"""The `wiki` command line: a thin shell over the subcommand modules.

The boundary where errors become exit statuses (:class:`wikiengine.core.errors.ExitCode`,
the one table): a :class:`~wikiengine.core.errors.WikiError` that reaches it is printed as
one line on stderr and exits with its family's status (:func:`~wikiengine.core.errors.exit_code_of`:
bad input 2, a refusal 3, something busy 7, a backend that cannot be reached 69, ...);
commands return their own status otherwise. Anything else is a bug: one line and exit
status 70 (``WIKI_TRACEBACK=1`` re-raises it).
"""

from __future__ import annotations

import argparse
import errno
import gc
import importlib
import json
import os
import sys

from wikiengine._cli._verbs import WikiParser, parse_args
from wikiengine.core.errors import ExitCode, WikiError, exit_code_of
from wikiengine.core.version import __version__

# OSErrors that say the machine refused a write, not that the code is wrong (row 100): exit 2.
ENVIRONMENT_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM, errno.EFBIG,
                                errno.ENAMETOOLONG})
# Commands that are one bounded write of a lane (a few pages, one lint of them) and end: the cycle
# collector's passes over their young objects (20,000: modules, classes, the lint's facts) were
# 7 ms of a writer on the real shape, to free what the process's end frees a moment later (its
# peak, 33 MiB, the same either way). Run in-process (tests, the MCP server), they keep it.
UNCOLLECTED = frozenset({"exp", "log"})
COMMANDS = ("init", "adopt", "resolve", "lint", "step", "loop", "watch", "exp", "log", "backfill", "unblock", "demo", "clusters",
            "kernel", "lane", "mcp", "report")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (``only``) just that command's subparser: a writer run by
    an agent at every step need not import and build the other thirteen (30 ms a start)."""
    parser = WikiParser(
        prog="wiki",
        description="A markdown-native wiki engine, linter and executor for unattended ML research.",
    )
    parser.add_argument("--version", action="version", version=f"wiki {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (only,) if only in COMMANDS else COMMANDS:
        importlib.import_module(f"wikiengine._cli.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """The command line; without ``argv`` (the ``wiki`` process itself) it ends the process
    as :func:`leave` says once the command is done."""
    if argv is None:
        if sys.argv[1:2] and sys.argv[1] in UNCOLLECTED:
            gc.disable()
        return leave(run(sys.argv[1:]))
    return run(list(argv))


def leave(code: int) -> int:
    """Keep what this process compiled or parsed for the next one, then end at once when nothing
    is left to run at exit (:func:`~wikiengine.core.process_end.end_now`: a writer's loaded lint
    cache and every module are freed whole); else ``code``, for the ordinary exit."""
    from wikiengine.core import usercache
    from wikiengine.core.process_end import end_now

    usercache.save_all()
    return end_now(code)


def run(argv: list[str]) -> int:
    if argv == ["--version"]:  # what argparse's version action prints, without building every command's parser
        print(f"wiki {__version__}")
        return ExitCode.OK
    parser = build_parser(argv[0] if argv else None)  # a misspelt command builds all, for the suggestion
    args = parse_args(parser, argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return ExitCode.BAD_INPUT
    try:
        return args.handler(args)
    except WikiError as err:
        print(f"error: {err}", file=sys.stderr)
        return refused_json(args, str(err), exit_code_of(err))
    except (KeyboardInterrupt, BrokenPipeError) as exc:
        return exit_code_of(exc)
    except OSError as exc:
        if exc.errno not in ENVIRONMENT_ERRNOS:
            return internal_error(args, exc)
        where = f"{exc.filename}: " if exc.filename else ""
        line = f"{where}{exc.strerror or exc}"
        print(f"error: {line}", file=sys.stderr)
        return refused_json(args, line, ExitCode.BAD_INPUT)
    except Exception as exc:
        return internal_error(args, exc)


def internal_error(args, exc: Exception) -> int:
    """A bug, not bad input: one line; the traceback on request."""
    if os.environ.get("WIKI_TRACEBACK"):
        raise exc
    line = f"internal error: {exception_name(exc)}: {exc}"
    print(f"error: {line} (WIKI_TRACEBACK=1 shows where)", file=sys.stderr)
    return refused_json(args, line, exit_code_of(exc))


def refused_json(args, message: str, code: int) -> int:
    """With ``--json``, a refusal is JSON too: ``{"error", "exit_status"}`` on stdout (the
    line on stderr stays), so a caller that parses stdout always gets an object."""
    if getattr(args, "json", False) is True:
        from wikiengine.core.secrets import redact

        print(json.dumps({"error": redact(message), "exit_status": int(code)}))
    return code


def exception_name(exc: BaseException) -> str:
    """``KeyError``, or ``re.error`` for a class whose bare name says nothing."""
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
