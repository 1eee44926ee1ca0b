"""The lane writers on the real-shape corpus as it is (issue 22): no clean-up first.

`benchmarks/gen_wiki.py --real-shape` writes every shape of conventions.md's "A wiki that
grew by hand" (a long lane log with entries out of order, iterations after a stop and ids
of other pages; matrix headers with units and multi-figure cells; curated and repeated
index sections; lanes without program.md or log.md; hyphen reruns; ...). In several such
lanes `wiki exp new`, `exp file`, `log add`, `exp retry` and `backfill` each succeed, each
commit holds exactly the writer's files, the pages it creates lint clean, and the files it
changes carry no finding they did not carry before.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.lane_runs import record_run
from tests.lint_support import gen_wiki
from tests.run_once import copy_of
from wikiengine.core.identity import workload_name
from wikiengine.lint.runner import lint

pytestmark = pytest.mark.slow  # one corpus of about 4,600 pages per module; about 100 s on 2 cores
PROPOSAL = """\
**Hypothesis**: raising the splash q block to 1024 lifts MFU by 0.3 points.

**Mechanism**: set block_q=1024 in the splash config ({tag}).

**Predicted signal**: expect the splash custom call share to drop from 20.1% to 19.5%.

**Falsification criterion**: MFU below the frontier plus 0.3 points, or an unchanged splash share.

## Setup

```yaml
block_q: 1024
remat: full
```
"""
# One form of each the corpus uses; the writer must read every one (FIRING_FORMS).
HLO = "`splash_mha_fwd` grid is (8, 32, 4).\n\nFIRING CONFIRMED: custom_call(target=splash_mha_fwd) in jit_train_step.\n"
PROFILE = "Splash 19.4% of step time.\n"
ENV = {"USER": "alice", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.invalid"}
# (model, lane, variant, the shape it stands for)
LANES = [
    ("qwen3", "jax", "8B/v6e-8", "a long lane log with pre-existing defects"),
    ("llama3", "torchax", "8B/v6e-8", "matrix headers with units, multi-figure cells, no program.md"),
    ("qwen3", "vllm", "8B/v6e-8", "no program.md and no log.md"),
    ("llama3", "tpu", "8B/v5p-16", "hyphen reruns, loose pages in the lane folder"),
]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True,
                          env={**os.environ, **ENV}).stdout


def wiki_cmd(root: Path, *args: str) -> dict:
    result = subprocess.run([sys.executable, "-m", "wikiengine", *args, "--json"], cwd=root, capture_output=True,
                            text=True, timeout=300, env={**os.environ, **ENV})
    assert result.returncode == 0, f"wiki {' '.join(args)} refused:\n{result.stdout}{result.stderr}"
    return json.loads(result.stdout) if result.stdout.strip() else {}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory, real_shape_corpus) -> Path:
    """A copy of the session's corpus (seed 0, committed) that this module's writers change."""
    root = copy_of(real_shape_corpus[0], tmp_path_factory.mktemp("real") / "wiki")
    with open(root / ".gitignore", "a", encoding="utf-8") as ignore:
        ignore.write(".wiki/\n")  # the local backend's workload folders
    git(root, "commit", "-qam", "ignore the local backend's runs")
    return root


def findings(root: Path, paths: list[str]) -> set:
    """The findings on ``paths``, through the lint cache the writers keep (their whole-wiki
    cross-file rules cost seconds each uncached; the cache's own tests hold it equal)."""
    paths = [p for p in paths if (root / p).suffix == ".md" and (root / p).is_file()]
    return {f.identity() for f in lint(root, paths, base=None).findings if f.path in paths}


def run_writer(root: Path, allowed: set[str], *args: str) -> tuple[dict, list[str]]:
    """Run one writer; its commit holds only ``allowed`` files (and the page it reports),
    the tree is clean after it, new pages lint clean, changed ones gain no finding."""
    head = git(root, "rev-parse", "HEAD").strip()
    before = findings(root, sorted(allowed))
    out = wiki_cmd(root, *args)
    changed = git(root, "diff", "--name-only", head, "HEAD").split()
    pages = {p for p in [out.get("page"), *(b["page"] for b in out.get("backfilled", []))] if p}
    assert changed and set(changed) <= allowed | pages, (args, changed)
    assert git(root, "status", "--porcelain", "--untracked-files=all", "--", "wiki") == ""
    created = [p for p in changed if p in pages]
    assert findings(root, created) == set(), (args, findings(root, created))
    assert findings(root, sorted(set(changed) - pages)) <= before, (args, findings(root, changed) - before)
    return out, changed


@pytest.mark.parametrize("model,lane,variant,shape", LANES, ids=[f"{m}-{ln}" for m, ln, *_ in LANES])
def test_every_writer_succeeds_in_a_hand_grown_lane(corpus, model, lane, variant, shape, tmp_path):
    folder = f"{model}_autoresearch_optimization"
    lane_dir = f"wiki/experiments/{folder}/{lane}"
    journal, log, ledger = f"{lane_dir}/.journal.jsonl", f"{lane_dir}/log.md", f"{lane_dir}/RESULTS.tsv"
    model_page, index = f"wiki/models/{model}-{lane}.md", "wiki/index.md"
    proposal = tmp_path / "proposal.md"
    proposal.write_text(PROPOSAL.format(tag=lane))
    (tmp_path / "hlo.md").write_text(HLO)
    (tmp_path / "profile.md").write_text(PROFILE)

    if lane == "jax":  # the lane's newest marker is a stop (iterations followed it): a new session starts first
        run_writer(corpus, {log}, "log", "add", "start", "third session", model, lane, "--field", "Cluster pool=ar-v5p-16",
                   "--field", "Parallelism=1", "--field", "First-pick hypothesis=splash-qb")
    stub, _ = run_writer(corpus, {journal, index}, "exp", "new", model, lane, "--slug", "splash-qb",
                         "--variant", variant, "--proposal", str(proposal))
    vid = stub["vid"]
    assert "status: in_progress" in (corpus / stub["page"]).read_text()

    record_run(corpus, lane_dir, vid, variant=variant, metrics={"mfu": 61.0, "tps": 31955.0, "step_time_ms": 512.0})
    filed, changed = run_writer(corpus, {journal, log, ledger, model_page, index}, "exp", "file", vid, model, lane,
                                "--verdict", "supported", "--hlo", str(tmp_path / "hlo.md"),
                                "--profile", str(tmp_path / "profile.md"), "--reason", "as measured")
    assert filed["verdict"] == "supported", filed  # the FIRING CONFIRMED form is read; 61% beats every best
    assert {ledger, log, model_page} <= set(changed)
    row = (corpus / ledger).read_text().splitlines()[-1].split("\t")
    assert row[0] == vid and "61" in row[3] and row[6] == "block_q=1024 remat=full"

    run_writer(corpus, {log}, "log", "add", "analyze", f"splash sweep in {lane}", model, lane,
               "--field", "Key result=block 1024 best")
    assert f"] analyze | splash sweep in {lane}" in (corpus / log).read_text()

    retry, _ = run_writer(corpus, {journal, index}, "exp", "retry", vid, model, lane)
    assert retry["vid"] == vid + "b"

    lost = workload_name(gen_wiki().REAL_PREFIX, model, lane, int(vid[1:]) + 40, "lost-run")
    runs = corpus / ".wiki/lane-runs" / folder / lane / lost
    runs.mkdir(parents=True)
    (runs / "status.json").write_text(json.dumps({"state": "failed", "exit_code": 1}))
    (runs / "log.txt").write_text("step 0\nRuntimeError: RESOURCE_EXHAUSTED: HBM OOM at compile time\n")
    back, _ = run_writer(corpus, {journal, log, ledger, index}, "backfill", model, lane)
    assert [b["verdict"] for b in back["backfilled"]] == ["invalid"], back


def test_the_watcher_and_a_gated_stop_pass_over_the_wikis_own_defects(corpus):
    """A session on the hand-grown wiki: the watcher lists what predates it once, as inherited
    (lint findings, stubs left idle before it began), a closing audit passes when the session
    added nothing, and the gated stop closes it (a defect the session adds is its own:
    tests/test_lane_watch.py)."""
    import datetime as dt
    import re

    model, lane = "gemma3", "maxtext"
    start = wiki_cmd(corpus, "loop", "start", model, lane, "--yes", "--launch-cmd", "python -c pass")
    assert start["inherited_findings"] > 100  # the corpus's planted defects and more, recorded at the start
    first = wiki_cmd_code(corpus, 0, "watch", "--once")  # the first audit is full: a note, no finding
    assert first["full"] and first["findings"] == [] and first["inherited"]["findings"]
    assert wiki_cmd_code(corpus, 0, "watch", "--once")["inherited"]["findings"] == []  # listed once
    today = dt.datetime.now(dt.UTC).date().isoformat()
    retro = f"wiki/analyses/{today}-{model}-{lane}-retrospective.md"
    (corpus / retro).write_text(f"---\ntitle: {model} {lane} retrospective\ntype: analysis\nmodel: {model}\n"
                                f"lane: {lane}\ncreated: {today}\n---\n# Retrospective\n\nThe frontier held.\n")
    index = (corpus / "wiki/index.md").read_text()
    found = re.search(r"## Analyses \(\d+\)\n\n", index)
    (corpus / "wiki/index.md").write_text(index[:found.end()] + f"- [{model} {lane} retrospective]"
                                          f"(analyses/{retro.rsplit('/', 1)[1]})\n" + index[found.end():])
    git(corpus, "add", "-A")
    git(corpus, "commit", "-qm", "the session's retrospective")
    closing = wiki_cmd_code(corpus, 0, "watch", "--once", "--closing")
    assert closing["clean"] and closing["authorized"] and closing["inherited"]["count"] > 0
    stopped = wiki_cmd(corpus, "loop", "stop", "--yes")
    assert stopped["stopped"] and stopped["final_audit"].startswith(f"ALL-CLEAR {model}/{lane} session 1")


def wiki_cmd_code(root: Path, code: int, *args: str) -> dict:
    result = subprocess.run([sys.executable, "-m", "wikiengine", *args, "--json"], cwd=root, capture_output=True,
                            text=True, timeout=300, env={**os.environ, **ENV})
    assert result.returncode == code, f"wiki {' '.join(args)}:\n{result.stdout}{result.stderr}"
    return json.loads(result.stdout)
