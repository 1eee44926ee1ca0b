"""Reading the memory files for the MEM rules, through :mod:`wikiengine.model.memory`."""

from __future__ import annotations

from wikiengine.core.errors import WikiError
from wikiengine.core.page import parse_page
from wikiengine.model import memory

TYPE_CHECKING = False  # typing's constant, without importing typing
if TYPE_CHECKING:
    from wikiengine.lint.context import LintContext

QUOTA = f"{memory.MEMORY_DIR}/{memory.QUOTA_FILE}"
ASSETS = f"{memory.MEMORY_DIR}/{memory.ASSETS_FILE}"
STATE = f"{memory.MEMORY_DIR}/{memory.STATE_FILE}"
ERRORS = f"{memory.MEMORY_DIR}/{memory.ERRORS_FILE}"


def memory_text(ctx: LintContext, rel: str) -> str | None:
    """The text of a memory file of the wiki (None when absent or unreadable: WK001's business)."""
    if not ctx.exists(rel):
        return None
    info = ctx.info(rel)
    return info.page.to_text() if info.page is not None else None


def ledger_table_rows(text: str, rel: str) -> list[memory.TableRow] | None:
    """The raw rows of the ledger table (cells as text), or None when there is no such table."""
    try:
        return list(memory.parse_table(parse_page(text, rel), memory.LEDGER_SECTION, memory.LEDGER_COLUMNS, rel).rows)
    except WikiError:
        return None


def misnumbered(rows: list[memory.TableRow]) -> list[tuple[memory.TableRow, int]]:
    """Rows whose ``row`` cell is not the next consecutive number, with the number expected."""
    return [(row, index) for index, row in enumerate(rows, start=1) if row.cells["row"].strip() != str(index)]
