"""Standard modules imported when one of their names is first asked for, not when imported.

Two modules every ``wiki`` process imported for nothing: ``dataclasses`` imports ``inspect``
(and with it ``ast``, ``dis`` and ``tokenize``: about 8 ms of CPU) for one call, made only for
a class without a docstring (the package's classes all have one: tests/test_deferred.py),
and ``urllib.parse`` (which ``pathlib`` imports) imports ``ipaddress`` (about 2 ms) to check a
URL's bracketed host. :func:`defer` puts a stand-in in ``sys.modules`` before either is
imported; the first name asked of it imports the module in its place. Not
``importlib.util.LazyLoader``: the ``import`` statement reads its module's ``__spec__``, which
loads a lazy module at once.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from types import ModuleType

DEFERRED = ("inspect", "ipaddress")


class _Deferred(ModuleType):
    """A module's stand-in in ``sys.modules`` until one of its names is asked for: then the
    module is imported (in its place) and its names copied here, for the holders of the stand-in."""

    def __getattr__(self, attr):  # only for a name the stand-in lacks
        if sys.modules.get(self.__name__) is self:
            del sys.modules[self.__name__]
        module = importlib.import_module(self.__name__)
        self.__dict__.update(module.__dict__)
        return getattr(module, attr)


def defer(*names: str) -> None:
    """Import each module of ``names`` when one of its names is first asked for, unless it is
    imported already."""
    for name in names:
        if name not in sys.modules:
            stand_in = _Deferred(name)
            stand_in.__spec__ = importlib.util.find_spec(name)
            sys.modules[name] = stand_in
