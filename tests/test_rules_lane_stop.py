"""RUN003 and RUN004: stop markers carry the watcher's audit; no iteration after a stop
without a new start (issue 11)."""

from __future__ import annotations

from tests.rules_wiki import findings, write

LOG = "wiki/experiments/gemma4_autoresearch_optimization/tpu/log.md"
AUDIT = "ALL-CLEAR gemma4/tpu session 2 wiki=1a2b3c4d code=1a2b3c4d"


def log(*entries: str) -> str:
    return "# log\n\n" + "\n".join(entries)


STOP = f"## [2026-06-09] stop | session 2 closed\n\n**Op**: stop\n**Final audit**: {AUDIT}\n"
BARE_STOP = "## [2026-06-09] stop | session 2 closed\n\n**Op**: stop\n"
START = "## [2026-06-01] start | session begin\n\n**Op**: start\n"
ITER = "## [2026-06-10] loop-iteration | v046-splash on 2B/v5p-16: supported (+0.7%)\n"
RESTART = "## [2026-06-10] start | session 3\n\n**Op**: start\n"


def test_run003_stop_needs_a_final_audit_line(tmp_path):
    write(tmp_path, {LOG: log(BARE_STOP, START)})
    assert [(f.path, f.line, f.code) for f in findings(tmp_path, "RUN003")] == [(LOG, 3, "RUN003")]
    ok = tmp_path / "ok"
    write(ok, {LOG: log(STOP, START)})
    assert findings(ok, "RUN003") == []


def test_run003_the_newest_stop_quotes_the_stop_authorized_record(tmp_path):
    write(tmp_path, {LOG: log(STOP, START)})
    record = tmp_path / "wiki/experiments/gemma4_autoresearch_optimization/tpu/.stop-authorized"
    record.write_text(f"{AUDIT}\nwiki=1a2b3c4d\ncode=1a2b3c4d\n")
    assert findings(tmp_path, "RUN003") == []
    record.write_text("ALL-CLEAR gemma4/tpu session 2 wiki=99999999 code=99999999\n")
    (found,) = findings(tmp_path, "RUN003")
    assert ".stop-authorized says 'ALL-CLEAR gemma4/tpu session 2 wiki=99999999" in found.message


def test_run004_iteration_after_a_stop_without_a_start(tmp_path):
    write(tmp_path, {LOG: log(ITER, STOP, START)})
    (found,) = findings(tmp_path, "RUN004")
    assert (found.line, found.code) == (3, "RUN004") and "after the stop of 2026-06-09" in found.message
    ok = tmp_path / "ok"
    write(ok, {LOG: log(ITER, RESTART, STOP, START)})
    assert findings(ok, "RUN004") == []
