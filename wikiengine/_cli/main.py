"""The `wiki` command line: a thin shell over the subcommand modules.

Bad input raises :class:`wikiengine.core.errors.WikiError`, printed here as one line on
stderr with exit status 2; commands return their own exit status otherwise. Anything
else is a bug: one line and exit status 70 (``WIKI_TRACEBACK=1`` re-raises it).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys

from wikiengine.core.version import __version__
from wikiengine.core.errors import WikiError

INTERNAL_ERROR = 70  # EX_SOFTWARE: distinct from bad input (2) and findings (1)
COMMANDS = ("init", "resolve", "lint", "step", "loop", "watch", "exp", "log", "backfill", "unblock", "demo", "clusters",
            "kernel", "mcp")


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
        return 2
    try:
        return args.handler(args)
    except WikiError as err:
        print(f"error: {err}", file=sys.stderr)
        return err.exit_code
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        return 0
    except Exception as exc:  # a bug, not bad input: one line; the traceback on request
        if os.environ.get("WIKI_TRACEBACK"):
            raise
        print(f"error: internal error: {exception_name(exc)}: {exc} (WIKI_TRACEBACK=1 shows where)", file=sys.stderr)
        return INTERNAL_ERROR


def exception_name(exc: BaseException) -> str:
    """``KeyError``, or ``re.error`` for a class whose bare name says nothing."""
    cls = type(exc)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"
