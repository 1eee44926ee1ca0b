"""Compiled JSON Schema validators for the hot paths (lint, and every read of memory a wake makes).

fastjsonschema turns a schema into Python source, compiled once per process and only
for the kinds a run meets (about 6 ms for the first, import included, 2 ms for each
other). Nothing is cached on disk: executing code read back from ``.wiki_cache/``
would trust whatever a commit planted there. The generated code only needs two
exception classes, defined here. Formats are not checked, so the fast path
and :func:`wikiengine.core.schemas.issues` (jsonschema, used for the detailed message of a
page that failed) agree.
"""

from __future__ import annotations

from collections.abc import Callable

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


def compiled(name: str) -> Callable:
    """A function ``validate(data)`` for schema ``name`` that raises ``JsonSchemaValueException``.

    Generated and compiled in this process (about 2 ms a schema), never loaded from a
    cache: code read back from ``.wiki_cache/`` would run whatever a commit planted there.
    """
    if name in _COMPILED:
        return _COMPILED[name]
    import fastjsonschema

    from wikiengine.core.schemas import load_schema

    schema = load_schema(name)
    # compile_to_code, plus the name of the entry function (it follows the schema's $id).
    resolver, _generator = fastjsonschema._factory(schema, {}, use_formats=False)
    source = (
        f"ENTRY = {resolver.get_scope_name()!r}\n"
        + fastjsonschema.compile_to_code(schema, use_formats=False).replace(_IMPORT_LINE, "")
    )
    namespace = {
        "JsonSchemaValueException": JsonSchemaValueException,
        "JsonSchemaValuesException": JsonSchemaValuesException,
    }
    exec(compile(source, f"<schema {name}>", "exec"), namespace)  # noqa: S102 - generated here from our schema
    _COMPILED[name] = namespace[namespace["ENTRY"]]
    return _COMPILED[name]
