"""The registry: every rule, by code, in one table (like ruff's)."""

from __future__ import annotations

import importlib

from wikiengine.lint.rule import Rule

# code -> "module:Class". Modules are imported only when their rule is selected.
REGISTRY: dict[str, str] = {
    "WK001": "wikiengine.rules.unreadable_page:UnreadablePage",
    "WK002": "wikiengine.rules.frontmatter_schema:FrontmatterSchema",
    "WK100": "wikiengine.rules.unused_suppression:UnusedSuppression",
    "WK101": "wikiengine.rules.unused_suppression:StaleBaselineEntry",
    "PRG001": "wikiengine.rules.duplicate_program_section:DuplicateProgramSection",
    "PRG002": "wikiengine.rules.program_config_schema:ProgramConfigSchema",
    "PRG003": "wikiengine.rules.cascade_shadowing:AdditiveTitleCollision",
    "PRG004": "wikiengine.rules.cascade_shadowing:LeadingTitleShadow",
    "LNK001": "wikiengine.rules.broken_link:BrokenLink",
}


def rule_class(code: str) -> type[Rule]:
    module, _, name = REGISTRY[code].partition(":")
    return getattr(importlib.import_module(module), name)


def selected_rules(config) -> list[Rule]:
    """Instances of every enabled rule, in code order."""
    return [rule_class(code)() for code in sorted(REGISTRY) if config.enabled(code)]
