"""A run's knobs: the fenced yaml block of an experiment's ``## Setup`` (RELIABILITY row 72).

The knobs are the data a run gets as its config (``{config}`` of the lane's
``launch_cmd``); the prose around them is for people. One parser serves `wiki exp new`
and `wiki exp retry` (which refuse bad YAML with the file and line) and the lane wake's
launch. Two stubs run the same change exactly when their knob sets are equal, whatever
their prose says: :func:`canonical` is the order-insensitive form they are compared by.

A lane may declare its knobs in its program's ``## Config``: ``knobs:`` maps a knob's
name to its ``type`` (string, integer, number, boolean), ``choices``, ``minimum`` and
``maximum`` (``schema/program-config.schema.json``); a stub's knobs are then checked
against the declaration (:func:`knob_problems`).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

from wikiengine.core.errors import PageError
from wikiengine.core.page import Page, Section

SETUP_TITLES = ("Setup", "Planned setup")
_KNOB_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,63}")


def setup_section(page: Page) -> Section | None:
    """A page's (or a proposal's) Setup section."""
    return next((s for s in (page.section(t) for t in SETUP_TITLES) if s is not None), None)


@dataclass(frozen=True)
class Knobs:
    """The knobs of a page: their values and the file line of each key path."""

    values: dict
    lines: dict[tuple, int]

    def line(self, name: str) -> int | None:
        return self.lines.get((name,))


def parse_knobs(page: Page, path=None) -> Knobs | None:
    """The knobs of ``page``: its Setup's first fenced yaml block, parsed (None: no block).
    Invalid YAML, an unterminated block or a block that is not a mapping of knob: value is
    a PageError naming ``path`` and the file line."""
    from wikiengine.core.page import fenced_block
    from wikiengine.core.yamlio import key_lines, safe_load

    section = setup_section(page)
    found = fenced_block(section.body) if section is not None else None
    if found is None:
        return None
    body, index, closed = found
    first = section.body_line + index
    if not closed:
        raise PageError("the Setup's yaml block has no closing fence", path, first - 1)
    data = safe_load(body, path, first)
    if data is None:
        return Knobs({}, {})
    if not isinstance(data, dict):
        raise PageError(f"the Setup's yaml block is a {type(data).__name__}, not a mapping of knob: value", path,
                        first)
    return Knobs(data, key_lines(body, first))


def stray_yaml_line(page: Page) -> int | None:
    """The file line of a yaml block the run would never get as its config: one outside the
    Setup (the preamble or another section), or a second one inside it; None when there is none."""
    from wikiengine.core.page import fenced_block

    setup = setup_section(page)
    parts = [(page.preamble, page.body_line)] + [(s.body, s.body_line) for s in page.sections if s is not setup]
    for text, first in parts:
        found = fenced_block(text)
        if found is not None:
            return first + found[1] - 1
    if setup is not None:
        found = fenced_block(setup.body)
        if found is not None and found[2]:
            rest_start = found[1] + found[0].count("\n") + 1  # the line after the closing fence
            rest = "".join(setup.body.splitlines(keepends=True)[rest_start:])
            again = fenced_block(rest)
            if again is not None:
                return setup.body_line + rest_start + again[1] - 1
    return None


def knobs_from_options(pairs: list[str], path=None) -> Knobs | None:
    """The knobs of ``--knobs FILE`` (a YAML or JSON mapping) and ``--knob KEY=VALUE`` (each
    VALUE read as a YAML scalar: ``64`` an integer, ``true`` a boolean, ``bf16`` a string;
    a later one wins); None when neither was given. Bad input is a PageError."""
    from wikiengine.core.yamlio import key_lines, safe_load

    values, lines = {}, {}
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            raise PageError("no such knobs file", path) from None
        except (OSError, UnicodeDecodeError) as exc:
            raise PageError(f"cannot read the knobs file: {exc}", path) from None
        data = safe_load(text, path)
        if not isinstance(data, dict):
            raise PageError(f"the knobs file holds a {type(data).__name__}, not a mapping of knob: value", path, 1)
        values, lines = dict(data), key_lines(text, 1)
    for pair in pairs:
        name, eq, raw = pair.partition("=")
        name = name.strip()
        if not eq or not _KNOB_NAME_RE.fullmatch(name):
            raise PageError(f"--knob {pair!r} is not KEY=VALUE (KEY a word: letters, digits, '_', '-', '.')")
        value = safe_load(raw, "--knob") if raw.strip() else ""
        if isinstance(value, (dict, list)):
            raise PageError(f"--knob {pair!r}: the value is a {type(value).__name__}; put structured knobs in --knobs FILE")
        values[name] = value
        lines.pop((name,), None)
    return Knobs(values, lines) if path is not None or pairs else None


def knobs_block(values: dict) -> str:
    """A Setup's fenced yaml block of ``values``, in the given order (``null`` kept: it is a value)."""
    from wikiengine.core import yaml_dump

    return "```yaml\n" + yaml_dump.block(values) + "```"


def canonical(knobs: dict) -> str:
    """The knob set as one string, independent of the order it was written in."""
    return json.dumps(knobs, sort_keys=True, separators=(",", ":"), default=str)


def knob_problems(knobs: dict, declared: dict) -> list[tuple[str, str]]:
    """``(knob, problem)`` of every knob that is not declared, or breaks its declaration."""
    import jsonschema

    properties = {}
    for name, spec in declared.items():
        rule = {"type": spec["type"]} if "type" in spec else {}
        rule.update({k: spec[k] for k in ("minimum", "maximum") if k in spec})
        if "choices" in spec:
            rule["enum"] = spec["choices"]
        properties[name] = rule
    problems = [(str(name), f"unknown knob (the lane declares: {', '.join(sorted(declared)) or 'none'})")
                for name in knobs if name not in declared]
    validator = jsonschema.Draft7Validator({"type": "object", "properties": properties})
    for error in sorted(validator.iter_errors(knobs), key=lambda e: str(list(e.absolute_path))):
        name = str(error.absolute_path[0]) if error.absolute_path else ""
        problems.append((name, " ".join(error.message.split())))
    return problems
