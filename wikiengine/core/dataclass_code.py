"""The compiled code of the methods ``dataclasses`` generates, kept per user between processes.

``@dataclass`` writes each class's ``__init__``, ``__repr__``, ``__eq__``, ``__hash__`` and
(frozen) ``__setattr__``/``__delattr__`` as source text and hands it to ``exec``, which
compiles it: about 0.15 ms a method, 0.7-1 ms a class. A lane's no-op wake creates 51
classes (286 methods, 35-51 ms on this machine), a writer or the watcher about as many: a
fifth of such a process. The source depends only on the class's fields and options, so the
code compiled from it can be kept: :func:`install` points the ``exec`` that ``dataclasses``
calls at :func:`_exec`, which compiles the text of one of this package's classes only the
first time this user's processes meet it, and otherwise runs the code kept for that very
text (``exec`` of a string compiles it as ``compile(text, "<string>", "exec")`` with the
calling module's future flags, none in ``dataclasses``: the same code object). What a process
compiled is kept as it ends (:func:`~wikiengine.core.usercache.save_all`, called by the CLI).

The kept code runs, so it lives where the compiled schema validators do
(:mod:`~wikiengine.core.usercache`: never inside a git work tree, read back only from a
private file of this user), one file per interpreter's bytecode version. It is an
optimisation: a cache that cannot be read or written changes nothing but the time.
"""

from __future__ import annotations

import builtins
import importlib.util
import marshal
import sys
from types import CodeType

from wikiengine.core.usercache import KeptMap

MAX_ENTRIES = 4096  # past this (the texts of classes an upgrade changed pile up), the oldest go

# source text -> marshalled code; one file per interpreter's bytecode version
_KEPT = KeptMap("dataclasses", f"{sys.implementation.cache_tag}-{importlib.util.MAGIC_NUMBER.hex()}.marshal",
                stamp=lambda: "code", limit=MAX_ENTRIES)


def install() -> None:
    """Route the ``exec`` of ``dataclasses`` through :func:`_exec` (once per process)."""
    import dataclasses

    dataclasses.exec = _exec


def _exec(source, globals=None, locals=None):  # noqa: A002 - the signature of builtins.exec
    if globals is None:  # as exec does: the caller's namespaces, not this module's
        caller = sys._getframe(1)
        globals, locals = caller.f_globals, caller.f_locals if locals is None else locals
    if isinstance(source, str):  # compiled here, without this module's future flags, as dataclasses' exec would
        source = _code(source) if _ours(globals) else compile(source, "<string>", "exec", dont_inherit=True)
    return builtins.exec(source, globals, locals)  # noqa: S102 - dataclasses' own text


def _ours(namespace: dict) -> bool:
    """Is the class being made one of this package's? ``dataclasses`` runs its methods' text in
    the namespace of the class's module; another program's classes (torch's, say, in a demo)
    are left to plain ``exec`` and never kept: the file holds what every ``wiki`` process reads."""
    return str(namespace.get("__name__", "")).partition(".")[0] == __name__.partition(".")[0]


def _code(source: str) -> CodeType:
    kept = _KEPT.get(source)
    if kept is not None:
        try:
            code = marshal.loads(kept)
            if isinstance(code, CodeType):
                return code
        except (EOFError, ValueError, TypeError):
            pass  # damaged: compile it again
    code = compile(source, "<string>", "exec", dont_inherit=True)
    _KEPT.put(source, marshal.dumps(code))
    return code
