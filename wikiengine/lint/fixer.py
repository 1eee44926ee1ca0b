"""``wiki lint --fix``: apply the one safe mechanical fix of each fixable finding.

A fix is a rule's ``fix(info, ctx)`` returning the whole fixed page (or None when no
safe fix applies); unused suppression comments (WK100) are removed by the engine.
Pages that carry a verdict are never touched: they are immutable (EXP007).
"""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from wikiengine.core.atomic import atomic_write_bytes
from wikiengine.core.errors import WikiError
from wikiengine.core.page import load_page, parse_page
from wikiengine.lint import suppress
from wikiengine.lint.config import LintConfig
from wikiengine.lint.context import LintContext, PageInfo
from wikiengine.lint.finding import Finding
from wikiengine.lint.kinds import kind_of


def is_verdict_page(info: PageInfo) -> bool:
    """An experiment page whose frontmatter already holds a verdict."""
    if info.kind != "experiment" or info.page is None:
        return False
    from wikiengine.model.experiment import resolve_verdict

    verdict, _problem = resolve_verdict(info.page.frontmatter)
    return verdict is not None


def apply_fixes(root: Path, config: LintConfig, findings: list[Finding], files: list[str]) -> list[str]:
    """Fix the pages that have fixable findings; return the paths written."""
    from wikiengine.lint.registry import rule_class

    by_path: dict[str, set[str]] = defaultdict(set)
    unused: dict[str, list[Finding]] = defaultdict(list)
    for finding in findings:
        if finding.fixable:
            if finding.code == suppress.UNUSED_CODE:
                unused[finding.path].append(finding)
            else:
                by_path[finding.path].add(finding.code)
    ctx = LintContext(root=root, config=config, files=files, targets=sorted(set(by_path) | set(unused)))
    written = []
    for rel in ctx.targets:
        path = root / rel
        try:
            page = load_page(path)
        except WikiError:
            continue
        info = PageInfo(rel, path, kind_of(rel), page)
        if is_verdict_page(info):
            continue
        original = page.to_bytes()
        for code in sorted(by_path.get(rel, ())):
            rule = rule_class(code)()
            fixed = rule.fix(info, ctx)
            if fixed is not None:
                info = PageInfo(rel, path, info.kind, fixed)
        text = info.page.to_text()
        if rel in unused:
            text = suppress.remove_unused(text, unused[rel])
        data = text.encode("utf-8")
        if data != original:
            parse_page(text, path)  # a fix must leave a readable page
            atomic_write_bytes(path, data)  # a unique temp name: two `--fix` runs never share one
            written.append(rel)
    return written
