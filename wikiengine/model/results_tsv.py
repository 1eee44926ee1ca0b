"""A lane's ``RESULTS.tsv``: one tab-separated row per run, appended by ``wiki exp file``.

Columns (``shared/reference/conventions.md``): ``exp_id date tps mfu_percent
step_time_ms peak_hbm_gib config status description``; status is one of ``keep |
discard | crash | parked | inconclusive``. The ledger spec real wikis keep: ``exp_id`` is
the bare id (``v048``, ``v048b``), ``mfu_percent`` a percent (``41.2``, never ``0.412``),
``config`` the run's knobs (never the variant key). A row is written to the header the
file has (its columns, in its order); a header with a column this ledger does not know, or
without ``exp_id`` and ``status``, is refused (exit 2, ``RESULTS.tsv:1``) rather than
filled wrong.
"""

from __future__ import annotations

from wikiengine.core.errors import WikiError

COLUMNS = ("exp_id", "date", "tps", "mfu_percent", "step_time_ms", "peak_hbm_gib", "config", "status", "description")
STATUSES = ("keep", "discard", "crash", "parked", "inconclusive")
HEADER = "\t".join(COLUMNS) + "\n"
# The RESULTS.tsv status of each verdict.
STATUS_OF_VERDICT = {"supported": "keep", "refuted": "discard", "inconclusive": "inconclusive", "invalid": "crash"}
REQUIRED = ("exp_id", "status")


def status_of(verdict: str, invalid_kind: str | None = None) -> str:
    """The RESULTS.tsv status of a verdict: an ``invalid`` run that ran and broke numerics
    (``parity``) is ``discard``, apart from one that did not run to its end (``crash``)."""
    return "discard" if verdict == "invalid" and invalid_kind == "parity" else STATUS_OF_VERDICT[verdict]


def _clean(value) -> str:
    return " ".join(str(value).replace("\t", " ").split()) if value is not None else ""


def header_of(text: str, path=None) -> tuple[str, ...]:
    """The columns of the file's header (its first non-empty line); the standard ones for an
    empty file. Unknown or missing required columns: :class:`WikiError` at the header's line."""
    lines = text.splitlines()
    number, line = next(((i, ln) for i, ln in enumerate(lines, start=1) if ln.strip()), (0, ""))
    if not line:
        return COLUMNS
    columns = tuple(c.strip() for c in line.split("\t"))
    unknown = [c for c in columns if c not in COLUMNS]
    if unknown:
        raise WikiError(f"RESULTS.tsv header has column(s) this ledger does not know: {', '.join(map(repr, unknown))} "
                        f"(known: {' '.join(COLUMNS)})", path, number)
    missing = [c for c in REQUIRED if c not in columns]
    if missing:
        raise WikiError(f"RESULTS.tsv header has no {' or '.join(missing)} column: is line {number} a header?",
                        path, number)
    return columns


def append_row(text: str, values: dict[str, object], path=None) -> str:
    """``text`` (the file, or "" when missing) with one row appended in the header's columns
    (the standard header added when the file is empty)."""
    if values.get("status") not in STATUSES:
        raise ValueError(f"RESULTS.tsv status {values.get('status')!r} is not one of {', '.join(STATUSES)}")
    columns = header_of(text, path)
    head = text if text.strip() else HEADER
    if not head.endswith("\n"):
        head += "\n"
    return head + "\t".join(_clean(values.get(c)) for c in columns) + "\n"


def mfu_percent(value: float | None) -> float | None:
    """An MFU as a percent: a run that reports a fraction (``0.412``) is written ``41.2``."""
    if value is None:
        return None
    return value * 100 if 0 < value <= 1 else value


def config_string(knobs: dict | None) -> str:
    """The run's knobs as the ledger's config string: ``key=value`` pairs, sorted."""
    return " ".join(f"{k}={v}" for k, v in sorted((knobs or {}).items(), key=lambda kv: str(kv[0])))
