"""Whether a lane page's frontmatter holds an open word, and its mechanism, are kept per user by
the page's stat signature (step/lane_read.py's ``_recall_answers``, on core/usercache.py's
KeptMap): the next process reads only the pages that changed, and every answer is the one
reading gives."""

from __future__ import annotations

import marshal
import os
import time

from tests import kept_support
from tests.kept_support import run_in_a_process
from tests.test_lane_writers import wiki  # noqa: F401 - fixture

LANE_DIR = "wiki/experiments/gemma4_autoresearch_optimization/tpu"

# Lists argv[1]'s gemma4/tpu pages: each page's is_open, and how many pages were read to
# answer; keeps what it answered as the CLI does when it ends.
SCRIPT = r'''
import json, sys
from pathlib import Path
from wikiengine.core import usercache
from wikiengine.model.experiment import ExperimentPage
from wikiengine.model.lanes import Lane
from wikiengine.step import lane_read
read, parsed = [], []
answer, mechanism = ExperimentPage._holds_open_word.func, ExperimentPage.mechanism.func
def counted(page):
    read.append(page.rel)
    return answer(page)
def parsed_for(page):
    parsed.append(page.rel)
    return mechanism(page)
ExperimentPage._holds_open_word.func, ExperimentPage.mechanism.func = counted, parsed_for
pages = lane_read.lane_pages(Path(sys.argv[1]), Lane("gemma4_autoresearch_optimization", "tpu"))
print(json.dumps({"open": {p.rel: p.is_open for p in pages}, "read": read,
                  "mechanisms": {p.rel: p.mechanism for p in pages}, "parsed": sorted(set(parsed))}))
usercache.save_all()
'''


def settle(root) -> None:
    """Every page of the lane last changed a minute ago (past the racy window)."""
    past = time.time() - 60
    for page in (root / LANE_DIR).rglob("*.md"):
        os.utime(page, (past, past))


def list_pages(root, cache) -> dict:
    return run_in_a_process(SCRIPT, str(root), cache=cache)


def test_the_next_process_reads_only_the_pages_that_changed(wiki, tmp_path):  # noqa: F811
    settle(wiki)
    first = list_pages(wiki, tmp_path / "xdg")
    assert len(first["read"]) >= 3 and any(first["open"].values()) and not all(first["open"].values())
    assert first["parsed"] == sorted(first["mechanisms"])  # each page parsed once for its mechanism, then kept
    again = list_pages(wiki, tmp_path / "xdg")
    assert again == {"open": first["open"], "read": [], "mechanisms": first["mechanisms"], "parsed": []}
    # a filed page edited back to an open status (a new file renamed in, as every editor's save)
    filed = next(rel for rel, is_open in first["open"].items() if not is_open)
    path = wiki / filed
    text = path.read_text()
    assert "status:" in text
    replaced = path.with_suffix(".tmp")
    replaced.write_text(text.replace("status:", "status: running\nformer_status:", 1))
    os.replace(replaced, path)
    edited = list_pages(wiki, tmp_path / "xdg")
    assert edited["read"] == [filed] and edited["open"] == {**first["open"], filed: True}
    assert edited["parsed"] == [filed] and edited["mechanisms"] == first["mechanisms"]
    assert list_pages(wiki, tmp_path / "xdg")["read"] == [filed]  # written just now: not kept yet
    past = time.time() - 60
    os.utime(path, (past, past))
    assert list_pages(wiki, tmp_path / "xdg")["read"] == [filed]  # settled: answered and kept
    assert list_pages(wiki, tmp_path / "xdg")["read"] == []


def test_damaged_or_foreign_answers_are_not_used(wiki, tmp_path):  # noqa: F811
    settle(wiki)
    cache = tmp_path / "xdg"
    first = list_pages(wiki, cache)
    (kept_file,) = (cache / "wikiengine" / "lane-pages").iterdir()
    stamp, entries, _seen = kept_support.read_map(kept_file)
    open_rel = next(rel for rel, is_open in first["open"].items() if is_open)
    signature, _answer, mechanism = marshal.loads(entries[open_rel])
    entries[open_rel] = marshal.dumps((signature, False, mechanism))  # a planted answer under the right stamp is taken...
    other = next(rel for rel, is_open in first["open"].items() if not is_open)
    entries[other] = b"not marshal"
    kept_support.write_map(kept_file, stamp, entries)
    planted = list_pages(wiki, cache)
    assert planted["open"][open_rel] is False and planted["read"] == [other] and planted["parsed"] == [other]
    kept_support.write_map(kept_file, "other code", entries)  # ...so the stamp is what guards it
    foreign = list_pages(wiki, cache)
    assert foreign["open"] == first["open"] and sorted(foreign["read"]) == sorted(first["read"])
    assert foreign["mechanisms"] == first["mechanisms"] and foreign["parsed"] == first["parsed"]
    assert kept_support.kept_file(cache, "lane-pages", kept_file.name).stat().st_mode & 0o777 == 0o600
