"""Kernel experiment pages and family pages: the parts the kernel rules read and the
kernel writers write (``shared/reference/conventions.md``, Experiment pages).

A kernel experiment page is an experiment page (the four labelled paragraphs, the
template's sections, ``status``/``verdict``) that adds, in its frontmatter,
``activity: optimization | capability-eval``, ``intervention_class``, ``category``,
``class_page``, ``lever``, ``speedup_bar`` (the pre-registered bar), ``branch`` (its
candidate branch), ``verification_receipt`` and, on a supported verdict,
``verified_by: kernel-verifier``; and in its body:

- ``## Candidate plan``: the checklist ``- [ ] cand<N>: <what>`` (``[x]`` once authored);
- ``## Candidate ledger``: one table, a row per authored candidate,
  ``| cand | commit | what | p50 ms | speedup | parity |``;
- ``## Next hypotheses``: the leads, ``- **<lead-slug>**: <why>``.

The family page keeps leads under ``## Cross-variant open hypotheses`` and
``## Variant-specific open hypotheses`` (open) and ``## Retired hypotheses``, in the same
``- **<lead-slug>**: ...`` form, and levers ruled out on mechanism under
``## Ruled-out levers``. A class page (``class_page:``) lists ``## Levers (verified)``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.git import out as git_out
from wikiengine.core.page import Page, split_lines, title_key
from wikiengine.model.variant_matrix import split_row

CANDIDATE_PLAN = "Candidate plan"
CANDIDATE_LEDGER = "Candidate ledger"
NEXT_HYPOTHESES = "Next hypotheses"
OPEN_LEADS = ("Cross-variant open hypotheses", "Variant-specific open hypotheses")
RETIRED_LEADS = "Retired hypotheses"
RULED_OUT = "Ruled-out levers"
LEVERS_VERIFIED = "Levers (verified)"
VERIFIER = "kernel-verifier"
LEDGER_COLUMNS = ("cand", "commit", "what", "p50 ms", "speedup", "parity")
ACTIVITIES = ("optimization", "capability-eval")
_DELIMITER_RE = re.compile(r"\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*")
_PLAN_RE = re.compile(r"^[ \t]*[-*][ \t]+\[(?P<done>[ xX])\][ \t]+(?P<cand>cand\d+):[ \t]*(?P<what>.+?)[ \t]*$", re.M)
_LEAD_RE = re.compile(r"^[ \t]*[-*][ \t]+\*\*(?P<slug>[a-z0-9][a-z0-9-]*)\*\*[ \t]*:?[ \t]*(?P<why>.*)$", re.M)
CAND_SUBJECT_RE = re.compile(r"^cand(?P<n>\d+)\((?P<family>[^ )]+) (?P<vid>v\d{3,}[a-z]?)\): ")


@dataclass(frozen=True)
class LedgerRow:
    """One row of a kernel experiment page's candidate ledger."""

    line: int  # file line
    cells: dict[str, str]

    @property
    def cand(self) -> str:
        return self.cells.get("cand", "")


@dataclass(frozen=True)
class Ledger:
    """A kernel experiment page's candidate ledger: its heading's line, whether it is a table, its rows."""

    line: int  # the section heading's file line
    is_table: bool
    rows: tuple[LedgerRow, ...]


def _section(page: Page, title: str):
    key = title_key(title)
    return next((s for s in page.sections if s.leading_key == key or s.key == key), None)


def ledger(page: Page) -> Ledger | None:
    """The ``## Candidate ledger`` of a page (None: no such section)."""
    section = _section(page, CANDIDATE_LEDGER)
    if section is None:
        return None
    lines = split_lines(section.body)
    for index, line in enumerate(lines):
        if line.strip().startswith("|") and index + 1 < len(lines) and _DELIMITER_RE.fullmatch(lines[index + 1].rstrip("\r\n")):
            header = [c.strip().casefold() for c in split_row(line)]
            rows = []
            for offset in range(index + 2, len(lines)):
                if not lines[offset].strip().startswith("|"):
                    break
                values = split_row(lines[offset])
                rows.append(LedgerRow(section.body_line + offset, dict(zip(header, values))))
            return Ledger(section.line, True, tuple(rows))
    return Ledger(section.line, False, ())


def plan(page: Page) -> list[tuple[str, str, bool]]:
    """The Candidate plan's ``(cand, what, done)`` items."""
    section = _section(page, CANDIDATE_PLAN)
    return [(m.group("cand"), m.group("what"), m.group("done") != " ") for m in _PLAN_RE.finditer(section.body if section else "")]


def leads_in(page: Page, titles: tuple[str, ...]) -> dict[str, int]:
    """Lead slugs named under the sections ``titles`` -> the file line of each."""
    found: dict[str, int] = {}
    for title in titles:
        section = _section(page, title)
        if section is None:
            continue
        for match in _LEAD_RE.finditer(section.body):
            found.setdefault(match.group("slug"), section.body_line + section.body.count("\n", 0, match.start()))
    return found


def lead_texts(page: Page, titles: tuple[str, ...]) -> dict[str, str]:
    """Lead slugs named under the sections ``titles`` -> what each says, in page order."""
    found: dict[str, str] = {}
    for title in titles:
        section = _section(page, title)
        for match in _LEAD_RE.finditer(section.body if section else ""):
            found.setdefault(match.group("slug"), match.group("why").strip())
    return found


def experiment_leads(page: Page) -> dict[str, int]:
    return leads_in(page, (NEXT_HYPOTHESES,))


def open_leads(page: Page) -> dict[str, int]:
    return leads_in(page, OPEN_LEADS)


def family_leads(page: Page) -> set[str]:
    """Every lead the family page keeps: open or retired."""
    return set(leads_in(page, (*OPEN_LEADS, RETIRED_LEADS)))


def levers_verified(page: Page) -> list[str]:
    """The class page's ``## Levers (verified)``, as lead-form slugs."""
    return list(leads_in(page, (LEVERS_VERIFIED,)))


def ruled_out(page: Page) -> dict[str, str]:
    """Levers the family page rules out on mechanism: slug -> the reason."""
    section = _section(page, RULED_OUT)
    return {m.group("slug"): m.group("why").strip() for m in _LEAD_RE.finditer(section.body if section else "")
            if m.group("why").strip()}


def speedup_bar(frontmatter: dict) -> float | None:
    value = frontmatter.get("speedup_bar")
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*x?\s*", str(value)) if value is not None else None
    return float(match.group(1)) if match else None


def render_ledger_row(cand: str, commit: str, what: str, p50_ms: float | None, speedup: float | None, parity: str) -> str:
    what = " ".join(what.replace("|", "/").split())
    p50 = "—" if p50_ms is None else f"{p50_ms:.4g}"
    ratio = "—" if speedup is None else f"{speedup:.3g}x"
    return f"| {cand} | `{commit[:12]}` | {what} | {p50} | {ratio} | {parity} |"


def ledger_header() -> str:
    return "| " + " | ".join(LEDGER_COLUMNS) + " |\n|" + "|".join("---" for _ in LEDGER_COLUMNS) + "|\n"


def candidate_commits(root: Path, branch: str, family: str, vid: str) -> list[tuple[str, int, str]]:
    """``(sha, commit time, subject)`` of the branch's candidate commits of this experiment,
    oldest first (the grammar names the family and the v-id, so no base is needed)."""
    out = git_out(root, "log", "--format=%H%x00%ct%x00%s", f"refs/heads/{branch}", "--")
    found = []
    for line in out.splitlines():
        sha, _, rest = line.partition("\0")
        when, _, subject = rest.partition("\0")
        match = CAND_SUBJECT_RE.match(subject)
        if match and match.group("family") == family and match.group("vid") == vid:
            found.append((sha, int(when), subject))
    return found[::-1]
