"""wikiengine: a markdown-native wiki engine, linter and executor for unattended ML research.

The public API is small and lazy, so that ``wiki lint`` never pays for what it does not use:

- :func:`load_page` / :func:`parse_page`: a markdown file as frontmatter, preamble and H2 sections;
- :func:`resolve`: the effective program of a target directory (the ``program.md`` cascade).
"""

__version__ = "0.1.0"

__all__ = ["__version__", "load_page", "parse_page", "resolve"]


def __getattr__(name):  # lazy imports keep `import wikiengine` cheap
    if name in ("load_page", "parse_page"):
        from wikiengine import page

        return getattr(page, name)
    if name == "resolve":
        from wikiengine.cascade import resolve

        return resolve
    raise AttributeError(name)
