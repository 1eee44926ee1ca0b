"""Page kinds follow from paths (DESIGN.md). Each kind may have a frontmatter schema
``schema/<kind>.schema.json``.

=================  ==================================================================
kind               path (relative to the repository root)
=================  ==================================================================
experiment         ``wiki/experiments/<model>_autoresearch_optimization/<lane>/[experiments/]<page>.md``
kernel-experiment  ``wiki/kernel_experiments/<family>/<lane>/<page>.md`` (an experiment page of a kernel family)
kernel-retro       ``wiki/kernel_experiments/<family>/<lane>/<YYYY-MM-DD>-retrospective[-N].md``
kernel-family      ``wiki/kernels/<family>.md`` (the family page: ``type: model``, ``lane: pallas``)
program            any ``program.md`` under ``wiki/``
log                any ``log.md`` under ``wiki/`` (``wiki/log.md`` is the global tier)
model              ``wiki/models/<model>-<lane>.md``
hypothesis         ``wiki/hypotheses/<slug>.md``
retrospective      ``wiki/retrospectives/<page>.md``, ``<lane>/retrospectives/<page>.md`` or
                   ``wiki/analyses/<YYYY-MM-DD>-<model>-<lane>-retrospective[-N].md``
cluster            ``.env/<cluster>.md``
memory-state       ``memory/STATE.md`` (likewise memory-quota, memory-assets, memory-errors)
page               any other markdown page under ``wiki/`` or ``memory/``
=================  ==================================================================
"""

from __future__ import annotations

import functools
import re

from wikiengine.core.identity import MODEL_DIR_SUFFIX
from wikiengine.model.kernels import (
    KERNEL_EXPERIMENTS_ROOT,
    KERNELS_DIR,
    is_family_page_path,
    is_kernel_experiment_path,
    is_kernel_retrospective_path,
)
from wikiengine.model.lanes import EXPERIMENTS_ROOT, HYPOTHESES_DIR, MODELS_DIR, is_experiment_path

# every kind kind_of() gives
ALL_KINDS = (
    "experiment", "program", "log", "model", "hypothesis", "retrospective", "cluster",
    "memory-state", "memory-quota", "memory-assets", "memory-errors", "kernel-experiment", "kernel-retro",
    "kernel-family", "page",
)
MEMORY_KINDS = {
    "memory/STATE.md": "memory-state",
    "memory/QUOTA.md": "memory-quota",
    "memory/ASSETS.md": "memory-assets",
    "memory/ERRORS.md": "memory-errors",
}
# kind -> a substring every path of that kind holds (kind_of tests it, or more, on each path):
# the files of one kind are found among those that hold it without classifying every file
KIND_MARKS = {
    "experiment": EXPERIMENTS_ROOT + "/", "program": "program.md", "log": "log.md", "model": MODELS_DIR + "/",
    "hypothesis": HYPOTHESES_DIR + "/", "retrospective": "retrospective", "cluster": ".env/",
    **{kind: "memory/" for kind in MEMORY_KINDS.values()},
    "kernel-experiment": KERNEL_EXPERIMENTS_ROOT + "/", "kernel-retro": KERNEL_EXPERIMENTS_ROOT + "/",
    "kernel-family": KERNELS_DIR + "/",
}
_EXPERIMENT_RE = re.compile(
    r"wiki/experiments/(?P<model>[^/]+" + MODEL_DIR_SUFFIX + r")/(?P<lane>[^/]+)/(?:experiments/)?(?P<name>[^/]+\.md)"
)
_RETRO_RE = re.compile(
    r"wiki/(?:.+/)?retrospectives/[^/]+\.md"
    r"|wiki/analyses/\d{4}-\d{2}-\d{2}-[a-z0-9][a-z0-9_-]*-retrospective(?:-\d+)?\.md"
)


@functools.lru_cache(maxsize=1 << 16)  # a whole-wiki run asks about each file several times
def kind_of(rel: str) -> str:
    """The kind of the page at ``rel`` (a posix path relative to the repository root)."""
    if rel in MEMORY_KINDS:
        return MEMORY_KINDS[rel]
    name = rel.rsplit("/", 1)[-1]
    if rel.startswith(".env/") and rel.count("/") == 1:
        return "cluster"
    if not rel.startswith("wiki/"):
        return "page"
    if name == "program.md":
        return "program"
    if name == "log.md":
        return "log"
    if "retrospective" in rel and _RETRO_RE.fullmatch(rel):  # the substring first: most paths are not one
        return "retrospective"
    # the folder under wiki/ decides which kinds the path can be (each test below holds its folder
    # too): a whole-wiki run asks once of each of its pages, most in sources/, concepts/, codebases/
    slash = rel.find("/", 5)
    folder = rel[:slash] if slash > 0 else ""
    if folder == EXPERIMENTS_ROOT:
        return "experiment" if is_experiment_path(rel) else "page"
    if folder == KERNEL_EXPERIMENTS_ROOT:
        if is_kernel_experiment_path(rel):
            return "kernel-experiment"
        return "kernel-retro" if is_kernel_retrospective_path(rel) else "page"
    if folder == KERNELS_DIR:
        return "kernel-family" if is_family_page_path(rel) else "page"
    if folder in (MODELS_DIR, HYPOTHESES_DIR) and rel.count("/") == 2:
        return "model" if folder == MODELS_DIR else "hypothesis"
    return "page"


def experiment_lane(rel: str) -> tuple[str, str] | None:
    """``(model folder, lane)`` of an experiment page path, else None."""
    match = _EXPERIMENT_RE.fullmatch(rel)
    return (match.group("model"), match.group("lane")) if match and is_experiment_path(rel) else None


def log_lane(rel: str) -> tuple[str, str] | None:
    """``(model folder, lane)`` of a lane log path (``.../<lane>/log.md``), else None."""
    match = re.fullmatch(r"wiki/experiments/([^/]+" + MODEL_DIR_SUFFIX + r")/([^/]+)/log\.md", rel)
    return (match.group(1), match.group(2)) if match else None
