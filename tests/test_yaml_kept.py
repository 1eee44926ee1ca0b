"""What a short YAML text loads to is kept per user (core/yamlio.py, on core/usercache.py's
KeptMap): the next process gets the same value without importing PyYAML, never a value kept
by another loader, and nothing for a text that does not load."""

from __future__ import annotations

import marshal
import os
from pathlib import Path

import pytest

from tests import kept_support
from tests.kept_support import run_in_a_process
from wikiengine.core import usercache
from wikiengine.core.usercache import KeptMap

FRONTMATTER = "title: Lane state\ncreated: 2026-04-02\ntags: [lane, cpu]\nbudget: {hours: 1.5, runs: 3}\nnote: ~\n"
BROKEN = "title: one\ntitle: two\n"

# Loads argv[1] as a frontmatter text, prints the value (or the error) and whether PyYAML was
# imported, and keeps what it parsed as the CLI does when it ends.
SCRIPT = r'''
import json, sys
from wikiengine.core import usercache, yamlio
from wikiengine.core.errors import PageError
try:
    value = yamlio.safe_load(sys.argv[1], "memory/STATE.md", 2)
except PageError as err:
    value = ["error", str(err)]
print(json.dumps({"value": value, "pyyaml": "yaml" in sys.modules}))
usercache.save_all()
'''


def load_in_a_process(text: str, cache: Path) -> dict:
    return run_in_a_process(SCRIPT, text, cache=cache)


def kept_file(cache: Path) -> Path:
    return kept_support.kept_file(cache, "yaml", "loads.marshal")


def test_the_next_process_gets_the_value_without_importing_pyyaml(tmp_path):
    first, again = load_in_a_process(FRONTMATTER, tmp_path), load_in_a_process(FRONTMATTER, tmp_path)
    assert first["pyyaml"] is True and again["pyyaml"] is False
    assert again["value"] == first["value"] == {"title": "Lane state", "created": "2026-04-02", "tags": ["lane", "cpu"],
                                                "budget": {"hours": 1.5, "runs": 3}, "note": None}
    assert kept_file(tmp_path).stat().st_mode & 0o777 == 0o600


def test_a_text_that_does_not_load_is_refused_every_time_and_never_kept(tmp_path):
    first, again = load_in_a_process(BROKEN, tmp_path), load_in_a_process(BROKEN, tmp_path)
    assert first == again and again["pyyaml"] is True
    assert again["value"][0] == "error" and "memory/STATE.md:3" in again["value"][1] and "duplicate key" in again["value"][1]
    assert not kept_file(tmp_path).exists()


def test_a_value_kept_by_another_loader_is_not_used(tmp_path):
    """The file names the loader it was kept by; a planted value under the right name is what
    a kept value looks like, so the same plant under another name must be parsed again."""
    load_in_a_process(FRONTMATTER, tmp_path)
    stamp, kept, _seen = kept_support.read_map(kept_file(tmp_path))
    assert set(kept) == {FRONTMATTER}
    kept[FRONTMATTER] = marshal.dumps({"title": "planted"})
    kept_support.write_map(kept_file(tmp_path), stamp, kept)
    assert load_in_a_process(FRONTMATTER, tmp_path)["value"] == {"title": "planted"}  # the same loader: taken as kept
    kept_support.write_map(kept_file(tmp_path), "another loader", kept)
    reparsed = load_in_a_process(FRONTMATTER, tmp_path)
    assert reparsed["pyyaml"] is True and reparsed["value"]["title"] == "Lane state"


def test_each_load_gives_a_fresh_value(tmp_path, monkeypatch):
    from wikiengine.core import yamlio

    monkeypatch.setattr(yamlio, "_KEPT", KeptMap("yaml", "loads.marshal", lambda: "t", limit=8), raising=True)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    first = yamlio.safe_load(FRONTMATTER)
    first["tags"].append("changed")
    assert yamlio.safe_load(FRONTMATTER)["tags"] == ["lane", "cpu"]


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path


def test_a_kept_map_drops_its_oldest_past_its_limit_and_takes_a_bounded_share_of_one_process(cache):
    first = KeptMap("probe", "m.marshal", lambda: "v1", limit=4, per_process=3)
    for key in "abcde":
        first.put(key, key.encode())
    first.save()  # a, b, c: the process's share
    second = KeptMap("probe", "m.marshal", lambda: "v1", limit=4, per_process=3)
    assert [second.get(key) for key in "abcd"] == [b"a", b"b", b"c", None]
    for key in "def":
        second.put(key, key.encode())
    second.save()
    third = KeptMap("probe", "m.marshal", lambda: "v1", limit=4, per_process=3)
    assert [third.get(key) for key in "abcdef"] == [None, None, b"c", b"d", b"e", b"f"]


def test_a_kept_map_of_another_stamp_reads_as_empty_and_is_replaced(cache):
    old = KeptMap("probe", "m.marshal", lambda: "v1", limit=4)
    old.put("k", b"old")
    old.save()
    new = KeptMap("probe", "m.marshal", lambda: "v2", limit=4)
    assert new.get("k") is None
    new.put("j", b"new")
    new.save()
    assert marshal.loads((cache / "wikiengine" / "probe" / "m.marshal").read_bytes()) == ("v2", {"j": b"new"}, {})


def test_a_kind_kept_one_file_per_folder_keeps_the_files_written_last(cache):
    """Maps kept one file per lane folder: a new file past ``kind_files`` removes the least
    recently written; rewriting a file that is there removes nothing (the suite left 5,962 such
    files, 39 MB, in a cache without the cap)."""
    folder = cache / "wikiengine" / "probe"

    def write(name, key="k"):
        kept = KeptMap("probe", name, lambda: "v1", limit=4, kind_files=3)
        kept.put(key, b"x")
        kept.save()

    for number, name in enumerate(["a", "b", "c"]):
        write(f"{name}.marshal")
        os.utime(folder / f"{name}.marshal", ns=(number * 10**9, number * 10**9))  # written in this order
    (folder / "notes.txt").write_text("not a map")
    write("b.marshal", key="j")  # rewritten: now the newest, and nothing removed
    assert sorted(path.name for path in folder.iterdir()) == ["a.marshal", "b.marshal", "c.marshal", "notes.txt"]
    write("d.marshal")  # a new file: the least recently written goes
    assert sorted(path.name for path in folder.iterdir()) == ["b.marshal", "c.marshal", "d.marshal", "notes.txt"]
    assert KeptMap("probe", "b.marshal", lambda: "v1", limit=4).get("j") == b"x"


def test_a_second_sight_map_keeps_a_key_the_second_process_meets_and_remembers_few_met_once(cache):
    def process(*keys):
        kept = KeptMap("probe", "s.marshal", lambda: "v1", limit=2, second_sight=True)
        found = {key: kept.get(key) for key in keys}
        for key in keys:
            if found[key] is None:
                kept.put(key, key.encode())
        kept.save()
        return found

    assert process("k") == {"k": None}
    assert process("k") == {"k": None}  # met again: kept now
    assert process("k") == {"k": b"k"}
    for number in range(20):
        process(f"once-{number}")
    _stamp, entries, seen = marshal.loads((cache / "wikiengine" / "probe" / "s.marshal").read_bytes())
    assert entries == {"k": b"k"} and len(seen) == 2 * usercache.SEEN_PER_ENTRY
    assert process("once-19", "once-0") == {"once-19": None, "once-0": None}  # the newest is remembered, the oldest not
    _stamp, entries, _seen = marshal.loads((cache / "wikiengine" / "probe" / "s.marshal").read_bytes())
    assert set(entries) == {"k", "once-19"}


def test_a_text_that_holds_a_secret_is_never_kept(tmp_path):
    """A cluster file's frontmatter (`.env/<cluster>.md`, linted like any page) may hold a
    token: the cache, like memory and the logs, never gets one."""
    token = "hf_" + "Zq8rT2mW9xK4vB7nL3pDa6cY1sEfGh5JkU0o"  # a Hub token's shape: 34 characters
    cluster = f"name: alice-v5p-16\nproject: my-proj\nhub_token: {token}\n"
    first, again = load_in_a_process(cluster, tmp_path), load_in_a_process(cluster, tmp_path)
    assert first == again and again["pyyaml"] is True and again["value"]["hub_token"] == token
    load_in_a_process(FRONTMATTER, tmp_path)
    kept = kept_file(tmp_path).read_bytes()
    assert token.encode() not in kept and b"alice-v5p-16" not in kept and b"Lane state" in kept
