"""Compiled JSON Schema validators for the lint hot path.

fastjsonschema turns a schema into Python source once; its compiled code object is
cached under ``.wiki_cache/schemas/`` (marshal, signed, see :mod:`wikiengine.lint.cache`)
and executed on later runs, so neither the code generation and compile (10-20 ms a
schema) nor the ``fastjsonschema`` import is paid again. The generated code only
needs two exception classes, defined here. Formats are not checked, so the fast path
and :func:`wikiengine.schemas.issues` (jsonschema, used for the detailed message of a
page that failed) agree.
"""

from __future__ import annotations

import hashlib
import json
import marshal
import os
import sys
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
    tag = f"{sys.version_info[0]}{sys.version_info[1]}"
    cached = cache_dir / "schemas" / f"{name}-{digest}-{_FORMAT}-py{tag}.marshal" if cache_dir is not None else None
    if cached is not None:
        try:
            data = verified(cached.read_bytes())
            code = marshal.loads(data) if data is not None else None
        except (OSError, EOFError, ValueError, TypeError):
            code = None
    if code is None:
        import fastjsonschema

        # compile_to_code, plus the name of the entry function (it follows the schema's $id).
        resolver, generator = fastjsonschema._factory(schema, {}, use_formats=False)
        source = (
            f"ENTRY = {resolver.get_scope_name()!r}\n"
            + fastjsonschema.compile_to_code(schema, use_formats=False).replace(_IMPORT_LINE, "")
        )
        code = compile(source, f"<schema {name}>", "exec")
        blob = sign(marshal.dumps(code)) if cached is not None else None
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
    exec(code, namespace)  # noqa: S102 - our own generated code, or our own signed cache of it
    _COMPILED[name] = namespace[namespace["ENTRY"]]
    return _COMPILED[name]
