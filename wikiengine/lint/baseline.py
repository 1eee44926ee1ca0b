"""The committed baseline, ``.wiki-lint-baseline.json``: findings that were accepted when
the linter was adopted, so that only new ones fail.

An entry is ``path``, ``code``, a hash of the message and a ``count``. Line numbers are
left out (and normalised out of messages) so that edits elsewhere in a page do not
invalidate it. An entry that matches fewer findings than its count is stale and is
reported as ``WK101``: the page was fixed, so the baseline should shrink. An entry that a
rule calls volatile (a broken link into a submodule, which a clone without that submodule
cannot judge and a clone with it may find fixed) is never stale.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from collections.abc import Callable
from pathlib import Path

from wikiengine.core.atomic import atomic_write_text
from wikiengine.core.errors import PageError, WikiError
from wikiengine.core.safe_read import load_json, read_optional
from wikiengine.lint.finding import Finding, without_line_refs

BASELINE_FILE = ".wiki-lint-baseline.json"
STALE_CODE = "WK101"


def message_hash(message: str) -> str:
    """A short hash of ``message`` with line references ("line 12") normalised away."""
    return hashlib.sha1(without_line_refs(message).encode("utf-8")).hexdigest()[:16]


def _key(finding: Finding) -> tuple[str, str, str]:
    return (finding.path, finding.code, message_hash(finding.message))


def load(path: Path) -> dict[tuple[str, str, str], dict]:
    """The baseline's entries by (path, code, message hash); {} when there is no file."""
    try:
        text = read_optional(path, kind="record", within=Path(path).parent)  # a pipe or a link out: exit 2
        if text is None:
            return {}
        data = load_json(text, path, object_pairs_hook=_unique_keys)
        entries = data["entries"]
        out = {}
        if not isinstance(entries, list):
            raise ValueError("'entries' must be a list")
        for entry in entries:
            count = entry["count"]
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise ValueError(f"count must be a whole number of at least 1, not {str(count)[:20]}")
            if not all(isinstance(entry[k], str) for k in ("path", "code", "hash")):
                raise ValueError("path, code and hash must be strings")
            out[(entry["path"], entry["code"], entry["hash"])] = {
                "count": count,
                "message": str(entry.get("message", "")),
            }
        return out
    except RecursionError:
        raise WikiError("cannot read the lint baseline: nested too deep", path) from None
    except PageError as exc:
        why = exc.message.removeprefix("cannot read: ")  # not "cannot read ...: cannot read: ..."
        raise WikiError(f"cannot read the lint baseline: {why}", path, exc.line) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError, KeyError, TypeError, ValueError) as exc:
        raise WikiError(f"cannot read the lint baseline: {exc}", path) from None


def _unique_keys(pairs: list[tuple[str, object]]) -> dict:
    duplicates = sorted(key for key, count in Counter(key for key, _ in pairs).items() if count > 1)
    if duplicates:
        raise ValueError(f"duplicate key {duplicates[0]!r}")
    return dict(pairs)


def write(path: Path, findings: list[Finding], unreadable: set[str] = frozenset()) -> int:
    """Write every finding into the baseline; return the number of entries (see :func:`accepted`)."""
    text, count = accepted(path, findings, unreadable)
    atomic_write_text(path, text)
    return count


def accepted(path: Path, findings: list[Finding], unreadable: set[str] = frozenset()) -> tuple[str, int]:
    """The baseline file's text that accepts every finding, and its number of entries.

    Entries of the old baseline on ``unreadable`` pages (whose findings are unknown this
    run) are kept: a page that broke must not throw away what was accepted on it.
    """
    counts = Counter(_key(f) for f in findings)
    messages = {_key(f): f.message for f in findings}
    try:
        previous = load(path) if unreadable else {}
    except WikiError:  # a broken baseline is being rewritten: nothing to carry over
        previous = {}
    for key, entry in previous.items():
        if key[0] in unreadable and key not in counts:
            counts[key], messages[key] = entry["count"], entry["message"]
    return render({key: {"count": n, "message": messages[key]} for key, n in counts.items()}), len(counts)


def render(baseline: dict[tuple[str, str, str], dict]) -> str:
    """The baseline file's text for entries as :func:`load` gives them."""
    entries = [
        {"path": p, "code": c, "hash": h, "count": entry["count"], "message": entry["message"]}
        for (p, c, h), entry in sorted(baseline.items())
    ]
    return json.dumps({"version": 1, "entries": entries}, indent=2, ensure_ascii=False) + "\n"


def pruned(baseline: dict[tuple[str, str, str], dict], stale: list[Finding], unfiltered: list[Finding]) -> dict:
    """``baseline`` less what was fixed: each entry a ``stale`` finding (WK101) reports is
    cut down to the findings of ``unfiltered`` (the run's findings before the baseline)
    that still match it, and dropped at none."""
    matched = Counter(_key(f) for f in unfiltered)
    out = dict(baseline)
    for finding in stale:
        key = stale_key(finding)
        if key in out:
            if matched[key]:
                out[key] = {**out[key], "count": min(out[key]["count"], matched[key])}
            else:
                del out[key]
    return out


def stale_key(finding: Finding) -> tuple[str, str, str]:
    """The baseline entry a stale finding (WK101) reports: its subject is ``code hash``."""
    code, _, digest = (finding.subject or "").partition(" ")
    return (finding.path, code, digest)


def apply(
    findings: list[Finding],
    baseline: dict[tuple[str, str, str], dict],
    checked: set[str] | None,
    unreadable: set[str] = frozenset(),
    volatile: Callable[[str, str], bool] | None = None,
) -> tuple[list[Finding], list[Finding], int]:
    """Drop baselined findings; return (kept, stale-entry findings, number silenced).

    ``checked``: the paths that were linted (None: the whole wiki), so that a partial run
    does not call entries of files it did not look at stale; nor are entries of
    ``unreadable`` pages stale (their rules could not run: the page is not fixed).
    ``volatile(code, message)``: entries that depend on the clone's state rather than
    on the pages, never stale.
    """
    if not baseline:
        return findings, [], 0
    remaining = {key: entry["count"] for key, entry in baseline.items()}
    kept = []
    silenced = 0
    for finding in findings:
        key = _key(finding)
        if remaining.get(key, 0) > 0:
            remaining[key] -= 1
            silenced += 1
        else:
            kept.append(finding)
    stale = []
    for (path, code, _hash), left in sorted(remaining.items()):
        if left <= 0 or (checked is not None and path not in checked) or path in unreadable:
            continue
        entry = baseline[(path, code, _hash)]
        if volatile is not None and volatile(code, entry["message"]):
            continue
        matched = entry["count"] - left
        stale.append(
            Finding(
                path,
                1,
                1,
                STALE_CODE,
                f"baseline entry {code} ({entry['message'][:60]!r}) matched {matched} of {entry['count']}: "
                "it was fixed, run `wiki lint --write-baseline`",
                subject=f"{code} {_hash}",
            )
        )
    return kept, stale, silenced
