"""A process's end without the interpreter's teardown.

After the program returns, CPython's finalization frees what the process holds object by
object, module by module, with garbage collections between. The kernel frees the whole
address space at once when the process ends, so that work buys nothing. It cost 0.15 s of
CPU in a writer holding the lint cache, and 0.4-0.6 s in a process that imported torch (an
autoresearch target run, a kernel measurement, a training session: a third of a short one).
:func:`end_now` ends the process once what the ordinary exit would still do is done.
"""

from __future__ import annotations

import os
import sys


def end_now(code: int, *, hooks: bool = False) -> int:
    """End the process with ``code`` at once: its standard output and error flushed and, with
    ``hooks``, its exit hooks run first (``atexit``'s, which run ``weakref.finalize``'s).

    Only while no other thread runs (the ordinary exit would wait for it) and, without
    ``hooks``, no exit hook or finalizer is registered. Otherwise, or when the output cannot
    be flushed, ``code`` is returned for the ordinary exit. A program ends this way only when
    it leaves no buffered file open: a file is flushed when it is closed, or freed.
    """
    import atexit
    import threading
    import weakref

    if threading.active_count() != 1:
        return code
    if hooks:
        atexit._run_exitfuncs()  # each hook once: the list is empty after, for an ordinary exit
    elif getattr(atexit, "_ncallbacks", lambda: 1)() or getattr(weakref.finalize, "_registry", {1: None}):
        return code  # CPython's counts; unknown elsewhere: keep the ordinary exit
    try:
        sys.stdout.flush()
        sys.stderr.flush()
    except (OSError, ValueError):
        return code
    os._exit(int(code or 0))
