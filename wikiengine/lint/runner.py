"""Run the selected rules over a wiki and collect their findings.

The run, in order:

1. **Per-file pass** over the target files: read, hash, parse once, run every page rule
   and every ``collect``, find the suppression comments. Results are cached by content
   hash and kept per rule; a fresh file is not read at all, and one whose entry lacks
   some selected rules (a ``--select`` run made it, or a rule's options changed) is
   analysed by those rules alone. Over more than :data:`POOL_THRESHOLD` files to
   analyse, the process and a forked child share the pass (:func:`_shared_pass`). A whole-wiki run whose files git vouches for
   as the last run saw them takes that run's results whole instead (:mod:`~wikiengine.lint.snapshot`).
2. **Git-aware page rules** (never cached: their answer depends on the base revision).
3. **Cross-file rules** (``check_wiki``), with the whole wiki in view; in a whole-wiki
   run each rule's findings are cached by its fingerprint, the hash of every page and
   what else it declares it reads (:meth:`~wikiengine.lint.rule.Rule.wiki_inputs`), so
   an unchanged wiki skips them. Their findings are kept for the targets and for files
   deleted since the base revision.
4. **Filters**, as ruff applies them: per-file ignores, ``since`` grandfathering, inline
   suppressions (unused ones become WK100), then the baseline (stale entries become WK101).
"""

from __future__ import annotations

import hashlib
import marshal
import os
import signal
import stat
from contextlib import closing, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.collector import collector_paused
from wikiengine.core.errors import WikiError
from wikiengine.core.page import decode, parse_page
from wikiengine.lint import baseline as baseline_mod
from wikiengine.lint import grandfather, snapshot, suppress
from wikiengine.lint.cache import (
    RACY_NS,
    LintCache,
    blob_id,
    content_hash,
    engine_fingerprint,
    key_path,
    marshal_or_none,
    stat_key,
    untrusted_place,
)
from wikiengine.lint.changefeed import ChangeFeed, index_before
from wikiengine.lint.config import LintConfig, load_config
from wikiengine.lint.context import LintContext, PageInfo, discover, in_sorted, list_digest, read_page_bytes
from wikiengine.lint.finding import Finding, sorted_findings
from wikiengine.lint.folders import FolderListing
from wikiengine.lint.kinds import kind_of
from wikiengine.lint.scopes import scope
from wikiengine.model.logbook import GLOBAL_LOG, log_tier

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.gitview import GitView, OpeningView

POOL_THRESHOLD = 200
# From this many files a warm run asks git what changed (lint/changefeed.py): its one to three more
# git processes cost about 15 ms of CPU; each page git vouches for spares an lstat and, with the run
# snapshot (lint/snapshot.py), its entry's load and look-up. Whole `wiki lint` processes, CPU,
# medians of 7: 1,000 pages 0.26 s with the feed and without; the real shape (4,633 files)
# 0.39 s with it, 0.45 s without.
FEED_THRESHOLD = 1000
# what a run asked of git's index listing, kept under the listing's hash and the list of files;
# and the listing's hash and what the index stages against a commit, kept under the index file's
# path and lstat (git replaces it by a rename):
# cache tables, files of their own that a PATH run reads without the whole-wiki runs' memos
LISTING_TABLE = "git-listing"
INDEX_TABLE = "git-index"
WORKERS = 2
UNREADABLE_CODE = "WK001"


@dataclass
class LintResult:
    """What a lint run found, what it silenced and how, and what it read."""

    findings: list[Finding]
    files_checked: int
    notices: list[str] = field(default_factory=list)
    suppressed: int = 0  # silenced by comments in pages
    baselined: int = 0  # silenced by the baseline
    grandfathered: int = 0  # dropped by a rule's ``since``
    fixed: int = 0  # findings removed by ``--fix``
    unfiltered: list[Finding] = field(default_factory=list)  # before the baseline (for --write-baseline)
    unreadable: set[str] = field(default_factory=set)  # targets that could not be read or parsed
    stats: dict[str, int] = field(default_factory=dict)  # what the cache spared and what was redone
    page_facts: dict = field(default_factory=dict)  # (table, key) -> {page: value}: LintContext.asked_facts
    walked: tuple = ()  # (files, the folders holding a symbolic link): what the run's walk found


# The cycle collector off for a run: the analysis makes next to no reference cycles (1,700 objects
# over the 4,600 pages of the real-shape corpus), each collection walked the facts of every page
# again (about 0.1 s of a cold run's parent on the real shape), and what the run held is freed at
# its end (``LintContext.close``). Forked workers inherit it off.
@collector_paused()
def lint(
    root: Path,
    paths: list[str] | None = None,
    config: LintConfig | None = None,
    base: str | None = "HEAD",
    *,
    use_cache: bool = True,
    use_baseline: bool = True,
    jobs: int | None = None,
    view: GitView | None = None,
    reuse: bool = False,
    facts: dict | None = None,
    walked: tuple | None = None,
    committing: frozenset[str] = frozenset(),
) -> LintResult:
    """Lint the wiki at ``root``: every file, or only ``paths`` (posix, relative to ``root``; cross-file
    rules still see all). Git-aware rules compare with ``base`` (skipped, with one notice, outside a git
    repository or when ``base`` is None). ``jobs``: processes for a large cold pass, this one and ``jobs - 1`` forked (default 2; 1
    runs serially). ``view``: ``base`` already opened (:func:`~wikiengine.lint.gitview.changed_view`).
    ``reuse``: a PATH run with a base keeps its cross-file rules' findings, and takes them back while its
    targets and every page are as they were (a watcher's audit of an unchanged lane). ``facts``, ``walked``:
    the unchanged pages' facts and the files as a run of this moment found them; ``committing``: what it commits next."""
    from wikiengine.lint.registry import selected_codes, selected_rules

    index_then = index_before(root) if use_cache else None  # git's index before the run's first git process
    root = Path(root)
    config = config or load_config(root)
    codes = selected_codes(config)
    opening = _start_git(root, codes, base, view)  # its diff lstats every tracked file while the cache is read
    with _closed_if_raised(opening):
        ctx = _open_context(root, paths, config, codes, use_cache, index_then, facts, walked, committing)
    notices: list[str] = []
    if use_cache and (problem := untrusted_place(key_path(), root)):
        notices.append(f"lint cache off: {problem}, where a commit could plant a key (set XDG_CACHE_HOME elsewhere)")
    ran = _open_git_and_feed(ctx, codes, base, notices, view, opening, index_then if paths is None else None)
    wanted = _wanted(ctx.cache, codes)  # the rule set every entry (and the run snapshot) is keyed by
    delta = _held_snapshot(ctx, wanted, paths is None and use_cache, index_then)
    # A PATH run imports only the rules that can apply to its targets (and the files deleted
    # since the base, on which a deletion is reported); the others count as run (scopes.py).
    rules = selected_rules(config, None if paths is None else _reported_kinds(ctx))
    ctx._rules = {rule.code: rule for rule in rules}
    for rule in rules:
        rule.prepare(ctx)

    findings: list[Finding] = []
    directives: dict[str, list[tuple]] = {}
    unreadable, made = _per_file_results(ctx, codes, wanted, rules, delta, paths is None and use_cache, findings,
                                         directives, jobs)
    # A deleted file is no target (it is not there to lint), but what a rule says about
    # its deletion (EXP007) is reported on its path in every run, PATH runs included.
    deleted = set(ctx.git.deleted()) if ctx.git is not None else set()
    findings.extend(_git_page_findings(ctx, rules, ran))
    findings.extend(_reported_wiki_findings(ctx, rules, ran, reuse, deleted, paths))
    if _reads_tracked(codes):  # (reaps the prefetched git process, should no rule have needed it)
        _keep_listing_facts(ctx, ctx.tracked(), index_then if paths is None or reuse else None)

    judged = {finding.path for finding in findings}  # the pages whose dates grandfathering may ask
    findings, grandfathered, suppressed = _filtered(findings, ctx, rules, directives, ran)
    unfiltered = findings = sorted_findings(findings)
    baselined = 0
    if use_baseline:
        reported = None if paths is None else set(ctx.targets) | deleted
        findings, baselined = _baselined(findings, ctx, rules, codes, reported, unreadable)
    kept = reuse and ctx.cache.stats["wiki_rules_run"]
    if (paths is None or kept or ctx.cache.stored > max(20, len(ctx.files) // 100) or not ctx.cache.written_ns
            or ctx.cache.stats["tabled"] or ctx.cache.stats["kept"] or ctx.cache.stats["index_listed"]):
        # A pre-commit run over a few pages writes nothing: those pages cost little to analyse again,
        # and they change again before the next commit. Pages put in a table of facts (a writer's
        # re-lint of the index) are settled: they are kept, and so are the values a rule keeps for
        # later runs (EXP007's base verdicts, a lane's page conventions) and the listing of an
        # index file written well before (a watcher's next audit lists it no more).
        ctx.cache.save(ctx.files)
    _record_snapshot(ctx, made, judged, delta)
    result = LintResult(findings=findings, files_checked=len(ctx.targets), notices=notices, suppressed=suppressed,
                        baselined=baselined, grandfathered=grandfathered, unfiltered=unfiltered,
                        unreadable=unreadable, stats=dict(ctx.cache.stats), page_facts=ctx.asked_facts,
                        walked=(ctx.files, ctx.linked_folders))
    ctx.close()
    return result


def _record_snapshot(ctx: LintContext, made: tuple | None, judged: set[str], delta: snapshot.Delta | None) -> None:
    """Write the run snapshot this run made (``made``: its key and what it keeps; None: it made
    none), with the dates of the pages with findings (``judged``) and every file's content hash."""
    if made is not None:
        key, taken = made
        ctx.cache.store_run_snapshot(key, {**taken, "dates": snapshot.dates(ctx, judged, delta)}, snapshot.joined_shas(ctx))
        if delta is None or delta.held.get("files_digest") != taken["files_digest"]:
            ctx.cache.store_run_files(taken["files_digest"], ctx.files)  # read when the files change next


def _held_snapshot(ctx: LintContext, wanted: frozenset, whole: bool, index_then: tuple | None
                   ) -> snapshot.Delta | None:
    """The run snapshot a whole-wiki run takes when git vouches for its files as the last run
    saw them, or can say what moved since (lint/snapshot.py), with the files changed since;
    otherwise None, and a whole-wiki run reads the index at once."""
    key = snapshot.run_key(ctx, wanted) if whole else None
    delta = snapshot.held_since(ctx, key, wanted, index_then) if key is not None else None
    if delta is None and ctx.targets is ctx.files:
        ctx.cache.read_index()  # every file is looked up: at once, not shard by shard
    return delta


def _per_file_results(ctx: LintContext, codes: list[str], wanted: frozenset, rules, delta: snapshot.Delta | None,
                      whole: bool, findings: list[Finding], directives: dict, jobs: int | None
                      ) -> tuple[set[str], tuple | None]:
    """The per-file pass (or the run snapshot of ``delta`` in its stead, and the pass over the
    files changed since): its unreadable targets, and the snapshot this run makes (``(key,
    snapshot)``; None when it makes none)."""
    if delta is not None:
        delta.changed = _with_split_dependents(ctx, delta.changed, delta.gone)
        leave = frozenset(delta.changed) | delta.gone
        ctx.cache.stats["snapshot"] += 1
        if delta.moved:
            ctx.cache.stats["snapshot_moved"] += 1
        unreadable = snapshot.replay(delta.held, findings, directives, leave)
        ctx.page_dates = {rel: date for rel, date in delta.held.get("dates", {}).items() if rel not in leave}
        if not leave:
            ctx.assume_wiki_fingerprint(delta.held["wiki_fp"])
            if not delta.moved:  # taken under this run's key: nothing new to record
                return unreadable, None
            ctx.know_file_shas(delta.shas(ctx), unreadable)
            return unreadable, (delta.key, snapshot.taken(ctx, wanted, findings, directives, unreadable))
        ctx.cache.stats["snapshot_changed"] += len(leave)
        if (before := delta.unchanged_shas(ctx)) is not None:
            ctx.know_unchanged_shas(before)
        unreadable |= _per_file_pass(ctx, codes, wanted, rules, findings, directives, jobs, delta.changed)
        ctx.know_file_shas(delta.shas(ctx), unreadable)
        ctx.changed_since = (delta.held["wiki_fp"], leave)
        if not snapshot.bytes_known(ctx, delta.changed):
            return unreadable, None
        return unreadable, (delta.key, snapshot.taken(ctx, wanted, findings, directives, unreadable))
    unreadable = _per_file_pass(ctx, codes, wanted, rules, findings, directives, jobs)
    # made also after an edit: the run after it finds the edited page as this one left it
    key = snapshot.made_key(ctx, wanted) if whole else None
    if key is None:
        return unreadable, None
    return unreadable, (key, snapshot.taken(ctx, wanted, findings, directives, unreadable))


def _reported_wiki_findings(ctx: LintContext, rules, ran: set[str], reuse: bool, deleted: set[str],
                            paths: list[str] | None) -> list[Finding]:
    """The cross-file rules' findings on a target or a deleted file, or on a path gone in a
    whole-wiki run (:func:`_absent`). The targets are sorted: bisected, not put in a set
    (50,000 paths: 5-10 ms of a warm run)."""
    return [f for f in _wiki_findings(ctx, rules, ran, reuse)
            if f.path in deleted or in_sorted(ctx.targets, f.path) or _absent(ctx, rules, f, paths)]


def _absent(ctx: LintContext, rules, finding: Finding, paths: list[str] | None) -> bool:
    """Is ``finding`` one a ``reports_absent`` rule made, in a whole-wiki run, on a path that is gone?"""
    return (paths is None and any(r.code == finding.code and r.reports_absent for r in rules)
            and not os.path.lexists(os.path.join(ctx.root, finding.path)))


@contextmanager
def _closed_if_raised(running: OpeningView | ChangeFeed | None):
    """Stop the git processes of ``running`` (under way, or None) should the block raise."""
    try:
        yield
    except BaseException:
        if running is not None:
            running.close()
        raise


def _open_git_and_feed(ctx: LintContext, codes: list[str], base: str | None, notices: list[str], view: GitView | None,
                       opening: OpeningView | None, index_then: tuple | None) -> set[str]:
    """:func:`_open_git` (``view``: opened, or ``opening``: under way), and the change feed of a
    whole-wiki run against ``HEAD`` (``index_then`` not None), whose processes run while the diff ends."""
    head = opening.known if opening is not None else None  # HEAD's commit, when read without git
    feed = _start_feed(ctx, index_then, head) if base == "HEAD" and opening is not None else None
    with _closed_if_raised(feed):
        ran = _open_git(ctx, codes, base, notices, view or opening)
    if feed is not None:
        _take_feed(ctx, feed, index_then, head)
    return ran


def _start_feed(ctx: LintContext, index_then: tuple | None, head: str | None) -> ChangeFeed | None:
    """The change feed's git processes (:mod:`~wikiengine.lint.changefeed`), for a whole-wiki
    run from :data:`FEED_THRESHOLD` files; ``index_then``: the index before its git processes
    (None: no cache, no feed); ``head``: ``HEAD``'s commit, under which a past run may have kept
    what the index stages (:func:`_take_feed`). None also when git cannot start: every page is
    looked at."""
    if index_then is None or len(ctx.files) < FEED_THRESHOLD:
        return None
    held = _index_row(ctx.cache, index_then).get("staged") if head and index_then[1] else None
    staged = held[1] if isinstance(held, list) and len(held) == 2 and held[0] == head else None
    try:
        return ChangeFeed(ctx.root, index_then, staged)
    except WikiError:
        return None


def _take_feed(ctx: LintContext, feed: ChangeFeed, index_then: tuple, head: str | None) -> None:
    """Let the cache take the pages git vouches for as fresh, when the run's view of ``HEAD``
    opened; and keep what the index stages against ``head`` under the index file's identity,
    where git was asked, every git process of the run read that one file and it had settled:
    the index and the commit fix the answer."""
    tree = ctx.tracked() if ctx.git is not None else None
    if tree is None:
        feed.close()
        return
    # a tree known by its hash was given them when the run opened (_open_context)
    known = _know_listing_facts(ctx, tree) if tree.listed else _listing_facts(ctx, tree)
    vouched = feed.vouched(ctx.git.changes, tree, ctx.files, known[4] if known is not None else None)
    ctx.cache.vouched = vouched
    ctx.cache.vouched_since_ns = feed.started_ns
    ctx.cache.stats["vouched"] = len(ctx.files) - len(vouched.others()) if vouched else 0
    if vouched and feed.asked_staged and head and index_then[1] and _settled_before(index_then) and ctx.cache.persist:
        _store_index_row(ctx.cache, index_then, staged=[head, feed.staged])


def _keep_listing_facts(ctx: LintContext, tree, index_then: tuple | None) -> None:
    """Keep what this run asked of git's listing ``tree`` where it asked anew (the next run with
    the same listing and files takes it: :func:`_know_listing_facts`), and the hash of the
    listing under the identity of the index file it was listed from (``index_then``): where
    every git process of the run read that one file (a whole-wiki run's change feed checked it;
    any other run finds the file as it was before its first) and the file had settled. None
    for ``index_then`` keeps nothing: a run that is not repeated on one state (a writer's lint,
    whose commit writes a new index next; a pre-commit run) would write tables never read."""
    vouched = ctx.cache.vouched
    if tree is None or tree.moved or index_then is None or not ctx.cache.persist or len(ctx.files) < FEED_THRESHOLD:
        return
    key = _listing_key(ctx, tree)
    held = ctx.cache.table(LISTING_TABLE, key).get("facts")
    if tree.asked_anew or held is None:
        covers = vouched.covers() if vouched else tree.files.issuperset(ctx.files)
        plain, gitlinks, tracks, holds_dir = tree.facts()
        if held is not None:  # a run that listed the index anew asked other questions of the same listing
            tracks, holds_dir = {**held[2], **tracks}, {**held[3], **holds_dir}
        ctx.cache.store_table(LISTING_TABLE, key, {"facts": [plain, gitlinks, tracks, holds_dir, covers]})
    if not index_then[1] or not tree.listed:
        return
    settled = bool(vouched) or index_before(ctx.root)[1] == index_then[1]
    if settled and _settled_before(index_then) and _listed_as(ctx.cache, index_then) != tree.digest:
        _store_index_row(ctx.cache, index_then, digest=tree.digest)
        ctx.cache.stats["index_listed"] = 1


def _settled_before(index_then: tuple) -> bool:
    """Was the index file ``index_then`` names written well before the run (as ChangeFeed asks)?"""
    mtime_ns = index_then[1][1][2]  # (path, (inode, size, mtime, ctime))
    return mtime_ns < index_then[0] - RACY_NS


def _listing_key(ctx: LintContext, tree) -> str:
    return f"{tree.digest}:{ctx.files_digest()}"


def _listing_facts(ctx: LintContext, tree) -> list | None:
    """``[plain, gitlinks, tracks, has_directory, covers]`` as a run with ``tree``'s listing and
    this run's files found them (:meth:`~wikiengine.lint.gitview.TrackedTree.facts`), or None."""
    return ctx.cache.table(LISTING_TABLE, _listing_key(ctx, tree)).get("facts")


def _listed_as(cache: LintCache, index_then: tuple) -> str | None:
    """The hash of the listing of the index file ``index_then`` names, as a past run listed it."""
    return _index_row(cache, index_then).get("digest")


def _index_row(cache: LintCache, index_then: tuple) -> dict:
    """What past runs kept of the index file ``index_then`` names: ``digest``, the hash of its
    listing; ``staged``, ``[commit, paths]``: the paths in which it differs from that commit."""
    return cache.table(INDEX_TABLE, repr(index_then[1]))


def _store_index_row(cache: LintCache, index_then: tuple, **kept) -> None:
    cache.store_table(INDEX_TABLE, repr(index_then[1]), {**_index_row(cache, index_then), **kept})


def _reads_tracked(codes: list[str]) -> bool:
    return any(scope(code).reads_tracked for code in codes)


def _reported_kinds(ctx: LintContext) -> set[str]:
    """The kinds of the run's targets and of the files deleted since the base revision."""
    reported = set(ctx.targets) | set(ctx.git.deleted()) if ctx.git is not None else ctx.targets
    return {kind_of(rel) for rel in reported}


def _open_context(root: Path, paths: list[str] | None, config: LintConfig, codes: list[str], use_cache: bool,
                  index_then: tuple | None, facts: dict | None = None, walked: tuple | None = None,
                  committing: frozenset[str] = frozenset()) -> LintContext:
    """The run's files and targets, and its cache, keyed by the configuration and the rules ``codes``;
    ``index_then``: git's index before the run (:func:`~wikiengine.lint.changefeed.index_before`);
    ``facts``: the page facts it takes (:attr:`~wikiengine.lint.context.LintContext.carried_facts`);
    ``walked``: the files it takes instead of a walk; ``committing``: see :func:`lint`."""
    if walked is not None:
        files, linked = walked
        digest, programs = _file_list_facts(files)
    else:
        listing = FolderListing.open(root) if use_cache else None
        linked = set()
        files = discover(root, listing, linked)
        digest, programs = listing.derived(_file_list_facts) if listing is not None else _file_list_facts(files)
        if listing is not None:
            listing.save()
    targets = files if paths is None else sorted(set(paths))
    # Experiment rules read each lane's page conventions from its programs: a program's
    # change must not leave cached page findings behind.
    cache = LintCache.open(root, engine_fingerprint(_programs_fingerprint(root, programs)), persist=use_cache)
    cache.rule_fps = {code: config.rule_fingerprint(code) for code in codes}
    ctx = LintContext(root=root, config=config, files=files, targets=targets, cache=cache, files_digest=digest)
    ctx.linked_folders, ctx.carried_facts, ctx.committing = linked, facts or {}, committing
    if _reads_tracked(codes):
        large = index_then is not None and index_then[1] and len(files) >= FEED_THRESHOLD
        listed_as = _listed_as(cache, index_then) if large else None
        ctx.prefetch_tracked(listed_as)
        if listed_as:
            _know_listing_facts(ctx, ctx.tracked())
    return ctx


def _know_listing_facts(ctx: LintContext, tree) -> list | None:
    """What the run asks of git's listing, as the last run with the same listing and files
    found it: given to ``tree`` (no parse, and no listing for a tree known by its hash)."""
    known = _listing_facts(ctx, tree)  # [plain, gitlinks, tracks, has_directory, covers]
    if known is not None:
        tree.know(known)
        ctx.all_files_tracked = known[4]
    return known


def _git_page_findings(ctx: LintContext, rules, ran: set[str]) -> list[Finding]:
    """The git-aware page rules on every target (never cached: their answer depends on the base)."""
    found: list[Finding] = []
    for rule in rules:
        if rule.needs_git and rule.code in ran and rule.kinds:
            for rel in ctx.targets:
                info = ctx.info(rel)
                if info.kind in rule.kinds and info.page is not None:
                    found.extend(rule.check_page(info, ctx))
    return found


def _filtered(findings: list[Finding], ctx: LintContext, rules, directives: dict, ran: set[str]):
    """``(findings, grandfathered, suppressed)`` after the per-file ignores, ``since`` grandfathering
    and the inline suppressions (the unused ones become WK100)."""
    config = ctx.config
    findings = [f for f in findings if not config.ignored_for(f.path, f.code)]
    findings, grandfathered = grandfather.apply(findings, ctx, grandfather.since_dates(ctx, rules))
    findings, unused, suppressed = suppress.apply(findings, directives, ran)
    if config.enabled(suppress.UNUSED_CODE):
        silenced = _files_disabling(directives, suppress.UNUSED_CODE)
        findings.extend(f for f in unused if f.path not in silenced and not config.ignored_for(f.path, f.code))
    return findings, grandfathered, suppressed


def _baselined(findings: list[Finding], ctx: LintContext, rules, codes: list[str], scope: set[str] | None,
               unreadable: set[str]):
    """``(findings, baselined)`` after the baseline (its stale entries become WK101)."""
    from wikiengine.lint.registry import rule_class

    accepted = baseline_mod.load(ctx.root / baseline_mod.BASELINE_FILE)
    by_code = {rule.code: rule for rule in rules}

    def volatile(code: str, message: str) -> bool:
        if code not in by_code and code in codes:  # selected, but not imported by this PATH run
            by_code[code] = rule_class(code)()
        return code in by_code and by_code[code].baseline_volatile(ctx, message)

    findings, stale, baselined = baseline_mod.apply(findings, accepted, scope, unreadable, volatile)
    if ctx.config.enabled(baseline_mod.STALE_CODE):
        findings = sorted_findings(findings + stale)
    return findings, baselined


def _file_list_facts(files: list[str]) -> list:
    """``[hash of the list, the experiments programs in it]``: what a run derives from its list
    of files (kept with the folder listing while the walk finds the same files)."""
    return [list_digest(files), [rel for rel in files if rel.endswith("/program.md") and rel.startswith("wiki/experiments/")]]


def _programs_fingerprint(root: Path, programs: list[str]) -> str:
    """A hash of every experiments program (they carry lanes' page conventions)."""
    digest = hashlib.blake2b(digest_size=16)
    for rel in programs:
        path = root / rel
        try:
            if not stat.S_ISREG(os.lstat(path).st_mode):
                continue  # a FIFO or a symlink is never opened here (WK001 reports it)
            with open(path, "rb") as handle:
                digest.update(rel.encode() + b"\0" + handle.read(1 << 20))
        except OSError:
            continue
    return digest.hexdigest()


def _files_disabling(directives: dict[str, list[tuple]], code: str) -> set[str]:
    """The pages with a ``disable-file`` directive naming ``code`` (each directive read once)."""
    return {
        path for path, entries in directives.items()
        if any(file_wide and code in codes for _line, _col, codes, file_wide in entries)
    }


def _git_codes(codes: list[str]) -> list[str]:
    return [code for code in codes if scope(code).needs_git]


def _start_git(root: Path, codes: list[str], base: str | None, view: GitView | None) -> OpeningView | None:
    """The base revision's git processes, started now when a git-aware rule will read them and
    no ``view`` is given (None also when they cannot start: :func:`_open_git` says why)."""
    if base is None or view is not None or not _git_codes(codes):
        return None
    from wikiengine.lint.gitview import OpeningView

    try:
        return OpeningView(root, base, untracked=False)
    except WikiError:
        return None


def _open_git(ctx: LintContext, codes: list[str], base: str | None, notices: list[str],
              view: GitView | OpeningView | None = None) -> set[str]:
    """Open the base revision if a git-aware rule is selected (``view``: opened, or opening);
    return the codes that can run."""
    git_codes = _git_codes(codes)
    ran = set(codes) - set(git_codes)
    ran |= {suppress.UNUSED_CODE, baseline_mod.STALE_CODE}
    if not git_codes:
        return ran
    from wikiengine.lint.gitview import GitView, OpeningView, in_git_repo

    if base is not None:
        try:
            if isinstance(view, OpeningView):
                view = view.view()
            ctx.git = view if view is not None else GitView.open(ctx.root, base, untracked=False)
        except WikiError:
            if in_git_repo(ctx.root):  # asked only on failure: one git process less per run
                raise  # a bad revision in a real repository
    if ctx.git is not None:
        ran |= set(git_codes)
    else:
        skipped = ", ".join(git_codes)
        notices.append(f"not a git repository (or no base revision): git-aware rules skipped ({skipped})")
    return ran


# --- the per-file pass ------------------------------------------------------------------

_WORKER: tuple | None = None  # (ctx, page rules, fact rules) of a shared pass, inherited by its children


class _ByKind(list):
    """Page rules or collectors, with the ones that apply to each kind of page found once per
    run, not asked of every page (50 rules on each of the real shape's 4,633 pages)."""

    def __init__(self, rules, applies):
        super().__init__(rules)
        self.applies = applies  # (rule, kind) -> does the rule run on pages of that kind?
        self._of: dict[str, list] = {}

    def of_kind(self, kind: str) -> list:
        found = self._of.get(kind)
        if found is None:
            found = self._of[kind] = [rule for rule in self if self.applies(rule, kind)]
        return found

    def only(self, codes) -> _ByKind:
        """The rules among these whose code is in ``codes``."""
        return _ByKind([rule for rule in self if rule.code in codes], self.applies)


def _page_rules(rules) -> tuple[_ByKind, _ByKind]:
    page_rules = _ByKind([r for r in rules if r.kinds and not r.needs_git],
                         lambda rule, kind: kind in rule.kinds)
    fact_rules = _ByKind([r for r in rules if r.has_collect() and not r.needs_git],
                         lambda rule, kind: rule.collects_on(kind))
    return page_rules, fact_rules


def _per_file_pass(ctx: LintContext, selected: list[str], wanted: frozenset, rules, findings: list[Finding],
                   directives: dict, jobs: int | None, changed: list[str] | None = None) -> set[str]:
    """Run the page rules on every target (or on ``changed``, a whole-wiki run's changed files);
    return those that could not be read or parsed.

    A fresh file whose entry lacks some of the rules (their fingerprint is not in its rule
    set) is analysed by those rules only; the others' findings and facts are kept. The
    ``selected`` rules that a PATH run did not import (they cannot apply to its targets)
    are recorded as run: they find and collect nothing there. ``wanted``: the rule set an entry
    must hold (:func:`_wanted` of ``selected``)."""
    page_rules, fact_rules = _page_rules(rules)
    cache = ctx.cache
    codes = _page_codes(selected)
    unreadable = set()
    todo: dict[frozenset, list[str]] = {}  # the rules to run -> the files to run them on
    missing_of = cache.missing
    targets = ctx.targets if changed is None else changed
    # a whole-wiki run read the index at once (_held_snapshot): its entries are taken in one pass
    looked_up = cache.fresh_all(targets) if targets is ctx.files else map(cache.fresh, targets)
    for rel, entry in zip(targets, looked_up):
        missing = None if entry is None else missing_of(entry, wanted)
        if rel == GLOBAL_LOG and missing is not None and entry.get(SPLIT_KEY) != ctx.lane_logs_digest():
            missing = None  # a lane log changed since: the log-split date its findings hang on may have moved
        if missing is None or missing:
            todo.setdefault(missing, []).append(rel)
        elif entry["findings"] or entry["supp"] or entry["error"]:  # most pages: nothing to collect
            _collect_entry(rel, entry, codes, findings, directives, unreadable)
    workers = WORKERS if jobs is None else max(1, jobs)
    for missing, files in todo.items():
        page_todo = page_rules if missing is None else page_rules.only(missing)
        fact_todo = fact_rules if missing is None else fact_rules.only(missing)
        for code in missing or ():
            cache.stats[f"rerun:{code}"] += len(files)
        if workers > 1 and len(files) > POOL_THRESHOLD:
            results = _shared_pass(ctx, page_todo, fact_todo, files, workers)
        else:
            keep = len(files) <= ctx.KEPT_BODIES  # else later rules read bodies from disk, frontmatter from the cache
            results = (analyse_file(ctx, rel, page_todo, fact_todo, keep=keep) for rel in files)
        ran = wanted if missing is None else cache.wanted(missing)  # one set, shared by the entries
        with closing(results):  # (a pass left by an exception stops its forked children at once)
            for rel, (entry, record) in results:
                entry["rules"] = ran
                if rel == GLOBAL_LOG:
                    entry[SPLIT_KEY] = ctx.lane_logs_digest()
                if missing is None:
                    cache.store(rel, entry, record)
                else:
                    entry = cache.merge(rel, entry, record)
                _collect_entry(rel, entry, codes, findings, directives, unreadable)
    return unreadable


SPLIT_KEY = "split"  # in the global log's entry: the lane logs it was judged beside. Its LOG003 and
# LOG004 findings hang on the log-split date, their oldest entry (rules/_logs.py), so the entry is
# taken only while they are as they were when it was made (LintContext.lane_logs_digest).


def _with_split_dependents(ctx: LintContext, changed: list[str], gone: frozenset[str] = frozenset()) -> list[str]:
    """``changed`` (in the order of the files) with the global log, when a lane log is among them
    or among the files ``gone``."""
    if (GLOBAL_LOG in changed or not any(rel.endswith("/log.md") for rel in (*changed, *gone))
            or not in_sorted(ctx.files, GLOBAL_LOG)):
        return changed
    if not set(changed) & set(ctx.lane_logs()) and not any(log_tier(rel) == "lane" for rel in gone):
        return changed
    return sorted([*changed, GLOBAL_LOG])


def _page_codes(selected: list[str]) -> set[str]:
    """The page rules among the ``selected`` codes (the git-aware ones are never cached)."""
    return {code for code in selected if scope(code).kinds and not scope(code).needs_git}


def _wanted(cache: LintCache, selected: list[str]) -> frozenset:
    """The rule set an entry must hold for the ``selected`` codes: the page rules and the collectors."""
    return cache.wanted(_page_codes(selected) | {code for code in selected
                                                  if scope(code).collects and not scope(code).needs_git})


def _collect_entry(rel: str, entry: dict, codes: set[str], findings: list[Finding], directives: dict,
                   unreadable: set[str]) -> None:
    """The findings of the selected page rules ``codes`` in a file's entry, its suppressions, its read error."""
    findings.extend(Finding(rel, *row) for row in entry["findings"] if row[2] in codes)
    if entry.get("supp"):
        directives[rel] = entry["supp"]
    if entry.get("error"):
        unreadable.add(rel)


def analyse_file(ctx: LintContext, rel: str, page_rules, fact_rules, keep: bool = False) -> tuple[str, tuple[dict, list]]:
    """Read, hash and parse one file; run the page rules and collectors on it: its index
    entry and its shard record (:class:`~wikiengine.lint.cache.LintCache`)."""
    path = ctx.root / rel
    kind = kind_of(rel)
    text, page, error, blob = "", None, None, ctx.cache.vouched.get(rel)
    try:
        data, st = read_page_bytes(path, rel)
        key, sha = stat_key(st), content_hash(data)
        # the blob git vouched for, when these very bytes are it (git compared the file before they were read)
        blob = blob if blob is not None and blob_id(data, blob) == blob else None
    except WikiError as err:
        data, key, sha, error, blob = None, None, None, err, None
    if data is not None:
        try:
            text = decode(data, rel)
            data = None  # the bytes are hashed: free them before the parse's peak (a 16 MB page)
            page = parse_page(text, path)
        except WikiError as err:
            error = err
    info = PageInfo(rel, path, kind, page, error)
    page_findings: list[tuple] = []
    for rule in page_rules.of_kind(kind):
        if page is not None or (rule.code == UNREADABLE_CODE and error is not None):
            for f in rule.check_page(info, ctx):
                page_findings.append((f.line, f.col, f.code, f.message, f.fixable, f.date, f.subject))
    facts = {}
    if page is not None:
        fps = ctx.cache.rule_fps
        for rule in fact_rules.of_kind(kind):
            facts[rule.code] = [fps.get(rule.code, ""), rule.collect(info, ctx)]
    entry = {
        "key": key,
        "sha": sha,
        "error": (error.message, error.line or 1) if error is not None else None,
        "findings": page_findings,
        "supp": suppress.parse_directives(text) if text else [],
        "date": grandfather.frontmatter_date(info.page.frontmatter) if info.page is not None else "",
    }
    if blob is not None:
        entry["blob"] = blob
    # a frontmatter value marshal cannot hold: the cache simply does not know it
    record = [sha, marshal_or_none(info.page.frontmatter) if info.page is not None else None, facts]
    if keep:
        ctx.remember(info)
    return rel, (entry, record)


def _analyse_chunk(chunk: list[str]) -> list:
    """The entries of ``chunk``, with ``(rel, None)`` for a page whose schema errors only
    jsonschema can word in a child (:func:`~wikiengine.core.schemas.defer_wording`): the
    parent analyses it again."""
    from wikiengine.core.schemas import WordingDeferred

    ctx, page_rules, fact_rules = _WORKER
    done = []
    for rel in chunk:
        try:
            done.append(analyse_file(ctx, rel, page_rules, fact_rules))
        except WordingDeferred:
            done.append((rel, None))
    return done


def _taken(chunks: list[list[str]], tickets: int):
    """The chunks whose numbers this process reads from the pipe ``tickets`` (four bytes each,
    written at once: the processes that read one pipe each take the next chunk left)."""
    while ticket := os.read(tickets, 4):
        yield chunks[int.from_bytes(ticket, "little")]


def _child(chunks: list[list[str]], tickets: int, sent) -> int:
    """Fork a child that analyses the chunks it takes and writes their entries, marshalled as the
    cache writes them, to the temporary file ``sent``; it leaves without the parent's teardown."""
    pid = os.fork()
    if pid:
        return pid
    status = 1
    try:
        from wikiengine.core.schemas import defer_wording

        defer_wording()
        sent.write(marshal.dumps([entry for chunk in _taken(chunks, tickets) for entry in _analyse_chunk(chunk)]))
        sent.flush()
        status = 0
    finally:
        os._exit(status)


def _shared_pass(ctx, page_rules, fact_rules, todo: list[str], workers: int):
    """The entries of ``todo``, analysed by this process and ``workers - 1`` forked children at
    once, each taking the next chunk left from a pipe of chunk numbers. A child sends its entries
    back marshalled through a temporary file when it is done (paths interned arrive interned, one
    string per path); the parent analyses chunks meanwhile, so that no process waits idle (a pool
    of two workers beside a waiting parent took 8% more CPU on the real shape: 1.88 -> 1.74 s, 7
    rounds alternating). Should a child fail, or no child be had, the parent analyses what it
    did not send. Neither side runs the cycle collector (:func:`lint` pauses it for the run).

    The parent first analyses one file of each kind itself: the imports and compiled schema
    validators that a kind needs are then made once, before the fork. Small chunks (32 in all)
    keep the last one from running alone long. A page that fails its schema check in a child is
    analysed again in the parent as it comes back: jsonschema, which words its errors, is then
    imported once, and only in a run that has such a page."""
    import tempfile

    firsts: dict[str, str] = {}
    for rel in todo:
        firsts.setdefault(kind_of(rel), rel)
    for rel in firsts.values():
        yield analyse_file(ctx, rel, page_rules, fact_rules)
    done = set(firsts.values())
    todo = [rel for rel in todo if rel not in done]
    global _WORKER
    _WORKER = (ctx, page_rules, fact_rules)
    size = max(20, len(todo) // 32)
    chunks = [todo[i : i + size] for i in range(0, len(todo), size)]
    tickets, filling = os.pipe()
    children: dict[int, object] = {}
    try:
        os.write(filling, b"".join(number.to_bytes(4, "little") for number in range(len(chunks))))
        os.close(filling)
        for _ in range(workers - 1):
            try:
                sent = tempfile.TemporaryFile()
            except OSError:
                break  # (no room for a child's entries: this process analyses what it would have)
            try:
                children[_child(chunks, tickets, sent)] = sent
            except OSError:  # no process to be had: as above
                sent.close()
                break
        for chunk in _taken(chunks, tickets):
            for rel, result in _analyse_chunk(chunk):  # (the parent words schema errors itself: no None)
                done.add(rel)
                yield rel, result
        while children:
            pid, sent = next(iter(children.items()))
            _, status = os.waitpid(pid, 0)  # (never os.wait(): it could reap the run's git processes)
            del children[pid]
            if os.waitstatus_to_exitcode(status) == 0:
                sent.seek(0)
                for rel, result in marshal.loads(sent.read()):
                    done.add(rel)
                    yield (rel, result) if result is not None else analyse_file(ctx, rel, page_rules, fact_rules)
            sent.close()
        for rel in todo:  # what a failed child did not send
            if rel not in done:
                yield analyse_file(ctx, rel, page_rules, fact_rules)
    finally:
        _WORKER = None
        os.close(tickets)
        for pid, sent in children.items():
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
            sent.close()


# --- cross-file rules -------------------------------------------------------------------


def _wiki_findings(ctx: LintContext, rules, ran: set[str], reuse: bool = False) -> list[Finding]:
    """The cross-file rules' findings; in a whole-wiki run each rule's are reused when its
    fingerprint, every page and what else it reads (``wiki_inputs``) are as they were; in a
    PATH run that asks (``reuse``), when its targets are too, the pages told by git's view."""
    wiki_rules = [r for r in rules if r.code in ran and scope(r.code).checks_wiki]
    if not ctx.cache.persist:
        return [f for rule in wiki_rules for f in rule.check_wiki(ctx)]
    if ctx.targets is ctx.files:
        state, slot = None, ""
    else:
        # A PATH run: rules work from the targets, so their findings describe only those (never
        # cached as the whole wiki's), and hashing every page would cost more than they do.
        state, slot = _paths_state(ctx) if reuse else None, "@paths"
        if state is None:
            return [f for rule in wiki_rules for f in rule.check_wiki(ctx)]
    found: list[Finding] = []
    for rule in wiki_rules:
        inputs = rule.wiki_inputs(ctx)
        if inputs is None:
            found.extend(rule.check_wiki(ctx))
            continue
        # a PATH run's state already tells every page: the whole wiki's hashes are not read for it
        pages = state or (ctx.wiki_fingerprint() if rule.reads_pages else ctx.files_digest())
        key = f"{ctx.cache.rule_fps.get(rule.code, '')}:{pages}:{inputs}"
        cached = ctx.cache.wiki_findings(rule.code + slot, key)
        if cached is None:
            fresh = _by_lane(ctx, rule, inputs) if rule.by_lane and state is None else list(rule.check_wiki(ctx))
            ctx.cache.store_wiki_findings(rule.code + slot, key, [f.row() for f in fresh])
            ctx.cache.stats["wiki_rules_run"] += 1
            ctx.cache.stats[f"wiki_run:{rule.code}"] = 1
            found.extend(fresh)
        else:
            ctx.cache.stats["wiki_rules_reused"] += 1
            found.extend(Finding(*row) for row in cached)
    return found


def _by_lane(ctx: LintContext, rule, inputs: str) -> list[Finding]:
    """A ``by_lane`` rule's findings in a whole-wiki run, lane by lane (lint/lane_parts.py): a
    lane's (and the rest's) taken from the cache while its part's key holds, the others found
    with its files as the targets."""
    from wikiengine.lint.lane_parts import by_part

    def judge() -> list[tuple]:
        mine = set(ctx.targets)
        return [f.row() for f in rule.check_wiki(ctx) if f.path in mine]

    salt = f"{ctx.cache.rule_fps.get(rule.code, '')}:{inputs}:{rule.lane_inputs(ctx)}"
    rows, kept = by_part(ctx, ctx.cache.parts(rule.code), salt, judge)
    ctx.cache.store_parts(rule.code, kept)  # {part: [key, rows]}
    return [Finding(*row) for row in rows]


def _paths_state(ctx: LintContext) -> str | None:
    """The targets of a PATH run and every page, as git's view of the base tells them
    (:func:`~wikiengine.lint.gitview.pages_fingerprint`); None without a base or outside git."""
    from wikiengine.lint.gitview import pages_fingerprint

    tree = ctx.tracked() if ctx.git is not None else None
    if tree is None:
        return None
    digest = hashlib.blake2b("\0".join(ctx.targets).encode(), digest_size=16).hexdigest()
    tracked = None if ctx.all_files_tracked else tree.files  # no listing read to tell what is known
    return f"{digest}:{pages_fingerprint(ctx.git, tracked, ctx.files, ctx.cache.sha)}"
