"""core.clock: one clock acts read, one timestamp form, and a writer that follows an injected clock."""

from __future__ import annotations

import datetime as dt

import pytest

from tests.test_lane_step import LANE, lane_wiki  # noqa: F401 - the fixture
from tests.test_lane_writers import proposal, wiki  # noqa: F401 - the fixture
from wikiengine.core import clock

T0 = dt.datetime(2026, 9, 21, 3, 14, 0, 123456, tzinfo=dt.UTC)


def fixed(moment: dt.datetime = T0) -> clock.Clock:
    return lambda: moment


@pytest.mark.parametrize(("timespec", "text"), [
    ("seconds", "2026-09-21T03:14:00Z"),
    ("milliseconds", "2026-09-21T03:14:00.123Z"),
    ("auto", "2026-09-21T03:14:00.123456Z"),
])
def test_utc_iso_is_utc_with_z_at_the_asked_precision(timespec, text):
    assert clock.utc_iso(T0, timespec) == text
    assert clock.utc_iso(T0.astimezone(dt.timezone(dt.timedelta(hours=2))), timespec) == text  # converted, not relabelled


def test_a_naive_time_is_refused_rather_than_read_as_local_time():
    with pytest.raises(ValueError, match="timezone-aware"):
        clock.utc_iso(dt.datetime(2026, 9, 21, 3, 14))
    with pytest.raises(ValueError, match="timezone-aware"):
        clock.utc_date(dt.datetime(2026, 9, 21, 3, 14))


def test_now_and_today_read_the_injected_clock():
    assert clock.now_iso(fixed()) == "2026-09-21T03:14:00Z"
    assert clock.now_iso(fixed(), timespec="milliseconds") == "2026-09-21T03:14:00.123Z"
    late = dt.datetime(2026, 9, 21, 23, 30, tzinfo=dt.timezone(dt.timedelta(hours=-5)))  # 04:30 UTC the next day
    assert clock.today(fixed(late)) == "2026-09-22"
    assert abs((clock.utcnow() - dt.datetime.now(dt.UTC)).total_seconds()) < 5


def test_strict_parse_wants_a_zone_and_lenient_parse_takes_utc():
    assert clock.parse_iso("2026-09-21T03:14:00Z") == T0.replace(microsecond=0)
    assert clock.parse_iso("2026-09-21T05:14:00+02:00") == T0.replace(microsecond=0)
    assert clock.parse_iso("2026-09-21T03:14:00") is None  # no zone: a person's typo, not local time
    assert clock.parse_iso(None) is None and clock.parse_iso("yesterday") is None
    assert clock.parse_utc("2026-09-21T03:14:00") == T0.replace(microsecond=0)
    assert clock.parse_utc("2026-09-21T03:14:00.123456+00:00") == T0
    assert clock.parse_utc("") is None and clock.parse_utc("garbage") is None and clock.parse_utc(None) is None
    assert clock.timestamp("2026-09-21T03:14:00Z") == T0.replace(microsecond=0).timestamp()
    assert clock.timestamp("no") is None


def test_every_written_form_reads_back():
    for timespec in ("seconds", "milliseconds", "auto"):
        text = clock.utc_iso(T0, timespec)
        assert clock.parse_utc(text) == clock.parse_iso(text)
        assert abs((clock.parse_utc(text) - T0).total_seconds()) < 1
    assert clock.from_epoch(T0.timestamp()) == T0


def test_a_session_start_and_a_writer_stamp_with_the_injected_clock(lane_wiki):
    """`wiki loop start` and `wiki exp new` with an injected clock: the journal's `at`, the log
    entry's date, the page's date and STATE.md agree on the clock's moment, not the wall clock."""
    from wikiengine.model.journal import parse_journal
    from wikiengine.step.lane.start import start_session
    from wikiengine.step.writers import new_experiment

    root = lane_wiki
    start_session(root, LANE, clock=fixed(dt.datetime(2031, 1, 2, 3, 4, 5, tzinfo=dt.UTC)))
    made = new_experiment(root, LANE, slug="splash", variant="2B/v5p-16", proposal_path=proposal(root, "splash"),
                          track=1, clock=fixed(dt.datetime(2031, 1, 3, 4, 5, 6, tzinfo=dt.UTC)))
    records = parse_journal((root / LANE.journal).read_text(encoding="utf-8"), LANE.journal)
    assert [(r["op"], r["at"]) for r in records if r.get("op") in ("start", "claim")] == [
        ("start", "2031-01-02T03:04:05Z"), ("claim", "2031-01-03T04:05:06Z")]
    assert "## [2031-01-02] start |" in (root / LANE.log).read_text(encoding="utf-8")
    assert "started_at: '2031-01-02T03:04:05Z'" in (root / "memory" / "STATE.md").read_text(encoding="utf-8")
    assert "2031-01-03" in made["page"]
