"""Small wikis built in tmp_path for the domain rule tests (EXP, LOG, MOD, WKL, MEM, RUN).

``experiment_page()`` renders a page that passes every rule; tests change one thing and
expect exactly the one code that thing breaks.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig

MODEL_DIR = "wiki/experiments/gemma4_autoresearch_optimization"
LANE = f"{MODEL_DIR}/tpu"
OTHER_LANE = f"{MODEL_DIR}/jax"
MODEL_PROGRAM = "# Gemma 4\n\nUSER_PREFIX = demo\n\n## The goal\n\nMFU.\n"

HYPOTHESIS = """\
**Hypothesis** (one falsifiable sentence): splash attention raises MFU by 2 points.

**Mechanism**: replace the XLA attention with the splash kernel.

**Predicted signal**: expect custom_call(target=splash_mha_fwd) in train_step.

**Falsification criterion**: MFU gain under 0.5 points.
"""
NOT_RECOVERED = (
    "**Hypothesis not recovered** — page filed by BACKFILL after the run completed without a stub. "
    "The original dispatch context was lost; treat this experiment as observation-only.\n"
)
FILLED = {
    "Hypothesis under test": HYPOTHESIS,
    "Setup": "**Workload**: `demo-gemma4-tpu-v042-splash`\n",
    "Results": "MFU 41.3% (+2.4).\n",
    "Profile": "Attention 21.5% of step time: CONFIRMED.\n",
    "HLO Dump": "custom_call(target=splash_mha_fwd) present.\n",
    "Verdict": "**supported** — +2.4 MFU.\n",
}


def frontmatter(**keys) -> str:
    lines = [f"{k}: {v}" for k, v in keys.items() if v is not None]
    return "---\n" + "\n".join(lines) + "\n---\n"


def experiment_page(status="supported", created="2026-06-02", sections=None, **keys) -> str:
    """A page that passes every rule; ``sections`` maps a title to a new body (None drops it)."""
    body = dict(FILLED)
    if status == "in_progress":
        body.update({t: "" for t in ("Results", "Profile", "HLO Dump", "Verdict")})
    body.update(sections or {})
    fm = {"created": created, "variant": "2B/v5p-16", "status": status, **keys}
    text = frontmatter(**fm) + "# experiment\n"
    for title, content in body.items():
        if content is not None:
            text += f"\n## {title}\n\n{content}"
    return text


# The model template's other sections (conventions.md), as MOD003 wants them.
TEMPLATE_SECTIONS = """
## Target metrics

MFU.

## How to run

`wiki resolve gemma4 tpu`.

## Cross-variant open hypotheses

None.

## Variant-specific open hypotheses

None.

## Retired hypotheses

None.

## Knobs translation matrix

None.

## Iteration ladder

Baseline first.
"""
MODEL_PAGE = """\
---
model: gemma4
lane: tpu
---
# Gemma 4 on TPU

## Variant matrix

| Size | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp |
|---|---|---|---|---|---|---|
| 2B | v5p-16 | live | 38.9% | {best} | 1 | — |
""" + TEMPLATE_SECTIONS


def write(root: Path, files: dict[str, str]) -> Path:
    """Write ``files`` (path -> text) under ``root``, plus the model-level program."""
    files = {f"{MODEL_DIR}/program.md": MODEL_PROGRAM, **files}
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def findings(root: Path, code: str, base: str | None = None, **options) -> list:
    """The findings of rule ``code`` alone (with per-rule ``options``)."""
    config = LintConfig(select=[code], rules={code: options} if options else {})
    return [f for f in lint(root, config=config, base=base).findings if f.code == code]


def assert_finds(root: Path, code: str, expected: int, **options) -> None:
    """Rule ``code`` finds exactly ``expected`` findings (those found are the failure's message)."""
    found = findings(root, code, **options)
    assert len(found) == expected, [f.render() for f in found]


def codes(root: Path, base: str | None = None) -> set[str]:
    """Every code that fires on the wiki (all rules)."""
    return {f.code for f in lint(root, config=LintConfig(), base=base).findings}


_GIT_ENV = {
    "GIT_AUTHOR_NAME": "Test",
    "GIT_AUTHOR_EMAIL": "test@example.invalid",
    "GIT_COMMITTER_NAME": "Test",
    "GIT_COMMITTER_EMAIL": "test@example.invalid",
}


def git(root: Path, *args: str, date: str | None = None) -> str:
    """Run git in ``root`` with a fixed identity (and commit date, when given)."""
    env = {**os.environ, **_GIT_ENV}
    if date:
        env["GIT_AUTHOR_DATE"] = env["GIT_COMMITTER_DATE"] = date
    out = subprocess.run(["git", *args], cwd=root, env=env, capture_output=True, text=True, check=True)
    return out.stdout.strip()


def git_init(root: Path) -> None:
    git(root, "init", "-q", "-b", "main")
    git(root, "config", "commit.gpgsign", "false")


def commit_all(root: Path, message: str, date: str | None = None, no_verify: bool = False) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "-m", message, *(["--no-verify"] if no_verify else []), date=date)
    return git(root, "rev-parse", "HEAD")
