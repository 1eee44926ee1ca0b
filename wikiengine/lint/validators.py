"""Compiled JSON Schema validators for the lint hot path.

fastjsonschema turns a schema into Python source once; the source is cached under
``.wiki_cache/schemas/<name>-<hash>.py.signed`` (signed, see :mod:`wikiengine.lint.cache`)
and executed on later runs, so neither the compile
(10-20 ms) nor the ``fastjsonschema`` import is paid again. The generated code only
needs two exception classes, defined here. Formats are not checked, so the fast path
and :func:`wikiengine.schemas.issues` (jsonschema, used for the detailed message of a
page that failed) agree.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path
from typing import Callable

from wikiengine.lint.cache import sign, verified

_IMPORT_LINE = "from fastjsonschema import JsonSchemaValueException, JsonSchemaValuesException"


class JsonSchemaValueException(ValueError):
    """Raised by generated validators: the first way a document breaks its schema."""

    def __init__(self, message, value=None, name=None, definition=None, rule=None):
        super().__init__(message)
        self.message = message
        self.name = name
        self.rule = rule


class JsonSchemaValuesException(ValueError):
    def __init__(self, errors):
        super().__init__(str(errors))
        self.errors = errors


_COMPILED: dict[str, Callable] = {}
_FORMAT = "v1"  # of the cached file; change it when the layout changes


def compiled(name: str, cache_dir: Path | None = None) -> Callable:
    """A function ``validate(data)`` for schema ``name`` that raises ``JsonSchemaValueException``."""
    if name in _COMPILED:
        return _COMPILED[name]
    from wikiengine.schemas import load_schema

    schema = load_schema(name)
    digest = hashlib.blake2b(json.dumps(schema, sort_keys=True).encode(), digest_size=16).hexdigest()
    code = None
    cached = cache_dir / "schemas" / f"{name}-{digest}-{_FORMAT}.py.signed" if cache_dir is not None else None
    if cached is not None:
        try:
            data = verified(cached.read_bytes())
            code = data.decode("utf-8") if data is not None else None
        except (OSError, UnicodeDecodeError):
            code = None
    if code is None:
        import fastjsonschema

        # compile_to_code, plus the name of the entry function (it follows the schema's $id).
        resolver, generator = fastjsonschema._factory(schema, {}, use_formats=False)
        code = (
            f"ENTRY = {resolver.get_scope_name()!r}\n"
            + fastjsonschema.compile_to_code(schema, use_formats=False)
        )
        blob = sign(code.encode("utf-8")) if cached is not None else None
        if blob is not None:
            try:
                cached.parent.mkdir(parents=True, exist_ok=True)
                tmp = cached.with_name(f"{cached.name}.{os.getpid()}.tmp")
                tmp.write_bytes(blob)
                tmp.replace(cached)
            except OSError:
                pass
    namespace = {
        "JsonSchemaValueException": JsonSchemaValueException,
        "JsonSchemaValuesException": JsonSchemaValuesException,
    }
    exec(compile(code.replace(_IMPORT_LINE, ""), f"<schema {name}>", "exec"), namespace)  # noqa: S102 - our own generated code
    _COMPILED[name] = namespace[namespace["ENTRY"]]
    return _COMPILED[name]
