"""A lane's ``RESULTS.tsv``: one tab-separated row per run, appended by ``wiki exp file``.

Columns (``shared/reference/conventions.md``): ``exp_id date tps mfu_percent
step_time_ms peak_hbm_gib config status description``; status is one of ``keep |
discard | crash | parked | inconclusive``.
"""

from __future__ import annotations

from dataclasses import dataclass

COLUMNS = ("exp_id", "date", "tps", "mfu_percent", "step_time_ms", "peak_hbm_gib", "config", "status", "description")
STATUSES = ("keep", "discard", "crash", "parked", "inconclusive")
HEADER = "\t".join(COLUMNS) + "\n"
# The RESULTS.tsv status of each verdict.
STATUS_OF_VERDICT = {"supported": "keep", "refuted": "discard", "inconclusive": "inconclusive", "invalid": "crash"}


@dataclass(frozen=True)
class ResultRow:
    line: int
    values: dict[str, str]

    @property
    def exp_id(self) -> str:
        return self.values.get("exp_id", "")


def parse_results(text: str) -> list[ResultRow]:
    """The data rows (the header line, when present, is skipped)."""
    rows = []
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip() or (number == 1 and line.split("\t")[0] == COLUMNS[0]):
            continue
        cells = line.split("\t")
        rows.append(ResultRow(number, dict(zip(COLUMNS, cells))))
    return rows


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
