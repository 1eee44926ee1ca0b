"""A whole-wiki run's per-file results, kept whole for the next run in which git vouches for
the same bytes (:mod:`~wikiengine.lint.changefeed`): that run reads no index entry at all.

A warm run over an unchanged wiki of 50,000 pages spent about half its CPU looking up every
page's entry to collect what the last run already found: loading the 64 index shards (12 MB),
the loop over 50,000 entries and the hash of every page's content hash that keys the
cross-file rules. This snapshot (``run.marshal``, signed like the rest of the cache) holds
the outcome of that loop (the page rules' findings, the suppression comments, the files
that could not be read), that hash, and the frontmatter dates of the pages with findings
(for ``since``: grandfathering reads no shard), under a key made of:

- the cache's fingerprint (the engine's source and schemas, the experiments programs) and
  the rule set of the run (each selected rule's code and configuration);
- every file's path; and the hash of git's index listing (``ls-files --stage``: the blob of
  every tracked path, which is the bytes of each file git vouches for). The listing
  is hashed whole, as git wrote it, so that a run that takes a snapshot makes no table of
  50,000 blobs; a new listing (a commit, even of a script outside the wiki) is met by
  asking git what moved since (below).

The page rules judge a page by its bytes and the configuration alone (the per-file cache
rests on that already), so the same key means the same results. A snapshot is written by a
run that looked up every entry and found each vouched file's entry made from its very blob
(:meth:`~wikiengine.lint.cache.LintCache.fresh` records it), or by a run that took one and
analysed the changed files (:func:`bytes_known`). The run after an edit analyses the page
and records the snapshot with the page's content hash, and the runs after it read the
snapshot. After a commit (or a ``git add``) the listing is another: a run over the same
files and rules asks git which index entries moved since the commit the snapshot was made
at (:func:`held_since`), checks those files as it checks the ones git does not vouch for,
and records the snapshot under the new listing. A cold run hashes each page it reads as git hashes
a blob (:func:`~wikiengine.lint.cache.blob_id`): the pages that are their index blobs
are known by them at once, and the run after it takes the snapshot.

The key leaves out the files git does not vouch for: the snapshot keeps their content hashes,
and every file's in a file of its own (``run-shas.marshal``, read only after an edit). A run
under the same key looks up the entries of those files and of the
ones it does not vouch for itself; the files among them whose bytes are not the ones the
snapshot was made from (:func:`changed_since`: an edit, say) are analysed alone, and every
other file's results are the snapshot's (:class:`Delta`). The per-file pass of one edit at
50,000 pages then looks up one entry, not 50,000 (the cross-file rules read what they read: a
lane rule, the edited lane's pages). The run records the snapshot anew, with the edit.
"""

from __future__ import annotations

import bisect
import hashlib

from wikiengine.lint.changefeed import index_before
from wikiengine.lint.context import in_sorted
from wikiengine.lint.finding import Finding

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext

_SEP = "\n"  # between the content hashes a snapshot keeps: one string, loaded as it is
DELTA_FILES = 1000  # a run analyses this many changed files alone (or a tenth of the files) on a snapshot


def run_key(ctx: LintContext, wanted: frozenset) -> str | None:
    """The key under which this run may take a snapshot (``ctx.cache.vouched`` taken), or None
    when git vouches for nothing."""
    vouched = ctx.cache.vouched
    if not vouched:
        return None
    return _digest(ctx, wanted, vouched.tree.digest)


def rules_key(ctx: LintContext, wanted: frozenset) -> str:
    """The key of the run's rules alone (and the cache's fingerprint), whatever its files and
    git's index: a snapshot made under another listing (before a commit, a ``git add``) or over
    other files (a page added or gone since) may be carried over (:func:`held_since`)."""
    digest = hashlib.sha256(f"{ctx.cache.fingerprint}\0".encode())
    digest.update("\0".join(sorted(wanted)).encode())
    return digest.hexdigest()


class Delta:
    """A snapshot taken for this run (``moved``: made under another listing or over other
    files), the files whose bytes are not the ones it was made from (in the order of
    ``files``: those are analysed, the rest is the snapshot's), and the files it saw that are
    gone (``gone``: their results are dropped)."""

    __slots__ = ("key", "held", "changed", "gone", "moved", "_shas")

    def __init__(self, key: str, held: dict, changed: list[str], gone: frozenset[str] = frozenset(),
                 moved: bool = False, shas: list[str] | None = None):
        self.key, self.held, self.changed, self.gone, self.moved, self._shas = key, held, changed, gone, moved, shas

    def unchanged_shas(self, ctx: LintContext) -> list[str] | None:
        """The snapshot's content hashes, ``"-"`` for the changed files (known once analysed);
        None where they cannot be read."""
        if self._kept(ctx) is None:
            return None
        before = list(self._shas)
        for rel in self.changed:
            before[bisect.bisect_left(ctx.files, rel)] = "-"
        return before

    def shas(self, ctx: LintContext) -> list[str]:
        """Every file's content hash: the snapshot's, those of the entries of the changed files
        (every entry's where the snapshot's hashes cannot be read)."""
        shas = self._kept(ctx)
        if shas is None:
            return ctx.cache.shas(ctx.files)
        for rel, sha in zip(self.changed, ctx.cache.shas(self.changed)):
            shas[bisect.bisect_left(ctx.files, rel)] = sha
        return shas

    def _kept(self, ctx: LintContext) -> list[str] | None:
        """The snapshot's content hashes, one per file of this run (read once)."""
        if self._shas is None:
            self._shas = _kept_shas(ctx, self.held, ctx.files)
        return self._shas


def _kept_shas(ctx: LintContext, held: dict, files: list[str]) -> list[str] | None:
    """The content hashes written with ``held``, one per file of ``files`` (the snapshot's);
    None: not those."""
    kept = ctx.cache.run_snapshot_shas(held)
    shas = kept.split(_SEP) if kept is not None else []
    return shas if len(shas) == len(files) else None


def held_since(ctx: LintContext, key: str, wanted: frozenset, index_then: tuple | None) -> Delta | None:
    """The run snapshot, and the files changed since it was made: one made under this run's
    ``key``, or one made under another listing or over other files, carried over where git
    can say which index entries moved since (a commit, a ``git add``, a page added: one run
    more read every index entry, 0.6 s of CPU at 50,000 pages). None: no such snapshot, or too
    much changed."""
    held = ctx.cache.run_snapshot()
    if held is None:
        return None
    if held.get("key") == key:
        return changed_since(ctx, key, held)
    if held.get("rules_key") != rules_key(ctx, wanted) or not isinstance(held.get("files_digest"), str):
        return None
    then = ctx.files if held["files_digest"] == ctx.files_digest() else ctx.cache.run_files(held["files_digest"])
    if then is not None and then is not ctx.files:
        ctx.files_before = (held["files_digest"], then)
    moved = _moved_since(ctx, held, index_then) if then is not None else None
    return changed_since(ctx, key, held, (moved, then)) if moved is not None else None


def _moved_since(ctx: LintContext, held: dict, index_then: tuple | None) -> list[str] | None:
    """The run's files whose index entry is not the one of the commit at ``HEAD`` when ``held``
    was made: every other file git vouched for then had that entry then (the files it did not
    vouch for are the snapshot's ``others``) and has it now. None when git cannot say, or git's
    index is not the very file it was before the run's first git process (:func:`index_before`)."""
    head = held.get("head")
    if not isinstance(head, str) or index_then is None or not index_then[1]:
        return None
    moved = ctx.git.index_changes_since(head)
    if moved is None or index_before(ctx.root)[1] != index_then[1]:
        return None
    return [rel for rel in moved if in_sorted(ctx.files, rel)]


def changed_since(ctx: LintContext, key: str, held: dict, carried: tuple[list[str], list[str]] | None = None
                  ) -> Delta | None:
    """The files whose bytes are not those ``held`` (the snapshot taken for this run's ``key``) was
    made from: among the files git does not vouch for now or did not then (the others are their
    index blobs, the same listing's), those whose entry is not fresh or holds another content
    hash than the snapshot kept (a file git vouched for then counts as changed). ``carried``: the
    snapshot was made under another listing, over the files ``then``, and ``moved`` are the
    files whose index entry moved since: those are asked too, and the files not among ``then``
    (added), against every file's content hash the snapshot kept. None: the snapshot does not
    say (another shape), or too many changed to take it."""
    files, others = ctx.files, held.get("others")
    if not isinstance(others, dict):
        return None
    asked = set(ctx.cache.vouched.others()).union(others)
    shas, gone = None, frozenset()
    if carried is not None:
        moved, then = carried
        kept = _kept_shas(ctx, held, then)
        if kept is None:
            return None
        shas, gone = (kept, gone) if then is files else _carried_over(then, kept, files)
        asked.difference_update(gone)
        asked.update(moved)
        asked.update(rel for rel, sha in zip(files, shas) if sha == "-")  # added (or unreadable then)
    changed = []
    for rel in sorted(asked):
        at = bisect.bisect_left(files, rel)
        if at == len(files) or files[at] != rel:
            return None
        entry = ctx.cache.fresh(rel)
        if entry is None or entry.get("sha") != (others[rel] if rel in others else shas[at] if shas else None):
            changed.append(rel)
    if len(changed) + len(gone) > max(DELTA_FILES, len(files) // 10):
        return None  # an edit of many pages: one pass over the whole index costs less
    return Delta(key, held, changed, gone, carried is not None, shas)


def _carried_over(then: list[str], kept: list[str], files: list[str]) -> tuple[list[str], frozenset[str]]:
    """Each of ``files``' content hash among ``kept`` (those of the files ``then``), ``"-"`` for a
    file not among them; and the files of ``then`` gone."""
    by_file = dict(zip(then, kept))
    shas = [by_file.pop(rel, "-") for rel in files]
    return shas, frozenset(by_file)


def bytes_known(ctx: LintContext, files: list[str]) -> bool:
    """Do the entries this run looked up say what the bytes of ``files`` are? A file git vouches
    for must have been read as its very blob (not edited after git compared it), any other must
    have a content hash. A run records a snapshot only then: over every file after a pass over
    the whole index (:func:`made_key`), over the changed files after a run on a snapshot."""
    vouched, looked_up = ctx.cache.vouched, ctx.cache.looked_up
    others = set(vouched.others())
    for rel in files:
        entry = looked_up.get(rel)
        if entry is None or (not entry.get("sha") if rel in others else entry.get("blob") != vouched.get(rel)):
            return False
    return True


def made_key(ctx: LintContext, wanted: frozenset) -> str | None:
    """The key of the snapshot this run's per-file pass makes, or None when some file's entry
    does not say what its bytes are (:func:`bytes_known`)."""
    vouched = ctx.cache.vouched
    if not vouched or not bytes_known(ctx, ctx.files):
        return None
    return _digest(ctx, wanted, vouched.tree.digest)


def _digest(ctx: LintContext, wanted: frozenset, listing: str) -> str:
    """The files (their list, the index listing that gives the vouched ones' blobs) under the
    cache's fingerprint and the run's rule set."""
    digest = hashlib.sha256(f"{ctx.cache.fingerprint}\0{ctx.files_digest()}\0{listing}\0".encode())
    digest.update("\0".join(sorted(wanted)).encode())
    return digest.hexdigest()


def replay(held: dict, findings: list[Finding], directives: dict, leave: frozenset[str] = frozenset()) -> set[str]:
    """Add a snapshot's page findings and suppression comments, but those of the files ``leave``
    (analysed anew); return its unreadable files."""
    findings.extend(Finding(*row) for row in held["findings"] if row[0] not in leave)
    directives.update((rel, supp) for rel, supp in held["supp"].items() if rel not in leave)
    return {rel for rel in held["unreadable"] if rel not in leave}


def taken(ctx: LintContext, wanted: frozenset, findings: list[Finding], directives: dict, unreadable: set[str]
          ) -> dict:
    """What a snapshot keeps of a per-file pass (its findings are the page rules' alone), with the
    content hash of each file git does not vouch for (:func:`changed_since` reads them), and
    the commit at ``HEAD``, the key of its rules and the hash of its files (:func:`held_since`
    reads them)."""
    others = ctx.cache.vouched.others()
    return {"findings": [f.row() for f in findings], "supp": directives, "unreadable": sorted(unreadable),
            "wiki_fp": ctx.wiki_fingerprint(), "others": dict(zip(others, ctx.cache.shas(others))),
            "head": ctx.git.base, "rules_key": rules_key(ctx, wanted), "files_digest": ctx.files_digest()}


def joined_shas(ctx: LintContext) -> str:
    """Every file's content hash, as :meth:`Delta.shas` reads them back."""
    return _SEP.join(ctx.file_shas())


def dates(ctx: LintContext, pages: set[str], delta: Delta | None = None) -> dict[str, str]:
    """The frontmatter date of each of ``pages`` (those with findings) from its entry (the bytes
    the key pins): the next run grandfathers their findings (``since``) loading no shard. A
    ``delta`` run takes the snapshot's for the pages it did not analyse."""
    known = delta.held.get("dates", {}) if delta is not None else {}
    changed = set(delta.changed) | delta.gone if delta is not None else ()  # (a page gone: no date, as uncached)
    found = {}
    for path in pages:
        date = known.get(path) if path not in changed else None
        if date is None:
            date = ctx.cache.page_memo(path, "date")
        if date is not None:
            found[path] = date
    return found
