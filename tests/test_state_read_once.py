"""A wake reads memory/STATE.md several times (the mode, the recovery, the load): one text is
parsed and validated once, and every reader still gets a record of its own; a changed text
is read again, and a broken one is refused on every read with the line of its key."""

from __future__ import annotations

import pytest

from wikiengine.core.errors import SchemaError
from wikiengine.model import state

LANE = state.LaneState(lane="mlp_autoresearch_optimization/cpu", status="running", session=1, backend="local",
                       tracks=2, started_at="2026-06-01T00:00:00Z", next_check_at=None,
                       updated_at="2026-06-01T00:00:00Z")


def write(root, record: state.LaneState) -> None:
    (root / "memory").mkdir(exist_ok=True)
    state.state_path(root).write_text(record.render("a lane session\n"), encoding="utf-8")


def test_one_text_is_parsed_once_and_each_reader_gets_its_own_record(tmp_path, monkeypatch):
    write(tmp_path, LANE)
    assert state.state_mode(tmp_path) == "lane"
    first = state.LaneState.read(tmp_path)
    parsed = []
    monkeypatch.setattr(state, "parse_page", lambda *a, **k: parsed.append(a) or pytest.fail("parsed twice"))
    monkeypatch.setattr(state, "read_frontmatter", lambda *a, **k: pytest.fail("the mode read the YAML again"))
    second = state.LaneState.read(tmp_path)
    assert second == first == LANE and second is not first
    assert state.state_mode(tmp_path) == "lane"  # known from the record parsed from this very text
    assert parsed == []


def test_a_changed_text_is_read_again(tmp_path):
    write(tmp_path, LANE)
    assert state.LaneState.read(tmp_path).status == "running"
    write(tmp_path, LANE.replace(status="paused"))
    assert state.LaneState.read(tmp_path).status == "paused"


def test_a_broken_text_is_refused_on_every_read_with_its_line(tmp_path):
    write(tmp_path, LANE)
    path = state.state_path(tmp_path)
    path.write_text(path.read_text().replace("tracks: 2", "tracks: two"))
    for _ in range(2):
        with pytest.raises(SchemaError) as refused:
            state.LaneState.read(tmp_path)
        assert "tracks" in str(refused.value) and refused.value.line is not None
