"""LAY001, LAY002 and LAY003: the layout that `wiki resolve` and `wiki lint` read, so that a wiki
they cannot see is a finding rather than "All checks passed"."""

from __future__ import annotations

from wikiengine.core.identity import MODEL_DIR_SUFFIX
from wikiengine.lint.kinds import kind_of
from wikiengine.lint.rule import Rule
from wikiengine.lint.rules._experiments import lane_dirs, lane_files, model_dirs
from wikiengine.lint.rules._logs import log_split_date
from wikiengine.model.experiment import parse_file_name
from wikiengine.model.targets import AREAS, PROGRAM, is_model_folder, suggested_model_folder

EXPERIMENTS = next(a for a in AREAS if a.name == "experiments").path


def _reported_page(pages: list[str], folder: str) -> str:
    """Where a finding about ``folder`` lands: its own program.md when it has one, else its first page."""
    own = f"{folder}/{PROGRAM}"
    return own if own in pages else pages[0]


class ModelFolderName(Rule):
    """## What it does
    Reports a folder directly under `wiki/experiments/` whose name does not follow the
    naming rule `<model>_autoresearch_optimization`, once, on the folder's `program.md`
    (else on its first page), with the name it most likely meant.

    ## Why is this bad?
    `wiki resolve` and every experiment rule find models by that suffix alone. A folder
    named `gemma4/` or `gemma4_autoresearch_optimisation/` is silently skipped: its
    programs do not resolve, its experiment pages are never checked, and `wiki lint`
    says "All checks passed" about pages it never read.

    ## Example
    `wiki/experiments/gemma4/tpu/experiments/2026-06-01-v001-remat.md`

    Rename the folder: `wiki/experiments/gemma4_autoresearch_optimization/tpu/...`.

    ## Options
    None.
    """

    code = "LAY001"
    reads_pages = False  # the paths of the files alone
    name = "model-folder-name"
    summary = "a folder under wiki/experiments is not named <model>_autoresearch_optimization, so it is ignored"

    def check_wiki(self, ctx):
        by_folder: dict[str, list[str]] = {}
        files = ctx.files_under(EXPERIMENTS + "/")
        if ctx.targets is not ctx.files:  # a PATH run: only the folders its targets lie in can be reported
            folders = {"/".join(rel.split("/")[:3]) + "/" for rel in ctx.targets
                       if rel.startswith(EXPERIMENTS + "/") and rel.count("/") > 2}
            files = [rel for folder in sorted(folders) for rel in ctx.files_under(folder)]
        for rel in files:
            parts = rel.split("/")
            if len(parts) > 3 and not parts[2].startswith(".") and not is_model_folder(parts[2]):
                by_folder.setdefault("/".join(parts[:3]), []).append(rel)
        for folder, pages in by_folder.items():
            name = folder.rsplit("/", 1)[1]
            yield self.finding(
                _reported_page(pages, folder), 1,
                f"{folder}/ is ignored by resolve and lint: a model folder is named <model>{MODEL_DIR_SUFFIX} "
                f"(rename it {suggested_model_folder(name)}/)",
            )


class RootProgramMissing(Rule):
    """## What it does
    Reports a program area (`wiki/experiments`, `wiki/kernel_experiments`, `wiki/runs`)
    that holds pages but no root `program.md`, on every `program.md` below the root (or,
    when there is none, on the area's first page).

    ## Why is this bad?
    Every program of an area inherits from its root program; without it `wiki resolve`
    refuses every target of the area, and `wiki step` cannot read a run's config.

    ## Example
    `wiki/experiments/gemma4_autoresearch_optimization/program.md` with no
    `wiki/experiments/program.md`.

    Write the root program (`wiki init` scaffolds one with the standard sections).

    ## Options
    None.
    """

    code = "LAY002"
    reads_pages = False  # the paths of the files alone
    name = "root-program-missing"
    summary = "a program area (wiki/experiments, kernel_experiments, runs) has pages but no root program.md"

    def check_wiki(self, ctx):
        for area in AREAS:
            root_program = f"{area.path}/{PROGRAM}"
            pages = ctx.files_under(area.path + "/")
            if not pages or ctx.exists(root_program):
                continue
            programs = [rel for rel in pages if rel.endswith("/" + PROGRAM)] or pages[:1]
            for rel in programs:
                yield self.finding(
                    rel, 1,
                    f"{root_program} is missing: every program of {area.path}/ inherits from it, "
                    "so wiki resolve refuses them all",
                )


def _unlogged_lanes(ctx) -> dict[str, list[str]]:
    """``{lane folder: its experiment pages}`` of every model lane and kernel family lane that
    holds pages but no ``log.md`` (a lane with its log is passed by: its pages are not listed)."""
    lanes = {}
    for model_dir in model_dirs(ctx):
        for lane in lane_dirs(ctx, model_dir):
            folder = f"wiki/experiments/{model_dir}/{lane}"
            pages = [] if ctx.exists(f"{folder}/log.md") else lane_files(ctx, (model_dir, lane))
            if pages:
                lanes[folder] = pages
    for rel in ctx.files_under("wiki/kernel_experiments/"):
        folder = rel.rsplit("/", 1)[0]
        if kind_of(rel) == "kernel-experiment" and not ctx.exists(f"{folder}/log.md"):
            lanes.setdefault(folder, []).append(rel)
    return lanes


class LaneLogMissing(Rule):
    """## What it does
    Reports a lane (`wiki/experiments/<model>_autoresearch_optimization/<lane>/`, or a
    kernel family's `pallas/` lane) that holds experiment pages but no `log.md`, once, on
    the lane's `program.md` (else its first page). A model lane whose pages all predate
    the wiki's log split (`[tool.wiki.rules.LOG003] split-date`, else the oldest lane-log
    entry) is not reported: its iterations are in the global log, where they stay; a wiki
    with no lane log at all never split its logs and is not checked.

    ## Why is this bad?
    The lane log is the lane's history: `loop-iteration`, `start` and `stop` entries go
    there, the watcher audits from it, and the next session reads it to learn what ran.
    A lane without one has pages nobody logged, and its next entry has nowhere to go.

    ## Example
    `wiki/experiments/gemma4_autoresearch_optimization/jax/` holding
    `2026-06-01-v001-baseline.md` and no `log.md`.

    Create the lane's `log.md` with an entry per filed page (`wiki log` writes them).

    ## Options
    None.
    """

    code = "LAY003"
    name = "lane-log-missing"
    summary = "a lane holds experiment pages but no log.md"

    def check_wiki(self, ctx):
        lanes = _unlogged_lanes(ctx)
        if ctx.targets is not ctx.files:  # a PATH run reports only on a target: its lane's program or a page in it
            near = {folder for rel in ctx.targets for folder in (rel.rpartition("/")[0], rel.rpartition("/")[0].rpartition("/")[0])}
            lanes = {folder: pages for folder, pages in lanes.items() if folder in near}
        split = log_split_date(ctx) if lanes else None  # the lane logs' oldest entry: read only when a lane lacks one
        for folder, pages in lanes.items():
            if folder.startswith(EXPERIMENTS + "/"):
                dates = [parse_file_name(rel.rsplit("/", 1)[-1]).date for rel in pages]
                if split is None or all(d is not None and d < split for d in dates):
                    continue  # logged in the global log, from before the split (or the wiki never split)
            program = f"{folder}/{PROGRAM}"
            yield self.finding(
                program if ctx.exists(program) else pages[0], 1,
                f"{folder}/ holds {len(pages)} experiment page(s) but no log.md: the lane's iterations are logged nowhere",
            )
