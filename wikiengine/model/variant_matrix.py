"""The variant matrix of a model page (``wiki/models/<model>-<lane>.md``).

One pipe table under ``## Variant matrix`` with the columns
``Size | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp``
(``shared/reference/conventions.md``). A column is found by its leading title, case
aside: ``Current best (step / TPS / MFU)`` and ``Baseline MFU`` are the Current best and
Baseline columns (:func:`column_of`); every reader sees them under the plain title. A row's key is the join ``Size/Hardware``
(``"3B/v6e-8"``): the string experiment pages cite as ``variant:``. Kernel family pages
key rows the same way by ``<op-point>/<hardware>``. A table without Size and Hardware
columns (an older form) is keyed by its first column.

Current best and Frontier exp are cells of a row: a link to the experiment (or its id)
with the figures. :func:`set_cells` rewrites cells of one row and no other byte.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass

from wikiengine.core.page import Page, split_lines, title_key

VARIANT_MATRIX = "Variant matrix"
# The sections of a model page (conventions.md), in the template's order.
MODEL_PAGE_SECTIONS = ("Target metrics", "How to run", VARIANT_MATRIX, "Cross-variant open hypotheses",
                       "Variant-specific open hypotheses", "Retired hypotheses", "Knobs translation matrix",
                       "Iteration ladder")
COLUMNS = ("Size", "Hardware", "Status", "Baseline", "Current best", "Open hyps", "Frontier exp")
CURRENT_BEST = "Current best"
FRONTIER_EXP = "Frontier exp"
BASELINE = "Baseline"
ROW_STATUSES = ("live", "open", "blocked", "parked")
_KEY_COLUMNS = (("size", "hardware"), ("op-point", "hardware"), ("op point", "hardware"))
_DELIMITER_RE = re.compile(r"\s*\|?\s*:?-{1,}:?\s*(\|\s*:?-{1,}:?\s*)*\|?\s*")
LINK_RE = re.compile(r"\[(?P<text>[^\]]*)\]\(\s*<?(?P<target>[^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
# The titles a header is matched against by its leading words (the key columns included).
_KNOWN_TITLES = tuple(sorted({*COLUMNS, *(c for kc in _KEY_COLUMNS for c in kc)}, key=len, reverse=True))


def split_row(line: str) -> list[str]:
    """The cells of a pipe-table line (``\\|`` inside a cell is kept)."""
    body = line.strip()
    if body.startswith("|"):
        body = body[1:]
    if body.endswith("|") and not body.endswith("\\|"):
        body = body[:-1]
    return [c.strip() for c in re.split(r"(?<!\\)\|", body)]


def column_of(header: str) -> str:
    """The column a header cell names, casefolded: a known title that leads it, followed by
    nothing or by units / a parenthesised list (``Current best (step / TPS / MFU)`` ->
    ``current best``); any other header is its own title."""
    folded = " ".join(cell_text(header).casefold().split())
    for title in _KNOWN_TITLES:
        key = title.casefold()
        if folded == key or (folded.startswith(key) and not folded[len(key)].isalnum()):
            return key
    return folded


def _columns(header: tuple[str, ...]) -> tuple[str, ...]:
    """The column of each header cell; a known column named twice is the first one's."""
    columns: list[str] = []
    for title in header:
        column = column_of(title)
        columns.append(column if column not in columns else " ".join(cell_text(title).casefold().split()))
    return tuple(columns)


def cell_text(cell: str) -> str:
    """A cell without markdown emphasis or code ticks."""
    return cell.strip().strip("`*_ ").strip()


@dataclass(frozen=True)
class MatrixRow:
    """One row of a model page's variant matrix."""

    key: str  # "3B/v6e-8"
    line: int  # file line (1-based)
    cells: dict[str, str]  # column title (casefolded) -> cell as written

    def cell(self, column: str) -> str:
        return self.cells.get(column.casefold(), "")

    @property
    def status(self) -> str:
        return cell_text(self.cell("Status")).casefold()


@dataclass(frozen=True)
class CellReference:
    """An experiment named by a cell: a link target (relative to the page) or an id."""

    text: str  # the link target or the id as written
    target: str | None  # the link target resolved against the model page's folder
    exp_id: str | None  # the id written in the cell or in the link text


@dataclass(frozen=True)
class VariantMatrix:
    """A model page's variant matrix: its header, columns and rows, as written."""

    section_line: int
    header: tuple[str, ...]  # as written
    columns: tuple[str, ...]  # the column of each header cell (:func:`column_of`)
    header_line: int
    rows: tuple[MatrixRow, ...]
    keyed_by_columns: bool  # Size/Hardware (True) or the first column (older form)

    def row(self, key: str) -> MatrixRow | None:
        return next((r for r in self.rows if r.key == key), None)

    def keys(self) -> list[str]:
        return [r.key for r in self.rows]

    def has_column(self, column: str) -> bool:
        return column.casefold() in self.columns

    def header_of(self, column: str) -> str | None:
        """The header cell as written of a column (None: no such column)."""
        folded = column.casefold()
        return next((h for h, c in zip(self.header, self.columns) if c == folded), None)


def _row_key(cells: dict[str, str], first: str, key_columns: tuple[str, str] | None) -> str:
    if key_columns is None:
        return cell_text(first)
    return "/".join(cell_text(cells.get(c, "")) for c in key_columns)


def parse_matrix(page: Page) -> VariantMatrix | None:
    """The variant matrix of a model page (None: no ``## Variant matrix`` with a table)."""
    for section in page.sections:
        if section.leading_key != title_key(VARIANT_MATRIX):
            continue
        lines = split_lines(section.body)
        for index, line in enumerate(lines):
            if not line.strip().startswith("|") or index + 1 >= len(lines):
                continue
            if not _DELIMITER_RE.fullmatch(lines[index + 1].rstrip("\r\n")):
                continue
            header = tuple(cell_text(c) for c in split_row(line))
            folded = _columns(header)
            key_columns = next((kc for kc in _KEY_COLUMNS if all(c in folded for c in kc)), None)
            rows = []
            for offset in range(index + 2, len(lines)):
                row_line = lines[offset]
                if not row_line.strip().startswith("|"):
                    break
                values = split_row(row_line)
                cells = {folded[i]: values[i] if i < len(values) else "" for i in range(len(folded))}
                key = _row_key(cells, values[0] if values else "", key_columns)
                if key.strip("/"):
                    rows.append(MatrixRow(key, section.body_line + offset, cells))
            return VariantMatrix(section.line, header, folded, section.body_line + index, tuple(rows),
                                 key_columns is not None)
        return None
    return None


def cell_reference(cell: str, page_rel: str, id_re: re.Pattern) -> CellReference | None:
    """The experiment a cell names: its first link to a page or its first bare id,
    whichever comes first (``v046 on 2B (+0.7 over [v042](...))`` names v046)."""
    link = next((m for m in LINK_RE.finditer(cell) if m.group("target").split("#")[0].endswith(".md")), None)
    bare = id_re.search(LINK_RE.sub(lambda m: "\0" * len(m.group(0)), cell))
    if link is not None and (bare is None or link.start() < bare.start()):
        target = link.group("target").split("#")[0]
        resolved = (
            target[1:] if target.startswith("/") else posixpath.normpath(posixpath.join(posixpath.dirname(page_rel), target))
        )
        found = id_re.search(link.group("text")) or id_re.search(posixpath.basename(target))
        return CellReference(target, resolved, found.group("id") if found else None)
    if bare is not None:
        return CellReference(bare.group("id"), None, bare.group("id"))
    return None


def set_cells(text: str, matrix: VariantMatrix, key: str, values: dict[str, str]) -> str:
    """``text`` with the cells ``values`` (column -> new cell) of row ``key`` replaced."""
    row = matrix.row(key)
    if row is None:
        raise KeyError(key)
    lines = split_lines(text)
    old = lines[row.line - 1]
    ending = old[len(old.rstrip("\r\n")) :]
    cells = split_row(old)
    cells += [""] * (len(matrix.columns) - len(cells))
    for column, value in values.items():
        cells[matrix.columns.index(column.casefold())] = value.replace("|", "\\|")
    lines[row.line - 1] = "| " + " | ".join(cells) + " |" + ending
    return "".join(lines)


def render_matrix(rows: list[dict[str, str]]) -> str:
    """A new variant matrix table in the current form (rows: column -> cell)."""
    out = ["| " + " | ".join(COLUMNS) + " |", "|" + "|".join("---" for _ in COLUMNS) + "|"]
    for row in rows:
        out.append("| " + " | ".join(row.get(c, "") for c in COLUMNS) + " |")
    return "\n".join(out) + "\n"
