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

A page is one record, :class:`ExperimentPage`, whichever reader holds it: the EXP and KRN
rules build it from what lint has cached, the lane and kernel writers from disk.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import functools
import os
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.errors import PageError, WikiError
from wikiengine.core.page import Page, Section, parse_page, read_frontmatter, read_text, split_frontmatter, title_key
from wikiengine.core.text import folded

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.model.lanes import LaneFolder

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
# The hypothesis-firing audit line of a ``## HLO Dump`` (conventions.md): ``Hypothesis-firing
# audit: CONFIRMED``, ``Firing audit: partial — ...`` anywhere in a line; ``FIRING CONFIRMED``,
# ``SILENT NO-OP`` or a bare ``PARTIAL`` (``**PARTIAL** — fired in 2 of 3 layers``) leading a
# line. The same words inside prose ("a partial fusion", "maybe a silent no-op") are not an
# audit; read the outcome with :func:`firing_audit`.
FIRING_AUDIT_RE = re.compile(
    r"(?im)\bfiring[- ]audit\b[^\n]*?\b(?P<audit>confirmed|silent[- ]no[- ]?op|partial)\b"
    r"|^[ \t>*_#+-]*(?:(?:hypothesis[- ])?audit\W*)?"
    r"(?:firing[- ](?P<firing>confirmed|partial)|(?P<silent>silent[- ]no[- ]?op)|(?P<bare>partial))\b"
)


def firing_audit(text: str | None) -> str | None:
    """The outcome of the first firing-audit line in ``text``: ``confirmed``, ``silent no-op``
    or ``partial`` (None: no audit line)."""
    match = FIRING_AUDIT_RE.search(text or "")
    if match is None:
        return None
    outcome = next(g for g in match.groups() if g).lower()
    return "silent no-op" if outcome.startswith("silent") else outcome

DEFAULT_ID_PATTERN = r"v\d{3,}[a-z]?"
AA_NUMBER = 0  # A/A workloads are v000 (model/evidence.py): no experiment ever has that id
AA_VID = "v000"
_DATE_RE = re.compile(r"\d{4}-\d{2}-\d{2}")
_VID_RE = re.compile(r"[vV]?0*(\d{1,9})([a-z]?)")  # a longer number is no id (never a 5000-digit int())
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


@functools.lru_cache(maxsize=1 << 14)  # a writer reads its lane's names, then its re-lint reads them again
def parse_file_name(name: str, regexes: tuple[re.Pattern, re.Pattern] | None = None) -> FileName:
    """The date, id and slug of an experiment page's file name, read as a person reads it."""
    exact, reader = regexes or _DEFAULT_REGEXES
    match = exact.fullmatch(name)
    conforming = match is not None
    match = match or reader.fullmatch(name)
    if match is None:
        date = name[:10] if real_date(name[:10]) else None
        return FileName(date, None, None, False)
    date, raw_id, slug = match.group("date", "id", "slug")
    vid = parse_vid(raw_id)
    exp_id = str(vid) if vid is not None else raw_id.strip()  # canonical_id(raw_id), the id parsed once
    hyphened = _HYPHEN_RETRY_RE.match(slug or "") if vid is not None and not vid.letter else None
    if hyphened:  # `v057-e-rerun`: the retry v057e, hyphen-written
        exp_id, slug = str(VId(vid.number, hyphened.group(1))), hyphened.group(2) or None
    return FileName(date if real_date(date) else None, exp_id, slug, conforming)


# A retry letter written after a hyphen (`v057-e`, `v057-f-longer-warmup`): conventions.md
# met 27 reruns of one id in that form. Only b-z: `a` is never a retry letter.
_HYPHEN_RETRY_RE = re.compile(r"([b-z])(?:-(.+))?$")
_HYPHEN_LETTER_RE = re.compile(r"-([b-z])(?![A-Za-z0-9])")


def with_hyphen_retry(exp_id: str, text: str, end: int) -> str:
    """``exp_id`` as read at ``text[:end]``, with a retry letter written after a hyphen
    right after it (`v196-b-rerun` in a log heading names the retry v196b)."""
    vid = parse_vid(exp_id)
    letter = _HYPHEN_LETTER_RE.match(text, end)
    return str(VId(vid.number, letter.group(1))) if vid is not None and not vid.letter and letter else exp_id


_DEFAULT_REGEXES = file_name_regexes()


def page_file_name(date: str, exp_id: str, slug: str) -> str:
    """The file name the writers give a page: ``<date>-<id>-<slug>.md``."""
    return f"{date}-{exp_id}-{slug}.md"


def misread_id(slug: str) -> str | None:
    """The id a reader takes from the writers' name of v001's page with ``slug`` where it is
    another (a slug that begins with a one-letter word: ``v001-t-warmup`` is the retry v001t)."""
    read = parse_file_name(page_file_name("2000-01-01", "v001", slug)).exp_id
    return read if read != "v001" else None


def refuse_a_misread_slug(slug: str) -> None:
    """Refuse (exit 2) a slug whose page name would read as another id than the writer's."""
    if read := misread_id(slug):
        raise WikiError(f"slug {slug!r} begins with a one-letter word, which reads as a retry letter (v001-{slug} "
                        f"is the retry {read}): a longer word")


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


# --- the page record -------------------------------------------------------------------------


def has_content(sections: list[Section]) -> bool:
    """Is any of ``sections`` filled? An empty heading, or one holding only a placeholder
    (``TBD``, ``(Pending)``, ``<...>``), does not satisfy a required section."""
    return any(not s.is_empty() and not is_placeholder(s.body) for s in sections)


_SECTION_INDEXES: dict[int, tuple[Page, dict[str, list[Section]]]] = {}
_title_key = functools.lru_cache(maxsize=256)(title_key)


def sections_led_by(page: Page, title: str) -> list[Section]:
    """Sections whose leading title is ``title`` or one of its aliases (``## Results — marginal
    (+0.6%)`` is Results, ``## Verdict + reasoning`` is Verdict).

    From an index built once per page: the rules ask about six titles each, and title keys
    cost a regex apiece.
    """
    cached = _SECTION_INDEXES.get(id(page))
    if cached is None or cached[0] is not page:
        index: dict[str, list[Section]] = {}
        for section in page.sections:
            for key in {section.key, section.leading_key}:
                index.setdefault(key, []).append(section)
        if len(_SECTION_INDEXES) > 64:  # only the pages being read right now
            _SECTION_INDEXES.clear()
        cached = _SECTION_INDEXES[id(page)] = (page, index)
    found = []
    for name in section_titles(title):
        found += cached[1].get(_title_key(name), [])
    return found


class ExperimentPage:
    """One experiment page, as the lint rules read it and the writers write it.

    ``rel`` is its repository path and ``folder`` the lane (:class:`~wikiengine.model.lanes.Lane`)
    or kernel family (:class:`~wikiengine.model.kernels.KernelFamily`) it belongs to, when
    known. Its frontmatter is read once, by :func:`~wikiengine.core.page.read_frontmatter`; a
    page whose frontmatter cannot be read has ``{}`` and the error as :attr:`problem`. Its
    text and parsed page are read only when asked: a lane of hundreds of pages is mostly
    looked at by name.

    :meth:`at` reads a page from disk (the writers); :meth:`known` wraps what a reader
    already holds (lint: the cached frontmatter, and the page that it parses on demand).
    """

    def __init__(self, rel: str, folder: LaneFolder | None = None, *, name: FileName | None = None,
                 root: Path | None = None, frontmatter: dict | None = None,
                 load_page: Callable[[], Page | None] | None = None):
        self.rel = rel
        self.folder = folder
        self._name = name
        self._root = root
        self._frontmatter = frontmatter
        self._problem: PageError | None = None
        self._load_page = load_page

    @classmethod
    def at(cls, root: Path, rel: str, folder: LaneFolder | None = None) -> ExperimentPage:
        """The page ``<root>/<rel>``, read from disk when asked."""
        return cls(rel, folder, root=root)

    @classmethod
    def known(cls, rel: str, folder: LaneFolder | None, name: FileName | None, frontmatter: dict,
              load_page: Callable[[], Page | None]) -> ExperimentPage:
        """A page whose frontmatter a reader has already read; ``load_page`` parses it when asked."""
        return cls(rel, folder, name=name, frontmatter=frontmatter, load_page=load_page)

    def __repr__(self) -> str:
        return f"ExperimentPage({self.rel!r})"

    # --- where it is and what its name says

    @property
    def file_name(self) -> str:
        return self.rel.rsplit("/", 1)[-1]

    @property
    def name(self) -> FileName:
        """What the file name says (the default id scheme, unless the reader gave its own)."""
        if self._name is None:
            self._name = parse_file_name(self.file_name)
        return self._name

    @property
    def file_date(self) -> str | None:
        return self.name.date

    @property
    def file_id(self) -> str | None:
        """The canonical id from the file name."""
        return self.name.exp_id

    @property
    def slug(self) -> str | None:
        return self.name.slug

    @property
    def lane_key(self) -> tuple[str, str]:
        """``(model folder, lane)`` of a lane's page."""
        return self.folder.key

    # --- text, frontmatter and the parsed page

    @functools.cached_property
    def text(self) -> str:
        if self._root is None:
            page = self.page
            return page.to_text() if page is not None else ""
        return read_text(os.path.join(self._root, self.rel), self.rel)  # a lane's 500 pages: no pathlib

    @property
    def frontmatter(self) -> dict:
        if self._frontmatter is None:
            try:
                self._frontmatter = read_frontmatter(self.text, self.rel)
            except PageError as err:
                self._frontmatter, self._problem = {}, err
        return self._frontmatter

    @property
    def problem(self) -> PageError | None:
        """Why the page's frontmatter cannot be read (None: it can)."""
        _ = self.frontmatter
        return self._problem

    @property
    def page(self) -> Page | None:
        """The parsed page (PageError when it cannot be parsed)."""
        if self._load_page is not None:
            return self._load_page()
        return self._parsed

    @functools.cached_property
    def _parsed(self) -> Page:
        """The page parsed once, its YAML the frontmatter already read (never loaded twice)."""
        page = parse_page(self.text, self.rel, parse_yaml=False)
        if self.problem is not None:
            raise self.problem
        return dataclasses.replace(page, frontmatter=self.frontmatter)

    # --- status and verdict

    @property
    def status(self):
        return self.frontmatter.get("status")

    @property
    def backfilled(self) -> bool:
        return self.frontmatter.get("backfilled") is True

    @property
    def frontmatter_id(self) -> str | None:
        value = self.frontmatter.get("id", self.frontmatter.get("vid"))
        return canonical_id(value) if value is not None else None

    @property
    def exp_id(self) -> str | None:
        """The page's id: from the file name, else from the frontmatter."""
        return self.file_id or self.frontmatter_id

    @functools.cached_property
    def _verdict(self) -> tuple[str | None, str | None]:
        return resolve_verdict(self.frontmatter)

    @property
    def verdict(self) -> str | None:
        """One of :data:`VERDICTS`, or None (in progress, or unknown): :func:`resolve_verdict`."""
        return self._verdict[0]

    @property
    def verdict_problem(self) -> str | None:
        """How the frontmatter's status and verdict disagree, or None."""
        return self._verdict[1]

    @property
    def is_filed(self) -> bool:
        return self.verdict is not None

    @property
    def is_open(self) -> bool:
        """Is the page a stub still open (:func:`is_open`)? Read from disk, a frontmatter that
        holds none of the open words is not open, and costs no YAML parse (most pages of a
        lane are filed)."""
        if self._frontmatter is None and self._root is not None and not self._holds_open_word:
            return False
        return is_open(self.frontmatter)

    @functools.cached_property
    def _holds_open_word(self) -> bool:
        """Does the frontmatter on disk hold one of the open words? Asked once per page object
        (the watcher's checks and a writer's gates ask again); an unreadable page holds none:
        its frontmatter reads as {}."""
        try:
            text = self.text
            block = split_frontmatter(text[1:] if text.startswith("\ufeff") else text)[1].casefold()
        except PageError:
            return False
        return any(word in block for word in OPEN_STATUS_WORDS)

    @property
    def branch(self) -> str | None:
        """A kernel page's candidate branch (``branch:``), when it names one."""
        value = self.frontmatter.get("branch")
        return value if isinstance(value, str) and value.strip() else None

    # --- sections and the labelled paragraphs

    def sections_led_by(self, title: str) -> list[Section]:
        """The page's sections led by ``title`` (:func:`sections_led_by`)."""
        return sections_led_by(self.page, title)

    @property
    def paragraphs(self) -> dict[str, tuple[str, int]]:
        """The labelled paragraphs of the first ``## Hypothesis under test`` (:func:`labelled_paragraphs`)."""
        found = self.sections_led_by(HYPOTHESIS_SECTION)
        return labelled_paragraphs(found[0].body if found else "")

    @functools.cached_property
    def mechanism(self) -> str:
        """The **Mechanism** paragraph, folded for comparison (from the whole body when the
        page has no hypothesis section): one page per mechanism. Read once per page object (a
        lane's reader may give it the answer kept for the page's signature)."""
        found = self.sections_led_by(HYPOTHESIS_SECTION)
        body = found[0].body if found else self.page.body
        return folded(labelled_paragraphs(body).get("Mechanism", ("", 0))[0])
