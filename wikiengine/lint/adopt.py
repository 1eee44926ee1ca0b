"""``wiki adopt``: take a wiki that grew by hand as it is.

Three steps, each idempotent. The survey (:mod:`wikiengine.lint.survey`) says what the
engine can and cannot read. The configuration keys the survey justifies (and only those)
go into the wiki's configuration, so that its own conventions win: ``checkout-paths`` for
untracked checkouts outside ``raw/code/``, ``artifact-paths`` for the folders under
``raw/`` git ignores, LOG003's ``split-date`` when the global log holds lane ops dated
before the first lane-log entry. Then today's findings, under that configuration, become
the baseline (the same file and text ``wiki lint --write-baseline`` writes), so that lint
and the writers' re-lint judge only what is new.

No TOML library that keeps a file's comments and order is a dependency: a new
``wiki.toml`` is written when the wiki has no configuration; an existing one is never
edited, and the keys to add are given instead.
"""

from __future__ import annotations

import copy
import json
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.atomic import atomic_write_text
from wikiengine.core.text import counted
from wikiengine.lint import baseline
from wikiengine.lint.config import KEYS, LintConfig
from wikiengine.lint.survey import LaneSurvey, WikiWide, survey, wiki_wide

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from typing import Any

WIKI_TOML = "wiki.toml"
SPLIT_DATE = "rules.LOG003.split-date"


@dataclass(frozen=True)
class Key:
    """One configuration key adopt writes: ``name`` dotted (``rules.LOG003.split-date``)."""

    name: str
    value: Any
    why: str

    def as_json(self) -> dict:
        return {"key": self.name, "value": self.value, "why": self.why}


def proposed_keys(wide: WikiWide, config: LintConfig) -> list[Key]:
    """The keys the survey justifies that the configuration does not already hold."""
    keys = []
    outside = sorted({c.rsplit("/", 1)[0] + "/" for c in wide.local_checkouts if "/" in c} - set(config.checkout_paths))
    outside = [p for p in outside if not any(p.startswith(c) for c in config.checkout_paths)]
    if outside:
        keys.append(Key("checkout-paths", [*config.checkout_paths, *outside],
                        f"untracked local checkouts live under {', '.join(outside)}: links into them are "
                        "unverifiable in a clone, not broken"))
    new_artifacts = [a["path"] for a in wide.artifacts if not a["configured"]]
    if new_artifacts:
        keys.append(Key("artifact-paths", [*config.artifact_paths, *new_artifacts],
                        f"git ignores {', '.join(new_artifacts)} under raw/: artifacts by design, absent in every "
                        "clone, so links into them are not broken"))
    if wide.early_lane_ops and wide.split_date is None and wide.first_lane_entry:
        keys.append(Key(SPLIT_DATE, wide.first_lane_entry,
                        f"{counted(wide.early_lane_ops, 'global-log entry', 'global-log entries')} with lane ops predate the first lane-log entry "
                        f"({wide.first_lane_entry}): pinned, so that a lane log backfilled later does not turn "
                        "that history into findings (LOG003, LOG004)"))
    return keys


def with_keys(config: LintConfig, keys: list[Key]) -> LintConfig:
    """``config`` with ``keys`` applied, parsed as the configuration file would be."""
    out = copy.deepcopy(config)
    for key in keys:
        if key.name.startswith("rules."):
            _, code, option = key.name.split(".", 2)
            out.rules.setdefault(code, {})[option] = key.value
        else:
            attr, parse = KEYS[key.name]
            setattr(out, attr, parse(key.value, f"'{key.name}'"))
    return out


def render_keys(keys: list[Key], prefix: str = "") -> str:
    """The keys as TOML, each under a comment saying why: top-level keys first, then one
    table per rule (``prefix``: ``tool.wiki.`` for pyproject.toml)."""
    lines = [f"[{prefix.rstrip('.')}]"] if prefix else []
    tables: dict[str, list[Key]] = {}
    for key in keys:
        table, _, name = key.name.rpartition(".")
        if table:
            tables.setdefault(table, []).append(key)
        else:
            lines += [f"# {key.why}", f"{name} = {json.dumps(key.value)}"]
    for table, members in tables.items():
        lines += ["", f"[{prefix}{table}]"]
        for key in members:
            lines += [f"# {key.why}", f"{key.name.rpartition('.')[2]} = {json.dumps(key.value)}"]
    text = "\n".join(lines).lstrip("\n") + "\n"
    tomllib.loads(text)  # the text is TOML, or this is a bug
    return text


@dataclass
class Adoption:
    """What ``wiki adopt`` read, and what it wrote (or would write)."""

    root: Path
    lanes: list[LaneSurvey]
    wide: WikiWide
    keys: list[Key]
    config: dict = field(default_factory=dict)  # {"file", "action", "text", "note"}
    baseline: dict = field(default_factory=dict)  # {"file", "entries", "findings", "action"}

    @property
    def changed(self) -> bool:
        return "written" in (self.config.get("action"), self.baseline.get("action"))

    def as_json(self) -> dict:
        return {"root": str(self.root), "lanes": [lane.as_json() for lane in self.lanes], "wiki": self.wide.as_json(),
                "keys": [k.as_json() for k in self.keys], "config": self.config, "baseline": self.baseline,
                "changed": self.changed}


def adopt(root: Path, config: LintConfig, *, dry_run: bool = False) -> Adoption:
    """Survey the wiki at ``root``, write the keys it justifies and the baseline (neither
    with ``dry_run``, nor when what is there already says the same)."""
    lanes = survey(root, config)
    wide = wiki_wide(root, config, lanes)
    keys = proposed_keys(wide, config)
    adoption = Adoption(root, lanes, wide, keys)
    adoption.config = settle_config(root, config, keys, dry_run)
    effective = with_keys(config, keys) if adoption.config["action"] in ("written", "would-write") else config
    adoption.baseline = settle_baseline(root, effective, dry_run)
    return adoption


def settle_config(root: Path, config: LintConfig, keys: list[Key], dry_run: bool) -> dict:
    """Write a new ``wiki.toml`` holding ``keys`` when the wiki has no configuration; give
    the keys to add by hand when it has one (it is never edited)."""
    source = config.source
    rel = source.relative_to(root).as_posix() if source is not None and source.is_relative_to(root) else WIKI_TOML
    if not keys:
        return {"file": rel if source is not None else None, "action": "none", "text": "", "note": None}
    if source is not None:
        prefix = "tool.wiki." if source.name == "pyproject.toml" else ""
        note = (f"{rel} exists and is not edited (no TOML library that keeps its comments and order is installed): "
                f"add these keys to it, then run wiki adopt again to refresh the baseline")
        return {"file": rel, "action": "add-by-hand", "text": render_keys(keys, prefix), "note": note}
    text = "# The wiki's own conventions, detected by `wiki adopt` (keys: wiki lint --help).\n\n" + render_keys(keys)
    if not dry_run:
        atomic_write_text(root / WIKI_TOML, text)
    return {"file": WIKI_TOML, "action": "would-write" if dry_run else "written", "text": text, "note": None}


def settle_baseline(root: Path, config: LintConfig, dry_run: bool) -> dict:
    """Accept every finding of today's lint under ``config`` into the baseline file, the
    text ``wiki lint --write-baseline`` writes; unchanged when the file already says it."""
    from wikiengine.lint.runner import lint

    result = lint(root, None, config, use_cache=False, use_baseline=False)
    path = root / baseline.BASELINE_FILE
    text, count = baseline.accepted(path, result.unfiltered, result.unreadable)
    try:
        old = path.read_text(encoding="utf-8") if path.is_file() else None
    except (OSError, UnicodeDecodeError):
        old = None
    action = "unchanged" if old == text else "would-write" if dry_run else "written"
    if action == "written":
        atomic_write_text(path, text)
    return {"file": baseline.BASELINE_FILE, "entries": count, "findings": len(result.unfiltered), "action": action,
            "notices": list(result.notices)}
