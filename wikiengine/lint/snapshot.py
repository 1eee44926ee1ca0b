"""A whole-wiki run's per-file results, kept whole for the next run in which git vouches for
the same bytes (:mod:`~wikiengine.lint.changefeed`): that run reads no index entry at all.

A warm run over an unchanged wiki of 50,000 pages spent about half its CPU looking up every
page's entry to collect what the last run already found: loading the 64 index shards (12 MB),
the loop over 50,000 entries and the hash of every page's content hash that keys the
cross-file rules. This snapshot (``run.marshal``, signed like the rest of the cache) holds
the outcome of that loop (the page rules' findings, the suppression comments, the files
that could not be read) and that hash, under a key made of:

- the cache's fingerprint (the engine's source and schemas, the experiments programs) and
  the rule set of the run (each selected rule's code and configuration);
- every file's path and, where git vouches for its bytes, its index blob; else the content
  hash of its fresh entry (an untracked page, one in a submodule, one git does not compare).
  A file that is neither vouched for nor fresh (an edit) means no snapshot: the run looks
  at every page as before.

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
from typing import TYPE_CHECKING

from wikiengine.lint.finding import Finding

if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext


def run_key(ctx: LintContext, wanted: frozenset) -> str | None:
    """The key under which this run may take a snapshot (``ctx.cache.vouched`` taken), or None
    when a file git does not vouch for is not fresh (an edit)."""
    vouched = ctx.cache.vouched
    if not vouched:
        return None
    tokens = list(map(vouched.get, ctx.files))
    for number in [number for number, blob in enumerate(tokens) if blob is None]:
        entry = ctx.cache.fresh(ctx.files[number])  # not vouched for: untracked, in a submodule, changed
        if entry is None or not entry.get("sha"):
            return None
        tokens[number] = "=" + entry["sha"]
    return _digest(ctx, wanted, tokens)


def made_key(ctx: LintContext, wanted: frozenset) -> str | None:
    """The key of the snapshot this run's per-file pass makes, or None when some file's entry
    does not say what its bytes are: a vouched file's entry must have been made from its very
    blob, any other file's must be fresh."""
    vouched = ctx.cache.vouched
    if not vouched:
        return None
    looked_up = ctx.cache.looked_up
    tokens = []
    for rel in ctx.files:
        entry, blob = looked_up.get(rel), vouched.get(rel)
        if entry is None:
            return None
        if blob is None:
            if not entry.get("sha"):
                return None
            blob = "=" + entry["sha"]
        elif entry.get("blob") != blob:
            return None
        tokens.append(blob)
    return _digest(ctx, wanted, tokens)


def _digest(ctx: LintContext, wanted: frozenset, tokens: list[str]) -> str:
    digest = hashlib.sha256(f"{ctx.cache.fingerprint}\0{ctx.files_digest()}\0".encode())
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
    return {"findings": [(f.path, f.line, f.col, f.code, f.message, f.fixable, f.date, f.subject) for f in findings],
            "supp": directives, "unreadable": sorted(unreadable), "wiki_fp": wiki_fp}
