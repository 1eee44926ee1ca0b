"""Output formats of ``wiki lint``: ruff's text shape, JSON, SARIF 2.1.0 and statistics."""

from __future__ import annotations

import json
from collections import Counter

from wikiengine.core.text import counted
from wikiengine.lint.finding import Finding

SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def text(findings: list[Finding], files_checked: int, *, fixable_hint: bool = True) -> str:
    """``path:line:col: CODE message`` lines, then a summary line."""
    lines = [f.render() for f in findings]
    if findings:
        files = len({f.path for f in findings})
        lines.append(f"Found {counted(len(findings), 'finding')} in {files} of {counted(files_checked, 'file')}.")
        fixable = sum(1 for f in findings if f.fixable)
        if fixable and fixable_hint:
            lines.append(f"[*] {fixable} fixable with `wiki lint --fix`.")
    else:
        lines.append(f"All checks passed ({counted(files_checked, 'file')}).")
    return "\n".join(lines)


def as_json(findings: list[Finding]) -> str:
    return json.dumps([f.as_dict() for f in findings], indent=2, ensure_ascii=False)


def statistics(findings: list[Finding], summaries: dict[str, str]) -> str:
    """One line per code, most frequent first: count, code, fixable mark, summary."""
    counts = Counter(f.code for f in findings)
    fixable = {f.code for f in findings if f.fixable}
    width = max((len(str(n)) for n in counts.values()), default=1)
    return "\n".join(
        f"{n:>{width}}  {code:<7} {'[*]' if code in fixable else '   '} {summaries.get(code, '')}".rstrip()
        for code, n in sorted(counts.items(), key=lambda item: (-item[1], item[0]))
    )


def sarif(findings: list[Finding], rules: dict[str, type], version: str) -> str:
    """A SARIF 2.1.0 log for code-scanning UIs."""
    used = sorted({f.code for f in findings})
    index = {code: i for i, code in enumerate(used)}
    descriptors = []
    for code in used:
        cls = rules.get(code)
        descriptors.append(
            {
                "id": code,
                "name": getattr(cls, "name", code),
                "shortDescription": {"text": getattr(cls, "summary", code)},
                "help": {"text": cls.doc() if cls else "", "markdown": cls.doc() if cls else ""},
            }
        )
    results = [
        {
            "ruleId": f.code,
            "ruleIndex": index[f.code],
            "level": "error",
            "message": {"text": f.message},
            "locations": [
                {
                    "physicalLocation": {
                        "artifactLocation": {"uri": f.path, "uriBaseId": "%SRCROOT%"},
                        "region": {"startLine": f.line, "startColumn": f.col},
                    }
                }
            ],
        }
        for f in findings
    ]
    log = {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {"driver": {"name": "wiki lint", "version": version, "rules": descriptors}},
                "results": results,
            }
        ],
    }
    return json.dumps(log, indent=2, ensure_ascii=False)
