"""The agent kit (contrib/agents/): the harness wakes a real lane and answers its needs through a
stand-in LLM; `wiki init --agent` writes valid hooks; the Stop hook holds a running lane."""

from __future__ import annotations

import importlib.util
import json
import os
import shlex
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

REPO = Path(__file__).resolve().parents[1]
KIT = REPO / "contrib" / "agents"
LANE_DIR = "wiki/experiments/mlp_autoresearch_optimization/cpu"
TRAIN = """\
import json, os, sys
knobs = json.load(open(sys.argv[1]))
w = 5.0
for step in range(100):
    w -= knobs["lr"] * 2 * w
json.dump({"loss": w * w}, open(os.environ["METRICS_PATH"], "w"))
"""
PROGRAM = """\
# mlp / cpu lane

## Config

```yaml
launch_cmd: "{python} train.py {config}"
target_metric: loss
higher_is_better: false
baseline_config: {lr: 0.01}
```
"""
PROPOSAL = """\
**Hypothesis**: a larger learning rate reaches a lower loss in the same 100 steps.

**Mechanism**: each step multiplies w by (1 - 2 lr): 0.8 at lr 0.1 instead of 0.98.

**Predicted signal**: the final loss falls by orders of magnitude.

**Falsification criterion**: the loss is not lower than the baseline's by more than the noise band.

## Setup

```yaml
lr: 0.1
```
"""


@pytest.fixture
def env(tmp_path, monkeypatch):
    """`wiki` of this interpreter first on PATH, a git identity, a user prefix: what a shell would have."""
    values = {"PATH": f"{Path(sys.executable).parent}:{os.environ.get('PATH', '/usr/bin:/bin')}", "USER": "tester",
              "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
              "GIT_COMMITTER_EMAIL": "t@example.invalid", "XDG_CACHE_HOME": str(tmp_path / "cache")}
    for key, value in values.items():
        monkeypatch.setenv(key, value)
    monkeypatch.delenv("CLAUDE_PROJECT_DIR", raising=False)
    return dict(os.environ)


def sh(root: Path, command: str, env: dict, check: bool = True) -> subprocess.CompletedProcess:
    done = subprocess.run(command, shell=True, cwd=root, env=env, capture_output=True, text=True, timeout=300)
    assert not check or done.returncode == 0, f"{command}: {done.stdout[-1500:]}{done.stderr[-1500:]}"
    return done


@pytest.fixture
def lane(tmp_path, env) -> Path:
    """A fresh wiki whose lane runs a user's own script, committed, with a session started."""
    sh(tmp_path, "wiki init lane --model mlp --lane cpu --variant 1M/cpu --agent claude", env)
    root = tmp_path / "lane"
    (root / "train.py").write_text(TRAIN)
    (root / LANE_DIR / "program.md").write_text(PROGRAM)
    sh(root, "git init -q && git add -A && git commit -qm 'my lane' && wiki loop start mlp cpu --yes", env)
    return root


def load_harness():
    spec = importlib.util.spec_from_file_location("harness", KIT / "harness.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def stand_in_llm(need: dict) -> dict | None:
    """What a model would answer, read off the need: a proposal for a hypothesis, the strongest verdict allowed."""
    if need["kind"] == "hypothesis":
        variant = need["inputs"]["frontier"][0]["variant"]
        command = need["command"].replace("SLUG", "lr-0p1").replace("KEY", variant).replace("FILE", "proposal.md")
        return {"command": command, "files": {"proposal.md": PROPOSAL}}
    if need["kind"] == "verdict":
        verdict = need["inputs"]["strongest_verdict"]
        return {"command": need["command"].replace("--verdict V", f"--verdict {verdict}")
                .replace("TEXT", shlex.quote(f"stand-in LLM: {need['inputs']['metric']} {need['inputs']['value']}"))}
    return None


def test_harness_is_short():
    assert len((KIT / "harness.py").read_text().splitlines()) < 60


@pytest.mark.waits
def test_the_harness_answers_each_need_of_a_real_lane_until_a_verdict_is_filed(lane):
    harness = load_harness()
    results = lane / LANE_DIR / "RESULTS.tsv"
    kinds = []
    for _ in range(60):
        result = harness.wake(lane, stand_in_llm)
        kinds += [need["kind"] for need in result["needs"]]
        if "v001" in results.read_text():
            break
        time.sleep(0.5)
    assert kinds[0] == "hypothesis" and "verdict" in kinds, kinds
    page = next((lane / LANE_DIR / "experiments").glob("*-v001-lr-0p1.md")).read_text()
    assert "status: filed" in page and "verdict: inconclusive" in page  # no Profile: capped, as the need said
    row = [line for line in results.read_text().splitlines() if line.startswith("v001")][0]
    assert row.split("\t")[7] == "inconclusive" and "lr=0.1" in row
    assert "loss" in page.split("## Results", 1)[1].split("## ", 1)[0]  # the figure the script wrote
    assert sh(lane, "wiki lint", dict(os.environ)).returncode == 0
    assert harness.main(lane, stand_in_llm, once=True) == 0


def test_the_harness_runs_only_wiki_commands_and_writes_only_inside_the_wiki(lane, tmp_path):
    harness = load_harness()
    need = {"kind": "hypothesis"}
    outside = tmp_path / "outside.md"
    assert harness.answer(need, {"command": f"touch {tmp_path / 'pwned'}"}, lane).startswith("refused")
    assert harness.answer(need, {"command": "wiki lint", "files": {str(outside): "x"}}, lane).startswith("refused")
    assert harness.answer(need, {"command": "wiki lint", "files": {"../escape.md": "x"}}, lane).startswith("refused")
    assert not (tmp_path / "pwned").exists() and not outside.exists() and not (tmp_path / "escape.md").exists()


def test_init_agent_claude_writes_valid_hooks_that_point_at_the_written_script(tmp_path, env):
    sh(tmp_path, "wiki init w --agent claude --json", env)
    root = tmp_path / "w"
    settings = json.loads((root / ".claude/settings.json").read_text())
    plugin_hooks = json.loads((KIT / "claude/hooks/hooks.json").read_text())["hooks"]
    assert set(settings["hooks"]) == set(plugin_hooks) == {"PostToolUse", "Stop"}
    (post,) = settings["hooks"]["PostToolUse"]
    assert {"Edit", "Write"} <= set(post["matcher"].split("|"))
    for event in ("PostToolUse", "Stop"):
        (hook,) = settings["hooks"][event][0]["hooks"]
        assert hook["type"] == "command"
        argv = shlex.split(hook["command"].replace("${CLAUDE_PROJECT_DIR}", str(root)))
        assert Path(argv[1]).is_file() and argv[2] in ("lint", "stop")
    skill = (root / ".claude/skills/wiki-wake/SKILL.md").read_text()
    assert skill.startswith("---\nname: wiki-wake\ndescription: ") and "wiki step --json" in skill
    manifest = json.loads((KIT / "claude/.claude-plugin/plugin.json").read_text())
    assert manifest["name"] == "wikiengine"
    again = json.loads(sh(root, "wiki init --agent claude --json", env).stdout)
    assert again["created"] == [] and ".claude/settings.json" in again["skipped"]  # never overwritten
    assert any("merge the hooks" in note for note in again["notes"])
    sh(root, "wiki init --agent codex", env)
    assert "wiki loop status --json" in (root / "AGENTS.md").read_text()
    assert sh(root, "git init -q && wiki lint", env).returncode == 0


def hook(root: Path, which: str, event: dict, env: dict) -> dict | None:
    script = root / ".claude/hooks/wiki_hooks.py"
    done = subprocess.run([sys.executable, str(script), which], input=json.dumps({"cwd": str(root), **event}),
                          cwd=root, env={**env, "CLAUDE_PROJECT_DIR": str(root)}, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout) if done.stdout.strip() else None


def test_the_stop_hook_blocks_while_the_lane_runs_and_allows_once_it_is_not(lane, env):
    blocked = hook(lane, "stop", {"hook_event_name": "Stop", "stop_hook_active": False}, env)
    assert blocked["decision"] == "block"
    assert "mlp_autoresearch_optimization/cpu is running" in blocked["reason"] and "wiki exp new" in blocked["reason"]
    sh(lane, "wiki loop stop --pause", env)
    assert hook(lane, "stop", {"hook_event_name": "Stop"}, env) is None


def test_the_stop_hook_allows_where_no_lane_session_is(tmp_path, env):
    sh(tmp_path, "wiki init w --agent claude && cd w && git init -q", env)
    assert hook(tmp_path / "w", "stop", {"hook_event_name": "Stop"}, env) is None


def test_the_lint_hook_shows_findings_of_an_edited_page_and_ignores_other_files(lane, env):
    (lane / "wiki/orphan.md").write_text("# orphan\n")
    found = hook(lane, "lint", {"tool_name": "Write", "tool_input": {"file_path": "wiki/orphan.md"}}, env)
    assert found["decision"] == "block" and "IDX002" in found["reason"]
    assert hook(lane, "lint", {"tool_name": "Edit", "tool_input": {"file_path": str(lane / "train.py")}}, env) is None
    assert hook(lane, "lint", {"tool_name": "Edit", "tool_input": {"file_path": "wiki/index.md"}}, env) is None


def test_the_harness_loop_sleeps_while_the_lane_runs_and_ends_once_it_is_paused(lane, env, monkeypatch):
    harness = load_harness()
    slept = []

    def sleep(seconds):  # the first sleep: the session runs, so the loop would wake again; pause it
        slept.append(seconds)
        sh(lane, "wiki loop stop --pause", env)

    monkeypatch.setattr(harness, "time", SimpleNamespace(sleep=sleep))  # this harness's clock only
    assert harness.main(lane, lambda need: None) == 0
    assert len(slept) == 1 and 120 <= slept[0] <= 600  # the wake's next_wake_s, then the paused wake ends it
