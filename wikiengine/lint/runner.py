"""Run the selected rules over a wiki and collect their findings."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.lint.config import LintConfig, load_config
from wikiengine.lint.context import LintContext, discover
from wikiengine.lint.finding import Finding


@dataclass
class LintResult:
    findings: list[Finding]
    files_checked: int
    notices: list[str] = field(default_factory=list)


def lint(
    root: Path, paths: list[str] | None = None, config: LintConfig | None = None, base: str | None = "HEAD"
) -> LintResult:
    """Lint the wiki at ``root``: every file, or only ``paths`` (cross-file rules still see all).

    Git-aware rules compare with ``base`` (skipped, with one notice, outside a git
    repository or when ``base`` is None).
    """
    from wikiengine.lint.gitview import GitView, in_git_repo
    from wikiengine.rules import selected_rules

    config = config or load_config(root)
    files = discover(root)
    targets = files if paths is None else sorted(paths)
    ctx = LintContext(root=root, config=config, files=files, targets=targets)
    notices = []
    rules = selected_rules(config)
    if base is not None and in_git_repo(root):
        ctx.git = GitView.open(root, base)
    elif any(rule.needs_git for rule in rules):
        notices.append("not a git repository (or no base): git-aware rules skipped")
    target_set = set(targets)
    findings: list[Finding] = []
    for rule in rules:
        if rule.needs_git and ctx.git is None:
            continue
        for rel in targets:
            info = ctx.info(rel)
            if info.kind in rule.kinds and (info.page is not None or rule.code == "WK001"):
                findings.extend(rule.check_page(info, ctx))
        findings.extend(f for f in rule.check_wiki(ctx) if f.path in target_set)
    findings = [f for f in findings if not config.ignored_for(f.path, f.code)]
    return LintResult(sorted(set(findings)), len(targets), notices)
