"""core.atomic: the one atomic write (unique temp names, the old mode kept, old or new after a crash)."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from wikiengine.core import atomic
from wikiengine.core.atomic import atomic_write_bytes, atomic_write_json, atomic_write_text

REPO = Path(__file__).resolve().parent.parent


def leftovers(folder):
    return sorted(p.name for p in folder.iterdir() if ".tmp-" in p.name)


def test_writes_new_and_replaces_old_leaving_no_temp_file(tmp_path):
    path = tmp_path / "STATE.md"
    atomic_write_text(path, "one\r\nline\n")
    assert path.read_bytes() == b"one\r\nline\n"  # newlines as given
    atomic_write_bytes(path, b"two")
    atomic_write_json(path, {"a": 1}, indent=1)
    assert json.loads(path.read_text()) == {"a": 1}
    assert leftovers(tmp_path) == []


def test_temp_names_are_hidden_beside_the_target_and_unique_per_write(tmp_path):
    path = tmp_path / "cursor.json"
    names = {atomic.temp_name(path) for _ in range(200)}
    assert len(names) == 200
    assert all(n.parent == tmp_path and n.name.startswith(f".cursor.json.tmp-{os.getpid()}-") for n in names)


def test_two_writers_of_one_file_never_share_a_temp_file(tmp_path):
    """The old `wiki lint --fix` used one fixed temp name for every writer of a page."""
    path = tmp_path / "page.md"
    errors = []

    def write(text):
        try:
            for _ in range(50):
                atomic_write_text(path, text, durable=False)
        except Exception as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(c * 1000,)) for c in "ab"]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and path.read_text() in ("a" * 1000, "b" * 1000) and leftovers(tmp_path) == []


def test_a_replaced_file_keeps_its_mode_and_a_new_one_follows_the_umask(tmp_path):
    script = tmp_path / "run.sh"
    script.write_text("#!/bin/sh\n")
    script.chmod(0o755)
    atomic_write_text(script, "#!/bin/sh\necho hi\n")
    assert stat.S_IMODE(script.stat().st_mode) == 0o755
    private = tmp_path / "token"
    private.write_text("x")
    private.chmod(0o600)
    atomic_write_text(private, "y")
    assert stat.S_IMODE(private.stat().st_mode) == 0o600
    old = os.umask(0o027)
    try:
        atomic_write_text(tmp_path / "new.md", "z")
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.md").stat().st_mode) == 0o640  # 0666 less the umask, as open() gives


def test_a_failed_rename_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    path = tmp_path / "QUOTA.md"
    path.write_text("old\n")

    def broken(*_args):
        raise OSError("disk gone")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(OSError, match="disk gone"):
        atomic_write_text(path, "new\n")
    assert path.read_text() == "old\n" and leftovers(tmp_path) == []


KILLED_MID_WRITE = """
import os, signal, sys
from pathlib import Path
from wikiengine.core import atomic
real_replace = os.replace
def replace(src, dst):
    if sys.argv[2] == "before":
        os.kill(os.getpid(), signal.SIGKILL)
    real_replace(src, dst)
    os.kill(os.getpid(), signal.SIGKILL)
os.replace = replace
atomic.atomic_write_text(Path(sys.argv[1]), "new " * 100000)
"""


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_process_killed_mid_write_leaves_the_old_file_or_the_new_one(tmp_path, when):
    path = tmp_path / "STATE.md"
    path.write_text("old\n")
    done = subprocess.run([sys.executable, "-c", KILLED_MID_WRITE, str(path), when], capture_output=True, cwd=REPO)
    assert done.returncode == -9
    assert path.read_text() == ("old\n" if when == "before" else "new " * 100000)
    assert all(p.name.startswith(".STATE.md.tmp-") for p in tmp_path.iterdir() if p != path)  # a kill may leave its temp
