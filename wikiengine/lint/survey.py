"""What the engine can and cannot read of a wiki as it is (``wiki adopt``'s report).

A wiki that grew by hand (``shared/reference/conventions.md``, "A wiki that grew by hand")
has lanes without a ``program.md`` or a ``log.md``, ledgers with columns of their own,
variant matrices whose cells hold several figures, hyphen-written reruns and local
checkouts git does not track. :func:`survey` reads every lane and kernel family through
the same model the rules and writers use, and says per lane what it read and where it
could not; :func:`wiki_wide` says where the checkouts and artifact folders are.
Nothing here writes.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.core.page import load_page
from wikiengine.lint.config import LintConfig
from wikiengine.lint.gitview import TrackedTree, ignored_paths
from wikiengine.model import cascade, targets
from wikiengine.model.cell_figures import DEFAULT_METRIC, read_figure
from wikiengine.model.experiment import parse_file_name, parse_vid
from wikiengine.model.kernels import KERNEL_EXPERIMENTS_ROOT, KernelFamily
from wikiengine.model.lanes import Lane
from wikiengine.model.logbook import GLOBAL_LOG, LANE_ONLY_OPS, parse_entries
from wikiengine.model.results_tsv import header_of
from wikiengine.model.variant_matrix import BASELINE, CURRENT_BEST, parse_matrix

FIGURE_COLUMNS = (BASELINE, CURRENT_BEST)
_SKIPPED_DIRS = {".git", ".wiki", ".wiki_cache", "node_modules", "__pycache__", ".venv", "venv"}
CHECKOUT_DEPTH = 4  # <checkout path>/<repo>/ lies this deep at most (raw/code/<repo> is 3)


@dataclass
class LaneSurvey:
    """One lane (or kernel family) as the engine reads it; ``problems`` are what it could not."""

    dir: str
    kind: str  # "lane" or "kernel"
    program: dict = field(default_factory=dict)
    log: dict = field(default_factory=dict)
    results: dict = field(default_factory=dict)
    model_page: dict = field(default_factory=dict)
    ids: dict = field(default_factory=dict)
    journal: bool = False
    problems: list[str] = field(default_factory=list)

    def as_json(self) -> dict:
        return asdict(self)


def lane_folders(root: Path) -> list[tuple[Lane | KernelFamily, targets.Target | None]]:
    """Every lane folder of every model, and every kernel family with a ``pallas`` folder,
    with its cascade target (None: the target cannot be built)."""
    found: list[tuple[Lane | KernelFamily, targets.Target | None]] = []
    for model_dir in targets.list_models(root):
        for name in targets.list_lanes(root, model_dir, with_program=False):
            found.append((Lane(model_dir, name), _target(targets.target_for_model, root, model_dir, name)))
    for slug in targets.list_children(root / KERNEL_EXPERIMENTS_ROOT):
        family = KernelFamily(slug)
        if (root / family.dir).is_dir():
            found.append((family, _target(targets.target_for_kernel, root, slug)))
    return found


def _target(build, root: Path, *names: str) -> targets.Target | None:
    try:
        return build(root, *names)
    except WikiError:
        return None


def survey(root: Path, config: LintConfig) -> list[LaneSurvey]:
    """What the engine reads of each lane and kernel family under ``root``."""
    out = []
    for folder, target in lane_folders(root):
        lane = LaneSurvey(folder.dir, "kernel" if isinstance(folder, KernelFamily) else "lane")
        metric = _program(lane, root, folder, target, config)
        _log(lane, root, folder.log)
        _results(lane, root, folder.results)
        page = folder.family_page if isinstance(folder, KernelFamily) else folder.model_page(root)
        _matrix(lane, root, page, metric)
        _ids(lane, folder.page_rels(root))
        lane.journal = (root / folder.journal).is_file()
        out.append(lane)
    return out


def _program(lane: LaneSurvey, root: Path, folder, target, config: LintConfig) -> str:
    """Record whether the cascade resolves the lane's program; return the lane's target metric."""
    own = (root / folder.program).is_file()
    lane.program = {"own": own, "resolves": False, "error": None, "target_metric": DEFAULT_METRIC}
    if target is None:
        lane.program["error"] = "no cascade target for this folder"
    else:
        try:
            program = cascade.resolve(target, additive_marker=config.additive_marker, validate=False)
            lane.program["resolves"] = True
            lane.program["target_metric"] = str((program.config or {}).get("target_metric", DEFAULT_METRIC))
        except WikiError as error:
            lane.program["error"] = str(error)
    if not own:
        lane.problems.append("no program.md: the lane inherits its whole program from the levels above")
    if lane.program["error"]:
        lane.problems.append(f"program does not resolve: {lane.program['error']}")
    return lane.program["target_metric"]


def _log(lane: LaneSurvey, root: Path, rel: str) -> None:
    lane.log = {"present": (root / rel).is_file(), "entries": 0, "ops": {}, "out_of_order": 0, "malformed": 0,
                "oldest": None, "error": None}
    if not lane.log["present"]:
        lane.problems.append("no log.md")
        return
    try:
        entries = parse_entries(load_page(root / rel))
    except WikiError as error:
        lane.log["error"] = str(error)
        lane.problems.append(f"log.md does not parse: {error}")
        return
    lane.log.update(entries=len(entries), ops=dict(Counter(op for e in entries for op in e.ops).most_common()),
                    out_of_order=out_of_order([e.date for e in entries]),
                    malformed=sum(e.problem is not None for e in entries),
                    oldest=min((e.date for e in entries if e.date), default=None))


def out_of_order(dates: list[str | None]) -> int:
    """How many dated entries of a newest-first log are newer than the dated entry above them."""
    dated = [d for d in dates if d is not None]
    return sum(later > earlier for earlier, later in zip(dated, dated[1:]))


def _results(lane: LaneSurvey, root: Path, rel: str) -> None:
    lane.results = {"present": (root / rel).is_file(), "columns": None, "error": None}
    if not lane.results["present"]:
        lane.problems.append("no RESULTS.tsv")
        return
    try:
        lane.results["columns"] = list(header_of((root / rel).read_text(encoding="utf-8"), rel))
    except (WikiError, OSError, UnicodeDecodeError) as error:
        lane.results["error"] = str(error)
        lane.problems.append(f"RESULTS.tsv header unreadable: {error}")


def _matrix(lane: LaneSurvey, root: Path, rel: str | None, metric: str) -> None:
    lane.model_page = {"rel": rel, "matrix": False, "header": [], "metric": metric, "rows": [], "unreadable": []}
    if rel is None or not (root / rel).is_file():
        lane.model_page["rel"] = None
        lane.problems.append("no model page")
        return
    try:
        matrix = parse_matrix(load_page(root / rel))
    except WikiError as error:
        lane.problems.append(f"model page does not parse: {error}")
        return
    if matrix is None:
        lane.problems.append(f"{rel}: no variant matrix (## Variant matrix with a table)")
        return
    lane.model_page.update(matrix=True, header=list(matrix.header))
    for row in matrix.rows:
        figures = {}
        for column in FIGURE_COLUMNS:
            read = read_figure(row.cell(column), metric) if matrix.has_column(column) else None
            figures[column] = read.value if read is not None else None
            if read is not None and read.reason:
                where = f"{rel}:{row.line}: {row.key} {matrix.header_of(column)}: {read.reason}"
                lane.model_page["unreadable"].append(where)
        lane.model_page["rows"].append({"key": row.key, "line": row.line, **figures})
    lane.problems += [f"unreadable cell {where}" for where in lane.model_page["unreadable"]]


def _ids(lane: LaneSurvey, rels: list[str]) -> None:
    by_id: dict[str, list[str]] = {}
    without, hyphened = [], []
    for rel in rels:
        name = rel.rsplit("/", 1)[1]
        exp_id = parse_file_name(name).exp_id
        if exp_id is None:
            without.append(rel)
            continue
        by_id.setdefault(exp_id, []).append(rel)
        vid = parse_vid(exp_id)
        if vid is not None and vid.letter and f"-{vid.letter}" in name and str(vid) not in name:
            hyphened.append(rel)
    duplicates = {i: pages for i, pages in sorted(by_id.items()) if len(pages) > 1}
    lane.ids = {"pages": len(rels), "with_id": len(rels) - len(without), "without_id": without,
                "hyphen_reruns": hyphened, "duplicates": duplicates}
    if duplicates:
        lane.problems.append(f"{len(duplicates)} id(s) on more than one page: {', '.join(duplicates)}")


@dataclass
class WikiWide:
    """Checkouts and artifact folders, and the global log's lane ops before the log split."""

    submodules: list[str]
    local_checkouts: list[str]  # untracked git checkouts inside the repository
    checkout_paths: list[str]  # configured
    artifacts: list[dict]  # {"path", "present", "ignored", "configured"}
    early_lane_ops: int  # global-log entries with lane-only ops dated before the first lane-log entry
    first_lane_entry: str | None
    split_date: str | None  # configured

    def as_json(self) -> dict:
        return asdict(self)


def wiki_wide(root: Path, config: LintConfig, lanes: list[LaneSurvey]) -> WikiWide:
    tree = TrackedTree.read(root)
    submodules = sorted(tree.gitlinks) if tree is not None else []
    checkouts = [c for c in local_checkouts(root) if c not in submodules]
    early, first = early_lane_ops(root, lanes)
    return WikiWide(submodules, checkouts, list(config.checkout_paths), artifact_folders(root, config, checkouts),
                    early, first, config.option("LOG003", "split-date"))


def local_checkouts(root: Path) -> list[str]:
    """Folders of the repository, at most :data:`CHECKOUT_DEPTH` deep, that hold their own
    ``.git`` (a clone or a submodule's work tree); nothing below one is looked at."""
    found, stack = [], [(root, 0)]
    while stack:
        folder, depth = stack.pop()
        try:
            children = [e for e in os.scandir(folder) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in children:
            if entry.name in _SKIPPED_DIRS:
                continue
            path = Path(entry.path)
            if (path / ".git").exists():
                found.append(path.relative_to(root).as_posix())
            elif depth + 1 < CHECKOUT_DEPTH:
                stack.append((path, depth + 1))
    return sorted(found)


def ignored_folders(root: Path) -> list[str]:
    """The folders git ignores as a whole (``git ls-files --others --ignored --directory``)."""
    from wikiengine.core import git

    try:
        out = git.out(root, "ls-files", "--others", "--ignored", "--exclude-standard", "--directory", "-z")
    except WikiError:  # git cannot start or runs past its deadline
        return []
    return sorted(p for p in out.split("\0") if p.endswith("/"))


def artifact_folders(root: Path, config: LintConfig, checkouts: list[str]) -> list[dict]:
    """The configured artifact folders, and the folders under ``raw/`` that git ignores and
    that hold no checkout (``raw/`` is the wiki's inputs; an ignored folder there is
    artifacts by design: traces, HLO dumps)."""
    paths = list(config.artifact_paths)
    for folder in ignored_folders(root):
        inside_checkout = any(folder.startswith(c + "/") or (c + "/").startswith(folder) for c in checkouts)
        covered = any(folder.startswith(p) for p in (*config.artifact_paths, *config.checkout_paths))
        if folder.startswith("raw/") and not inside_checkout and not covered:
            paths.append(folder)
    ignored = ignored_paths(root, [p + ".probe" for p in paths])
    return [{"path": p, "present": (root / p).is_dir(), "ignored": p + ".probe" in ignored,
             "configured": p in config.artifact_paths} for p in paths]


def early_lane_ops(root: Path, lanes: list[LaneSurvey]) -> tuple[int, str | None]:
    """How many global-log entries carry a lane-only op (``loop-iteration``, ``start``, ...)
    dated before the oldest model-lane log entry, and that date (the default log split)."""
    first = min((lane.log["oldest"] for lane in lanes if lane.kind == "lane" and lane.log["oldest"]), default=None)
    if first is None or not (root / GLOBAL_LOG).is_file():
        return 0, first
    try:
        entries = parse_entries(load_page(root / GLOBAL_LOG))
    except WikiError:
        return 0, first
    lane_only = {op.casefold() for op in LANE_ONLY_OPS}
    early = [e for e in entries if e.date and e.date < first and any(o.casefold() in lane_only for o in e.ops)]
    return len(early), first
