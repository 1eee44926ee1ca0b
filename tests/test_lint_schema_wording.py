"""A pooled cold run words schema errors (jsonschema) in the parent only, for the pages that
fail their fast schema check; the findings are the serial run's, and a wiki whose pages all
pass imports jsonschema nowhere (runner._analyse_chunk, schemas.defer_wording)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.lint_support import REPO, write
from wikiengine.lint import runner

HYPOTHESIS = "---\ntitle: Idea {n}\nstatus: {status}\ncreated: {created}\n---\n\n## Idea\n\nText {n}.\n"
PAGES = runner.POOL_THRESHOLD + 40

# Run in a fresh interpreter (the test process may have imported jsonschema already): each
# forked child notes whether jsonschema was imported when it finished a chunk; then the run
# again with one process, for its findings.
SCRIPT = """
import json, os, sys
from pathlib import Path
from wikiengine.lint import lint, runner

root, notes = Path(sys.argv[1]), Path(sys.argv[2])
analyse_chunk, parent_pid = runner._analyse_chunk, os.getpid()

def noting(chunk):
    done = analyse_chunk(chunk)
    if os.getpid() != parent_pid:
        (notes / str(os.getpid())).write_text(str("jsonschema" in sys.modules))
    return done

runner._analyse_chunk = noting
rows = lambda result: [[f.path, f.line, f.col, f.code, f.message] for f in result.findings]
pooled = rows(lint(root, use_cache=False))
parent = "jsonschema" in sys.modules
serial = rows(lint(root, use_cache=False, jobs=1))
print(json.dumps({"pooled": pooled, "serial": serial, "parent": parent,
                  "workers": [p.read_text() for p in notes.iterdir()]}))
"""


def _run(tmp_path, broken: dict[int, tuple[str, str]]):
    files = {}
    for n in range(PAGES):
        status, created = broken.get(n, ("open", "2026-01-01"))
        files[f"wiki/hypotheses/idea{n:03}.md"] = HYPOTHESIS.format(n=n, status=status, created=created)
    root = write(tmp_path / "wiki-root", files)
    notes = tmp_path / "notes"
    notes.mkdir()
    # a per-user cache of its own: wordings kept by another run would spare the parent jsonschema
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache")}
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(root), str(notes)], capture_output=True, text=True,
                          cwd=REPO, check=True, timeout=120, env=env)
    return json.loads(proc.stdout)


def test_refused_pages_are_worded_in_the_parent_with_the_serial_findings(tmp_path):
    # idea000 is the parent's warm-up page (analysed before the fork): it passes
    broken = {37: ("running", "2026-01-01"), 150: ("done", "someday"), 229: ("open", "May 3")}
    out = _run(tmp_path, broken)
    schema_rows = [row for row in out["pooled"] if row[3] == "WK002"]
    assert {row[0] for row in schema_rows} == {f"wiki/hypotheses/idea{n:03}.md" for n in broken}
    assert len(schema_rows) == 4  # idea150 breaks two keys
    assert any("'running' is not one of" in row[4] for row in schema_rows)
    assert out["pooled"] == out["serial"]
    assert out["workers"] and set(out["workers"]) == {"False"}  # no worker imported jsonschema
    assert out["parent"]


def test_a_wiki_whose_pages_pass_imports_jsonschema_nowhere(tmp_path):
    out = _run(tmp_path, {})
    assert not [row for row in out["pooled"] if row[3] == "WK002"]
    assert set(out["workers"]) == {"False"} and not out["parent"]
