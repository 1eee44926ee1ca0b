"""The writers' YAML block without PyYAML (wikiengine.core.yaml_dump) writes what PyYAML
writes, and what it remembers a block loads to is what the strict loader reads from it."""

from __future__ import annotations

import subprocess
import sys

import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from wikiengine.core import yaml_dump, yaml_strict, yamlio

# characters that move PyYAML's choice of style, besides ordinary ones
TRICKY = list("abyYnNoOtTfFeExXZ0123456789 :#-?,[]{}&*!|>'\"%@`.~=<+/_\\é中😀") + ["\t", "\n", "\ufeff", "\x85", "\u2028", "\u2029", "\x07"]
WORDS = ["yes", "No", "OFF", "null", "Null", "~", "", "1_000", "0x1F", "0b101", "017", "1:20", "1:20.5", ".inf", "-.Inf",
         ".NaN", "1e3", "1.0e+3", "2026-12-05", "2026-1-5 1:02:03", "2026-12-05T10:00:00Z", "---x", "...", "<<", "=", "-",
         "- a", "-a", "? x", "?x", ": x", "a: b", "a:b", "a:", "a #b", "a#b", "#x", "x ", " x", "v001 splash-1024",
         "raw/profiles/v001", "http://x/y", "8B/v6e-8", "'q'", "it's", "a" * 401, "a " * 210]
text = st.one_of(st.sampled_from(WORDS), st.text(st.sampled_from(TRICKY), max_size=12),
                 st.lists(st.sampled_from(WORDS[:40]), min_size=1, max_size=3).map(" ".join))
scalar = st.one_of(text, st.integers(-10**6, 10**6), st.booleans(), st.none(), st.floats(allow_nan=False))
key = st.one_of(st.sampled_from(["title", "status", "track", "workload_name", "a.b", "x-y", "_k", "on", "1x", "a b"]),
                st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True))
value = st.one_of(scalar, st.lists(scalar, max_size=3), st.dictionaries(key, scalar, max_size=3))
mapping = st.dictionaries(key, value, max_size=6)


def safe_dump(values: dict) -> str:
    return yaml.safe_dump(values, sort_keys=False, allow_unicode=True, default_flow_style=False, width=1000)


@settings(max_examples=400, suppress_health_check=[HealthCheck.too_slow])
@given(mapping)
def test_block_writes_what_pyyaml_writes_and_remembers_what_it_loads_to(values):
    assert yaml_dump.block(values) == safe_dump(values)
    entries = [yaml_dump._entry(k, v) for k, v in values.items()]
    if values and None not in entries:  # written here: what block() remembered is the loader's reading
        assert yaml_strict.load("".join(entries)) == values


def test_a_stub_s_frontmatter_is_written_and_read_back_without_importing_pyyaml(tmp_path):
    """The values a stub holds take the fast path, and the lint's load of them reads the
    remembered value: a fresh interpreter with PyYAML made unimportable does both."""
    code = """
import sys
sys.modules["yaml"] = None  # any import of PyYAML now fails
from wikiengine.core import yaml_dump, yamlio
front = {"title": "v012 splash-1024", "type": "experiment", "model": "qwen3-jax", "variant": "8B/v6e-8",
         "hypothesis": "a 1024 splash q block raises MFU on 8B/v6e-8 by half a point: see #12",
         "status": "in-progress", "created": "2026-12-05", "updated": "2026-12-05", "track": 1,
         "workload_name": "qwen3-jax-v012", "artifacts": {"xprof": "raw/profiles/v012/", "hlo": "raw/hlo/v012.txt"},
         "sizes": ["8B", "32B"], "backfilled": True}
text = yaml_dump.block(front)
assert yamlio.safe_load(text) == front
print(text, end="")
"""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          env={"XDG_CACHE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"})
    assert done.returncode == 0, done.stderr
    assert "hypothesis: 'a 1024 splash" in done.stdout and "created: '2026-12-05'" in done.stdout
    assert done.stdout == safe_dump(yaml.safe_load(done.stdout))


def test_a_value_outside_the_fast_path_is_pyyaml_s_and_not_remembered(monkeypatch):
    remembered = []
    monkeypatch.setattr(yamlio, "remember", lambda text, data: remembered.append(text))
    for values in ({"lr": 0.1}, {"note": "two\nlines"}, {"tab": "a\tb"}, {"deep": {"a": {"b": 1}}}, {"on": 1}):
        assert yaml_dump.block(values) == safe_dump(values)
    assert remembered == []
    assert yaml_dump.block({"lr": "0.1"}) == "lr: '0.1'\n" and remembered == ["lr: '0.1'\n"]
