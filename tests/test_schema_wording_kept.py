"""The wording of a refused document is kept per user (core/schemas.py's ``_worded``, on
core/usercache.py's KeptMap): the next process words the same document against the same
schema without importing jsonschema, with the same issues; never from a wording kept by other
code, and never for a document that holds a secret."""

from __future__ import annotations

import json
import marshal
import os
import subprocess
import sys
from pathlib import Path

from tests import kept_support
from tests.kept_support import run_in_a_process
from tests.lint_support import write

BROKEN = {"title": "Idea 7", "status": "running", "created": "May 3", "owner": "kim"}

# Words argv[1] (a JSON document) against the hypothesis schema, prints the issues and whether
# jsonschema was imported, and keeps what it worded as the CLI does when it ends.
SCRIPT = r'''
import json, sys
from wikiengine.core import schemas, usercache
found = schemas.issues(json.loads(sys.argv[1]), "hypothesis", {("status",): 3, ("created",): 4, ("owner",): 5})
print(json.dumps({"issues": [[i.message, list(i.key_path), i.line] for i in found],
                  "jsonschema": "jsonschema" in sys.modules}))
usercache.save_all()
'''


def word_in_a_process(document: dict, cache: Path) -> dict:
    return run_in_a_process(SCRIPT, json.dumps(document), cache=cache)


def kept_file(cache: Path) -> Path:
    return kept_support.kept_file(cache, "schemas", "wordings.marshal")


def test_the_next_process_words_the_document_without_importing_jsonschema(tmp_path):
    first, again = word_in_a_process(BROKEN, tmp_path), word_in_a_process(BROKEN, tmp_path)
    assert first["jsonschema"] is True and again["jsonschema"] is False
    assert again["issues"] == first["issues"]
    assert any("'running' is not one of" in message and line == 3 for message, _path, line in again["issues"])
    assert kept_file(tmp_path).stat().st_mode & 0o777 == 0o600
    other = {**BROKEN, "status": "done"}  # another document: worded by jsonschema
    assert word_in_a_process(other, tmp_path)["jsonschema"] is True


def test_a_wording_kept_by_other_code_is_not_used(tmp_path):
    """The file names the code that worded it; a planted wording under the right stamp is taken
    as kept (so the stamp is what guards it), and the same plant under another is worded again."""
    word_in_a_process(BROKEN, tmp_path)
    stamp, kept, _seen = kept_support.read_map(kept_file(tmp_path))
    (key,) = kept
    kept[key] = marshal.dumps([["planted", ["status"]]])
    kept_support.write_map(kept_file(tmp_path), stamp, kept)
    assert word_in_a_process(BROKEN, tmp_path)["issues"] == [["planted", ["status"], 3]]
    kept_support.write_map(kept_file(tmp_path), "other code", kept)
    worded = word_in_a_process(BROKEN, tmp_path)
    assert worded["jsonschema"] is True and ["planted", ["status"], 3] not in worded["issues"]


def test_a_document_holding_a_secret_is_worded_each_time_and_never_kept(tmp_path):
    token = "hf_" + "Q" * 34
    secret = {**BROKEN, "notes": f"pushed with {token}"}
    first, again = word_in_a_process(secret, tmp_path), word_in_a_process(secret, tmp_path)
    assert first["jsonschema"] is True and again["jsonschema"] is True and first["issues"] == again["issues"]
    assert not kept_file(tmp_path).exists() or token.encode() not in kept_file(tmp_path).read_bytes()


def test_wiki_lint_finds_the_same_schema_findings_with_the_wordings_kept(tmp_path):
    root = write(tmp_path / "wiki", {
        "wiki/hypotheses/idea1.md": "---\ntitle: Idea 1\nstatus: running\ncreated: May 3\n---\n\n## Idea\n\nText.\n",
        "wiki/hypotheses/idea2.md": "---\ntitle: Idea 2\nstatus: open\ncreated: 2026-01-01\n---\n\n## Idea\n\nText.\n",
    })
    env = {**os.environ, "XDG_CACHE_HOME": str(tmp_path / "user-cache")}
    # the CLI leaves by os._exit (no interpreter teardown): say what was imported on the way out
    probe = ("import os, sys\nfrom wikiengine._cli.main import main\nleave = os._exit\n"
             "def noting(code):\n    print('jsonschema imported:', 'jsonschema' in sys.modules, file=sys.stderr)\n"
             "    sys.stderr.flush()\n    leave(code)\n"
             "os._exit = noting\nsys.argv[0] = 'wiki'\nsys.exit(main())")

    def lint():
        done = subprocess.run([sys.executable, "-c", probe, "lint", "--no-cache", "--json"], cwd=root, env=env,
                              capture_output=True, text=True)
        assert done.returncode == 1, done.stderr
        return json.loads(done.stdout), [line for line in done.stderr.splitlines() if "jsonschema imported:" in line]

    (first, imported), (again, imported_again) = lint(), lint()
    assert imported == ["jsonschema imported: True"] and imported_again == ["jsonschema imported: False"]
    assert again == first and [f for f in first if f["code"] == "WK002"]
