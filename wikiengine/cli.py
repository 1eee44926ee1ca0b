"""The `wiki` command line: a thin shell over the subcommand modules.

Bad input raises :class:`wikiengine.errors.WikiError`, printed here as one line on
stderr with exit status 2; commands return their own exit status otherwise.
"""

from __future__ import annotations

import argparse
import importlib
import sys

from wikiengine import __version__
from wikiengine.errors import WikiError

COMMANDS = ("resolve", "lint", "step", "unblock", "demo", "clusters")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="wiki",
        description="A markdown-native wiki engine, linter and executor for unattended ML research.",
    )
    parser.add_argument("--version", action="version", version=f"wiki {__version__}")
    subparsers = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMANDS:
        importlib.import_module(f"wikiengine.commands.{name}").add_parser(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
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
