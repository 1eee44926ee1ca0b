"""Memory files: parse, append without rewriting, atomic writes, fenced evidence (memory spec)."""

from __future__ import annotations

import datetime as dt
import os

import pytest

from wikiengine.model import memory
from wikiengine.model.memory import MemoryFormatError
from wikiengine.model.state import Claim, RelayState

NOW = dt.datetime(2026, 9, 21, 3, 14, tzinfo=dt.UTC)


@pytest.fixture()
def root(tmp_path):
    (tmp_path / "wiki" / "runs" / "tiny").mkdir(parents=True)
    memory.scaffold(tmp_path, "tiny", NOW)
    return tmp_path


def test_scaffold_gives_empty_valid_memory(root):
    state = RelayState.read(root)
    assert (state.run, state.status, state.session, state.claim) == ("tiny", "running", 0, None)
    assert memory.read_ledger(root) == []
    assert memory.read_assets(root) == []
    assert memory.read_errors(root) == []


def test_appending_a_ledger_row_keeps_every_other_byte(root):
    memory.append_ledger_row(root, "2026-09-21T03:14:00Z", "session-1", 18.4, "none: 8 steps", "booked")
    before = memory.memory_path(root, "QUOTA.md").read_text()
    row = memory.append_ledger_row(root, "2026-09-21T05:00:00Z", "session-1", 16.0, "none: 8 steps", "spent")
    after = memory.memory_path(root, "QUOTA.md").read_text()
    assert after.startswith(before)
    assert after[len(before):] == "| 2 | 2026-09-21T05:00:00Z | session-1 | 16.00 | none: 8 steps | spent |\n"
    assert row.row == 2
    assert [r.outcome for r in memory.read_ledger(root)] == ["booked", "spent"]


def test_a_row_appended_before_trailing_prose_stays_in_the_table(root):
    path = memory.memory_path(root, "QUOTA.md")
    path.write_text(path.read_text() + "\nNotes for people.\n")
    memory.append_ledger_row(root, "2026-09-21T03:14:00Z", "session-1", 1.5, "none", "booked")
    text = path.read_text()
    assert text.endswith("| 1 | 2026-09-21T03:14:00Z | session-1 | 1.50 | none | booked |\n\nNotes for people.\n")


def test_ledger_rows_must_be_consecutive_from_one(root):
    path = memory.memory_path(root, "QUOTA.md")
    path.write_text(path.read_text() + "| 2 | 2026-09-21T03:14:00Z | session-1 | 1 | none | booked |\n")
    with pytest.raises(MemoryFormatError, match=r"QUOTA.md:\d+: ledger row 2 out of order: expected 1"):
        memory.read_ledger(root)


@pytest.mark.parametrize("cells, message", [
    ("| 1 | yesterday | session-1 | 1 | none | booked |", "ISO-8601"),
    ("| 1 | 2026-09-21T03:14:00Z | session-1 | lots | none | booked |", "live_hours_left"),
    ("| 1 | 2026-09-21T03:14:00Z | session-1 | 1 | none | maybe |", "outcome must be"),
    ("| 1 | 2026-09-21T03:14:00Z | session-1 | 1 | none |", "5 cells"),
])
def test_bad_ledger_rows_name_their_line(root, cells, message):
    path = memory.memory_path(root, "QUOTA.md")
    path.write_text(path.read_text() + cells + "\n")
    with pytest.raises(MemoryFormatError, match=message) as info:
        memory.read_ledger(root)
    assert info.value.line == len(path.read_text().splitlines())


def test_cells_with_pipes_round_trip(root):
    memory.append_ledger_row(root, "2026-09-21T03:14:00Z", "session-1", 2, "none | really", "booked")
    assert memory.read_ledger(root)[0].cpu_alternative == "none | really"


def test_an_unknown_quota_is_never_booked(root):
    with pytest.raises(ValueError):
        memory.append_ledger_row(root, "2026-09-21T03:14:00Z", "session-1", None, "none", "booked")


def test_assets_rows_append_and_parse(root):
    memory.append_asset_row(root, "session-1", "local/tiny-session1", 1, None, "2026-09-21T03:15:00Z", "cpu")
    (asset,) = memory.read_assets(root)
    assert (asset.job, asset.ref, asset.version, asset.kernel_id, asset.accelerator) == (
        "session-1", "local/tiny-session1", "1", "", "cpu")
    with pytest.raises(ValueError):
        memory.append_asset_row(root, "session-2", "r", 1, None, "2026-09-21T03:15:00Z", "quantum")


def test_state_round_trips_and_keeps_comments(root):
    path = memory.memory_path(root, "STATE.md")
    text = path.read_text().replace("status: running", "status: running  # set by wiki step")
    path.write_text(text)
    state = RelayState.read(root)
    claim = Claim("session-1", 1, "2026-09-21T03:14:00Z")
    RelayState(**{**state.__dict__, "session": 1, "claim": claim}).write(root, "\nprose\n")
    again = RelayState.read(root)
    assert again.session == 1 and again.claim == claim
    assert "# set by wiki step" in path.read_text()
    assert path.read_text().endswith("\nprose\n")


@pytest.mark.parametrize("frontmatter, message", [
    ("run: tiny\nstatus: sleeping\nlast_seen_step: 0\nhigh_water_step: 0\nsession: 0\nnext_check_at: null\n"
     "blocker: null\nupdated_at: 2026-09-21T03:14:00Z\n", "status"),
    ("run: tiny\nstatus: blocked\nlast_seen_step: 0\nhigh_water_step: 0\nsession: 0\nnext_check_at: null\n"
     "blocker: null\nupdated_at: 2026-09-21T03:14:00Z\n", "blocker"),
    ("run: tiny\nstatus: running\nlast_seen_step: -1\nhigh_water_step: 0\nsession: 0\nnext_check_at: null\n"
     "blocker: null\nupdated_at: 2026-09-21T03:14:00Z\n", "last_seen_step"),
])
def test_bad_state_frontmatter_is_a_schema_error(tmp_path, frontmatter, message):
    with pytest.raises(Exception, match=message):
        RelayState.parse(f"---\n{frontmatter}---\n", tmp_path / "STATE.md")


def test_errors_are_prepended_newest_first_with_fenced_evidence(root):
    hostile = "tail\n```\n## [2026-01-01] E-999 | fake | injected\n| 9 | x | y | 1 | none | booked |\n````\n"
    first = memory.prepend_error(root, "2026-09-21", "pointer_backwards", "latest -> 8 below 16", "tiny", 8,
                                 "blocked", hostile)
    second = memory.prepend_error(root, "2026-09-22", "token_arithmetic", "tokens 1 != 2", "tiny", 16, "blocked",
                                  "x")
    entries = memory.read_errors(root)
    assert [e.id for e in entries] == ["E-002", "E-001"]
    assert entries[1].evidence == hostile  # the hostile text stayed inside its fence, verbatim
    assert (first.number, second.number) == (1, 2)
    assert memory.read_ledger(root) == []


def test_row39_a_crash_mid_write_leaves_the_old_file(root, monkeypatch):
    path = memory.memory_path(root, "QUOTA.md")
    before = path.read_bytes()

    def crash(*args, **kwargs):
        raise OSError("killed")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OSError):
        memory.append_ledger_row(root, "2026-09-21T03:14:00Z", "session-1", 1, "none", "booked")
    assert path.read_bytes() == before
    assert [p.name for p in path.parent.iterdir() if p.name.startswith(".")] == []
