"""wikiengine: a markdown-native wiki engine, linter and executor for unattended ML research.

The public API is small and lazy, so that ``wiki lint`` never pays for what it does not use:

- :func:`load_page` / :func:`parse_page`: a markdown file as frontmatter, preamble and H2 sections;
- :func:`resolve`: the effective program of a target directory (the ``program.md`` cascade).
"""

__version__ = "0.1.0"

import os as _os

# The wheel installs the repository's top-level training/ and executors/ folders as
# wikiengine.training and wikiengine.executors. In a checkout (an editable install, a test
# run, a relay session's pinned tree) they sit beside this package, so the checkout's root is
# a second portion of this package's path; nothing is added to sys.path.
_checkout = _os.path.dirname(_os.path.dirname(_os.path.abspath(__file__)))
if not _os.path.isdir(_os.path.join(__path__[0], "training")) and _os.path.isfile(
        _os.path.join(_checkout, "training", "__init__.py")):
    __path__.append(_checkout)

__all__ = ["__version__", "load_page", "parse_page", "resolve"]


def __getattr__(name):  # lazy imports keep `import wikiengine` cheap
    if name in ("load_page", "parse_page"):
        from wikiengine import page

        return getattr(page, name)
    if name == "resolve":
        from wikiengine.cascade import resolve

        return resolve
    raise AttributeError(name)
