"""The cycle collector paused across torch's import, and its objects kept out of later
collections, in the processes that import it (wikiengine/core/collector.py)."""

import gc
import subprocess
import sys

import pytest

from wikiengine.core.collector import collector_paused

# Each case imports torch as that process does, with a counter of the collections run meanwhile;
# it prints "<collections> <objects frozen> <collector on>".
COUNTING = """
import gc, sys
collections = [0]
gc.callbacks.append(lambda phase, info: phase == "start" and collections.__setitem__(0, collections[0] + 1))
{body}
print(collections[0], gc.get_freeze_count(), gc.isenabled())
"""
ENTRIES = {
    # `python -m wikiengine.training.autoresearch_target`: its module-level imports. Imported first by
    # another program (a test, the MCP server), it pauses the collector and freezes nothing of it.
    "autoresearch_target": """
import runpy
import wikiengine.training.autoresearch_target
print("as a library:", gc.get_freeze_count())
sys.argv = ["autoresearch_target", "--help"]
try:
    runpy.run_module("wikiengine.training.autoresearch_target", run_name="__main__")
except SystemExit:
    pass
""",
    # `python -m wikiengine.training.session`: its first torch, once the store is read and the plan made
    "session": """
from types import SimpleNamespace
import wikiengine.training.session as session
session.__dict__["__name__"] = "__main__"
session._torch_device(SimpleNamespace(threads=0, device="cpu"), None)
""",
    # `python -m wikiengine.training.evaluate`: torch as it measures (the model dir is missing: it fails after)
    "evaluate": """
from pathlib import Path
import wikiengine.training.evaluate as evaluate
evaluate.__dict__["__name__"] = "__main__"
try:
    evaluate.measure(Path("/nonexistent-model-dir"), None, None)
except Exception:
    pass
""",
}


def test_the_collector_comes_back_as_it_was_and_keep_freezes_what_exists():
    """(The suite's workers froze their heap after collection already: tests/conftest.py.)"""
    assert gc.isenabled()
    frozen = gc.get_freeze_count()
    with collector_paused():
        assert not gc.isenabled()
        made = [[index] for index in range(1000)]  # tracked objects alive at the block's end
    assert gc.isenabled() and gc.get_freeze_count() == frozen
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()  # off before, off after
    finally:
        gc.enable()
    with collector_paused(keep=True):
        again = [[index] for index in range(1000)]
    assert gc.isenabled() and gc.get_freeze_count() >= frozen + len(made) + len(again)


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_torch_process_imports_torch_without_collections_and_keeps_its_objects_out(entry):
    """About 370 collections ran during `import torch` (0.17-0.23 s of its 1.35-1.59 s of CPU);
    paused, a few run in the rest of the start. Kept, torch's 166,000 objects are left out of
    every later collection."""
    done = subprocess.run([sys.executable, "-c", COUNTING.format(body=ENTRIES[entry])], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    if entry == "autoresearch_target":
        assert "as a library: 0\n" in done.stdout, done.stdout[-2000:]
    collections, frozen, enabled = done.stdout.split()[-3:]
    assert int(collections) < 100, done.stdout
    assert int(frozen) > 100_000 and enabled == "True", done.stdout
