"""Whether a lane is getting anywhere: thrash (weak results in a row on one mechanism) and
stall (filings that never move the frontier), from the lane journal's filing records.

One computation for the watcher's finding (:mod:`wikiengine.step.audit`) and the gates
that act on it (`wiki exp new` / `wiki exp retry` refuse a thrashing mechanism; `wiki step`
owes a judgement on a stall). Pure: journal records and pages in, facts out.

- **Thrash**: ``thrash_k`` (default 3) consecutive ``invalid``/``inconclusive`` filings on one
  mechanism (the folded **Mechanism** paragraph), or on the letters of one v-id (v045, v045b,
  v045c). Any other verdict on that mechanism or number ends the streak.
- **Stall**: ``stall_after_filings`` (default 8) filings in the newest session since the
  frontier last moved (a filing record's ``moved``; a record written before the field
  existed counts as a move when it is ``supported``). A claim made after the stall was
  reached whose hypothesis differs from every hypothesis of the stalled filings rotates
  it: the count starts again from that claim.
"""

from __future__ import annotations

from dataclasses import dataclass

from wikiengine.model.experiment import base_id

DEFAULT_THRASH_K = 3
DEFAULT_STALL_AFTER = 8
WEAK = ("invalid", "inconclusive")


@dataclass(frozen=True)
class Streak:
    """Weak filings in a row on one mechanism or one v-id's letters (``kind``: mechanism | v-id)."""

    kind: str
    value: str  # the folded mechanism, or the base v-id
    vids: tuple[str, ...]


def thrash_k(config: dict) -> int:
    return int(config.get("thrash_k", DEFAULT_THRASH_K))


def stall_after(config: dict) -> int:
    return int(config.get("stall_after_filings", DEFAULT_STALL_AFTER))


def streaks(records: list[dict], mechanisms: dict[str, str]) -> dict[tuple[str, str], Streak]:
    """Every (kind, value) -> its current weak streak (possibly empty), in journal order.
    ``mechanisms``: vid -> the page's folded mechanism ("" or absent: none)."""
    found: dict[tuple[str, str], tuple[str, ...]] = {}
    for record in records:
        vid = record.get("vid")
        if record.get("op") != "file" or vid not in mechanisms:
            continue
        weak = record.get("verdict") in WEAK
        for key in (("mechanism", mechanisms[vid]), ("v-id", base_id(vid))):
            if key[1]:
                found[key] = found.get(key, ()) + (vid,) if weak else ()
    return {key: Streak(key[0], key[1], vids) for key, vids in found.items()}


def thrashing(records: list[dict], mechanisms: dict[str, str], k: int) -> list[Streak]:
    """The streaks of at least ``k`` weak results (what the watcher reports), by kind and value."""
    return [s for _key, s in sorted(streaks(records, mechanisms).items()) if len(s.vids) >= k]


def thrash_of(records: list[dict], mechanisms: dict[str, str], k: int, *, mechanism: str = "",
              vid: str = "") -> Streak | None:
    """The thrashing streak a new stub on ``mechanism`` (or a retry of ``vid``) would extend, or None."""
    current = streaks(records, mechanisms)
    for key in (("mechanism", mechanism), ("v-id", base_id(vid) if vid else "")):
        streak = current.get(key) if key[1] else None
        if streak is not None and len(streak.vids) >= k:
            return streak
    return None


@dataclass(frozen=True)
class Stall:
    """Filings of the session since the frontier last moved (or the last rotation)."""

    filings: tuple[str, ...]  # their vids, oldest first
    hypotheses: tuple[str, ...]  # the hypotheses they tested, first seen first
    after: int  # N

    @property
    def stalled(self) -> bool:
        return len(self.filings) >= self.after


def _moved(record: dict) -> bool:
    return bool(record["moved"]) if "moved" in record else record.get("verdict") == "supported"


def stall(records: list[dict], hypotheses: dict[str, str], after: int) -> Stall:
    """The stall of the newest session (``hypotheses``: vid -> the page's hypothesis)."""
    start = max((i for i, r in enumerate(records) if r.get("op") == "start"), default=-1)
    window: list[str] = []
    for record in records[start + 1:]:
        op, vid = record.get("op"), record.get("vid")
        if op == "file":
            window = [] if _moved(record) else window + [vid]
        elif op in ("claim", "retry") and len(window) >= after:
            tried = {hypotheses.get(v) for v in window}
            if hypotheses.get(vid) and hypotheses.get(vid) not in tried:
                window = []  # a rotation: a hypothesis the stalled filings did not test
    seen = dict.fromkeys(h for v in window if (h := hypotheses.get(v)))
    return Stall(tuple(window), tuple(seen), after)
