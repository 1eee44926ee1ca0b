"""YAML for frontmatter and config blocks: a safe, strict fast path for reads and
ruamel.yaml round-trip mode for edits.

Reads use PyYAML's C safe loader where libyaml is present (about 15x faster than
ruamel.yaml's pure-Python safe loader, see ``reference/performance.md``), with three
extra refusals: duplicate keys, anchors/aliases (no alias bombs; frontmatter never
needs them) and any explicit tag (safe loading already refuses ``!!python/object``;
``!!binary`` or ``!!set`` would still build bytes or a set). Dates are
normalised to ISO strings so that a JSON Schema sees what the author wrote.
"""

from __future__ import annotations

import datetime as _dt
import functools
import sys
from typing import Any

import yaml

from wikiengine.core.errors import PageError

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


def _normalise(value: Any) -> Any:
    if isinstance(value, dict):
        return {_normal_key(k): _normalise(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_normalise(v) for v in value]
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


def safe_load(text: str, path=None, first_line: int = 1) -> Any:
    """Load one YAML document safely; raise :class:`PageError` naming file and line.

    ``first_line`` is the file line on which ``text`` starts, so errors point into
    the file rather than into the fragment.
    """
    try:
        _refuse_aliases(text, path, first_line)
        data = _quick_load(text)
        if data is _UNSURE:
            data = _normalise(yaml.load(text, Loader=_StrictLoader))
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
_KEY_TAGS = frozenset({_STR, "tag:yaml.org,2002:int", "tag:yaml.org,2002:float", "tag:yaml.org,2002:bool",
                       "tag:yaml.org,2002:null", "tag:yaml.org,2002:timestamp"})
_MAX_QUICK_DEPTH = 32


def _quick_load(text: str) -> Any:
    """What ``_normalise(yaml.load(text, Loader=_StrictLoader))`` gives, built straight from
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


def _built(loader, node, depth: int) -> Any:
    """The value of ``node``; ValueError for a node left to the strict loader."""
    kind, tag = node.__class__, node.tag
    if kind is yaml.ScalarNode:
        if tag == _STR:
            return node.value
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


def line_of(lines: dict[tuple, int], key_path) -> int | None:
    """The line of the deepest known prefix of ``key_path``."""
    path = tuple(key_path)
    while path:
        if path in lines:
            return lines[path]
        path = path[:-1]
    return lines.get(())


def _extent(lines: list[str], index: int) -> int:
    """The end of the top-level entry whose key is on ``lines[index]``: its indented
    continuation lines (and a zero-indented ``- item`` sequence)."""
    end = index + 1
    while end < len(lines) and (lines[end][:1] in (" ", "\t") or lines[end].startswith("- ")):
        end += 1
    return end


def _line_update(text: str, updates: dict[str, Any]) -> str | None:
    """``updates`` as edits of whole entries, when every key it touches is absent or a
    top-level entry without a comment; None otherwise. The new entries are PyYAML's block
    dump of each value. Checked by loading the result: it must hold exactly the old mapping
    with the updates applied, or this returns None."""
    lines = text.splitlines(keepends=True)
    if text and not text.endswith("\n"):
        return None
    spans: dict[str, tuple[int, int]] = {}
    for index, line in enumerate(lines):
        key, colon, _rest = line.partition(":")
        if colon and key in updates:
            end = _extent(lines, index)
            if key in spans or any("#" in part for part in lines[index:end]):
                return None
            spans[key] = (index, end)
    added = []
    for key, value in updates.items():
        rendered = "" if value is None else yaml.safe_dump({key: value}, width=4096, allow_unicode=True,
                                                             default_flow_style=False, sort_keys=False)
        if key in spans:
            start, end = spans[key]
            lines[start:end] = [rendered] + [""] * (end - start - 1)  # keeps the other spans' indexes
        elif rendered:
            added.append(rendered)
    new_text = "".join(lines) + "".join(added)
    try:
        old = safe_load(text) if text.strip() else {}
        if not isinstance(old, dict):
            return None
        expected = {**old, **{k: _normalise(v) for k, v in updates.items()}}
        ok = safe_load(new_text) == {k: v for k, v in expected.items() if v is not None}
    except (PageError, yaml.YAMLError):
        return None
    return new_text if ok else None


@functools.cache
def _keep_float_values() -> None:
    """Make ruamel's round-trip writer write every float as a text that loads back to the same
    value (once per process: the representer table is ruamel's, per class): it keeps a float's
    width and precision but can drop its last digit (``4.806545050758981e-114`` came back as
    ``...980e-114``), which would change an untouched key of a page; such a float is written
    as Python's shortest repr instead."""
    from ruamel.yaml.representer import RoundTripRepresenter
    from ruamel.yaml.scalarfloat import ScalarFloat

    def represent(representer, value):
        node = RoundTripRepresenter.represent_scalar_float(representer, value)
        try:
            same = float(node.value) == float(value)
        except ValueError:  # .nan, .inf and their spellings: ruamel writes them exactly
            same = True
        if not same:
            node.value = repr(float(value))
        return node

    RoundTripRepresenter.add_representer(ScalarFloat, represent)


def roundtrip_update(text: str, updates: dict[str, Any], path=None) -> str:
    """Return ``text`` (a YAML mapping) with top-level ``updates`` applied.

    Comments, key order and quoting of untouched keys survive. A writer's usual edit
    (``status: filed``, ``metrics``, a receipt path) rewrites just those entries
    (:func:`_line_update`, checked by loading the result); anything else goes through ruamel.yaml round-trip
    mode, whose import and parse cost a writer 20-35 ms. A value of ``None`` removes the key.
    """
    fast = _line_update(text, updates)
    if fast is not None:
        return fast
    import io

    from ruamel.yaml import YAML
    from ruamel.yaml.error import YAMLError

    rt = YAML(typ="rt")
    rt.preserve_quotes = True
    rt.width = 4096
    _keep_float_values()
    try:
        data = rt.load(text) if text.strip() else None
    except YAMLError as exc:
        problem = getattr(exc, "problem", None) or " ".join(str(exc).split())
        raise PageError(f"invalid YAML: {problem}", path) from None
    except (ValueError, OverflowError) as exc:  # an impossible date such as 0000-00-00
        raise PageError(f"invalid YAML: {exc}", path) from None
    except TypeError:  # a mapping as a key (`? : :`): not a frontmatter mapping
        raise PageError("invalid YAML: a key that is not a scalar", path) from None
    except RecursionError:
        raise PageError("invalid YAML: nesting too deep", path) from None
    if data is None:
        from ruamel.yaml.comments import CommentedMap

        data = CommentedMap()
    if not isinstance(data, dict):
        raise PageError("frontmatter is not a mapping", path)
    for key, value in updates.items():
        if value is None:
            data.pop(key, None)
        else:
            data[key] = value
    out = io.StringIO()
    rt.dump(data, out)
    return out.getvalue()
