"""Retrospective pages by lane, for RUN001.

A retrospective lives in ``wiki/analyses/<YYYY-MM-DD>-<model>-<lane>-retrospective[-N].md``
(where real wikis file them: its lane from frontmatter ``model`` and ``lane``, else from
its name; never from the file's time), in ``wiki/retrospectives/`` (frontmatter) or in ``wiki/experiments/<model>_autoresearch_optimization/<lane>/retrospectives/``
(its lane from the path; frontmatter, when present, must agree). Its date is frontmatter
``created``, else a ``YYYY-MM-DD`` prefix of the file name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from wikiengine.core.identity import MODEL_DIR_SUFFIX, model_name
from wikiengine.lint.rules._experiments import frontmatter_date, lint_cache, pages_of, real_date

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext

_LANE_RETRO_RE = re.compile(r"wiki/experiments/([^/]+" + MODEL_DIR_SUFFIX + r")/([^/]+)/retrospectives/[^/]+\.md")
_ANALYSIS_RETRO_RE = re.compile(r"wiki/analyses/\d{4}-\d{2}-\d{2}-(?P<model>[a-z0-9][a-z0-9_-]*)-(?P<lane>[a-z0-9_]+)"
                                r"-retrospective(?:-\d+)?\.md")


def path_lane(rel: str) -> tuple[str, str] | None:
    """``(MODEL_NAME, lane)`` of a retrospective under ``<lane>/retrospectives/``, else None."""
    match = _LANE_RETRO_RE.fullmatch(rel)
    return (model_name(match.group(1)), match.group(2)) if match else None


def name_lane(rel: str) -> tuple[str, str] | None:
    """``(MODEL_NAME, lane)`` from the name of ``wiki/analyses/<date>-<model>-<lane>-retrospective[-N].md``
    (the lane is the last word before ``-retrospective``)."""
    match = _ANALYSIS_RETRO_RE.fullmatch(rel)
    return (model_name(match.group("model")), match.group("lane")) if match else None


@dataclass(frozen=True)
class Retrospective:
    """A run retrospective page: its path, and the model, lane and date it is about."""

    rel: str
    model: str  # MODEL_NAME form: gemma4, llama3-8b
    lane: str
    date: str


def retrospectives(ctx: LintContext) -> dict[tuple[str, str], list[Retrospective]]:
    """``(MODEL_NAME, lane)`` -> its dated retrospectives (built once per lint)."""
    cache = lint_cache(ctx, "retrospectives")
    if "index" in cache:
        return cache["index"]
    index: dict[tuple[str, str], list[Retrospective]] = {}
    for info in pages_of(ctx, "retrospective"):
        if info.page is None:
            continue
        fm = info.page.frontmatter
        from_path = path_lane(info.rel)
        if from_path:
            model, lane = from_path
        elif isinstance(fm.get("model"), str) and isinstance(fm.get("lane"), str):
            model, lane = model_name(fm["model"]), fm["lane"]
        elif name_lane(info.rel):
            model, lane = name_lane(info.rel)
        else:
            continue
        name = info.rel.rsplit("/", 1)[-1]
        date = frontmatter_date(fm.get("created")) or (name[:10] if real_date(name[:10]) else None)
        if date:
            index.setdefault((model, lane), []).append(Retrospective(info.rel, model, lane, date))
    cache["index"] = index
    return index
