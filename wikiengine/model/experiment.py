"""Experiment pages: ids, file names, status and verdict, sections, placeholders.

The one model of an experiment page that the lint rules read and the lane writers
(`wiki exp`, `wiki backfill`) write, in the formats of real wikis
(``shared/reference/conventions.md``):

- file name ``<YYYY-MM-DD>-v<NNN>[<letter>]-<slug>.md``; a reader also takes the id
  after text that precedes it (``2026-06-03-qwen3-jax-v024-...``), a retry letter
  (``v043b``), an id in the frontmatter (``id:``/``vid:``) and the older
  ``<date>-exp<NN>-<slug>-<accepted|rejected|potential>.md`` when configured;
- ``status: in_progress | filed`` plus ``verdict:``; the older forms ``verdict:`` with no
  ``status:`` (a filed page) and ``status: <verdict>`` are read as filed;
- H2 sections in the template's order, matched by leading title, with aliases
  (``## Verdict + reasoning`` is Verdict); placeholders (``TBD``, ``(Pending)``,
  ``<...>``) are empty content.
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

VERDICTS = ("supported", "refuted", "inconclusive", "invalid")
IN_PROGRESS = "in_progress"
FILED = "filed"
STATUSES = (IN_PROGRESS, FILED)
# Free strings real wikis used for a stub that is still open (read as in progress, so a
# stale one is still found; the schema rule reports the string itself).
OPEN_STATUS_WORDS = ("in_progress", "in-progress", "running", "pending", "draft", "stub", "todo", "tbd")

LABELS = ("Hypothesis", "Mechanism", "Predicted signal", "Falsification criterion")
HYPOTHESIS_SECTION = "Hypothesis under test"
SECTION_ORDER = (
    HYPOTHESIS_SECTION,
    "Setup",
    "Baseline comparison",
    "Results",
    "Profile",
    "HLO Dump",
    "Observations",
    "Verdict",
    "Cross-variant relevance",
    "Next hypotheses",
)
REQUIRED_SECTIONS = (HYPOTHESIS_SECTION, "Setup", "Results", "Profile", "HLO Dump", "Verdict")
# Leading titles that name a section under another title (the template's own title first).
SECTION_ALIASES = {"Verdict": ("Verdict + reasoning", "Verdict and reasoning")}
NOT_RECOVERED = "**Hypothesis not recovered**"
# Files of a lane folder that are not experiment pages (upper-case notes are not either).
LANE_FILES = frozenset({"program.md", "log.md", "readme.md", "index.md", "refuted-patterns.md"})
FIRING_AUDIT_RE = re.compile(r"(?i)\bfiring[- ]audit\b[^\n]*?\b(confirmed|silent no-op|partial)\b")

DEFAULT_ID_PATTERN = r"v\d{3,}[a-z]?"
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_VID_RE = re.compile(r"[vV]?0*(\d+)([a-z]?)")
_PLACEHOLDER_RE = re.compile(
    r"(?is)\s*(?:[-*>]\s*)?(?:_|\*)*\(?\s*(?:tbd|tba|todo|pending|placeholder|to be (?:filled|added|written)"
    r"|n/?a|none yet|empty)\s*\.?\s*\)?(?:_|\*)*\s*"
    r"|\s*<[^<>\n]{1,80}>\s*|\s*(?:—|–|-|\.\.\.|…)\s*"
)
_COMMENT_RE = re.compile(r"<!--.*?-->", re.S)


def real_date(text) -> dt.date | None:
    """``YYYY-MM-DD`` as a date when it is a real calendar date, else None."""
    if not isinstance(text, str) or not _DATE_RE.fullmatch(text):
        return None
    try:
        return dt.date.fromisoformat(text)
    except ValueError:
        return None


def frontmatter_date(value) -> str | None:
    """The ``YYYY-MM-DD`` part of a frontmatter date (dates arrive as ISO strings)."""
    if isinstance(value, str) and _DATE_RE.match(value) and real_date(value[:10]):
        return value[:10]
    return None


@dataclass(frozen=True, order=True)
class VId:
    """An experiment id of the default scheme: ``v043`` (number 43), a retry ``v043b``."""

    number: int
    letter: str = ""

    def __str__(self) -> str:
        return f"v{self.number:03d}{self.letter}"

    @property
    def base(self) -> str:
        """The id without its retry letter (``v043b`` -> ``v043``)."""
        return f"v{self.number:03d}"

    def next_letter(self) -> VId:
        """The next retry of this id: ``v043`` -> ``v043b`` -> ``v043c``."""
        letter = "b" if not self.letter else chr(ord(self.letter) + 1)
        if letter > "z":
            raise ValueError(f"{self} has no retry letter left")
        return VId(self.number, letter)


def parse_vid(raw) -> VId | None:
    """``v45``, ``v045``, ``V0045``, ``v043b`` and a bare ``45`` (``id: 45``) as a :class:`VId`."""
    if isinstance(raw, bool):
        return None
    match = _VID_RE.fullmatch(str(raw).strip())
    return VId(int(match.group(1)), match.group(2)) if match else None


def canonical_id(raw) -> str:
    """One spelling per id (``v45`` and ``v045`` are ``v045``); other schemes as written."""
    vid = parse_vid(raw)
    return str(vid) if vid is not None else str(raw).strip()


def base_id(exp_id: str) -> str:
    """An id without its retry letter (ids of other schemes unchanged)."""
    vid = parse_vid(exp_id)
    return vid.base if vid is not None else exp_id


def file_name_regexes(id_pattern: str = DEFAULT_ID_PATTERN) -> tuple[re.Pattern, re.Pattern]:
    """``(conforming, reader)``: the exact file-name grammar, and the reader's, which
    also takes the id after text that precedes it (the first id token after the date)."""
    exact = re.compile(r"(?P<date>\d{4}-\d{2}-\d{2})-(?P<id>" + id_pattern + r")-(?P<slug>[a-z0-9][a-z0-9-]*)\.md")
    reader = re.compile(
        r"(?P<date>\d{4}-\d{2}-\d{2})-(?:[A-Za-z0-9_.]+-)*?(?P<id>" + id_pattern + r")(?=-|\.md$)(?:-(?P<slug>.*?))?\.md"
    )
    return exact, reader


@dataclass(frozen=True)
class FileName:
    """What a reader takes from an experiment page's file name."""

    date: str | None
    exp_id: str | None  # canonical
    slug: str | None
    conforming: bool  # follows <date>-<id>-<slug>.md exactly


def parse_file_name(name: str, regexes: tuple[re.Pattern, re.Pattern] | None = None) -> FileName:
    """The date, id and slug of an experiment page's file name, read as a person reads it."""
    exact, reader = regexes or _DEFAULT_REGEXES
    match = exact.fullmatch(name)
    conforming = match is not None
    match = match or reader.fullmatch(name)
    if match is None:
        date = name[:10] if real_date(name[:10]) else None
        return FileName(date, None, None, False)
    date = match.group("date") if real_date(match.group("date")) else None
    return FileName(date, canonical_id(match.group("id")), match.group("slug"), conforming)


_DEFAULT_REGEXES = file_name_regexes()


def page_file_name(date: str, exp_id: str, slug: str) -> str:
    """The file name the writers give a page: ``<date>-<id>-<slug>.md``."""
    return f"{date}-{exp_id}-{slug}.md"


def resolve_verdict(frontmatter: dict) -> tuple[str | None, str | None]:
    """``(verdict, problem)`` from the current form and the older ones.

    ``verdict`` is one of :data:`VERDICTS` or None (in progress, or unknown);
    ``problem`` says how the page disagrees with itself, or is None.
    """
    status = frontmatter.get("status")
    verdict_key = frontmatter.get("verdict")
    if isinstance(status, str) and status in VERDICTS:
        if verdict_key is not None and verdict_key != status:
            return status, f"status is {status!r} but verdict is {verdict_key!r}"
        return status, None
    if status == FILED:
        if verdict_key in VERDICTS:
            return verdict_key, None
        if verdict_key is None:
            return None, "status is 'filed' but there is no verdict key"
        return None, f"status is 'filed' but verdict {verdict_key!r} is not one of {', '.join(VERDICTS)}"
    if status == IN_PROGRESS and verdict_key is not None:
        return None, f"status is 'in_progress' but verdict is {verdict_key!r}"
    if status is None and verdict_key in VERDICTS:
        return verdict_key, None  # older form: a verdict with no status is a filed page
    return None, None


def is_open(frontmatter: dict) -> bool:
    """Is the page a stub still open (``in_progress``, or a free word such as ``running``)?"""
    verdict, _problem = resolve_verdict(frontmatter)
    if verdict is not None:
        return False
    status = frontmatter.get("status")
    return isinstance(status, str) and status.strip().casefold() in OPEN_STATUS_WORDS


def is_filed(frontmatter: dict) -> bool:
    """Has the page a verdict (and is therefore immutable)?"""
    return resolve_verdict(frontmatter)[0] is not None


# A labelled paragraph: the bold label at the start of a line (or list item), an optional
# "(…)" gloss and a colon, then the text of the paragraph.
_LABEL_RES = {
    label: re.compile(
        r"^[ \t]*(?:[-*+][ \t]+)?\*\*" + re.escape(label) + r"(?::\*\*|\*\*:?)[ \t]*(?:\([^)\n]*\))?[ \t]*:?(?P<rest>.*(?:\n(?![ \t]*\n)(?![ \t]*(?:[-*+][ \t]+)?\*\*).*)*)",
        re.I | re.M,
    )
    for label in LABELS
}


def labelled_paragraphs(body: str) -> dict[str, tuple[str, int]]:
    """The text of each labelled paragraph of ``body`` and its line (0-based) in ``body``."""
    found = {}
    for label in LABELS:
        match = _LABEL_RES[label].search(body)
        if match is not None:
            text = " ".join(match.group("rest").lstrip(" \t*_:").split())
            text = "" if not text.strip(" *_:.-—") else text
            found[label] = (text, body.count("\n", 0, match.start()))
    return found


def missing_labels(body: str) -> list[str]:
    """The labelled paragraphs that ``body`` lacks (or whose text is empty)."""
    found = labelled_paragraphs(body)
    return [label for label in LABELS if not found.get(label, ("", 0))[0]]


def is_placeholder(text: str) -> bool:
    """Is ``text`` empty content: nothing, a comment, ``TBD``, ``(Pending)``, ``<...>``?"""
    stripped = _COMMENT_RE.sub("", text).strip()
    return not stripped or _PLACEHOLDER_RE.fullmatch(stripped) is not None


def section_titles(title: str) -> tuple[str, ...]:
    """The leading titles that name the section ``title`` (the title and its aliases)."""
    return (title, *SECTION_ALIASES.get(title, ()))


def is_experiment_file_name(name: str) -> bool:
    """An experiment page is a ``.md`` file of a lane folder that is not one of the lane's
    own files (``log.md``, ``program.md``) nor an upper-case note (``OBSERVATIONS.md``)."""
    if not name.endswith(".md") or name.casefold() in LANE_FILES:
        return False
    stem = name[: -len(".md")]
    return not (stem.upper() == stem and any(c.isalpha() for c in stem))



def metric_of(frontmatter: dict, name: str) -> float | None:
    """A page's headline metric (``mfu: 41.3`` or ``metrics: {mfu: 41.3}``; ``"41.3%"`` is read too)."""
    value = frontmatter.get(name)
    if value is None and isinstance(frontmatter.get("metrics"), dict):
        value = frontmatter["metrics"].get(name)
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        match = re.fullmatch(r"\s*(-?\d+(?:\.\d+)?)\s*%?\s*", value)
        return float(match.group(1)) if match else None
    return None
