"""`wiki lint`: the wiki's rules as code. ``lint(root, paths)`` is the public entry point."""

from wikiengine.lint.runner import LintResult, lint

__all__ = ["LintResult", "lint"]
