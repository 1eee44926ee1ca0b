"""Lint configuration from ``[tool.wiki]`` in ``pyproject.toml`` or from ``wiki.toml``.

Example (``wiki.toml`` uses the same keys at top level, tables without the ``tool.wiki.`` prefix)::

    [tool.wiki]
    select = ["EXP", "LOG", "WK"]           # code prefixes (default: all)
    ignore = ["LNK001"]
    additive-marker = "(?i)-specific\\s+CAN\\s+additions$"
    artifact-paths = ["raw/profiles/"]      # gitignored by design: links into them are not broken
    checkout-paths = ["raw/code/"]          # <path>/<repo>/: a submodule or an untracked local checkout

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
import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.errors import PageError, WikiError
from wikiengine.core.safe_read import read_optional
from wikiengine.core.usercache import KeptMap, code_stamp
from wikiengine.lint.options import Option, check, selector, unknown_name
from wikiengine.model.cascade import DEFAULT_ADDITIVE_MARKER
from wikiengine.model.logbook import DEFAULT_OPS

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

DEFAULT_LOG_OPS = DEFAULT_OPS  # wikiengine.model.logbook: the vocabulary of each tier

# Folders a wiki keeps out of git by design (traces, HLO dumps): conventions.md.
DEFAULT_ARTIFACT_PATHS = ["raw/profiles/"]
DEFAULT_CHECKOUT_PATHS = ["raw/code/"]  # each <path>/<repo>/ a submodule or a local checkout git does not track


@dataclass
class LintConfig:
    """The linter's configuration: ``[tool.wiki]`` of ``pyproject.toml`` over the defaults."""

    select: list[str] = field(default_factory=list)  # empty: every rule
    ignore: list[str] = field(default_factory=list)
    per_file_ignores: dict[str, list[str]] = field(default_factory=dict)
    log_ops: dict[str, list[str]] = field(default_factory=lambda: {k: list(v) for k, v in DEFAULT_LOG_OPS.items()})
    additive_marker: str = DEFAULT_ADDITIVE_MARKER
    artifact_paths: list[str] = field(default_factory=lambda: list(DEFAULT_ARTIFACT_PATHS))
    checkout_paths: list[str] = field(default_factory=lambda: list(DEFAULT_CHECKOUT_PATHS))
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
            sorted(self.artifact_paths), sorted(self.checkout_paths),
            sorted((code, sorted(options.items(), key=repr)) for code, options in self.rules.items()),
        ))

    def rule_fingerprint(self, code: str) -> str:
        """What the configuration says to the rule ``code`` (for the lint cache, which keeps
        each rule's results apart): the settings every rule may read, its own options and
        the options several rules share (:data:`SHARED_OPTIONS`). Not ``select``, ``ignore``,
        the per-file ignores nor ``since``: they filter findings after the rules ran."""
        own = {k: v for k, v in self.rules.get(code, {}).items() if k != "since"}
        shared = [(c, name, self.option(c, name)) for c, name in SHARED_OPTIONS]
        text = repr((code, sorted(self.log_ops.items()), self.additive_marker, sorted(self.artifact_paths),
                     sorted(self.checkout_paths), sorted(own.items(), key=repr), shared))
        return hashlib.blake2b(text.encode(), digest_size=8).hexdigest()

    def check_codes(self, known: list[str]) -> None:
        """Refuse a selector that names no rule (a typo would silently lint nothing), a
        ``[rules.CODE]`` table of no rule, and a per-rule option the rule does not take."""
        from wikiengine.lint.scopes import scope

        where = self.source
        for key, selectors in (("select", self.select), ("ignore", self.ignore)):
            check_selectors(selectors, known, f"'{key}'", where)
        for pattern, codes in self.per_file_ignores.items():
            check_selectors(codes, known, f"per-file-ignores {pattern!r}", where)
        for code, options in self.rules.items():
            if code not in known:
                raise WikiError(f"[rules.{code}]: no such rule", where)
            declared = {**COMMON_RULE_OPTIONS, **scope(code).options}
            for name, value in options.items():
                if name not in declared:
                    raise WikiError(f"[rules.{code}]: " + unknown_name(name, declared, "option"), where)
                try:
                    options[name] = check(declared[name], value, f"[rules.{code}] {name}")
                except ValueError as exc:
                    raise WikiError(str(exc), where) from None


def check_selectors(selectors: list[str], known: list[str], what: str, where: Path | None = None) -> None:
    """WikiError naming ``what`` (and ``where``) for a selector that matches no rule code."""
    for wanted in selectors:
        if not any(code.startswith(wanted) for code in known):
            raise WikiError(f"{what} names no rule: {wanted!r}", where)


# Options of one rule that other rules read too (the id pattern of experiment files, their
# required sections, the
# lane logs' split date, the workload prefix): part of every rule's fingerprint.
# tests/test_cache_rules.py runs each rule alone and fails on a read not listed here.
SHARED_OPTIONS = (("EXP001", "id-pattern"), ("EXP002", "sections"), ("LOG003", "split-date"), ("WKL001", "user-prefix"))

# Every rule takes ``since``; a rule declares its own options in ``Rule.options``.
COMMON_RULE_OPTIONS = {"since": Option("date")}


def _codes(value, name: str) -> list[str]:
    return check(Option("codes"), value, name)


def _per_file_ignores(value, name: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a table of glob = [codes]")
    return {str(glob): _codes(codes, f"{name} {glob!r}") for glob, codes in value.items()}


def _log_ops(value, name: str) -> dict[str, list[str]]:
    if not isinstance(value, dict):
        raise ValueError(f"{name} must be a table of tier = [ops]")
    return {str(tier): check(Option("str-list"), ops, f"{name} {tier!r}") for tier, ops in value.items()}


def _rules(value, name: str) -> dict[str, dict[str, Any]]:
    if not isinstance(value, dict) or not all(isinstance(v, dict) for v in value.values()):
        raise ValueError(f"{name} must be a table of per-rule option tables ([rules.CODE])")
    return {selector(code, name): dict(options) for code, options in value.items()}


def _regex(value, name: str) -> str:
    return check(Option("regex"), value, name)


def _artifact_paths(value, name: str) -> list[str]:
    paths = check(Option("str-list"), value, name)
    if not all(p.strip("/") for p in paths):
        raise ValueError(f"{name} must be a list of repository-relative folders")
    return [p.strip("/") + "/" for p in paths]


# key -> (LintConfig attribute, parser). A parser returns the value the engine uses, or
# raises ValueError with the line a user reads. New keys slot in here.
KEYS: dict[str, tuple[str, Callable[[Any, str], Any]]] = {
    "select": ("select", _codes),
    "ignore": ("ignore", _codes),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "log-ops": ("log_ops", _log_ops),
    "additive-marker": ("additive_marker", _regex),
    "artifact-paths": ("artifact_paths", _artifact_paths),
    "checkout-paths": ("checkout_paths", _artifact_paths),
    "rules": ("rules", _rules),
}


def load_config(root: Path, explicit: Path | None = None) -> LintConfig:
    """Read ``wiki.toml`` (or ``explicit``), else ``[tool.wiki]`` of ``pyproject.toml``; defaults otherwise.

    An unreadable file, an unknown key or a value of the wrong type is a
    :class:`WikiError` (exit 2) naming the file.
    """
    candidates = [explicit] if explicit else [root / "wiki.toml", root / "pyproject.toml"]
    for path in candidates:
        # the repository's own files stay inside it; a file named with --config may be anywhere
        try:
            text = read_optional(path, kind="config", within=None if explicit else root) if path is not None else None
        except PageError as exc:
            why = exc.message.removeprefix("cannot read: ")  # not "cannot read ...: cannot read: ..."
            raise WikiError(f"cannot read configuration: {why}", path, exc.line) from None
        if text is None:
            if explicit:
                raise WikiError("configuration file not found", path)
            continue
        data = _parsed(text, path)
        if path.name == "pyproject.toml":
            tool = data.get("tool", {})
            table = tool.get("wiki") if isinstance(tool, dict) else None
            if table is not None and not isinstance(table, dict):
                raise WikiError("[tool.wiki] must be a table", path)
            if table is None and not isinstance(tool, dict):
                raise WikiError("'tool' must be a table", path)
        else:
            table = data
        if table is None:
            continue
        return _from_table(table, path)
    return LintConfig()


def _no_secret(text: str) -> bool:
    from wikiengine.core.secrets import secret_hits

    return not secret_hits(text)


# What a configuration's text parses to, kept per user (keyed by the text; never one that holds
# a secret): importing tomllib (and typing, which it imports) was 28 million instructions of
# every writer's lint.
_PARSED = KeptMap("toml", "loads.marshal", lambda: code_stamp("tomllib"), limit=16, admit=_no_secret)


def _parsed(text: str, path: Path) -> dict:
    """``tomllib.loads(text)``, kept when it is marshallable and holds no secret; WikiError naming ``path``."""
    kept = _PARSED.recall(text)
    if kept is not None:
        return kept
    import tomllib

    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise WikiError(f"cannot read configuration: {exc}", path) from None
    except RecursionError:
        raise WikiError("cannot read configuration: nested too deep", path) from None
    except ValueError as exc:  # an integer past sys.get_int_max_str_digits()
        raise WikiError(f"cannot read configuration: {exc}", path) from None
    _PARSED.keep(text, data)  # a date or time marshal cannot hold: parsed each time
    return data


def _from_table(table: dict, path: Path) -> LintConfig:
    if path.name != "pyproject.toml" and isinstance(table.get("tool"), dict) and "wiki" in table["tool"]:
        raise WikiError("[tool.wiki] is pyproject.toml's form: in wiki.toml the keys sit at top level "
                        "(drop the 'tool.wiki.' prefix of every table)", path)
    config = LintConfig(source=path)
    for key, value in table.items():
        if key not in KEYS:
            raise WikiError(unknown_name(key, KEYS, "configuration key"), path)
        attr, parse = KEYS[key]
        try:
            parsed = parse(value, f"'{key}'")
        except ValueError as exc:
            raise WikiError(str(exc), path) from None
        if attr == "log_ops":  # tiers not named keep their defaults
            parsed = {**config.log_ops, **parsed}
        setattr(config, attr, parsed)
    return config
