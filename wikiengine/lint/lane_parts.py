"""The wiki cut into lanes, for the cross-file rules that judge one lane at a time.

A rule with ``by_lane`` (:class:`~wikiengine.lint.rule.Rule`) promises that its findings on the
files under one lane folder (``wiki/experiments/<model>/<lane>/``, at any depth) depend only on
those files, the files outside every lane (model pages, the programs above the lanes, the
global log, ...), which lane folders there are, and the configuration; run with a part's files
as its targets, it finds what a whole run finds on them. After an edit in one lane, a
whole-wiki run then runs such a rule on that lane's files alone and takes its findings on the
other lanes from the cache (lint/runner.py): at 50,000 pages in 20 lanes, a twentieth of the
work. The files outside every lane are one more part, so that every file has its part.

A part's key hashes its files' paths and content hashes, the same of the files outside every
lane, and the list of lane folders: an edit outside the lanes, a new lane or a lane gone
changes every key, and every part is judged again.
"""

from __future__ import annotations

import bisect
import hashlib
from collections import namedtuple

TYPE_CHECKING = False  # typing's constant, without importing typing (about 5 ms of a warm lint's start)
if TYPE_CHECKING:
    from collections.abc import Callable

    from wikiengine.lint.context import LintContext

LANES = "wiki/experiments/"
REST = ""  # the name of the part that holds the files outside every lane


# ``name``: the lane folder (``wiki/experiments/<model>/<lane>/``), or REST; ``key``: what its
# findings may depend on, hashed; ``files``: its paths, sorted
Part = namedtuple("Part", "name key files")


def by_part(ctx: LintContext, held: dict, salt: str, judge: Callable[[], list]) -> tuple[list, dict]:
    """``judge()`` over the whole wiki, part by part, with ``ctx.targets`` set to each part's
    files in turn: a part's rows are taken from ``held`` (``{part: [key, rows]}``, what the
    last run kept) while its key, with ``salt``, is the same. Returns every part's rows, in
    part order, and the ``{part: [key, rows]}`` to keep for the next run."""
    kept: dict[str, list] = {}
    found: list = []
    whole = ctx.targets
    try:
        for part in ctx.lane_parts():
            key = f"{salt}:{part.key}"
            last = held.get(part.name)
            if last is not None and last[0] == key:
                rows = last[1]
                ctx.cache.stats["lane_parts_reused"] += 1
            else:
                ctx.targets = part.files
                rows = judge()
                ctx.cache.stats["lane_parts_run"] += 1
            kept[part.name] = [key, rows]
            found.extend(rows)
    finally:
        ctx.targets = whole
    return found, kept


def part_of(rel: str) -> str:
    """The part ``rel`` belongs to: its lane folder, or :data:`REST`."""
    if not rel.startswith(LANES):
        return REST
    parts = rel.split("/", 4)
    return REST if len(parts) < 5 else "/".join(parts[:4]) + "/"


def lane_spans(files: list[str]) -> list[tuple[str, int, int]]:
    """``(lane folder, start, end)``: each lane folder's run of paths in the sorted ``files``
    (a bisection per lane, not a look at every path)."""
    spans = []
    index = bisect.bisect_left(files, LANES)
    while index < len(files) and files[index].startswith(LANES):
        parts = files[index].split("/", 4)
        if len(parts) < 5:  # directly in wiki/experiments/ or in a model folder: outside every lane
            index += 1
            continue
        folder = "/".join(parts[:4]) + "/"
        end = bisect.bisect_left(files, folder[:-1] + "0", index)  # "0" sorts right after "/"
        spans.append((folder, index, end))
        index = end
    return spans


def parts(files: list[str], shas: list[str]) -> list[Part]:
    """The lanes and the rest of the sorted ``files``, each keyed by what its findings may
    depend on; ``shas``: each file's content hash, in the same order."""
    spans = lane_spans(files)
    rest, at = [], 0
    for _folder, start, end in spans:
        rest.extend(range(at, start))
        at = end
    rest.extend(range(at, len(files)))
    rest_files = [files[i] for i in rest]
    common = hashlib.sha256(_names(folder for folder, _start, _end in spans))
    common.update(paths_and_hashes(rest_files, [shas[i] for i in rest]))
    found = [Part(REST, common.hexdigest(), rest_files)]
    for folder, start, end in spans:
        key = common.copy()
        key.update(paths_and_hashes(files[start:end], shas[start:end]))
        found.append(Part(folder, key.hexdigest(), files[start:end]))
    return found


def _names(names) -> bytes:
    return hashlib.sha256("\n".join(names).encode()).digest()


def paths_and_hashes(files: list[str], shas: list[str]) -> bytes:
    """A hash of ``files`` and their content hashes (``shas``, in the same order)."""
    digest = hashlib.sha256(_names(files))
    digest.update("".join(shas).encode())  # 32 hex digits each, or "-": the run reads back one way
    return digest.digest()
