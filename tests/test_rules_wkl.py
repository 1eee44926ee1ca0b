"""WKL001: workload names on experiment pages (seed 003 Step 2b and 2(c)(iv)-(v):
`<USER_PREFIX>-<MODEL_NAME>-<LANE>-v<NNN>-<slug>[-<retry>]`, under 40 characters,
`[a-z]([-a-z0-9]*[a-z0-9])?`)."""

from __future__ import annotations

import pytest

from tests.rules_wiki import LANE, assert_finds, experiment_page, findings, write

PAGE = f"{LANE}/2026-06-02-v042-splash.md"
LLAMA_PAGE = "wiki/experiments/llama3_8B_autoresearch_optimization/tpu/2026-07-01-v001-base.md"
LLAMA_PROGRAM = {"wiki/experiments/llama3_8B_autoresearch_optimization/program.md": "# Llama\n\nNo prefix here.\n"}


def setup(name: str) -> dict:
    return {"Setup": f"**Workload**: `{name}`\n"}


CASES = [
    ("pass", {PAGE: experiment_page()}, 0),
    ("pass-retry", {PAGE: experiment_page(sections=setup("demo-gemma4-tpu-v042-splash-b"))}, 0),
    ("pass-retry-page", {f"{LANE}/2026-06-02-v042b-splash.md": experiment_page(sections=setup("demo-gemma4-tpu-v042-splash-b"))}, 0),
    ("placeholder-is-no-name", {PAGE: experiment_page(sections=setup("<workload-name>"), workload_name="TBD")}, 0),
    ("pass-frontmatter-list", {PAGE: experiment_page(workload_name="[demo-gemma4-tpu-v042-splash, demo-gemma4-tpu-v042-splash-b]")}, 0),
    ("too-long", {PAGE: experiment_page(sections=setup("demo-gemma4-tpu-v042-splash-attention-megablox"))}, 1),
    ("exactly-40", {PAGE: experiment_page(sections=setup("demo-gemma4-tpu-v042-" + "s" * 19))}, 1),
    ("uppercase", {PAGE: experiment_page(sections=setup("demo-gemma4-tpu-v042-Splash"))}, 1),
    ("wrong-lane", {PAGE: experiment_page(sections=setup("demo-gemma4-jax-v042-splash"))}, 1),
    ("wrong-prefix", {PAGE: experiment_page(sections=setup("alice-gemma4-tpu-v042-splash"))}, 1),
    ("wrong-vid", {PAGE: experiment_page(sections=setup("demo-gemma4-tpu-v043-splash"))}, 1),
    ("frontmatter-key", {PAGE: experiment_page(workload_name="demo-gemma4-tpu-v042-Splash")}, 1),
    ("launch-command-in-fence", {PAGE: experiment_page(sections={"Setup": "```bash\nxpk workload create --workload demo-gemma4-tpu-v041-splash\n```\n"})}, 1),
    # No explicit USER_PREFIX in the model program: only length, pattern and -<model>-<lane>-v<NNN>-.
    ("no-prefix-pass", {**LLAMA_PROGRAM, LLAMA_PAGE: experiment_page(created="2026-07-01", sections=setup("anyone-llama3-8b-tpu-v001-base"))}, 0),
    ("no-prefix-wrong-model", {**LLAMA_PROGRAM, LLAMA_PAGE: experiment_page(created="2026-07-01", sections=setup("anyone-llama3-tpu-v001-base"))}, 1),
    ("no-prefix-too-long", {**LLAMA_PROGRAM, LLAMA_PAGE: experiment_page(created="2026-07-01", sections=setup("someone-llama3-8b-tpu-v001-baseline-fsdp"))}, 1),
]


@pytest.mark.parametrize("case,files,expected", CASES, ids=[c[0] for c in CASES])
def test_wkl001(tmp_path, case, files, expected):
    write(tmp_path, files)
    assert_finds(tmp_path, "WKL001", expected)


def test_wkl001_user_prefix_option_overrides_the_program(tmp_path):
    write(tmp_path, {PAGE: experiment_page(sections=setup("alice-gemma4-tpu-v042-splash"))})
    assert findings(tmp_path, "WKL001", **{"user-prefix": "alice"}) == []


def test_wkl001_names_the_line_of_the_name(tmp_path):
    write(tmp_path, {PAGE: experiment_page(sections=setup("demo-gemma4-jax-v042-splash"))})
    (finding,) = findings(tmp_path, "WKL001")
    line = (tmp_path / PAGE).read_text().splitlines()[finding.line - 1]
    assert "demo-gemma4-jax-v042-splash" in line and "does not start with demo-gemma4-tpu-v" in finding.message
