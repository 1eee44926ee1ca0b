"""Where a kernel family's files live (seed 003 Step 1; ``shared/reference/conventions.md``).

A kernel family is ``wiki/kernel_experiments/<family>/pallas/``: its ``program.md``
(the family binding), ``log.md`` (the ``family`` log tier), ``RESULTS.tsv``, the
write-ahead journal ``.journal.jsonl``, receipts under ``receipts/``, retrospectives
``<YYYY-MM-DD>-retrospective[-N].md`` and one experiment page per mechanism
``<YYYY-MM-DD>-v<NNN>-<slug>.md``. The family page is ``wiki/kernels/<family>.md``
(``type: model``, ``lane: pallas``, variant rows keyed ``<op-point>/<hardware>``).

:class:`KernelFamily` has the shape of :class:`~wikiengine.model.lanes.Lane` (``dir``, ``log``,
``results``, ``program``, ``journal``, ``page_rels``), so the journal's id allocation and
the lane transaction work on it unchanged; its lock and redo record are those of
:attr:`KernelFamily.txn_lane`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from wikiengine.model.experiment import is_experiment_file_name
from wikiengine.model.lanes import Lane, LaneFolder

KERNEL_EXPERIMENTS_ROOT = "wiki/kernel_experiments"
KERNELS_DIR = "wiki/kernels"
KERNEL_LANE = "pallas"
RECEIPTS = "receipts"
WORKTREES = ".wiki/kernel-worktrees"
_FAMILY_PATH_RE = re.compile(r"wiki/kernel_experiments/(?P<family>[^/]+)/(?P<lane>[^/]+)/(?P<name>[^/]+)")
_RETRO_NAME_RE = re.compile(r"\d{4}-\d{2}-\d{2}-retrospective(?:-\d+)?\.md")
_PAGE_ID_RE = re.compile(r"\d{4}-\d{2}-\d{2}-v\d{3,}[a-z]?(?:-|\.md$)")
# Words a benchmark or test file adds around the operation's name (Quick-start rule 1).
_AFFIXES = ("bench", "benchmark", "benchmarks", "test", "tests", "kernel", "kernels", "pallas", "perf", "run")
_SLUG_RE = re.compile(r"[a-z0-9][a-z0-9_-]{0,59}")


@dataclass(frozen=True)
class KernelFamily(LaneFolder):
    """A kernel family's lane folder (``wiki/kernel_experiments/<slug>/<lane>``)."""

    slug: str  # flash_attention, layernorm
    name: str = KERNEL_LANE

    @property
    def dir(self) -> str:
        return f"{KERNEL_EXPERIMENTS_ROOT}/{self.slug}/{self.name}"

    @property
    def model_name(self) -> str:
        return self.slug

    @property
    def model_prefix(self) -> str:
        return self.slug

    @property
    def receipts_dir(self) -> str:
        return f"{self.dir}/{RECEIPTS}"

    @property
    def family_page(self) -> str:
        return f"{KERNELS_DIR}/{self.slug}.md"

    @property
    def integration_branch(self) -> str:
        return f"kernel/{self.slug}"

    def experiment_branch(self, vid: str) -> str:
        return f"kernel/{self.slug}-{vid}"

    @property
    def txn_lane(self) -> Lane:
        """The identity of the family's write lock and redo record (never a real lane)."""
        return Lane(f"kernel_experiments__{self.slug}", self.name)

    def worktree(self, root: Path, branch: str) -> Path:
        return root / WORKTREES / branch.replace("/", "__")

    def page_rels(self, root: Path) -> list[str]:
        """The family's experiment pages on disk, in path order."""
        try:
            names = sorted(p.name for p in (root / self.dir).iterdir() if p.is_file())
        except OSError:
            return []
        return [f"{self.dir}/{n}" for n in names if is_kernel_page_name(n)]

    def retrospective_rels(self, root: Path) -> list[str]:
        try:
            names = sorted(p.name for p in (root / self.dir).iterdir() if p.is_file())
        except OSError:
            return []
        return [f"{self.dir}/{n}" for n in names if _RETRO_NAME_RE.fullmatch(n)]


def is_kernel_page_name(name: str) -> bool:
    """An experiment page of a family folder: not a lane file, not a retrospective."""
    return is_experiment_file_name(name) and not _RETRO_NAME_RE.fullmatch(name)


def family_of_path(rel: str) -> KernelFamily | None:
    """The family a path of ``wiki/kernel_experiments/<family>/<lane>/`` belongs to."""
    match = _FAMILY_PATH_RE.fullmatch(rel)
    return KernelFamily(match.group("family"), match.group("lane")) if match else None


def is_kernel_experiment_path(rel: str) -> bool:
    match = _FAMILY_PATH_RE.fullmatch(rel)
    return match is not None and is_kernel_page_name(match.group("name"))


def is_kernel_retrospective_path(rel: str) -> bool:
    match = _FAMILY_PATH_RE.fullmatch(rel)
    return match is not None and _RETRO_NAME_RE.fullmatch(match.group("name")) is not None


def is_family_page_path(rel: str) -> bool:
    return rel.startswith(KERNELS_DIR + "/") and rel.count("/") == 2 and rel.endswith(".md")


def family_of_page(rel: str) -> KernelFamily | None:
    """The family whose family page is ``rel`` (``wiki/kernels/<family>.md``)."""
    return KernelFamily(rel.rsplit("/", 1)[-1][: -len(".md")]) if is_family_page_path(rel) else None


def _fold(text: str) -> str:
    return re.sub(r"[-_\s]+", "-", text.casefold()).strip("-")


def operation_name(text: str) -> str:
    """The hyphenated operation a kernel path or name names, without benchmark affixes:
    ``kernels/bench_flash_attention.py`` and ``flash-attention-kernel`` are ``flash-attention``."""
    stem = re.sub(r"\.(py|md|json|sh)$", "", text.strip().rstrip("/").rsplit("/", 1)[-1])
    words = [w for w in re.split(r"[-_\s.]+", stem.casefold()) if w]
    while words and words[0] in _AFFIXES:
        words.pop(0)
    while words and words[-1] in _AFFIXES:
        words.pop()
    return "-".join(words)


def derive_slug(root: Path, named: str) -> str:
    """The family slug (Quick-start rule 1): an existing family page stem or family folder
    that matches (``flash_attention`` for ``bench_flash_attention.py``), else the
    hyphenated operation name. Two calls for the same kernel land on the same slug."""
    from wikiengine.core.errors import WikiError

    wanted = operation_name(named)
    if not wanted:
        raise WikiError(f"cannot derive a kernel family from {named!r}")
    existing = []
    try:
        existing += sorted(p.stem for p in (root / KERNELS_DIR).iterdir() if p.is_file() and p.suffix == ".md")
    except OSError:
        pass
    try:
        existing += sorted(p.name for p in (root / KERNEL_EXPERIMENTS_ROOT).iterdir() if p.is_dir())
    except OSError:
        pass
    for stem in existing:
        if _fold(stem) == wanted or _fold(stem) == _fold(named):
            return stem
    if not _SLUG_RE.fullmatch(wanted):
        raise WikiError(f"family slug {wanted!r} is not lower-case [a-z0-9_-]")
    return wanted
