"""The hash of the engine's source (the lint cache's fingerprint, lint/cache.py) is kept per
user by the files' stat, as the interpreter keeps their bytecode: the next process reads
none of them, and a changed file, even of the same size, gives the hash of its new text."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

def digest_in(package_root: Path, cache: Path) -> dict:
    script = r'''
import builtins, json
from wikiengine.lint import cache
from wikiengine.core import usercache
opened = []
real_open = builtins.open
def counted(path, *args, **kwargs):
    if str(path).endswith(".py"):
        opened.append(str(path))
    return real_open(path, *args, **kwargs)
builtins.open = counted
digest = cache._engine_digest()
builtins.open = real_open
usercache.save_all()
cache._engine_digest.cache_clear()
cache._ENGINE_DIGESTS._kept, cache._ENGINE_DIGESTS._added = {}, {}
cache._ENGINE_DIGESTS._stamp_taken = "never kept"  # the file reads as empty: hashed afresh
print(json.dumps({"digest": digest, "read": len(opened), "fresh": cache._engine_digest()}))
'''
    env = {**os.environ, "XDG_CACHE_HOME": str(cache), "PYTHONPATH": str(package_root)}
    done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True,
                          cwd=package_root)
    return json.loads(done.stdout)


def test_the_next_process_reads_no_source_and_a_changed_file_is_hashed_again(tmp_path):
    package = tmp_path / "engine"
    shutil.copytree(REPO / "wikiengine", package / "wikiengine", ignore=shutil.ignore_patterns("__pycache__"))
    cache = tmp_path / "xdg"
    first = digest_in(package, cache)
    assert first["read"] > 50 and first["digest"] == first["fresh"]
    again = digest_in(package, cache)
    assert again == {**first, "read": 0}
    rule = package / "wikiengine/lint/rules/orphan_page.py"
    text = rule.read_text()
    rule.write_bytes(text.replace("\n", "\r", 1).encode())  # the same size, another text
    changed = digest_in(package, cache)
    assert changed["read"] > 50 and changed["digest"] == changed["fresh"] != first["digest"]
