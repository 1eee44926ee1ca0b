"""Compiled JSON Schema validators for the hot paths (lint, and every read of memory a wake makes).

fastjsonschema turns a schema into Python source; compiled, only for the kinds a run
meets. Generating and compiling a schema's code costs more than a whole no-op wake (the
lane config's schema alone about 40 ms), so the compiled code is kept in the per-user
cache (:mod:`wikiengine.core.usercache`: outside every work tree, never in
``.wiki_cache/``, where a commit could plant code), kept with the schema text it was generated from
(and the interpreter's bytecode version in its name): a later process unmarshals it. The
generated code only needs two exception classes, defined here. Formats are not checked,
so the fast path and :func:`wikiengine.core.schemas.issues` (jsonschema, used for the
detailed message of a page that failed) agree.
"""

from __future__ import annotations

import importlib.util
import marshal
from collections.abc import Callable
from types import CodeType

_IMPORT_LINE = "from fastjsonschema import JsonSchemaValueException, JsonSchemaValuesException"
_DECIMAL_LINE = "from decimal import Decimal"
GENERATION = 2  # how the code is made from fastjsonschema's (2: no decimal import); part of the kept file's name


class _NoDecimal:
    """What the generated code's ``isinstance(value, (int, float, Decimal))`` checks get for
    ``Decimal``: the documents validated here come from YAML and JSON, which never make one,
    and importing :mod:`decimal` (its C module) for the check cost a no-op wake about 2 ms."""


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
CACHE_KIND = "validators"


def compiled(name: str) -> Callable:
    """A function ``validate(data)`` for schema ``name`` that raises ``JsonSchemaValueException``.

    Generated once per schema and user (:func:`code_of`), loaded once per process."""
    if name not in _COMPILED:
        namespace = {
            "__name__": f"{__name__}.{name}",  # the code's patterns are this package's (core/regex_code.py)
            "JsonSchemaValueException": JsonSchemaValueException,
            "JsonSchemaValuesException": JsonSchemaValuesException,
            "Decimal": _NoDecimal,
        }
        exec(code_of(name), namespace)  # noqa: S102 - generated here from our schema, or kept by this user
        _COMPILED[name] = namespace[namespace["ENTRY"]]
    return _COMPILED[name]


def code_of(name: str) -> CodeType:
    """The compiled validator code of schema ``name``: from the per-user cache when it was
    generated from these very schema bytes, else generated (and kept there)."""
    from wikiengine.core.schemas import schema_digest, schema_text
    from wikiengine.core.usercache import cache_dir, read_private, write_private

    text = schema_text(name)
    folder = cache_dir(CACHE_KIND)
    # the name tells versions apart; the schema text kept inside decides
    path = folder / f"{name}-{schema_digest(name)}-{importlib.util.MAGIC_NUMBER.hex()}-{GENERATION}.code" if folder else None
    kept = read_private(path) if path is not None else None
    if kept is not None:
        try:
            kept_text, code = marshal.loads(kept)
            if kept_text == text and isinstance(code, CodeType):
                return code
        except (EOFError, ValueError, TypeError):
            pass  # damaged: generate it again
    code = generate(name)
    if path is not None:
        write_private(path, marshal.dumps((text, code)))
    return code


def generate(name: str) -> CodeType:
    """Generate (fastjsonschema) and compile the validator code of schema ``name``."""
    import fastjsonschema

    from wikiengine.core.schemas import load_schema

    schema = load_schema(name)
    # compile_to_code, plus the name of the entry function (it follows the schema's $id).
    resolver, _generator = fastjsonschema._factory(schema, {}, use_formats=False)
    source = (
        f"ENTRY = {resolver.get_scope_name()!r}\n"
        + fastjsonschema.compile_to_code(schema, use_formats=False).replace(_IMPORT_LINE, "")
    )
    if "Decimal(" not in source:  # Decimal only named in isinstance checks (no multipleOf): _NoDecimal
        source = source.replace(_DECIMAL_LINE, "")
    return compile(source, f"<schema {name}>", "exec")
