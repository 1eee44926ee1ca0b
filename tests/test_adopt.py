"""`wiki adopt` on a copy of the example wiki with the shapes a hand-grown wiki has
(conventions.md, "A wiki that grew by hand"): the report names each, the configuration
it writes makes the wiki's own conventions win, `wiki lint` passes after it, a second run
changes nothing and --dry-run writes nothing. Real git, real `wiki` processes."""

from __future__ import annotations

import json
import shutil
import subprocess
import tomllib
from pathlib import Path

import pytest

from tests.test_init import snapshot, wiki

REPO = Path(__file__).resolve().parents[1]
GEMMA = "wiki/experiments/gemma4_autoresearch_optimization"
TPU = f"{GEMMA}/tpu"
BARE_LANE = f"{GEMMA}/torch"  # pages, no program.md, no log.md
MODEL_PAGE = "wiki/models/gemma4-tpu.md"
V046 = f"{TPU}/experiments/2026-06-10-v046-splash-blocks.md"
RERUNS = (f"{TPU}/experiments/2026-06-13-v046-e-longer-warmup.md", f"{TPU}/experiments/2026-06-14-v046-e-retry.md")
MATRIX = """\
| Size | Hardware | Status | Baseline (step / TPS / MFU) | Current best (step / TPS / MFU) | Open hyps | Frontier exp |
|---|---|---|---|---|---|---|
| 2B | v5p-16 | live | 540 ms / 30,100 TPS / 38.9% MFU | [v046-splash-blocks](../experiments/gemma4_autoresearch_optimization/tpu/experiments/2026-06-10-v046-splash-blocks.md) 512 ms / 31,955 TPS / 42.0% MFU | 2 | v047-fsdp-overlap |
| 9B | v5p-16 | open | 1210 ms / 14,020 TPS / 35.1% MFU | 1190 ms / 14,300 | 0 | — |
"""
UNREADABLE_ROW_LINE = 27  # the 9B row: two bare figures, neither marked as MFU


def git(root: Path, *argv: str) -> None:
    subprocess.run(["git", *argv], cwd=root, check=True, capture_output=True)


def plant(root: Path) -> None:
    """The example wiki, committed, with the hand-grown shapes planted and committed."""
    shutil.copytree(REPO / "wiki", root / "wiki")
    git(root, "init", "-q")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "--allow-empty", "-m", "empty")
    page = root / MODEL_PAGE
    text = page.read_text(encoding="utf-8")
    start = text.index("| Size | Hardware")
    page.write_text(text[:start] + MATRIX + text[text.index("\n## Cross-variant"):], encoding="utf-8")
    (root / TPU / "RESULTS.tsv").write_text("exp_id\tdate\tmfu_percent\tnotes\tstatus\nv046\t2026-06-10\t42.0\tok\tkeep\n")
    for rerun in RERUNS:
        shutil.copy(root / V046, root / rerun)
    (root / BARE_LANE).mkdir()
    shutil.copy(root / f"{GEMMA}/jax/2026-05-18-v010-donate-buffers.md", root / BARE_LANE / "2026-05-18-v010-donate.md")
    log = root / "wiki/log.md"
    log.write_text(log.read_text(encoding="utf-8") + "\n## [2026-05-10] loop-iteration | v001-warmup on 2B/v5p-16: "
                   "supported (+1.0%)\n", encoding="utf-8")
    for checkout in ("raw/code/maxtext", "raw/repos/tunix"):
        (root / checkout).mkdir(parents=True)
        git(root / checkout, "init", "-q")
    (root / "raw/traces/v046").mkdir(parents=True)
    (root / "raw/traces/v046/trace.json").write_text("{}")
    (root / ".gitignore").write_text("raw/code/\nraw/repos/\nraw/traces/\n.wiki_cache/\n")
    git(root, "add", "-A")
    git(root, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "hand-grown")


@pytest.fixture
def grown(tmp_path):
    root = tmp_path / "w"
    root.mkdir()
    plant(root)
    return root


def adopt(root: Path, *argv: str) -> dict:
    done = wiki(root, "adopt", "--json", *argv)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def lanes_of(report: dict) -> dict[str, dict]:
    return {lane["dir"]: lane for lane in report["lanes"]}


def test_the_report_names_every_hand_grown_shape(grown):
    report = adopt(grown, "--dry-run")
    lanes = lanes_of(report)
    bare = lanes[BARE_LANE]
    assert bare["program"]["own"] is False and bare["program"]["resolves"] is True
    assert bare["log"]["present"] is False and "no log.md" in bare["problems"]
    tpu = lanes[TPU]
    page = tpu["model_page"]
    assert page["rel"] == MODEL_PAGE and "Current best (step / TPS / MFU)" in page["header"]
    rows = {row["key"]: row for row in page["rows"]}
    assert rows["2B/v5p-16"]["Baseline"] == 38.9 and rows["2B/v5p-16"]["Current best"] == 42.0
    assert rows["9B/v5p-16"]["Baseline"] == 35.1 and rows["9B/v5p-16"]["Current best"] is None
    assert len(page["unreadable"]) == 1
    assert page["unreadable"][0].startswith(f"{MODEL_PAGE}:{UNREADABLE_ROW_LINE}: 9B/v5p-16 Current best")
    assert tpu["results"]["columns"] is None and "'notes'" in tpu["results"]["error"]
    assert sorted(tpu["ids"]["hyphen_reruns"]) == sorted(RERUNS)
    assert tpu["ids"]["duplicates"] == {"v046e": sorted(RERUNS)}
    wide = report["wiki"]
    assert wide["local_checkouts"] == ["raw/code/maxtext", "raw/repos/tunix"] and wide["submodules"] == []
    assert wide["early_lane_ops"] == 1 and wide["first_lane_entry"] == "2026-05-18"

    text = wiki(grown, "adopt", "--dry-run")
    assert text.returncode == 0, text.stderr
    for name in (BARE_LANE, "no program.md (inherited)", "no log.md", f"{MODEL_PAGE}:{UNREADABLE_ROW_LINE}",
                 "RESULTS.tsv unreadable", *RERUNS, "duplicate v046e", "raw/code/maxtext", "raw/repos/tunix",
                 "raw/traces/"):
        assert name in text.stdout, name


def test_adopt_configures_the_wikis_conventions_and_lint_then_passes(grown):
    assert wiki(grown, "lint").returncode == 1  # the hand-grown wiki has findings today
    report = adopt(grown)
    keys = {k["key"]: k["value"] for k in report["keys"]}
    assert keys == {"checkout-paths": ["raw/code/", "raw/repos/"], "artifact-paths": ["raw/profiles/", "raw/traces/"],
                    "rules.LOG003.split-date": "2026-05-18"}
    assert all(k["why"] for k in report["keys"])
    assert report["config"]["action"] == "written" and report["baseline"]["action"] == "written"
    config = tomllib.loads((grown / "wiki.toml").read_text())
    assert config["checkout-paths"] == ["raw/code/", "raw/repos/"] and config["rules"]["LOG003"]["split-date"] == "2026-05-18"
    assert report["baseline"]["entries"] > 0
    done = wiki(grown, "lint")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_second_adopt_changes_nothing_and_says_so(grown):
    adopt(grown)
    before = snapshot(grown)
    again = wiki(grown, "adopt")
    assert again.returncode == 0, again.stderr
    assert "Nothing changed." in again.stdout
    assert snapshot(grown) == before
    report = adopt(grown)
    assert report["changed"] is False and report["keys"] == [] and report["baseline"]["action"] == "unchanged"


def test_dry_run_writes_nothing(grown):
    before = snapshot(grown)
    done = wiki(grown, "adopt", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert "would write wiki.toml" in done.stdout and "Dry run: nothing written." in done.stdout
    assert snapshot(grown) == before


def test_an_existing_configuration_is_not_edited_the_keys_are_given(grown):
    (grown / "wiki.toml").write_text("# ours\nignore = [\"IDX\"]\n")
    before = (grown / "wiki.toml").read_bytes()
    report = adopt(grown)
    assert report["config"]["action"] == "add-by-hand" and "not edited" in report["config"]["note"]
    assert "[rules.LOG003]" in report["config"]["text"] and "raw/repos/" in report["config"]["text"]
    assert (grown / "wiki.toml").read_bytes() == before
    done = wiki(grown, "lint")  # the baseline is today's findings under the configuration as it is
    assert done.returncode == 0, done.stdout + done.stderr


def test_pyproject_keys_are_given_in_the_tool_wiki_form(grown):
    (grown / "pyproject.toml").write_text("[project]\nname = \"w\"\n\n[tool.wiki]\nignore = [\"IDX\"]\n")
    report = adopt(grown, "--dry-run")
    assert report["config"]["file"] == "pyproject.toml" and report["config"]["action"] == "add-by-hand"
    assert report["config"]["text"].startswith("[tool.wiki]\n") and "[tool.wiki.rules.LOG003]" in report["config"]["text"]
    assert not (grown / "wiki.toml").exists()


@pytest.mark.parametrize("setup", ["not-a-wiki", "bad-config"])
def test_bad_input_is_one_line_and_exit_2(tmp_path, setup):
    root = tmp_path / "w"
    root.mkdir()
    if setup == "bad-config":
        (root / "wiki").mkdir()
        (root / "wiki.toml").write_text("select = [\n")
    done = wiki(root, "adopt", "--root", str(root))
    assert done.returncode == 2 and done.stdout == ""
    assert len(done.stderr.strip().splitlines()) == 1 and done.stderr.startswith("error: ")
