"""PyYAML's C safe loader made strict: what :mod:`~wikiengine.core.yamlio` loads with.

The loader refuses, beyond safe loading, duplicate keys, anchors/aliases (no alias bombs;
frontmatter never needs them) and any explicit tag (safe loading already refuses
``!!python/object``; ``!!binary`` or ``!!set`` would still build bytes or a set). Dates are
normalised to ISO strings so that a JSON Schema sees what the author wrote. Importing PyYAML
is a fifth of a no-op wake, so only a process that parses a text no process of its user has
parsed before imports this module (``yamlio.safe_load``).
"""

from __future__ import annotations

import datetime as _dt
import functools
import re
import sys

import yaml

from wikiengine.core.errors import PageError
from wikiengine.core.yamlio import ONE_LINE_CHARS

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

_BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


class _StrictLoader(_BaseLoader):  # type: ignore[misc,valid-type]
    """Safe loader that refuses duplicate mapping keys."""

    def construct_mapping(self, node, deep=False):  # noqa: D401 - PyYAML hook
        seen: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = _normal_key(self.construct_object(key_node, deep=True))
            try:
                hash(key)
            except TypeError:
                raise yaml.constructor.ConstructorError(
                    None, None, "a mapping key must be a plain scalar", key_node.start_mark
                ) from None
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None,
                    None,
                    f"duplicate key {key!r} (first on line {seen[key] + 1})",
                    key_node.start_mark,
                )
            seen[key] = key_node.start_mark.line
        return super().construct_mapping(node, deep=deep)

    def construct_yaml_timestamp(self, node):  # noqa: D401 - PyYAML hook
        # '2024-13-45' matches the timestamp pattern but is no date: a ValueError, not a YAML error.
        try:
            return super().construct_yaml_timestamp(node)
        except (ValueError, OverflowError) as exc:
            raise yaml.constructor.ConstructorError(
                None, None, f"{node.value!r} is not a valid date or time ({exc})", node.start_mark
            ) from None


    def resolve(self, kind, value, implicit):  # noqa: D401 - PyYAML hook, called by libyaml for every node
        # A scalar's tag depends on nothing but its text and whether it was plain (this
        # loader has no path resolvers): each plain text is resolved once per process.
        if kind is not yaml.ScalarNode:
            return super().resolve(kind, value, implicit)
        if not implicit[0]:
            return self.DEFAULT_SCALAR_TAG
        tag = _PLAIN_TAGS.get(value)
        if tag is None:
            tag = super().resolve(kind, value, implicit)
            if len(value) <= 64 and len(_PLAIN_TAGS) < 65536:
                _PLAIN_TAGS[value] = tag
        return tag


_PLAIN_TAGS: dict[str, str] = {}
_StrictLoader.add_constructor("tag:yaml.org,2002:timestamp", _StrictLoader.construct_yaml_timestamp)


def _normal_key(key: Any) -> Any:
    return key.isoformat() if isinstance(key, (_dt.date, _dt.datetime)) else key


def normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {_normal_key(k): normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalise(v) for v in value]
    if isinstance(value, (_dt.date, _dt.datetime)):
        return value.isoformat()
    return value


def _refuse_aliases(text: str, path, first_line: int) -> None:
    """Refuse anchors, aliases and explicit tags (``!!binary``, ``!!set``, ``!custom``...).

    Only documents that could hold one pay for the event scan.
    """
    if "&" not in text and "*" not in text and "!" not in text:
        return
    for event in yaml.parse(text, Loader=_BaseLoader):
        anchor = getattr(event, "anchor", None)
        if anchor is not None or isinstance(event, yaml.AliasEvent):
            raise PageError(
                "YAML anchors and aliases are not allowed here",
                path,
                first_line + event.start_mark.line,
            )
        tag = getattr(event, "tag", None)
        if tag is not None:
            raise PageError(
                f"YAML tags are not allowed here ({tag})",
                path,
                first_line + event.start_mark.line,
            )


def load(text: str, path=None, first_line: int = 1) -> Any:
    """Load one YAML document safely; raise :class:`PageError` naming file and line.

    ``first_line`` is the file line on which ``text`` starts, so errors point into
    the file rather than into the fragment.
    """
    try:
        _refuse_aliases(text, path, first_line)
        data = _line_load(text)
        if data is _UNSURE:
            data = _quick_load(text)
        if data is _UNSURE:
            data = normalise(yaml.load(text, Loader=_StrictLoader))
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = first_line + mark.line if mark is not None else first_line
        problem = exc.problem or exc.context or "invalid YAML"
        raise PageError(f"invalid YAML: {problem}", path, line) from None
    except yaml.reader.ReaderError as exc:
        # A control character or bad code point: the reader knows where, but not the line.
        char = exc.character if isinstance(exc.character, int) else ord(exc.character or "\0")
        line = first_line + text.count("\n", 0, exc.position)
        raise PageError(f"invalid YAML: {exc.reason} (#x{char:04x})", path, line) from None
    except yaml.YAMLError as exc:
        raise PageError(f"invalid YAML: {' '.join(str(exc).split())}", path, first_line) from None
    except RecursionError:
        raise PageError("invalid YAML: nesting too deep", path, first_line) from None
    except ValueError as exc:  # int() past sys.get_int_max_str_digits(): a 5,000-digit number
        raise PageError(f"invalid YAML: {_number_problem(exc)}", path, first_line) from None
    return data


_UNSURE = object()
_STR, _SEQ, _MAP = "tag:yaml.org,2002:str", "tag:yaml.org,2002:seq", "tag:yaml.org,2002:map"
_TIMESTAMP = "tag:yaml.org,2002:timestamp"
_KEY_TAGS = frozenset({_STR, "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
                       "tag:yaml.org,2002:null", _TIMESTAMP})
_MAX_QUICK_DEPTH = 32


def _quick_load(text: str) -> Any:
    """What ``normalise(yaml.load(text, Loader=_StrictLoader))`` gives, built straight from
    libyaml's node tree: strings, lists and mappings by hand, other scalars by the loader's
    own constructors, dates as ISO strings at once (the loader's Python constructor, with
    its bookkeeping for aliases and recursion, was most of a frontmatter's cost). Anything
    the loader could answer otherwise (a duplicate or merge key, a complex key, deep
    nesting, any error) gives ``_UNSURE``, and the caller loads the text the loader's way."""
    loader = _StrictLoader(text)
    try:
        node = loader.get_single_node()
        return None if node is None else _built(loader, node, 0)
    except Exception:  # noqa: BLE001 - the loader's own path finds the same problem and reports it
        return _UNSURE
    finally:
        loader.dispose()


# A frontmatter of flat ``key: value`` lines (what generated and filed pages hold: 4,589 of the
# real shape's 4,633 pages) is read line by line: a key, then a plain word or words, a quoted
# string without escapes, or a flow list of those. The characters libyaml refuses or reads as
# line breaks, tabs and carriage returns are left to libyaml, as is any line of another form.
_LINE_KEY_RE = re.compile(r"([A-Za-z_][A-Za-z0-9_-]*):(?: +|$)")
_LINE_ODD_RE = re.compile(f"[^\n{ONE_LINE_CHARS}]")
# a plain scalar that holds neither ": " nor " #" and starts with no indicator; in a flow list
# also no flow indicator (",[]{}")
_LINE_PLAIN_RE = re.compile(r"[^-?:,\[\]{}#&*!|>'\"%@` ][^:#]*")
_FLOW_PLAIN_RE = re.compile(r"[^-?:,\[\]{}#&*!|>'\"%@` ][^:#,\[\]{}]*")
_QUOTED_RE = re.compile(r"\"[^\"\\]*\"|'[^']*'")


def _line_load(text: str) -> Any:
    """What :func:`_quick_load` gives, for a text of flat ``key: value`` lines, found without
    libyaml (whose composer calls back into Python for every node: most of a cold lint's
    YAML); ``_UNSURE`` for any other text. Every scalar is tagged by the loader's own
    resolver and built as :func:`_built` builds it; a line is read once per process (pages
    repeat most of their lines: ``type: codebase``, ``created: 2026-04-02``)."""
    if not text.endswith("\n") or _LINE_ODD_RE.search(text):
        return _UNSURE
    built: dict[str, Any] = {}
    for line in text[:-1].split("\n"):
        if not line or line[0] == "#":
            continue  # a blank line, a comment
        entry = _LINES.get(line)
        if entry is None:
            entry = _line_entry(line)
            if len(_LINES) < _MAX_LINES:
                _LINES[line] = entry
        if entry is _UNSURE or entry[0] in built:
            return _UNSURE  # a line of another form, a duplicate key: the loader decides
        key, value = entry
        built[key] = list(value) if value.__class__ is tuple else value
    return built if built else _UNSURE


_LINES: dict[str, Any] = {}  # line -> (key, value: a scalar, or a tuple for a list) or _UNSURE
_MAX_LINES = 16384  # a cold lint of 50,000 pages keeps its first ones (about 3 MB), the lines pages repeat among them


def _line_entry(line: str) -> Any:
    """``(key, value)`` of one ``key: value`` line (a list as a tuple), or ``_UNSURE``."""
    match = _LINE_KEY_RE.match(line)
    loader = _line_loader()
    if match is None or loader.resolve(yaml.ScalarNode, match.group(1), (True, False)) != _STR:
        return _UNSURE  # not such a line, or a key that is no string
    value = line[match.end():].rstrip(" ")
    try:
        if not value:
            return match.group(1), None
        if value[0] == "[" and value[-1] == "]":
            inner = value[1:-1].strip(" ")
            items = inner.split(",") if inner else []
            return match.group(1), tuple(_line_scalar(loader, item.strip(" "), _FLOW_PLAIN_RE) for item in items)
        return match.group(1), _line_scalar(loader, value, _LINE_PLAIN_RE)
    except Exception:  # noqa: BLE001 - a scalar its constructor refuses: the loader's own path reports it
        return _UNSURE


def _line_scalar(loader, value: str, plain) -> Any:
    """A quoted string without escapes, or a plain scalar built as libyaml's would be."""
    if _QUOTED_RE.fullmatch(value):
        return value[1:-1]
    if not plain.fullmatch(value):
        raise ValueError("left to the loader")
    return _built(loader, yaml.ScalarNode(loader.resolve(yaml.ScalarNode, value, (True, False)), value), 0)


@functools.cache
def _line_loader():
    """One loader, for its resolver and scalar constructors (neither keeps any state of a text)."""
    return _StrictLoader("")


def _built(loader, node, depth: int) -> Any:
    """The value of ``node``; ValueError for a node left to the strict loader."""
    kind, tag = node.__class__, node.tag
    if kind is yaml.ScalarNode:
        if tag == _STR:
            return node.value
        if tag == _TIMESTAMP and len(node.value) == 10:  # YYYY-MM-DD, as the resolver tags it: most dates
            try:
                return _dt.date.fromisoformat(node.value).isoformat()  # a tenth of the constructor's cost
            except ValueError:
                pass  # an impossible date: the constructor refuses it as always
        value = loader.yaml_constructors[tag](loader, node)
        return value.isoformat() if isinstance(value, (_dt.date, _dt.datetime)) else value
    if depth > _MAX_QUICK_DEPTH:
        raise ValueError("left to the loader")  # the loader's recursion, not this one, decides how deep is too deep
    if kind is yaml.SequenceNode and tag == _SEQ:
        return [_built(loader, item, depth + 1) for item in node.value]
    if kind is yaml.MappingNode and tag == _MAP:
        built: dict[Any, Any] = {}
        for key_node, value_node in node.value:
            if key_node.__class__ is not yaml.ScalarNode or key_node.tag not in _KEY_TAGS:
                raise ValueError("left to the loader")  # a merge key, a complex key
            key = _built(loader, key_node, depth + 1)
            if key in built:
                raise ValueError("left to the loader")  # a duplicate: the loader names both lines
            built[key] = _built(loader, value_node, depth + 1)
        return built
    raise ValueError("left to the loader")  # a tag the quick path does not build


def _number_problem(exc: ValueError) -> str:
    text = str(exc)
    if "integer string conversion" in text:
        return f"a number has more than {sys.get_int_max_str_digits()} digits"
    return " ".join(text.split())


def key_lines(text: str, first_line: int = 1) -> dict[tuple, int]:
    """Map each key path (a tuple of keys and list indices) to its file line.

    Used to point a schema error at the offending key. Returns ``{}`` for text that
    does not compose (it has already been reported by :func:`safe_load`).
    """
    try:
        root = yaml.compose(text, Loader=_BaseLoader)
    except (yaml.YAMLError, RecursionError):
        return {}
    lines: dict[tuple, int] = {}

    def walk(node, prefix: tuple) -> None:
        if isinstance(node, yaml.MappingNode):
            for key_node, value_node in node.value:
                if not isinstance(key_node, yaml.ScalarNode):
                    continue  # a complex key ('? [a]'): safe_load refuses it
                key_path = prefix + (key_node.value,)
                lines[key_path] = first_line + key_node.start_mark.line
                walk(value_node, key_path)
        elif isinstance(node, yaml.SequenceNode):
            for index, item in enumerate(node.value):
                lines[prefix + (index,)] = first_line + item.start_mark.line
                walk(item, prefix + (index,))

    if root is not None:
        lines[()] = first_line + root.start_mark.line
        try:
            walk(root, ())
        except RecursionError:
            pass  # safe_load refuses such a document; the lines found so far are all we need
    return lines
