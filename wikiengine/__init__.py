"""wikiengine: a markdown-native wiki engine, linter and executor for unattended ML research.

The public API is small and lazy, so that ``wiki lint`` never pays for what it does not use:

- :func:`load_page` / :func:`parse_page`: a markdown file as frontmatter, preamble and H2 sections;
- :func:`resolve`: the effective program of a target directory (the ``program.md`` cascade);
- :func:`lint`: the findings of a wiki;
- :func:`step`: one wake of what ``memory/STATE.md`` names.

The layout (``docs/architecture.md``): ``core`` <- ``model`` <- ``lint`` <- ``step`` <- ``demos``
<- ``_cli``; ``executors`` and ``training`` are the repository's top-level folders, installed
as ``wikiengine.executors`` and ``wikiengine.training``.
"""

import importlib.util as _util
import os as _os
import sys as _sys

from wikiengine.core import deferred as _deferred

_deferred.defer(*_deferred.DEFERRED)  # before anything imports them (core/deferred.py)

from wikiengine.core import regex_code as _regex_code  # noqa: E402

_regex_code.install()  # the regular expressions this package's processes use compiled once per user

from wikiengine.core import dataclass_code as _dataclass_code  # noqa: E402 - its imports' patterns kept too
from wikiengine.core.version import __version__  # noqa: E402

_dataclass_code.install()  # the methods of this package's dataclasses compiled once per user, not once per process

__all__ = ["__version__", "lint", "load_page", "parse_page", "resolve", "step"]

# In a checkout (an editable install, a test run, a relay session's pinned tree) training/
# and executors/ sit beside this package rather than in it: exactly those two folders are
# mapped in as subpackages; no other folder of the checkout becomes importable through it.
_CHECKOUT = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
_MAPPED = ("executors", "training")


class _CheckoutFolders:  # a meta path finder (importlib.abc costs 30-40 ms a start)
    def find_spec(self, fullname, path=None, target=None):
        head, _, name = fullname.partition(".")[2].partition(".")
        if fullname.partition(".")[0] != __name__ or name or head not in _MAPPED:
            return None
        folder = _os.path.join(_CHECKOUT, head)
        return _util.spec_from_file_location(fullname, _os.path.join(folder, "__init__.py"),
                                             submodule_search_locations=[folder])


if not _os.path.isdir(_os.path.join(__path__[0], "training")) and all(
        _os.path.isfile(_os.path.join(_CHECKOUT, f, "__init__.py")) for f in _MAPPED):
    _sys.meta_path.insert(0, _CheckoutFolders())


def __getattr__(name):  # lazy imports keep `import wikiengine` cheap
    if name in ("load_page", "parse_page"):
        from wikiengine.core import page

        return getattr(page, name)
    if name == "resolve":
        from wikiengine.model.cascade import resolve

        return resolve
    if name == "lint":
        from wikiengine.lint import lint

        return lint
    if name == "step":
        from wikiengine.step.engine import run_step

        return run_step
    raise AttributeError(name)
