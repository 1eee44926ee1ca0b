"""What each rule can apply to, known without importing it: a table generated from the rule
classes (``python -m wikiengine.lint.scopes`` rewrites it; ``tests/test_rule_scopes.py`` fails
when it differs from them).

A PATH run (pre-commit: five staged pages) imports only the rules that can say something
about its targets (:func:`applies`). A rule left out finds nothing on pages of those kinds,
so the run counts it as run: its suppressions are judged, its cache entries kept whole.

A row: the rule's ``kinds``, ``collect_kinds``, whether it has ``collect``, ``reports_on``,
whether it has ``check_wiki``, ``needs_git``, ``reads_tracked`` and ``options``
(:class:`~wikiengine.lint.rule.Rule`): the configuration's ``[rules.CODE]`` tables are
checked against the table too, without importing their rules.
"""

from __future__ import annotations

from collections import namedtuple

from wikiengine.lint.options import Option

Scope = namedtuple("Scope", "kinds collect_kinds collects reports_on checks_wiki needs_git reads_tracked options",
                   defaults=({},))

# --- generated: begin -------------------------------------------------------------------
_ALL = ('experiment', 'program', 'log', 'model', 'hypothesis', 'retrospective', 'cluster', 'memory-state', 'memory-quota', 'memory-assets', 'memory-errors', 'kernel-experiment', 'kernel-retro', 'kernel-family', 'page')  # every page kind
SCOPES: dict[str, Scope] = {
    "CDB001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=True, options={}),
    "CON001": Scope(kinds=_ALL, collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "CON002": Scope(kinds=_ALL, collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={'titles': Option(kind='str-list', minimum=None, maximum=None, python_re=False)}),
    "EXP001": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={'id-pattern': Option(kind='regex', minimum=None, maximum=None, python_re=True)}),
    "EXP002": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={'sections': Option(kind='str-list', minimum=None, maximum=None, python_re=False)}),
    "EXP003": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "EXP004": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "EXP005": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "EXP006": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "EXP007": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=True, reads_tracked=False, options={}),
    "EXP008": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "EXP009": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "EXP010": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "EXP011": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('experiment',), checks_wiki=True, needs_git=True, reads_tracked=False, options={'max-age-hours': Option(kind='int', minimum=1, maximum=876000, python_re=False), 'max-age-days': Option(kind='int', minimum=1, maximum=36500, python_re=False)}),
    "EXP012": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "EXP013": Scope(kinds=(), collect_kinds=('log',), collects=True, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "EXP014": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "EXP015": Scope(kinds=('experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "EXP016": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "EXP017": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "HYP001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('hypothesis',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "HYP002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('hypothesis',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "HYP003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('page',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "HYP004": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('hypothesis',), checks_wiki=True, needs_git=False, reads_tracked=False, options={'days': Option(kind='int', minimum=1, maximum=36500, python_re=False), 'statuses': Option(kind='str-list', minimum=None, maximum=None, python_re=False)}),
    "IDX001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('page',), checks_wiki=True, needs_git=False, reads_tracked=False, options={'sections': Option(kind='str-list', minimum=None, maximum=None, python_re=False)}),
    "IDX002": Scope(kinds=(), collect_kinds=(), collects=True, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False, options={'exclude': Option(kind='str-list', minimum=None, maximum=None, python_re=False)}),
    "KRN001": Scope(kinds=('kernel-experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "KRN002": Scope(kinds=('kernel-experiment',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "KRN003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('kernel-experiment',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "KRN004": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('kernel-experiment',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "KRN005": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('kernel-experiment',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "KRN006": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('kernel-family',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "KRN007": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('kernel-experiment',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "LAY001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "LAY002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "LAY003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "LNK001": Scope(kinds=_ALL, collect_kinds=(), collects=True, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=True, options={}),
    "LNK002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=True, options={}),
    "LOG001": Scope(kinds=('log',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "LOG002": Scope(kinds=('log',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "LOG003": Scope(kinds=('log',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={'split-date': Option(kind='date', minimum=None, maximum=None, python_re=False)}),
    "LOG004": Scope(kinds=('log',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "LOG005": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('log',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "MEM001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('memory-assets',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "MEM002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('memory-quota',), checks_wiki=True, needs_git=True, reads_tracked=False, options={}),
    "MEM003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('memory-state',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "MEM004": Scope(kinds=('memory-errors',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "MEM005": Scope(kinds=('memory-quota', 'memory-assets', 'memory-errors'), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "MOD001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('model',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "MOD002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('model',), checks_wiki=True, needs_git=False, reads_tracked=False, options={'metric': Option(kind='str', minimum=None, maximum=None, python_re=False), 'higher-is-better': Option(kind='bool', minimum=None, maximum=None, python_re=False)}),
    "MOD003": Scope(kinds=('model',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={'sections': Option(kind='str-list', minimum=None, maximum=None, python_re=False)}),
    "MOD004": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('model',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "PRG001": Scope(kinds=('program',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "PRG002": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('program',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "PRG003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('program',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "PRG004": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('program',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "RUN001": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('log',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "RUN002": Scope(kinds=('retrospective',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "RUN003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=('log',), checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "RUN004": Scope(kinds=('log',), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "WK001": Scope(kinds=_ALL, collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "WK002": Scope(kinds=_ALL, collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "WK003": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=True, needs_git=False, reads_tracked=False, options={}),
    "WK100": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "WK101": Scope(kinds=(), collect_kinds=(), collects=False, reports_on=None, checks_wiki=False, needs_git=False, reads_tracked=False, options={}),
    "WKL001": Scope(kinds=('experiment',), collect_kinds=(), collects=True, reports_on=('experiment',), checks_wiki=True, needs_git=False, reads_tracked=False, options={'user-prefix': Option(kind='str', minimum=None, maximum=None, python_re=False)}),
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
                 attribute("check_wiki") is not Rule.check_wiki, attribute("needs_git"), attribute("reads_tracked"),
                 attribute("options"))


def generated() -> str:
    """The table's source, from the classes of the registry."""
    from wikiengine.lint.kinds import ALL_KINDS
    from wikiengine.lint.registry import REGISTRY, rule_class

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
