"""Lint configuration from ``[tool.wiki]`` in ``pyproject.toml`` or from ``wiki.toml``.

Example (``wiki.toml`` uses the same keys at top level, tables without the ``tool.wiki.`` prefix)::

    [tool.wiki]
    select = ["EXP", "LOG", "WK"]           # code prefixes (default: all)
    ignore = ["LNK001"]
    additive-marker = "(?i)-specific\\s+CAN\\s+additions$"

    [tool.wiki.per-file-ignores]
    "wiki/legacy/*.md" = ["EXP"]

    [tool.wiki.log-ops]                     # the known ops of each log tier
    global = ["ingest", "schema", "lane-scaffold", "lint", "retrospective"]
    lane = ["start", "stop", "loop-iteration", "backfill", "retrospective", "run-experiment", "CLOSING"]

    [tool.wiki.rules.EXP001]                # per-rule options
    since = "2026-01-01"                    # pages older than this are grandfathered
"""

from __future__ import annotations

import fnmatch
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wikiengine.logbook import DEFAULT_OPS
from wikiengine.cascade import DEFAULT_ADDITIVE_MARKER
from wikiengine.errors import WikiError

DEFAULT_LOG_OPS = DEFAULT_OPS  # wikiengine.logbook: the vocabulary of each tier


@dataclass
class LintConfig:
    select: list[str] = field(default_factory=list)  # empty: every rule
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    log_ops: dict[str, list[str]] = field(default_factory=lambda: {k: list(v) for k, v in DEFAULT_LOG_OPS.items()})
    additive_marker: str = DEFAULT_ADDITIVE_MARKER
    rules: dict[str, dict[str, Any]] = field(default_factory=dict)  # per-rule options, by code
    source: Path | None = None

    def enabled(self, code: str) -> bool:
        """Is the rule ``code`` selected and not ignored?"""
        selected = not self.select or any(code.startswith(prefix) for prefix in self.select)
        return selected and not any(code.startswith(prefix) for prefix in self.ignore)

    def ignored_for(self, rel: str, code: str) -> bool:
        """Does a per-file ignore silence ``code`` for the file ``rel``?"""
        return any(
            fnmatch.fnmatch(rel, pattern) and any(code.startswith(prefix) for prefix in codes)
            for pattern, codes in self.per_file_ignores.items()
        )

    def option(self, code: str, name: str, default=None):
        """A per-rule option from ``[tool.wiki.rules.<CODE>]``."""
        return self.rules.get(code, {}).get(name, default)

    def fingerprint(self) -> str:
        """Everything that can change what a rule finds (for the lint cache)."""
        return repr((
            sorted(self.select), sorted(self.ignore), sorted(self.log_ops.items()), self.additive_marker,
            sorted((code, sorted(options.items(), key=repr)) for code, options in self.rules.items()),
        ))

    def check_codes(self, known: list[str]) -> None:
        """Refuse a selector that names no rule (a typo would silently lint nothing)."""
        where = self.source
        for key, selectors in (("select", self.select), ("ignore", self.ignore)):
            for selector in selectors:
                if not any(code.startswith(selector) for code in known):
                    raise WikiError(f"'{key}' names no rule: {selector!r}", where)
        for pattern, codes in self.per_file_ignores.items():
            for selector in codes:
                if not any(code.startswith(selector) for code in known):
                    raise WikiError(f"per-file-ignores {pattern!r} names no rule: {selector!r}", where)
        for code in self.rules:
            if code not in known:
                raise WikiError(f"[rules.{code}]: no such rule", where)


_KEYS = {"select", "ignore", "per-file-ignores", "log-ops", "additive-marker", "rules"}


def load_config(root: Path, explicit: Path | None = None) -> LintConfig:
    """Read ``wiki.toml`` (or ``explicit``), else ``[tool.wiki]`` of ``pyproject.toml``; defaults otherwise.

    An unreadable file or an unknown key is a :class:`WikiError` (exit 2).
    """
    candidates = [explicit] if explicit else [root / "wiki.toml", root / "pyproject.toml"]
    for path in candidates:
        if path is None or not path.is_file():
            if explicit:
                raise WikiError("configuration file not found", path)
            continue
        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
            raise WikiError(f"cannot read configuration: {exc}", path) from None
        table = data.get("tool", {}).get("wiki") if path.name == "pyproject.toml" else data
        if table is None:
            continue
        return _from_table(table, path)
    return LintConfig()


def _from_table(table: dict, path: Path) -> LintConfig:
    if path.name != "pyproject.toml" and isinstance(table.get("tool"), dict) and "wiki" in table["tool"]:
        raise WikiError("[tool.wiki] is pyproject.toml's form: in wiki.toml the keys sit at top level "
                        "(drop the 'tool.wiki.' prefix of every table)", path)
    unknown = sorted(set(table) - _KEYS)
    if unknown:
        raise WikiError(f"unknown configuration key(s): {', '.join(unknown)}", path)
    config = LintConfig(source=path)
    for key, attr in (("select", "select"), ("ignore", "ignore")):
        value = table.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise WikiError(f"'{key}' must be a list of rule codes or prefixes", path)
        setattr(config, attr, value)
    pfi = table.get("per-file-ignores", {})
    if not isinstance(pfi, dict):
        raise WikiError("'per-file-ignores' must be a table of glob = [codes]", path)
    if not all(isinstance(v, list) and all(isinstance(c, str) for c in v) for v in pfi.values()):
        raise WikiError("'per-file-ignores' must be a table of glob = [codes]", path)
    config.per_file_ignores = {str(k): list(v) for k, v in pfi.items()}
    ops = table.get("log-ops")
    if ops is not None:
        if not isinstance(ops, dict) or not all(isinstance(v, list) for v in ops.values()):
            raise WikiError("'log-ops' must be a table of tier = [ops]", path)
        config.log_ops.update({k: [str(o) for o in v] for k, v in ops.items()})
    if "additive-marker" in table:
        config.additive_marker = str(table["additive-marker"])
        try:
            re.compile(config.additive_marker)
        except re.error as exc:
            raise WikiError(f"'additive-marker' is not a regular expression: {exc}", path) from None
    rules = table.get("rules", {})
    if not isinstance(rules, dict):
        raise WikiError("'rules' must be a table of per-rule option tables", path)
    if not all(isinstance(v, dict) for v in rules.values()):
        raise WikiError("'rules' must be a table of per-rule option tables", path)
    config.rules = {str(k): dict(v) for k, v in rules.items()}
    return config
