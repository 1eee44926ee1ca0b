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
import importlib
import os
import sys

from wikiengine.core.errors import ExitCode, WikiError, exit_code_of
from wikiengine.core.version import __version__

COMMANDS = ("init", "adopt", "resolve", "lint", "step", "loop", "watch", "exp", "log", "backfill", "unblock", "demo", "clusters",
            "kernel", "lane", "mcp")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole command line, or (``only``) just that command's subparser: a writer run by
    an agent at every step need not import and build the other thirteen (30 ms a start)."""
    parser = argparse.ArgumentParser(
        prog="wiki",
        description="A markdown-native wiki engine, linter and executor for unattended ML research.",
    )
    parser.add_argument("--version", action="version", version=f"wiki {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in (only,) if only in COMMANDS else COMMANDS:
        importlib.import_module(f"wikiengine._cli.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(argv[0] if argv else None)  # a misspelt command builds all, for the suggestion
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return ExitCode.BAD_INPUT
    try:
        return args.handler(args)
    except WikiError as err:
        print(f"error: {err}", file=sys.stderr)
        return exit_code_of(err)
    except (KeyboardInterrupt, BrokenPipeError) as exc:
        return exit_code_of(exc)
    except Exception as exc:  # a bug, not bad input: one line; the traceback on request
        if os.environ.get("WIKI_TRACEBACK"):
            raise
        print(f"error: internal error: {exception_name(exc)}: {exc} (WIKI_TRACEBACK=1 shows where)", file=sys.stderr)
        return exit_code_of(exc)


def exception_name(exc: BaseException) -> str:
    """``KeyError``, or ``re.error`` for a class whose bare name says nothing."""
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
