"""A process's end without the interpreter's teardown (wikiengine/core/process_end.py): the
exit hooks run once, the output is whole, the exit code is the program's; and where the
ordinary exit still has work to do (another thread, a hook not to be run), it is kept."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PROGRAM = """
import atexit, sys, threading, time, weakref
from pathlib import Path
from wikiengine.core.process_end import end_now

log = Path(sys.argv[1])
def note(what):
    with log.open("a") as handle:
        handle.write(what + "\\n")

class Torn:
    def __del__(self):  # runs only in the interpreter's teardown
        note("teardown")

class Held:
    pass

KEPT = Torn()
mode = sys.argv[2]
if mode != "plain":
    atexit.register(note, "atexit")
    held = Held()
    weakref.finalize(held, note, "finalizer")
if mode == "thread":
    threading.Thread(target=lambda: (time.sleep(0.3), note("thread done"))).start()
if mode == "broken-output":
    class Broken:
        def write(self, text):
            return len(text)
        def flush(self):
            raise OSError("no reader")
    sys.stdout = Broken()
sys.stdout.write("x" * 100000)  # buffered: the end must flush it
status = end_now(7, hooks=mode in ("hooks", "thread", "broken-output"))
note(f"returned {status}")
sys.exit(status)
"""


def end(tmp_path: Path, mode: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    log = tmp_path / "log"
    done = subprocess.run([sys.executable, "-c", PROGRAM, str(log), mode], capture_output=True, text=True, timeout=60)
    return done, log.read_text().splitlines() if log.exists() else []


def test_with_hooks_the_hooks_and_finalizers_run_once_the_output_is_whole_and_teardown_is_skipped(tmp_path):
    done, log = end(tmp_path, "hooks")
    assert done.returncode == 7 and len(done.stdout) == 100000, done.stderr
    assert sorted(log) == ["atexit", "finalizer"]  # once each; no "returned", no "teardown"


def test_with_nothing_registered_it_ends_at_once(tmp_path):
    done, log = end(tmp_path, "plain")
    assert done.returncode == 7 and len(done.stdout) == 100000
    assert log == []


@pytest.mark.parametrize("mode", ["no-hooks-registered", "thread"])
def test_the_ordinary_exit_is_kept_where_it_has_work_left(tmp_path, mode):
    """A hook it may not run, another thread the exit must wait for."""
    done, log = end(tmp_path, mode)
    assert done.returncode == 7 and len(done.stdout) == 100000
    assert "returned 7" in log and "teardown" in log and log.count("atexit") == log.count("finalizer") == 1
    if mode == "thread":
        assert log.index("thread done") < log.index("atexit")


def test_output_it_cannot_flush_is_left_to_the_ordinary_exit_and_the_hooks_run_once(tmp_path):
    done, log = end(tmp_path, "broken-output")
    assert "returned 7" in log and "teardown" in log and log.count("atexit") == log.count("finalizer") == 1
    assert done.returncode == 120  # CPython's own exit status when it cannot flush standard output
