"""WKL001: workload names on experiment pages (seed 003 Step 2b and 2(c)(iv)-(v):
`<USER_PREFIX>-<MODEL_NAME>-<LANE>-v<NNN>-<slug>[-<retry>]`, under 40 characters,
`[a-z]([-a-z0-9]*[a-z0-9])?`)."""

from __future__ import annotations

from tests.rules_wiki import LANE, experiment_page, findings, write

PAGE = f"{LANE}/2026-06-02-v042-splash.md"


def setup(name: str) -> dict:
    return {"Setup": f"**Workload**: `{name}`\n"}


def test_wkl001_user_prefix_option_overrides_the_program(tmp_path):
    write(tmp_path, {PAGE: experiment_page(sections=setup("alice-gemma4-tpu-v042-splash"))})
    assert findings(tmp_path, "WKL001", **{"user-prefix": "alice"}) == []


def test_wkl001_names_the_line_of_the_name(tmp_path):
    write(tmp_path, {PAGE: experiment_page(sections=setup("demo-gemma4-jax-v042-splash"))})
    (finding,) = findings(tmp_path, "WKL001")
    line = (tmp_path / PAGE).read_text().splitlines()[finding.line - 1]
    assert "demo-gemma4-jax-v042-splash" in line and "does not start with demo-gemma4-tpu-v" in finding.message
