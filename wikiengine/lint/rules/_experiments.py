"""Facts about experiment pages that several rules share, computed once per lint.

An experiment page lives at ``wiki/experiments/<model>_autoresearch_optimization/<lane>/``
or one level deeper in ``experiments/``, and is named ``YYYY-MM-DD-<id>-<slug>.md``. The
id is ``v<NNN>`` unless ``[tool.wiki.rules.EXP001] id-pattern`` declares another scheme
(``"v\\\\d{3,}|exp\\\\d+"`` also accepts the older ``exp34``). Every rule that needs an id
(EXP001, EXP008, EXP013, LOG005, MOD001, WKL001) reads that one option.

A page is the one record :class:`~wikiengine.model.experiment.ExperimentPage` that the
writers use too; :func:`experiment_facts` builds it from a :class:`PageInfo` (the cached
frontmatter, the body parsed only when a rule asks) and keeps it for the length of a lint.
A verdict is written either as ``status: <verdict>`` (the seeds) or as ``status: filed``
plus ``verdict: <verdict>``; the record understands both and records a page that disagrees
with itself (EXP009).
"""

from __future__ import annotations

import bisect
import re

from wikiengine.core.identity import MODEL_DIR_SUFFIX, model_name
from wikiengine.lint.cache import marshal_or_none
from wikiengine.lint.kinds import experiment_lane, kind_of
from wikiengine.model.experiment import (  # noqa: F401 - the rules import these from here
    DEFAULT_ID_PATTERN,
    FILED,
    IN_PROGRESS,
    NOT_RECOVERED,
    REQUIRED_SECTIONS,
    VERDICTS,
    ExperimentPage,
    canonical_id,
    file_name_regexes,
    frontmatter_date,
    has_content,
    is_open,
    is_placeholder,
    parse_file_name,
    real_date,
    resolve_verdict,
    section_titles,
    sections_led_by,
)
from wikiengine.model.lanes import Lane

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext, PageInfo

ID_OPTION_RULE = "EXP001"


def id_pattern(ctx: LintContext) -> str:
    """The experiment id pattern, from ``[tool.wiki.rules.EXP001] id-pattern``."""
    return str(ctx.config.option(ID_OPTION_RULE, "id-pattern", DEFAULT_ID_PATTERN))


CONVENTIONS_TABLE = "lane-conventions"


def lint_cache(ctx: LintContext, name: str) -> dict:
    """A dict kept on the lint context for the length of one lint (cross-file indexes)."""
    store = ctx.__dict__.setdefault("_rule_caches", {})
    return store.setdefault(name, {})


def pages_of(ctx: LintContext, kind: str) -> list[PageInfo]:
    """Every page of ``kind``, listed once per lint (``ctx.pages`` classifies every file per call)."""
    cache = lint_cache(ctx, "pages-of-kind")
    if kind not in cache:
        cache[kind] = ctx.pages(kind)
    return cache[kind]


def compiled(ctx: LintContext) -> dict[str, re.Pattern]:
    """The regexes that depend on the configured id pattern, compiled once per lint:
    ``file`` (the exact file-name grammar), ``reader`` (the id after text before it) and
    ``id`` (an id token in text)."""
    cache = lint_cache(ctx, "experiment-regexes")
    if not cache:
        pattern = id_pattern(ctx)
        cache["file"], cache["reader"] = file_name_regexes(pattern)
        cache["id"] = re.compile(r"(?<![A-Za-z0-9])(?P<id>" + pattern + r")(?![0-9])")
    return cache


def lane_conventions(ctx: LintContext, lane_key: tuple[str, str]) -> dict:
    """The ``page_conventions`` of a lane's resolved program (its ``## Config`` block, following
    the cascade): an older lane describes its own page format where its rules live.

    Keys: ``id_pattern`` (regex, e.g. ``exp\\d+``), ``required_sections`` (titles).

    Kept in a table of the cache: every program under ``wiki/experiments/`` is in the cache's
    fingerprint, so the table lasts while they do, and a pre-commit run resolves no cascade
    (parsing the programs' YAML: its import alone was a tenth of such a run).
    """
    cache = lint_cache(ctx, "lane-conventions")
    if lane_key not in cache:
        kept = ctx.cache.table(CONVENTIONS_TABLE, ctx.config.additive_marker) if ctx.cache is not None else {}
        name = "/".join(lane_key)
        if name in kept:
            cache[lane_key] = kept[name]
        else:
            cache[lane_key] = found = _resolved_conventions(ctx, lane_key)
            if ctx.cache is not None and marshal_or_none(found) is not None:
                ctx.cache.keep(CONVENTIONS_TABLE, ctx.config.additive_marker, {**kept, name: found}, 1)
    return cache[lane_key]


def _resolved_conventions(ctx: LintContext, lane_key: tuple[str, str]) -> dict:
    from wikiengine.core.errors import WikiError
    from wikiengine.model.cascade import resolve
    from wikiengine.model.targets import target_for_path

    try:
        target = target_for_path(ctx.root, ctx.root / f"wiki/experiments/{lane_key[0]}/{lane_key[1]}")
        config = resolve(target, additive_marker=ctx.config.additive_marker, validate=False).config or {}
    except WikiError:
        config = {}  # PRG001/PRG002 report a broken program
    found = config.get("page_conventions")
    return found if isinstance(found, dict) else {}


def lane_regexes(ctx: LintContext, lane_key: tuple[str, str]) -> tuple[re.Pattern, re.Pattern]:
    """``(exact, reader)`` file-name regexes of a lane: its own ``id_pattern``, else the wiki's."""
    pattern = lane_conventions(ctx, lane_key).get("id_pattern")
    if not isinstance(pattern, str) or not pattern:
        regexes = compiled(ctx)
        return regexes["file"], regexes["reader"]
    cache = lint_cache(ctx, "lane-id-regexes")
    if pattern not in cache:
        from wikiengine.core.errors import WikiError
        from wikiengine.core.patterns import check_backtracking

        try:
            check_backtracking(pattern, "page_conventions.id_pattern")  # a program's pattern must not hang lint
            cache[pattern] = file_name_regexes(pattern)
        except (re.error, WikiError):
            regexes = compiled(ctx)  # PRG002 reports a pattern that does not compile
            cache[pattern] = (regexes["file"], regexes["reader"])
    return cache[pattern]


def lane_id_pattern(ctx: LintContext, lane_key: tuple[str, str]) -> str:
    pattern = lane_conventions(ctx, lane_key).get("id_pattern")
    return pattern if isinstance(pattern, str) and pattern else id_pattern(ctx)


def experiment_facts(info: PageInfo, ctx: LintContext) -> ExperimentPage | None:
    """The record of an experiment page (None when the page is not one or cannot be read:
    WK001 reports that), built once per lint.

    Only the path and the frontmatter are read, so cross-file rules cost no body parse.
    """
    cache = lint_cache(ctx, "experiment-facts")
    if info.rel in cache:
        return cache[info.rel]
    facts = None
    lane = experiment_lane(info.rel)
    if lane is not None and info.error is None:
        name = parse_file_name(info.rel.rsplit("/", 1)[-1], lane_regexes(ctx, lane))
        # the frontmatter from the lint cache on a warm run: the body is not parsed
        facts = ExperimentPage.known(info.rel, Lane(*lane), name, info.frontmatter, lambda: info.page)
    cache[info.rel] = facts
    return facts


def lane_files(ctx: LintContext, lane_key: tuple[str, str]) -> list[str]:
    """The experiment pages of one lane (``<lane>/`` and ``<lane>/experiments/``), in path
    order, from the sorted file list: no page is opened."""
    cache = lint_cache(ctx, "lane-files")
    if lane_key not in cache:
        prefix = f"wiki/experiments/{lane_key[0]}/{lane_key[1]}/"
        cache[lane_key] = [rel for rel in ctx.files_under(prefix) if kind_of(rel) == "experiment"]
    return cache[lane_key]


def lane_ids(ctx: LintContext, lane_key: tuple[str, str]) -> dict[str, list[str]]:
    """The pages of one lane by id (``{id: [rel, ...]}``), built once per lane per lint.

    The id comes from the file name; only a page whose name does not follow the
    convention is opened (from the cache) for its frontmatter id. Unreadable pages are
    included: callers that report on a page check :func:`experiment_facts` first.
    """
    cache = lint_cache(ctx, "lane-ids")
    if lane_key not in cache:
        regexes = lane_regexes(ctx, lane_key)
        by_id: dict[str, list[str]] = {}
        for rel in lane_files(ctx, lane_key):
            exp_id = parse_file_name(rel.rsplit("/", 1)[-1], regexes).exp_id
            if exp_id is None:
                facts = experiment_facts(ctx.info(rel), ctx)
                exp_id = facts.exp_id if facts is not None else None
            if exp_id:
                by_id.setdefault(exp_id, []).append(rel)
        cache[lane_key] = by_id
    return cache[lane_key]


def _subfolders(ctx: LintContext, base: str) -> list[str]:
    """The folders directly under ``base`` that hold markdown files, skipping through the
    sorted file list one folder at a time (a bisection each), not file by file."""
    cache = lint_cache(ctx, "subfolders")
    if base not in cache:
        files, found = ctx.files, []
        index = bisect.bisect_left(files, base)
        while index < len(files) and files[index].startswith(base):
            folder, slash, _rest = files[index][len(base) :].partition("/")
            if not slash:
                index += 1
                continue
            found.append(folder)
            index = bisect.bisect_left(files, f"{base}{folder}0", index)  # "0" sorts right after "/"
        cache[base] = found
    return cache[base]


def model_dirs(ctx: LintContext) -> list[str]:
    """The model folders under ``wiki/experiments/``."""
    return [d for d in _subfolders(ctx, "wiki/experiments/") if d.endswith(MODEL_DIR_SUFFIX)]


def lane_dirs(ctx: LintContext, model_dir: str) -> list[str]:
    """The lane folders of one model folder (those holding markdown files)."""
    return _subfolders(ctx, f"wiki/experiments/{model_dir}/")


def lane_log(lane_key: tuple[str, str]) -> str:
    """The path of a lane's ``log.md``."""
    return f"wiki/experiments/{lane_key[0]}/{lane_key[1]}/log.md"


def model_page_lane(rel: str, ctx: LintContext) -> tuple[str, str] | None:
    """The lane ``(model folder, lane)`` of the model page ``wiki/models/<model>-<lane>.md``.

    ``<model>`` is the model folder's prefix (``llama3_8B``) or its MODEL_NAME (``llama3-8b``).
    """
    stem = rel.rsplit("/", 1)[-1][: -len(".md")].casefold()
    for model_dir in model_dirs(ctx):
        for form in (model_dir[: -len(MODEL_DIR_SUFFIX)], model_name(model_dir)):
            head = f"{form}-".casefold()
            if stem.startswith(head):
                lane = next((d for d in lane_dirs(ctx, model_dir) if d.casefold() == stem[len(head) :]), None)
                if lane is not None:
                    return model_dir, lane
    return None


def model_page_for(facts: ExperimentPage, ctx: LintContext) -> PageInfo | None:
    """The model page of the experiment's lane, when the wiki has one (looked up per lane,
    without indexing every lane of the wiki)."""
    cache = lint_cache(ctx, "model-pages")
    lane_key = facts.lane_key
    if lane_key not in cache:
        if "model-files" not in cache:
            cache["model-files"] = [rel for rel in ctx.files_under("wiki/models/") if kind_of(rel) == "model"]
        model_dir, lane = lane_key
        stems = {f"{form}-{lane}".casefold() for form in (model_dir[: -len(MODEL_DIR_SUFFIX)], facts.folder.model_name)}
        cache[lane_key] = next(
            (ctx.info(rel) for rel in cache["model-files"] if rel.rsplit("/", 1)[-1][: -len(".md")].casefold() in stems),
            None,
        )
    return cache[lane_key]


def key_line(info: PageInfo, key: str) -> int:
    """The file line of a top-level frontmatter key (1 when unknown)."""
    page = info.page
    if page is None or not page.has_frontmatter:
        return 1
    for offset, line in enumerate(page.frontmatter_text.splitlines()):
        if line.startswith(f"{key}:"):
            return offset + 2
    return 1
