"""What each rule can apply to, known without importing it: a table generated from the rule
classes (``python -m wikiengine.lint.scopes`` rewrites it; ``tests/test_rule_scopes.py`` fails
when it differs from them).

A PATH run (pre-commit: five staged pages) imports only the rules that can say something
about its targets (:func:`applies`). A rule left out finds nothing on pages of those kinds,
so the run counts it as run: its suppressions are judged, its cache entries kept whole.

A row: the rule's ``kinds``, ``collect_kinds``, whether it has ``collect``, ``reports_on``,
whether it has ``check_wiki``, ``needs_git`` and ``reads_tracked``
(:class:`~wikiengine.lint.rule.Rule`).
"""

from __future__ import annotations

from collections import namedtuple

Scope = namedtuple("Scope", "kinds collect_kinds collects reports_on checks_wiki needs_git reads_tracked")

# --- generated: begin -------------------------------------------------------------------
_ALL = ('experiment', 'program', 'log', 'model', 'hypothesis', 'retrospective', 'cluster', 'memory-state', 'memory-quota', 'memory-assets', 'memory-errors', 'kernel-experiment', 'kernel-retro', 'kernel-family', 'page')  # every page kind
SCOPES: dict[str, Scope] = {
    "CDB001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=True),
    "CON001": Scope(kinds=_ALL, collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "CON002": Scope(kinds=_ALL, collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "EXP001": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "EXP002": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "EXP003": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "EXP004": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "EXP005": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "EXP006": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "EXP007": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=True, reads_tracked=False),
    "EXP008": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "EXP009": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "EXP010": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "EXP011": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('experiment',), checks_wiki=True, needs_git=True, reads_tracked=False),
    "EXP012": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "EXP013": Scope(kinds=(), collect_kinds=('log',), collects=True, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "EXP014": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False),
    "EXP015": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "EXP016": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "EXP017": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "HYP001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('hypothesis',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "HYP002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('hypothesis',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "HYP003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('page',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "HYP004": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('hypothesis',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "IDX001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('page',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "IDX002": Scope(kinds=(), collect_kinds=(), collects=True, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False),
    "KRN001": Scope(kinds=('kernel-experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "KRN002": Scope(kinds=('kernel-experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "KRN003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('kernel-experiment',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "KRN004": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('kernel-experiment',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "KRN005": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('kernel-experiment',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "KRN006": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('kernel-family',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "KRN007": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('kernel-experiment',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "LAY001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False),
    "LAY002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False),
    "LAY003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False),
    "LNK001": Scope(kinds=_ALL, collect_kinds=(), collects=True, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=True),
    "LNK002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=True),
    "LOG001": Scope(kinds=('log',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "LOG002": Scope(kinds=('log',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "LOG003": Scope(kinds=('log',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "LOG004": Scope(kinds=('log',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "LOG005": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('log',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "MEM001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('memory-assets',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "MEM002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('memory-quota',), checks_wiki=True, needs_git=True, reads_tracked=False),
    "MEM003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('memory-state',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "MEM004": Scope(kinds=('memory-errors',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "MEM005": Scope(kinds=('memory-quota', 'memory-assets', 'memory-errors'), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "MOD001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('model',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "MOD002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('model',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "MOD003": Scope(kinds=('model',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "MOD004": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('model',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "PRG001": Scope(kinds=('program',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "PRG002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('program',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "PRG003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('program',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "PRG004": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('program',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "RUN001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('log',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "RUN002": Scope(kinds=('retrospective',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "RUN003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('log',), checks_wiki=True, needs_git=False, reads_tracked=False),
    "RUN004": Scope(kinds=('log',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "WK001": Scope(kinds=_ALL, collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "WK002": Scope(kinds=_ALL, collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "WK003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False),
    "WK100": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "WK101": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False),
    "WKL001": Scope(kinds=('experiment',), collect_kinds=(), collects=True, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False),
}
# --- generated: end ---------------------------------------------------------------------


def scope(code: str) -> Scope:
    """The row of rule ``code`` (from its class for a code added to the registry at run time)."""
    row = SCOPES.get(code)
    if row is None:
        from wikiengine.lint.registry import rule_class

        row = scope_of(rule_class(code))
    return row


def applies(scope: Scope, kinds: set[str]) -> bool:
    """Can the rule find anything on pages of ``kinds`` (or need their facts)?"""
    if any(kind in kinds for kind in scope.kinds):
        return True
    if scope.collects:
        collect_kinds = scope.collect_kinds or scope.kinds
        if not collect_kinds or any(kind in kinds for kind in collect_kinds):
            return True
    if scope.checks_wiki:
        return scope.reports_on is None or any(kind in kinds for kind in scope.reports_on)
    return False


def scope_of(cls) -> Scope:
    """The row of a rule class (what it leaves out, as :class:`~wikiengine.lint.rule.Rule` has it)."""
    from wikiengine.lint.rule import Rule

    def attribute(name: str):
        return getattr(cls, name, getattr(Rule, name))

    return Scope(attribute("kinds"), attribute("collect_kinds"), cls.has_collect(), attribute("reports_on"),
                 attribute("check_wiki") is not Rule.check_wiki, attribute("needs_git"), attribute("reads_tracked"))


def generated() -> str:
    """The table's source, from the classes of the registry."""
    from wikiengine.lint.registry import REGISTRY, rule_class
    from wikiengine.lint.rules.unreadable_page import ALL_KINDS

    def shown(value):
        return "_ALL" if value == ALL_KINDS else repr(value)

    rows = [f"_ALL = {ALL_KINDS!r}  # every page kind", "SCOPES: dict[str, Scope] = {"]
    for code in sorted(REGISTRY):
        scope = scope_of(rule_class(code))
        fields = ", ".join(f"{name}={shown(value)}" for name, value in zip(Scope._fields, scope))
        rows.append(f'    "{code}": Scope({fields}),')
    rows.append("}")
    return "\n".join(rows) + "\n"


def _rewrite() -> None:
    from pathlib import Path

    path = Path(__file__)
    text = path.read_text(encoding="utf-8")
    head, _, rest = text.partition("# --- generated: begin")
    _, _, tail = rest.partition("# --- generated: end")
    begin = "# --- generated: begin" + rest.split("\n", 1)[0] + "\n"
    end = "# --- generated: end" + tail
    path.write_text(head + begin + generated() + end, encoding="utf-8")


if __name__ == "__main__":
    _rewrite()
