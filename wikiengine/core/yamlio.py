"""YAML for frontmatter and config blocks: a safe, strict fast path for reads and
ruamel.yaml round-trip mode for edits.

Reads use PyYAML's C safe loader where libyaml is present (about 15x faster than
ruamel.yaml's pure-Python safe loader, see ``reference/performance.md``), made strict in
:mod:`~wikiengine.core.yaml_strict`: duplicate keys, anchors/aliases and explicit tags are
refused, dates become ISO strings.

What a short text loads to is kept per user (:class:`~wikiengine.core.usercache.KeptMap`,
keyed by the text itself: hashing would import ``hashlib``, OpenSSL's 2-4 ms): a no-op wake
reads the same three or four small documents (its state page, its lane's program) every
time, and importing PyYAML to parse them again was a fifth of it. Only what loaded cleanly is kept, and never a text that holds a secret; an error
is found again by the loader.
"""

from __future__ import annotations

import functools
import os

from wikiengine.core.errors import PageError
from wikiengine.core.usercache import KeptMap, code_stamp

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

MAX_KEPT_TEXT = 4096  # frontmatter and config blocks; a longer text is parsed each time
# The characters that PyYAML writes as themselves in a one-line plain or single-quoted scalar
# and that libyaml reads back as they are: printable, not a line break (\x85, \u2028, \u2029:
# PyYAML folds a scalar there) and not the byte-order mark. A character class, for a regex.
ONE_LINE_CHARS = "\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010fffe"


def _loader_stamp() -> str:
    """What a kept value depends on: the interpreter, the strict loader's file and PyYAML's."""
    return code_stamp("yaml", files=(os.path.join(os.path.dirname(os.path.abspath(__file__)), "yaml_strict.py"),))


_KEPT = KeptMap("yaml", "loads.marshal", _loader_stamp, limit=512, per_process=64)
_UNKNOWN = object()  # nothing kept (a text may load to None)


def safe_load(text: str, path=None, first_line: int = 1) -> Any:
    """Load one YAML document safely; raise :class:`PageError` naming file and line.

    ``first_line`` is the file line on which ``text`` starts, so errors point into
    the file rather than into the fragment.
    """
    short = len(text) <= MAX_KEPT_TEXT
    kept = _KEPT.recall(text, _UNKNOWN) if short else _UNKNOWN
    if kept is not _UNKNOWN:
        return kept
    from wikiengine.core.yaml_strict import load

    data = load(text, path, first_line)
    if short:
        remember(text, data)
    return data


def remember(text: str, data: Any) -> None:
    """Keep what ``text`` loads to: after a load, or from a writer that wrote ``text`` from
    ``data`` (:mod:`~wikiengine.core.yaml_dump`), whose own lint then need not import PyYAML."""
    if len(text) <= MAX_KEPT_TEXT and _KEPT.has_room() and not _holds_secret(text):
        _KEPT.keep(text, data)  # a value marshal cannot hold is parsed each time


def _holds_secret(text: str) -> bool:
    """A text with a credential's shape or a secret value of this process (a cluster file's
    frontmatter, say) is parsed each time: no secret is written anywhere, the cache included."""
    from wikiengine.core.secrets import secret_hits

    return bool(secret_hits(text))


def key_lines(text: str, first_line: int = 1) -> dict[tuple, int]:
    """Map each key path (a tuple of keys and list indices) to its file line (``{}`` for text
    that does not compose): :func:`wikiengine.core.yaml_strict.key_lines`."""
    from wikiengine.core import yaml_strict

    return yaml_strict.key_lines(text, first_line)


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
    import yaml

    from wikiengine.core.yaml_strict import normalise

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
        expected = {**old, **{k: normalise(v) for k, v in updates.items()}}
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
