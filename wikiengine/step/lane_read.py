"""The lane as the writers and the lane wake read it: the settings its resolved program
gives the writers, and its experiment pages and model page.

Apart from :mod:`wikiengine.step.writers` so that a wake that writes nothing (most of them)
imports none of what filing needs: verdict caps, cell figures, knobs, the index.
"""

from __future__ import annotations

import marshal
import os
import time
import zlib
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.errors import PageError, WikiError
from wikiengine.core.page import parse_page
from wikiengine.core.safe_read import repo_text
from wikiengine.core.usercache import KeptMap, code_stamp
from wikiengine.model import experiment as ex
from wikiengine.model.experiment import ExperimentPage
from wikiengine.model.lanes import Lane
from wikiengine.model.progress import DEFAULT_THRASH_K, thrash_k

DEFAULT_NOISE_BAND_PCT = 0.0  # a floor under the measured band: none unless the lane sets one
# The config keys the writers and the lane wake read: bounded by the schema before any use.
USED_CONFIG_KEYS = frozenset({"target_metric", "higher_is_better", "noise_band_pct", "noise_band_runs",
                              "noise_band_every_s", "storage_root", "hung_after_s", "ceiling_s", "wake_interval_s",
                              "thrash_k", "stall_after_filings", "max_experiments", "max_wall_hours", "max_chip_hours"})


def default_metric() -> str:
    """A lane's target metric when its program's Config names none."""
    from wikiengine.model.cell_figures import DEFAULT_METRIC

    return DEFAULT_METRIC


# --- the lane and its settings -------------------------------------------------------------


@dataclass(frozen=True)
class LaneSettings:
    """What the lane's resolved program says the writers need."""

    user_prefix: str
    target_metric: str
    higher_is_better: bool
    noise_band_pct: float
    storage_root: str | None
    thrash_k: int = DEFAULT_THRASH_K


def lane_for(root: Path, names: list[str]) -> Lane:
    """The lane named ``MODEL LANE``, else the one the current directory is in."""
    from wikiengine.model import targets

    if names:
        if len(names) != 2:
            raise WikiError("expected MODEL LANE (or run from inside a lane folder)")
        target = targets.target_for_model(root, names[0], names[1])
    else:
        target = targets.infer_target(root)
        if target is None or target.lane is None:
            raise WikiError("cannot infer the lane from the current directory; name it: MODEL LANE")
    lane = Lane(target.model_dir, target.lane)
    if not (root / lane.dir).is_dir():
        raise WikiError(f"no lane folder {lane.dir}")
    return lane


def lane_settings(root: Path, lane: Lane, config: dict | None = None) -> LaneSettings:
    """USER_PREFIX and the metric settings from the lane's resolved program (``config``: the
    lane's config, already resolved and validated by the caller: not resolved twice)."""
    from wikiengine.core.identity import resolve_user_prefix

    if config is None:
        from wikiengine.model import cascade, targets

        # PRG002 reports every schema error of the config; the writers refuse (exit 2, file:line)
        # only an out-of-range value of a key they are about to use
        target = targets.target_for_model(root, lane.model_prefix, lane.name)
        config = cascade.resolve(target, validate=USED_CONFIG_KEYS).config or {}
    model_program = root / f"wiki/experiments/{lane.model_dir}/program.md"
    text = repo_text(root, f"wiki/experiments/{lane.model_dir}/program.md")
    prefix = resolve_user_prefix(text, cwd=root, program_path=model_program).value
    return LaneSettings(
        user_prefix=prefix,
        target_metric=str(config["target_metric"]) if "target_metric" in config else default_metric(),
        higher_is_better=bool(config.get("higher_is_better", True)),
        noise_band_pct=float(config.get("noise_band_pct", DEFAULT_NOISE_BAND_PCT)),
        storage_root=config.get("storage_root"),
        thrash_k=thrash_k(config),
    )


def artifact_paths(settings: LaneSettings, lane: Lane, vid: str, slug: str, date: str) -> dict[str, str]:
    """The explicit artifact paths of one experiment (seed 001 step 2(c)(vi))."""
    exp_slug = f"{lane.model_name}-{lane.name}-{vid}-{slug}"
    root = f"{settings.storage_root.rstrip('/')}/{exp_slug}" if settings.storage_root else f"raw/profiles/{date}-{exp_slug}"
    return {"root": root, "xprof": f"{root}/xprof", "hlo": f"{root}/hlo", "metrics": f"{root}/metrics.json"}


# --- reading the lane -------------------------------------------------------------------------


def lane_pages(root: Path, lane: Lane) -> list[ExperimentPage]:
    """The lane's experiment pages that have an id (from the name, else the frontmatter).

    A writer and a wake ask several times (the mechanism in flight, the queue, the
    thrashing gate, the backfill): a file that has not changed since (the same inode,
    mtime and size: every write of ours renames a new file in) is the same page object,
    its frontmatter read once. Whether a page's frontmatter holds an open word (the watcher
    and the writers ask it of every page) and its mechanism (the thrashing gate asks it of
    every filed page) are kept per user by that signature: the next process reads only the
    pages that changed (:func:`_recall_answers`)."""
    pages = [_page(root, rel, lane) for rel in lane.page_rels(root)]
    _recall_answers(root, lane, pages)
    return [page for page, _signature in pages if page.exp_id]


_PAGES: dict[tuple[str, str], tuple[tuple, ExperimentPage]] = {}  # (root, rel) -> (stat signature, page)


def _page(root: Path, rel: str, lane: Lane) -> tuple[ExperimentPage, tuple | None]:
    """The page at ``rel`` and its stat signature (None: gone since it was listed)."""
    try:
        st = os.lstat(os.path.join(root, rel))
    except OSError:
        return ExperimentPage.at(root, rel, lane), None  # reading it says so
    key, signature = (str(root), rel), (st.st_ino, st.st_dev, st.st_mtime_ns, st.st_size, st.st_mode)
    kept = _PAGES.get(key)
    if kept is not None and kept[0] == signature and kept[1].folder == lane:
        return kept[1], signature
    page = ExperimentPage.at(root, rel, lane)
    _PAGES[key] = signature, page
    return page, signature


SETTLED_NS = 2_000_000_000  # a page written this recently may change again without its signature moving
_ANSWERS: dict[str, KeptMap] = {}  # the lane folder's real path -> its kept answers
LANE_FILES = 256  # the lane folders whose answers are kept (the files written last; 5,962 and 39 MB without a cap)


def _recall_answers(root: Path, lane: Lane, pages: list[tuple[ExperimentPage, tuple | None]]) -> None:
    """Give each page its kept answers to ``_holds_open_word`` and ``mechanism`` when its
    signature is the one they were kept with; answer (reading the page) and keep the settled
    pages that have none (a page whose mechanism cannot be read keeps None: asked again, it
    says why). One small file per lane in the per-user cache (core/usercache.py; the
    :data:`LANE_FILES` lane folders written last), stamped
    with the code that answers (``model/experiment.py``, ``core/page.py``) and the folder."""
    folder = os.path.realpath(os.path.join(root, lane.dir))
    kept = _ANSWERS.get(folder)
    if kept is None:
        kept = _ANSWERS[folder] = KeptMap(
            "lane-pages", f"{zlib.crc32(folder.encode()):08x}.marshal", limit=16384, kind_files=LANE_FILES,
            stamp=lambda: code_stamp("wikiengine.model.experiment", "wikiengine.core.page") + folder)
    settled = time.time_ns() - SETTLED_NS
    for page, signature in pages:
        if signature is None or "_holds_open_word" in page.__dict__:
            continue
        held = kept.get(page.rel)
        try:
            kept_signature, answer, mechanism = marshal.loads(held) if held is not None else (None, None, None)
        except (EOFError, ValueError, TypeError):
            kept_signature, answer, mechanism = None, None, None  # damaged: answered again
        if kept_signature == signature and type(answer) is bool:
            page.__dict__["_holds_open_word"] = answer  # what the cached properties would compute
            if type(mechanism) is str:
                page.__dict__["mechanism"] = mechanism
        elif signature[2] < settled:
            kept.put(page.rel, marshal.dumps((signature, page._holds_open_word, _mechanism(page))))


def _mechanism(page: ExperimentPage) -> str | None:
    """The page's folded mechanism, None when the page cannot be read."""
    try:
        return page.mechanism
    except PageError:
        return None


def find_page(root: Path, lane: Lane, vid: str) -> ExperimentPage:
    """The one page of ``vid`` (exit 2 when there is none, or more than one)."""
    wanted = ex.canonical_id(vid)
    found = [p for p in lane_pages(root, lane) if p.exp_id == wanted]
    if not found:
        raise WikiError(f"no experiment page {wanted} in lane {lane.model_prefix}/{lane.name}")
    if len(found) > 1:
        raise WikiError(f"{wanted} names {len(found)} pages in the lane: {', '.join(p.rel for p in found)}")
    return found[0]


def model_page_of(root: Path, lane: Lane):
    rel = lane.model_page(root)
    if rel is None:
        raise WikiError(f"lane {lane.model_prefix}/{lane.name} has no model page ({' or '.join(lane.model_page_names())} "
                        "under wiki/models/)")
    from wikiengine.model.variant_matrix import parse_matrix

    text = repo_text(root, rel) or ""
    page = parse_page(text, rel)
    matrix = parse_matrix(page)
    if matrix is None:
        raise WikiError("the model page has no '## Variant matrix' table", rel)
    return rel, text, page, matrix
