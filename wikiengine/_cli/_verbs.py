"""What the commands with verbs (`wiki exp`, `kernel`, `log`, `loop`) share: their parser, the
writers' options, the repository a verb runs in, and how a verb's result is printed."""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys
from pathlib import Path

from wikiengine.model.targets import ROOT_HELP

# Options an agent may repeat without bound (a log entry's body lines, a run's metrics).
REPEATABLE = {"--field": "field", "--metric": "metric"}


class WikiParser(argparse.ArgumentParser):
    """argparse's parser (the class of every command's and verb's), whose help formatter gets
    its width as ``shutil.get_terminal_size`` finds it, without importing ``shutil`` (and with
    it ``bz2``, ``lzma``: 2-2.5 ms of every command, paid at each ``add_argument``, which makes
    a formatter to check the argument's shape)."""

    def _get_formatter(self, *args, **kwargs) -> argparse.HelpFormatter:
        made = self.formatter_class  # argparse's own method makes it (its signature moves between versions)
        self.formatter_class = functools.partial(made, width=_help_width())
        try:
            return super()._get_formatter(*args, **kwargs)
        finally:
            self.formatter_class = made


@functools.lru_cache(maxsize=1)
def _help_width() -> int:
    """The terminal's columns less 2, as argparse takes them: ``COLUMNS``, else the size of
    the terminal on standard output, else 80."""
    try:
        columns = int(os.environ.get("COLUMNS", "0"))
    except ValueError:
        columns = 0
    if columns <= 0:
        try:
            columns = os.get_terminal_size(sys.__stdout__.fileno()).columns
        except (AttributeError, ValueError, OSError):
            columns = 0
    return (columns or 80) - 2


def parse_args(parser: argparse.ArgumentParser, argv: list[str]) -> argparse.Namespace:
    """``parser.parse_args(argv)`` in time linear in the repeated options (row 99).

    argparse looks over every remaining option string at each option it consumes, so n
    ``--field`` cost n^2/2 steps (16,000 took 6 s). The occurrences of :data:`REPEATABLE`
    options are taken out of ``argv`` in one pass, the rest parsed, and the values put on
    the option's list in order; a command without that option, or an occurrence argparse
    would refuse (no value, a value that looks like an option), parses ``argv`` as given
    (argparse's own message)."""
    kept: list[str] = []
    taken: dict[str, list[str]] = {}
    index = 0
    while index < len(argv):
        token = argv[index]
        if token == "--":
            kept.extend(argv[index:])
            break
        flag, eq, value = token.partition("=")
        if flag in REPEATABLE and (eq or (index + 1 < len(argv) and not argv[index + 1].startswith("-"))):
            taken.setdefault(REPEATABLE[flag], []).append(value if eq else argv[index + 1])
            index += 1 if eq else 2
            continue
        kept.append(token)
        index += 1
    if not taken:
        return parser.parse_args(argv)
    args = parser.parse_args(kept)
    if not all(isinstance(getattr(args, dest, None), list) for dest in taken):
        return parser.parse_args(argv)
    for dest, values in taken.items():
        setattr(args, dest, [*getattr(args, dest), *values])
    return args


def add_verb_parser(subparsers, name: str, help: str, description: str):
    """``wiki <name>``'s parser and the subparsers of its verbs (``args.verb``)."""
    parser = subparsers.add_parser(name, help=help, description=description,
                                   formatter_class=argparse.RawDescriptionHelpFormatter)
    return parser, parser.add_subparsers(dest="verb", metavar="VERB")


def add_writer_options(sub) -> None:
    """``--json``, ``--dry-run`` and ``--root``: what every verb that writes takes."""
    sub.add_argument("--json", action="store_true", help="print one JSON object")
    sub.add_argument("--dry-run", action="store_true", help="say what would be written; write nothing")
    sub.add_argument("--root", type=Path, help=ROOT_HELP)


def verb_root(args) -> Path | None:
    """The repository the verb runs in; None, with the command's help printed, when no verb was given."""
    from wikiengine.model.targets import repository_root

    if not args.verb:
        args.parser.print_help()
        return None
    return repository_root(args.root)


def print_result(args, result: dict, text: str, dry_run: bool = False) -> None:
    """One JSON object with ``--json``, else ``text`` (of a ``dry_run``: with the paths it would write)."""
    if dry_run:
        text = "dry run, nothing written:\n" + text + "".join(f"  would write {p}\n" for p in result.get("would_write", []))
    print(json.dumps(result, indent=2, sort_keys=True) if args.json else text, end="\n" if args.json else "")
