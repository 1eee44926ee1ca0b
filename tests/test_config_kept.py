"""A configuration's parse is kept per user (lint/config.py): the next process reads the same
configuration without importing tomllib; a text it cannot keep (a TOML date, a secret's shape)
is parsed each time and never reaches the cache file."""

from __future__ import annotations

import json
import os
import subprocess
import sys

PROBE = """
import json, sys
from pathlib import Path
from wikiengine.core import usercache
from wikiengine.lint.config import load_config
config = load_config(Path(sys.argv[1]))
usercache.save_all()
print(json.dumps({"select": config.select, "ignore": config.ignore, "rules": config.rules,
                  "parsed": "tomllib" in sys.modules}, default=str))
"""
TOKEN = "hf_" + "q" * 34  # a Hub token's shape


def _load(root, cache) -> dict:
    done = subprocess.run([sys.executable, "-c", PROBE, str(root)], capture_output=True, text=True, timeout=120,
                          env={**os.environ, "XDG_CACHE_HOME": str(cache)})
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _kept_bytes(cache) -> bytes:
    path = cache / "wikiengine" / "toml" / "loads.marshal"
    return path.read_bytes() if path.exists() else b""


def test_a_configuration_is_read_back_without_tomllib(tmp_path):
    (tmp_path / "wiki.toml").write_text('select = ["EXP", "LNK"]\nignore = ["LNK002"]\n\n[rules.EXP001]\n'
                                        'since = "2026-01-01"\n', encoding="utf-8")
    first = _load(tmp_path, tmp_path / "cache")
    assert first["parsed"] and first["select"] == ["EXP", "LNK"] and first["rules"] == {"EXP001": {"since": "2026-01-01"}}
    again = _load(tmp_path, tmp_path / "cache")
    assert not again["parsed"] and {**again, "parsed": True} == first


def test_a_date_or_a_secret_is_parsed_each_time_and_never_kept(tmp_path):
    for name, text in (("date", "[rules.EXP001]\nsince = 2026-01-01\n"),
                       ("secret", f'select = ["EXP"]\n# the hub token is {TOKEN}\n')):
        root, cache = tmp_path / name, tmp_path / f"cache-{name}"
        root.mkdir()
        (root / "wiki.toml").write_text(text, encoding="utf-8")
        assert _load(root, cache)["parsed"] and _load(root, cache)["parsed"]  # the second process parses it again
        assert TOKEN.encode() not in _kept_bytes(cache) and b"since" not in _kept_bytes(cache)
