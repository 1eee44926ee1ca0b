"""Where a lane's files live (``shared/reference/conventions.md``, Layout).

A lane is ``wiki/experiments/<model>_autoresearch_optimization/<lane>/``: its
``program.md``, ``log.md``, ``RESULTS.tsv``, the write-ahead journal ``.journal.jsonl``,
and experiment pages in the lane folder or its ``experiments/`` (both are valid; the
writers use ``experiments/``). The model page is ``wiki/models/<model>-<lane>.md``
where ``<model>`` is the folder's prefix or its MODEL_NAME.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.identity import MODEL_DIR_SUFFIX, model_name
from wikiengine.model.experiment import is_experiment_file_name

EXPERIMENTS_ROOT = "wiki/experiments"
MODELS_DIR = "wiki/models"
HYPOTHESES_DIR = "wiki/hypotheses"
INDEX = "wiki/index.md"
_LANE_PATH_RE = re.compile(
    r"wiki/experiments/(?P<model>[^/]+" + MODEL_DIR_SUFFIX + r")/(?P<lane>[^/]+)/(?:(?P<sub>experiments)/)?(?P<name>[^/]+)"
)


class LaneFolder:
    """The files every lane-like folder holds (a model lane, a kernel family's pallas lane)."""

    dir: str

    @property
    def log(self) -> str:
        return f"{self.dir}/log.md"

    @property
    def results(self) -> str:
        return f"{self.dir}/RESULTS.tsv"

    @property
    def program(self) -> str:
        return f"{self.dir}/program.md"

    @property
    def journal(self) -> str:
        return f"{self.dir}/.journal.jsonl"


@dataclass(frozen=True)
class Lane(LaneFolder):
    """An autoresearch lane: the model folder and the lane folder under it."""

    model_dir: str  # gemma4_autoresearch_optimization
    name: str  # tpu

    @property
    def key(self) -> tuple[str, str]:
        return (self.model_dir, self.name)

    @property
    def dir(self) -> str:
        return f"{EXPERIMENTS_ROOT}/{self.model_dir}/{self.name}"

    @property
    def experiments_dir(self) -> str:
        return f"{self.dir}/experiments"

    @property
    def model_prefix(self) -> str:
        return self.model_dir[: -len(MODEL_DIR_SUFFIX)]

    @property
    def model_name(self) -> str:
        return model_name(self.model_dir)

    def model_page_names(self) -> tuple[str, ...]:
        """The file names the lane's model page may have, the writers' form first."""
        names = [f"{self.model_name}-{self.name}.md", f"{self.model_prefix}-{self.name}.md"]
        return tuple(dict.fromkeys(names))

    def model_page(self, root: Path) -> str | None:
        """The lane's model page that exists under ``root`` (case-insensitive), else None."""
        folder = root / MODELS_DIR
        wanted = {n.casefold() for n in self.model_page_names()}
        try:
            found = sorted(p.name for p in folder.iterdir() if p.name.casefold() in wanted and p.is_file())
        except OSError:
            return None
        return f"{MODELS_DIR}/{found[0]}" if found else None

    def page_rels(self, root: Path) -> list[str]:
        """The experiment pages of the lane on disk (both folders), in path order. Listed with
        ``scandir``: a writer asks several times, and a lane of 500 pages cost 1,000 ``stat``
        calls a time through pathlib; the folder entry's type needs none (a link is followed)."""
        found = []
        for folder in (self.dir, self.experiments_dir):
            try:
                with os.scandir(os.path.join(root, folder)) as entries:
                    found += [f"{folder}/{e.name}" for e in entries if is_experiment_file_name(e.name) and e.is_file()]
            except OSError:
                continue
        return sorted(found)


def lane_of_path(rel: str) -> Lane | None:
    """The lane a repository path belongs to (a page, a log, the lane folder's files)."""
    match = _LANE_PATH_RE.fullmatch(rel)
    return Lane(match.group("model"), match.group("lane")) if match else None


def is_experiment_path(rel: str) -> bool:
    """Is ``rel`` an experiment page (``<lane>/`` or ``<lane>/experiments/``)?"""
    match = _LANE_PATH_RE.fullmatch(rel)
    if match is None or not is_experiment_file_name(match.group("name")):
        return False
    return not (match.group("sub") is None and match.group("name") == "experiments")
