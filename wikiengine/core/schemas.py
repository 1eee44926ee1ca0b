"""JSON Schemas shipped in ``schema/`` (installed as ``wikiengine/_schema``) and validation
with errors that name the file and line of the offending key.

Schemas stay within draft 7 so that a compiled validator (fastjsonschema,
:mod:`core.validators`) can serve hot paths; :func:`issues` asks it first and uses
jsonschema, which reports every error with its path, only for a document it refuses.
"""

from __future__ import annotations

import functools
import json
import marshal
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.errors import SchemaError, WikiError
from wikiengine.core.usercache import KeptMap, code_stamp

# the file line of each key path, or a function that reads them (only a refused document needs them)
Lines = dict[tuple, int] | Callable[[], dict[tuple, int]] | None


def schema_dir() -> Path:
    """Where the schemas are: inside the installed wheel, else the repository's ``schema/``."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "_schema"
    if packaged.is_dir():
        return packaged
    return package.parent / "schema"


def schema_names() -> list[str]:
    """The names of the shipped schemas (file names without ``.schema.json``)."""
    return sorted(p.name[: -len(".schema.json")] for p in schema_dir().glob("*.schema.json"))


def schema_text(name: str) -> str:
    """The text of the schema called ``name`` (``experiment`` -> ``schema/experiment.schema.json``)."""
    path = schema_dir() / f"{name}.schema.json"
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise WikiError(f"no schema named {name!r} (have: {', '.join(schema_names())})", path) from None


@functools.cache
def load_schema(name: str) -> dict:
    """The schema called ``name``, loaded."""
    try:
        return json.loads(schema_text(name))
    except json.JSONDecodeError as exc:
        raise WikiError(f"schema is not valid JSON: {exc.msg}", schema_dir() / f"{name}.schema.json", exc.lineno) from None


class WordingDeferred(Exception):  # noqa: N818 - a signal, not an error of the document
    """A refused document's errors were asked for in a process that must not import
    jsonschema for them (:func:`defer_wording`): whoever set that words them elsewhere."""


_WORDING_DEFERRED = False


def defer_wording() -> None:
    """From now on in this process, raise :class:`WordingDeferred` rather than import
    jsonschema to word a refused document. A lint worker does: its parent imports
    jsonschema once for the pages both workers would each have imported it for (about
    0.1 s of CPU apiece), and a wiki whose pages all pass imports it nowhere."""
    global _WORDING_DEFERRED
    _WORDING_DEFERRED = True


@functools.cache
def _validator(name: str):
    if _WORDING_DEFERRED and "jsonschema" not in sys.modules:
        raise WordingDeferred(name)
    import jsonschema

    schema = load_schema(name)
    cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft7Validator)
    return cls(schema)


@dataclass(frozen=True)
class SchemaIssue:
    """One way a document breaks its schema."""

    message: str
    key_path: tuple
    line: int | None

    def where(self) -> str:
        return "/".join(str(part) for part in self.key_path) or "(top level)"


def issues(instance, name: str, lines: Lines = None) -> list[SchemaIssue]:
    """Every schema error of ``instance``, sorted by line, each with the line of its key.

    A valid document is told by the compiled validator (:mod:`core.validators`); jsonschema,
    slower to import than a wake takes to run, is loaded only to word what is wrong (unless
    this user's processes have worded this very document against this very schema before:
    :func:`_worded`), and ``lines`` (a mapping, or a function that makes one: a second YAML
    pass) is asked for only then."""
    from wikiengine.core.validators import compiled
    from wikiengine.core.yamlio import line_of

    try:
        compiled(name)(instance)
        return []
    except (ValueError, TypeError):
        pass  # invalid (or a shape the generated code cannot judge): every error, worded by jsonschema
    if callable(lines):
        lines = lines()
    found = [SchemaIssue(_short(message), key_path, line_of(lines, key_path) if lines else None)
             for message, key_path in _worded(instance, name)]
    found.sort(key=lambda issue: (issue.line or 0, issue.key_path.__repr__()))
    return found


def _wording_stamp() -> str:
    """What a kept wording depends on besides the document and its schema: the interpreter,
    this module and jsonschema."""
    return code_stamp("jsonschema", files=(os.path.abspath(__file__),))


MAX_WORDED_KEY = 16384  # a document's key past this is worded each time
_WORDINGS = KeptMap("schemas", "wordings.marshal", _wording_stamp, limit=1024, per_process=256)


def _worded(instance, name: str) -> list[tuple[str, tuple]]:
    """``(message, key path)`` of every error jsonschema finds in ``instance``, the refused
    document. Kept per user (:class:`~wikiengine.core.usercache.KeptMap`), keyed by the
    schema's text and the document's ``repr``: a lint that meets the same broken frontmatter
    as an earlier one (a wiki with old defects, linted cold after a config change, or by a
    writer) words it without importing jsonschema, about 0.1 s of CPU. A document that
    holds a credential's shape or a secret of the process is worded each time, never kept."""
    from wikiengine.core.secrets import secret_hits

    key = f"{name}\0{schema_digest(name)}\0{instance!r}"
    key = key if len(key) <= MAX_WORDED_KEY else None
    kept = _WORDINGS.get(key) if key is not None else None
    if kept is not None:
        try:
            return [(message, tuple(path)) for message, path in marshal.loads(kept)]
        except (EOFError, ValueError, TypeError):
            pass  # damaged: word it again
    worded = [_message(error) for error in _validator(name).iter_errors(instance)]
    if key is not None and _WORDINGS.has_room() and not secret_hits(key):
        try:
            _WORDINGS.put(key, marshal.dumps([(message, list(path)) for message, path in worded]))
        except ValueError:
            pass  # a key path marshal cannot hold: worded each time
    return worded


def _message(error) -> tuple[str, tuple]:
    """jsonschema's ``error``: its message and the key path it names (for an unexpected key,
    the first such key)."""
    key_path = tuple(error.absolute_path)
    if error.validator == "additionalProperties":
        extra = sorted(set(error.instance) - set(error.schema.get("properties", {})), key=str)
        if extra:
            key_path = key_path + (extra[0],)
    return error.message, key_path


@functools.cache
def schema_digest(name: str) -> str:
    """The crc32 of schema ``name``'s text, 8 hex digits: what names the code and the wordings
    kept for it (another text, another name)."""
    import zlib

    return f"{zlib.crc32(schema_text(name).encode()):08x}"


def _short(message: str, limit: int = 160) -> str:
    message = " ".join(message.split())
    return message if len(message) <= limit else message[: limit - 3] + "..."


def check(instance, name: str, path=None, lines: Lines = None, keys=None) -> None:
    """Raise :class:`SchemaError` (file, line, key) for the first schema error, if any (of the
    top-level ``keys`` only, when given: what a caller is about to use)."""
    found = [i for i in issues(instance, name, lines) if keys is None or (i.key_path and i.key_path[0] in keys)]
    if found:
        first = found[0]
        more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
        raise SchemaError(f"{first.where()}: {first.message}{more} [schema {name}]", path, first.line)
