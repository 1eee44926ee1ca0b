"""A JSON Schema for a subcommand's arguments, generated from its argparse parser, and back to argv.

The MCP tools (``wiki mcp``) take the same arguments as the CLI; reading them from the
parser that the CLI itself uses means the two cannot drift. A property is named after
the option's long spelling (``--additive-marker`` -> ``additive_marker``) or, for a
positional, after its ``dest``; :func:`to_argv` turns a validated arguments object back
into the argv the parser reads.
"""

from __future__ import annotations

import argparse
from dataclasses import dataclass
from pathlib import Path

# Actions that take no value from the user (a switch).
_SWITCHES = (argparse._StoreTrueAction, argparse._StoreFalseAction, argparse._StoreConstAction)
_BOOLEANS = _SWITCHES + (argparse.BooleanOptionalAction,)  # a JSON boolean each
_NOT_ARGUMENTS = (argparse._HelpAction, argparse._VersionAction, argparse._SubParsersAction)


@dataclass(frozen=True)
class Argument:
    """One parser action as a schema property."""

    name: str  # the property name
    action: argparse.Action

    @property
    def positional(self) -> bool:
        return not self.action.option_strings

    @property
    def required(self) -> bool:
        """argparse marks a ``nargs="*"`` positional required although it reads zero values."""
        if self.positional:
            return self.action.nargs not in (argparse.OPTIONAL, argparse.ZERO_OR_MORE, argparse.REMAINDER)
        return bool(self.action.required)

    @property
    def flag(self) -> str:
        """The option string argv uses (the first long one)."""
        strings = self.action.option_strings
        return next((s for s in strings if s.startswith("--")), strings[0])


def subparser(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> argparse.ArgumentParser:
    """The parser of ``wiki <path...>`` (``("exp", "new")`` walks two levels of subcommands)."""
    for name in path:
        choices = next((a.choices for a in parser._actions if isinstance(a, argparse._SubParsersAction)), {})
        if name not in choices:
            raise KeyError(f"no subcommand {' '.join(path)!r}")
        parser = choices[name]
    return parser


def arguments(parser: argparse.ArgumentParser, omit: tuple[str, ...] = ()) -> list[Argument]:
    """Every user-facing action of ``parser`` except ``--help`` and the names in ``omit``."""
    found = []
    for action in parser._actions:
        if isinstance(action, _NOT_ARGUMENTS) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            long = next((s for s in action.option_strings if s.startswith("--")), action.option_strings[0])
            name = long.lstrip("-").replace("-", "_")
        else:
            name = action.dest
        if name not in omit:
            found.append(Argument(name, action))
    return found


def _value_schema(action: argparse.Action) -> dict:
    """The schema of one value the action reads (its ``type`` and ``choices``)."""
    kind = action.type
    if action.choices is not None:
        values = list(action.choices)
        schema = {"enum": values}
        if all(isinstance(v, str) for v in values):
            schema["type"] = "string"
        return schema
    if kind is int:
        return {"type": "integer"}
    if kind is float:
        return {"type": "number"}
    return {"type": "string"}  # str, Path, None and any custom parser read a string


def property_schema(argument: Argument) -> dict:
    """The JSON Schema of one argument: type, choices, nargs and help."""
    action = argument.action
    if isinstance(action, _BOOLEANS):
        schema: dict = {"type": "boolean"}
    elif isinstance(action, argparse._CountAction):
        schema = {"type": "integer", "minimum": 0}
    else:
        value = _value_schema(action)
        nargs = action.nargs
        repeated = isinstance(action, (argparse._AppendAction, argparse._ExtendAction))
        if nargs in ("*", "+", argparse.REMAINDER) or isinstance(nargs, int) or repeated:
            schema = {"type": "array", "items": value}
            if nargs == "+":
                schema["minItems"] = 1
            elif isinstance(nargs, int):
                schema["minItems"] = schema["maxItems"] = nargs
        else:
            schema = dict(value)
    description = action.help or ""
    if action.metavar and not isinstance(action.metavar, tuple):
        description = f"{action.metavar}: {description}" if description else str(action.metavar)
    if description:
        schema["description"] = description % {"default": action.default} if "%(" in description else description
    default = action.default
    if default is not None and default is not argparse.SUPPRESS and not isinstance(action, _BOOLEANS):
        schema["default"] = str(default) if isinstance(default, Path) else default
    return schema


def input_schema(parser: argparse.ArgumentParser, omit: tuple[str, ...] = ()) -> dict:
    """The JSON Schema (draft 2020-12 subset) of an arguments object for ``parser``."""
    args = arguments(parser, omit)
    required = [a.name for a in args if a.required]
    schema = {
        "type": "object",
        "properties": {a.name: property_schema(a) for a in args},
        "additionalProperties": False,
    }
    if required:
        schema["required"] = required
    return schema


def to_argv(parser: argparse.ArgumentParser, values: dict, omit: tuple[str, ...] = ()) -> list[str]:
    """The argv that makes ``parser`` read ``values`` (an object valid against :func:`input_schema`).

    Option values are joined with ``=`` and positionals follow ``--``, so a value that
    starts with ``-`` is never read as an option.
    """
    options: list[str] = []
    positionals: list[str] = []
    for argument in arguments(parser, omit):
        if argument.name not in values or values[argument.name] is None:
            continue
        value = values[argument.name]
        action = argument.action
        if argument.positional:
            positionals += [str(v) for v in value] if isinstance(value, list) else [str(value)]
        elif isinstance(action, argparse.BooleanOptionalAction):
            options.append(argument.flag if value else "--no-" + argument.flag[2:])
        elif isinstance(action, _SWITCHES):
            if value:
                options.append(argument.flag)
        elif isinstance(action, argparse._CountAction):
            options += [argument.flag] * int(value)
        elif isinstance(action, (argparse._AppendAction, argparse._ExtendAction)):
            options += [f"{argument.flag}={v}" for v in value]
        elif isinstance(value, list):
            options += [argument.flag, *map(str, value)] if value else []
        else:
            options.append(f"{argument.flag}={value}")
    return options + (["--", *positionals] if positionals else [])
