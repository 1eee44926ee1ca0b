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
- every file's path; the hash of git's index listing (``ls-files --stage``: the blob of
  every tracked path, which is the bytes of each file git vouches for); and the path and the
  content hash of the fresh entry of each file git does not vouch for (an untracked page,
  one in a submodule, one git does not compare). A file that is neither vouched for nor
  fresh (an edit) means no snapshot: the run looks at every page as before. The listing
  is hashed whole, as git wrote it, so that a run that takes a snapshot makes no table of
  50,000 blobs; a tracked file outside the wiki that changes its blob (a committed script)
  costs one run that looks up every entry and records the snapshot anew.

The page rules judge a page by its bytes and the configuration alone (the per-file cache
rests on that already), so the same key means the same results. A snapshot is written by a
run that looked up every entry and found each vouched file's entry made from its very blob
(:meth:`~wikiengine.lint.cache.LintCache.fresh` records it). The run after an edit analyses
the page and records the snapshot with the page's content hash, and the runs after it read
the snapshot. After a commit, one run looks up every entry again (the page is now known by
its blob) and records the snapshot anew. A cold run hashes each page it reads as git hashes
a blob (:func:`~wikiengine.lint.changefeed.blob_id`): the pages that are their index blobs
are known by them at once, and the run after it takes the snapshot.
"""

from __future__ import annotations

import hashlib

from wikiengine.lint.finding import Finding

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext


def run_key(ctx: LintContext, wanted: frozenset) -> str | None:
    """The key under which this run may take a snapshot (``ctx.cache.vouched`` taken), or None
    when a file git does not vouch for is not fresh (an edit)."""
    vouched = ctx.cache.vouched
    if not vouched:
        return None
    tokens = []
    for rel in vouched.others():  # untracked, in a submodule, changed
        entry = ctx.cache.fresh(rel)
        if entry is None or not entry.get("sha"):
            return None
        tokens.append(f"{rel}={entry['sha']}")
    return _digest(ctx, wanted, vouched.tree.digest, tokens)


def made_key(ctx: LintContext, wanted: frozenset) -> str | None:
    """The key of the snapshot this run's per-file pass makes, or None when some file's entry
    does not say what its bytes are: a vouched file's entry must have been made from its very
    blob, any other file's must be fresh."""
    vouched = ctx.cache.vouched
    if not vouched:
        return None
    looked_up = ctx.cache.looked_up
    others = set(vouched.others())
    tokens = []
    for rel in ctx.files:
        entry = looked_up.get(rel)
        if entry is None:
            return None
        if rel in others:
            if not entry.get("sha"):
                return None
            tokens.append(f"{rel}={entry['sha']}")
        elif entry.get("blob") != vouched.get(rel):
            return None
    return _digest(ctx, wanted, vouched.tree.digest, tokens)


def _digest(ctx: LintContext, wanted: frozenset, listing: str, tokens: list[str]) -> str:
    """The files (their list, the index listing that gives the vouched ones' blobs, the content
    hash of each other one) under the cache's fingerprint and the run's rule set."""
    digest = hashlib.sha256(f"{ctx.cache.fingerprint}\0{ctx.files_digest()}\0{listing}\0".encode())
    digest.update("\0".join(sorted(wanted)).encode() + b"\0")
    digest.update("\0".join(tokens).encode())
    return digest.hexdigest()


def replay(held: dict, findings: list[Finding], directives: dict) -> set[str]:
    """Add a snapshot's page findings and suppression comments; return its unreadable files."""
    findings.extend(Finding(*row) for row in held["findings"])
    directives.update(held["supp"])
    return set(held["unreadable"])


def taken(findings: list[Finding], directives: dict, unreadable: set[str], wiki_fp: str) -> dict:
    """What a snapshot keeps of a per-file pass (its findings are the page rules' alone)."""
    return {"findings": [f.row() for f in findings],
            "supp": directives, "unreadable": sorted(unreadable), "wiki_fp": wiki_fp}


def dates(ctx: LintContext, pages: set[str]) -> dict[str, str]:
    """The frontmatter date of each of ``pages`` (those with findings) from its entry (the bytes
    the key pins): the next run grandfathers their findings (``since``) loading no shard."""
    found = {}
    for path in pages:
        date = ctx.cache.page_memo(path, "date")
        if date is not None:
            found[path] = date
    return found
