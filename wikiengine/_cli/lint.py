"""`wiki lint`: check the wiki's rules; ruff's output shape, exit 0 clean, 1 findings, 2 bad usage."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from wikiengine.core.errors import ExitCode
from wikiengine.model.targets import ROOT_HELP

HELP = "check the wiki's rules (pre-commit, CI, the watcher)"
DESCRIPTION = """\
Lint the whole wiki (wiki/, memory/, .env/), or only PATH... while cross-file rules still
see the rest. Git-aware rules compare with HEAD (the staged change) or --since REV;
--since REV --changed lints only the pages changed since REV (the watcher's delta audit).

Output: `path:line:col: CODE message` and a summary; --format json|sarif.
Configuration: [tool.wiki] in pyproject.toml, or wiki.toml (select, ignore,
per-file-ignores, log-ops, additive-marker, [rules.CODE] options such as since).
Suppress in a page: <!-- wiki-lint: disable CODE --> (this line and the next),
<!-- wiki-lint: disable-file CODE -->. Accepted findings: --write-baseline.
Exit status: 0 clean, 1 findings, 2 bad usage or unreadable configuration.
"""


def add_parser(subparsers) -> None:
    parser = subparsers.add_parser(
        "lint", help=HELP, description=DESCRIPTION, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("paths", nargs="*", metavar="PATH", help="files or directories to lint (default: the whole wiki)")
    parser.add_argument("--root", type=Path, help=ROOT_HELP)
    parser.add_argument("--config", type=Path, help="a wiki.toml or pyproject.toml to use instead of the root's")
    parser.add_argument("--since", metavar="REV", default="HEAD", help="base revision for git-aware rules (default HEAD)")
    parser.add_argument("--changed", action="store_true",
                        help="lint only the pages changed since the base (--since REV), e.g. the watcher's delta audit")
    parser.add_argument("--format", choices=("text", "json", "sarif"), default="text", help="output format")
    parser.add_argument("--json", action="store_true", help="the same as --format json")
    parser.add_argument("--statistics", action="store_true", help="print the number of findings per rule")
    parser.add_argument("--select", metavar="CODES", help="comma-separated codes or prefixes to run (replaces the config's)")
    parser.add_argument("--ignore", metavar="CODES", help="comma-separated codes or prefixes to skip (adds to the config's)")
    parser.add_argument("--fix", action="store_true", help="apply the safe mechanical fixes (never on a verdict page)")
    parser.add_argument("--write-baseline", action="store_true", help="accept every current finding into .wiki-lint-baseline.json")
    parser.add_argument("--no-baseline", action="store_true", help="report baselined findings too")
    parser.add_argument("--no-cache", action="store_true", help="neither read nor write .wiki_cache/")
    parser.add_argument("--jobs", type=int, metavar="N", help="processes for a large cold run, this one included (default 2)")
    parser.add_argument("--list-rules", action="store_true", help="list every rule: code, name, summary")
    parser.add_argument("--explain", metavar="CODE", help="print a rule's documentation")
    parser.set_defaults(handler=run)


def _codes(text: str | None, option: str) -> list[str]:
    """The codes of ``--select``/``--ignore``, upper-cased; WikiError naming the option for
    one that is not a code or names no rule."""
    from wikiengine.core.errors import WikiError
    from wikiengine.lint.config import check_selectors
    from wikiengine.lint.options import selector
    from wikiengine.lint.registry import REGISTRY

    try:
        codes = [selector(c, option) for c in (text or "").split(",") if c.strip()]
    except ValueError as exc:
        raise WikiError(str(exc)) from None
    check_selectors(codes, sorted(REGISTRY), option)
    return codes


LIST_RULES_LEGEND = (
    "[*]  fixable: `wiki lint --fix` applies a safe mechanical fix",
    "git  git-aware: compares with the base revision (HEAD, or --since REV)",
)


def list_rules() -> str:
    from wikiengine.lint.registry import REGISTRY, rule_class

    lines = []
    for code in sorted(REGISTRY):
        cls = rule_class(code)
        marks = ("[*]" if cls.fixable else "   ") + (" git" if cls.needs_git else "    ")
        lines.append(f"{code:<7} {marks} {cls.name:<34} {cls.summary}")
    return "\n".join(lines + ["", *LIST_RULES_LEGEND])


def explain(code: str) -> str:
    from wikiengine.core.errors import WikiError
    from wikiengine.lint.docs import flag_notes
    from wikiengine.lint.registry import REGISTRY, rule_class

    code = code.upper()
    if code not in REGISTRY:
        raise WikiError(f"no rule {code!r} (see wiki lint --list-rules)")
    cls = rule_class(code)
    extras = flag_notes(cls, explain=True)
    head = f"# {code} ({cls.name})\n\n{cls.summary}\n"
    return head + ("\n" + "\n".join(extras) + "\n" if extras else "") + "\n" + cls.doc() + "\n"


def _targets(root: Path, paths: list[str]) -> tuple[list[str], int]:
    """The .md files named by ``paths`` (files or directories), relative to ``root``; and how many were skipped."""
    from wikiengine.core.errors import WikiError
    from wikiengine.lint.context import LINTED_DIRS

    root_resolved = root.resolve()
    found: list[str] = []
    skipped = 0
    for raw in paths:
        if "\0" in raw:
            raise WikiError("a path contains a NUL byte")
        path = Path(raw)
        absolute = path if path.is_absolute() else Path.cwd() / path
        if not absolute.exists() and not absolute.is_symlink():
            raise WikiError("no such file or directory", raw)
        resolved = absolute.resolve()
        if resolved != root_resolved and root_resolved not in resolved.parents:
            raise WikiError(f"outside the wiki repository {root_resolved}", raw)
        rel = resolved.relative_to(root_resolved).as_posix()
        if absolute.is_symlink():
            raise WikiError("is a symbolic link; lint the file it points to", raw)
        candidates = []
        if resolved.is_dir():
            candidates = sorted(p.relative_to(root_resolved).as_posix() for p in resolved.rglob("*.md") if p.is_file())
        else:
            candidates = [rel] if rel.endswith(".md") else []
            skipped += 0 if candidates else 1
        for candidate in candidates:
            if candidate.split("/", 1)[0] in LINTED_DIRS:
                found.append(candidate)
            else:
                skipped += 1
    return sorted(set(found)), skipped


def run(args) -> int:
    from wikiengine.core.errors import WikiError
    from wikiengine.core.text import counted
    from wikiengine.core.version import __version__
    from wikiengine.lint import baseline as baseline_mod
    from wikiengine.lint import report
    from wikiengine.lint.config import load_config
    from wikiengine.lint.registry import REGISTRY, rule_class
    from wikiengine.lint.runner import lint
    from wikiengine.model.targets import repository_root

    if args.list_rules:
        print(list_rules())
        return 0
    if args.explain:
        print(explain(args.explain), end="")
        return 0
    if args.json:
        if args.format not in ("text", "json"):
            raise WikiError(f"--json and --format {args.format}: choose one")
        args.format = "json"
    if args.jobs is not None and args.jobs < 1:
        raise WikiError("--jobs must be at least 1")
    root = repository_root(args.root)
    config = load_config(root, args.config)
    config.check_codes(sorted(REGISTRY))
    if args.select is not None:
        config.select = _codes(args.select, "--select")
    config.ignore = config.ignore + _codes(args.ignore, "--ignore")
    paths, view = None, None
    if args.changed:
        if args.paths:
            raise WikiError("--changed takes no PATH")
        from wikiengine.lint.gitview import changed_view

        view = changed_view(root, args.since)
        paths = view.changed_pages()
    elif args.paths:
        paths, skipped = _targets(root, args.paths)
        if skipped:
            print(f"notice: {counted(skipped, 'path')} skipped: not markdown under wiki/, memory/ or .env/",
                  file=sys.stderr)
    options = dict(base=args.since, use_cache=not args.no_cache, jobs=args.jobs)
    result = lint(root, paths, config, use_baseline=not (args.no_baseline or args.write_baseline), view=view, **options)
    if args.fix:
        from wikiengine.lint.context import discover
        from wikiengine.lint.fixer import apply_fixes

        written = apply_fixes(root, config, result.findings, discover(root))
        if written:
            before = len(result.findings)
            result = lint(root, paths, config, use_baseline=not (args.no_baseline or args.write_baseline), **options)
            result.fixed = max(0, before - len(result.findings))
    for notice in result.notices:
        print(f"notice: {notice}", file=sys.stderr)
    if args.write_baseline:
        count = baseline_mod.write(root / baseline_mod.BASELINE_FILE, result.unfiltered, result.unreadable)
        print(f"Wrote {baseline_mod.BASELINE_FILE}: {counted(count, 'entry', 'entries')} "
              f"({counted(len(result.unfiltered), 'finding')}).")
        return 0
    findings = result.findings
    if args.statistics:
        summaries = {code: rule_class(code).summary for code in {f.code for f in findings}}
        if findings:
            print(report.statistics(findings, summaries))
        else:
            print(f"No findings to count: all checks passed ({counted(result.files_checked, 'file')}).")
    elif args.format == "json":
        print(report.as_json(findings))
    elif args.format == "sarif":
        print(report.sarif(findings, {code: rule_class(code) for code in {f.code for f in findings}}, __version__))
    else:
        print(report.text(findings, result.files_checked))
        if result.fixed:
            print(f"Fixed {counted(result.fixed, 'finding')}.")
        if result.baselined:
            print(f"({counted(result.baselined, 'finding')} accepted by {baseline_mod.BASELINE_FILE}.)")
    return ExitCode.FINDINGS if findings else ExitCode.OK
