"""The compiled form of regular expressions, kept per user between processes.

``re.compile`` parses a pattern and generates the code its ``_sre`` engine runs, in pure
Python: 0.05-6 ms a pattern (PyYAML's reader alone compiles a class of non-printable
characters it never uses for 5 ms). A lane's no-op wake meets about 80 patterns, the
watcher 150, a writer 160, a warm ``wiki lint`` 200: 10-45 ms, a tenth to a fifth of such
a process. The engine's code depends only on the pattern's text, its flags and the
interpreter, so it can be kept: :func:`install` points the compiler ``re`` calls on a miss
of its own cache at :func:`_compile`, which parses a pattern only the first time this
user's processes meet it and otherwise hands the kept code to ``_sre.compile``, which
checks it as it always does (a damaged entry is refused there and compiled again). What a
process compiled is kept as it ends (:func:`~wikiengine.core.usercache.save_all`, called
by the CLI). Only the patterns of this package, the standard library and the parsers it
reads pages with are kept (not torch's own, which a process that trains compiles by the
dozen: the file is one every command reads), and never one holding a secret's shape or a
secret of the process (a configured title in a rule's alternation, say).

It is an optimisation: a cache that cannot be read or written changes nothing but the time.
"""

from __future__ import annotations

import _sre
import marshal
import re
import sys
from re import _compiler, _parser

from wikiengine.core.usercache import KeptMap, code_stamp

MAX_ENTRIES = 1024  # every command's patterns together are about 400
MAX_PATTERN = 4096  # characters; a longer pattern (built from a configuration, say) is compiled each time
# the packages, besides this one and the standard library, whose patterns are kept
LIBRARIES = frozenset({"yaml", "frontmatter", "markdown_it", "mdurl", "jsonschema", "fastjsonschema", "ruamel"})

_original = _compiler.compile
# (flags, pattern) -> marshalled (flags, code, groups - 1, groupindex, indexgroup) for _sre.compile
_KEPT = KeptMap("regex", f"{sys.implementation.cache_tag}-{_sre.MAGIC}.marshal",
                stamp=lambda: code_stamp("re._parser", "re._compiler"), limit=MAX_ENTRIES, per_process=512,
                admit=lambda key: not _secret_shaped(key), second_sight=True)


def install() -> None:
    """Route the compiler ``re`` calls on a miss of its cache through :func:`_compile` (once per process)."""
    if all(hasattr(_compiler, name) for name in ("compile", "_code", "isstring")) and hasattr(_parser, "parse"):
        _compiler.compile = _compile


def _compile(p, flags=0):
    """``re._compiler.compile`` for a pattern's text, from the kept code when there is some."""
    if not isinstance(p, (str, bytes)) or flags & re.DEBUG or len(p) > MAX_PATTERN:
        return _original(p, flags)
    key = b"%d\0" % flags + p if isinstance(p, bytes) else f"{int(flags)}\0{p}"
    kept = _KEPT.get(key)
    if kept is not None:
        try:
            return _sre.compile(p, *marshal.loads(kept))
        except Exception:  # noqa: BLE001 - damaged (or another engine's): compile it again
            pass
    parsed = _parser.parse(p, flags)
    code = _compiler._code(parsed, flags)
    groupindex = parsed.state.groupdict
    indexgroup = [None] * parsed.state.groups
    for name, index in groupindex.items():
        indexgroup[index] = name
    made = (int(flags | parsed.state.flags), [int(op) for op in code], parsed.state.groups - 1,
            dict(groupindex), tuple(indexgroup))
    pattern = _sre.compile(p, *made)
    if _kept_caller():
        _KEPT.put(key, marshal.dumps(made))
    return pattern


def _kept_caller() -> bool:
    """Is the code that asked ``re`` for this pattern this package's, the standard library's or
    one of :data:`LIBRARIES`?"""
    frame = sys._getframe(1).f_back  # past _compile: re's own frames, then the caller's (None at a stack's top)
    while frame is not None and frame.f_globals.get("__name__", "").partition(".")[0] in ("re", "functools"):
        frame = frame.f_back
    package = (frame.f_globals.get("__name__") or "") if frame is not None else ""
    top = package.partition(".")[0]
    return top == __name__.partition(".")[0] or top in LIBRARIES or top in sys.stdlib_module_names


def _secret_shaped(key: str | bytes) -> bool:
    from wikiengine.core.secrets import secret_hits

    return bool(secret_hits(key if isinstance(key, str) else key.decode("latin-1")))
