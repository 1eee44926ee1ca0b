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


def run_key(ctx: LintContext, wanted: frozenset, recording: bool = False) -> str | None:
    """The snapshot key of the run's files (``ctx.cache.vouched`` taken), or None when a file has
    changed. ``recording``: after the per-file pass, when a vouched file counts only if its
    entry was made from its blob."""
    cache, files = ctx.cache, ctx.files
    vouched = cache.vouched
    if not vouched:
        return None
    tokens = list(map(vouched.get, files))
    if recording:
        looked_up = cache.looked_up
        for number, (rel, blob) in enumerate(zip(files, tokens)):
            entry = looked_up.get(rel)
            if entry is None or (entry.get("blob") != blob if blob is not None else not entry.get("sha")):
                return None
            if blob is None:
                tokens[number] = "=" + entry["sha"]
    else:
        for number in [number for number, blob in enumerate(tokens) if blob is None]:
            entry = cache.fresh(files[number])  # not vouched for: untracked, in a submodule, changed
            if entry is None or not entry.get("sha"):
                return None
            tokens[number] = "=" + entry["sha"]
    digest = hashlib.sha256(f"{cache.fingerprint}\0{ctx.files_digest()}\0".encode())
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
