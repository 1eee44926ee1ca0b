"""A lane's ``RESULTS.tsv``: one tab-separated row per run, appended by ``wiki exp file``.

Columns (``shared/reference/conventions.md``): ``exp_id date tps mfu_percent
step_time_ms peak_hbm_gib config status description``; status is one of ``keep |
discard | crash | parked | inconclusive``.
"""

from __future__ import annotations

COLUMNS = ("exp_id", "date", "tps", "mfu_percent", "step_time_ms", "peak_hbm_gib", "config", "status", "description")
STATUSES = ("keep", "discard", "crash", "parked", "inconclusive")
HEADER = "\t".join(COLUMNS) + "\n"
# The RESULTS.tsv status of each verdict.
STATUS_OF_VERDICT = {"supported": "keep", "refuted": "discard", "inconclusive": "inconclusive", "invalid": "crash"}


def _clean(value) -> str:
    return " ".join(str(value).replace("\t", " ").split()) if value is not None else ""


def append_row(text: str, values: dict[str, object]) -> str:
    """``text`` (the file, or "" when missing) with one row appended (header added if absent)."""
    if values.get("status") not in STATUSES:
        raise ValueError(f"RESULTS.tsv status {values.get('status')!r} is not one of {', '.join(STATUSES)}")
    head = text if text.strip() else HEADER
    if not head.endswith("\n"):
        head += "\n"
    return head + "\t".join(_clean(values.get(c)) for c in COLUMNS) + "\n"
