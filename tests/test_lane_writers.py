"""The lane writers (issue 9): `wiki exp new|file|retry`, `wiki log add`, `wiki backfill`.

Driven through real `wiki` processes on a git copy of the example wiki: ids are never
reused (pages, journal, branches, deleted pages), concurrent writers get distinct ids,
a writer SIGKILLed at each point of its write is finished by the next one (RELIABILITY
rows 22 and 39 for lanes), bad input is one line and exit 2 with nothing written, and
the verdict caps of seeds 001/003 hold.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.lane_runs import record_run
from tests.run_once import built_in_process
from wikiengine.lint.runner import lint
from wikiengine.model import experiment as ex
from wikiengine.model.verdicts import Evidence, cap_verdict

REPO = Path(__file__).resolve().parent.parent
LANE_DIR = "wiki/experiments/gemma4_autoresearch_optimization/tpu"
MODEL_PAGE = "wiki/models/gemma4-tpu.md"
V046 = LANE_DIR + "/experiments/2026-06-10-v046-splash-blocks.md"
PROPOSAL = """\
**Hypothesis**: raising the splash q block to 1024 lifts MFU by 0.3 points.

**Mechanism**: set block_q=1024 in the splash config ({tag}).

**Predicted signal**: expect the splash custom call share to drop from 20.1% to 19.5%.

**Falsification criterion**: MFU below 42.1%, or an unchanged splash share.

## Setup

Same as v046 with block_q=1024.
"""
HLO = "`splash_mha_fwd` grid is (8, 32, 4).\n\nHypothesis-firing audit: CONFIRMED.\n"


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout


IDENTITY = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
            "GIT_COMMITTER_EMAIL": "t@example.invalid"}


@pytest.fixture()
def wiki(tmp_path, monkeypatch) -> Path:
    """A git copy of the example wiki, committed, for the writers to write to."""
    monkeypatch.setenv("USER", "alice")
    for name, value in IDENTITY.items():
        monkeypatch.setenv(name, value)
    return shutil.copytree(example_repo(), tmp_path / "repo", symlinks=True)


def example_repo() -> Path:
    """This repository's wiki/ and pyproject.toml in a git repository, committed: made once in a
    process and copied by each test that writes to it (a copy costs a third of a fresh commit of
    the 100 files)."""
    return built_in_process("lane-writers-repo", _commit_example)


def _commit_example(root: Path) -> None:
    shutil.copytree(REPO / "wiki", root / "wiki")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    git(root, "init", "-q")
    git(root, "add", "-A")
    subprocess.run(["git", "commit", "-qm", "init"], cwd=root, env={**os.environ, **IDENTITY}, capture_output=True,
                   check=True)


def proposal(root: Path, tag: str = "a", **replace: str) -> Path:
    text = PROPOSAL.format(tag=tag)
    for old, new in replace.items():
        text = text.replace(old.replace("_", " "), new)
    path = root.parent / f"proposal-{tag}.md"
    path.write_text(text)
    return path


def wiki_cmd(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess:
    result = subprocess.run([sys.executable, "-m", "wikiengine", *args], cwd=root, capture_output=True, text=True,
                            timeout=120)
    if check:
        assert result.returncode == 0, result.stdout + result.stderr
    return result


def new(root: Path, slug: str, tag: str | None = None, track: int = 1, *extra: str) -> dict:
    out = wiki_cmd(root, "exp", "new", "gemma4", "tpu", "--slug", slug, "--variant", "2B/v5p-16",
                   "--proposal", str(proposal(root, tag or slug)), "--track", str(track), "--json", *extra)
    return json.loads(out.stdout)


def lint_codes(root: Path) -> list[str]:
    return sorted(f.render() for f in lint(root, base=None, use_cache=False).findings)


def clean(root: Path) -> bool:
    return git(root, "status", "--porcelain", "--untracked-files=all", "--", "wiki") == ""


# --- exp new -------------------------------------------------------------------------------


def test_new_writes_a_stub_claims_it_and_commits(wiki):
    result = new(wiki, "splash-qb")
    assert result["vid"] == "v048"  # the example lane's highest id is v047
    assert result["workload_name"] == "demo-gemma4-tpu-v048-splash-qb"
    assert result["artifacts"]["xprof"].endswith("/gemma4-tpu-v048-splash-qb/xprof")
    page = (wiki / result["page"]).read_text()
    assert "status: in_progress" in page and "**Falsification criterion**: MFU below 42.1%" in page
    titles = [ln for ln in page.splitlines() if ln.startswith("## ")]
    assert titles[:4] == ["## Hypothesis under test", "## Setup", "## Baseline comparison", "## Results"]
    journal = [json.loads(ln) for ln in (wiki / LANE_DIR / ".journal.jsonl").read_text().splitlines()]
    assert [(r["op"], r["vid"], r["track"]) for r in journal] == [("claim", "v048", 1)]
    assert git(wiki, "log", "-1", "--format=%s").strip() == "exp(v048): stub splash-qb"
    assert clean(wiki) and lint_codes(wiki) == []


def test_an_id_is_never_reused_after_its_page_is_deleted(wiki):
    first = new(wiki, "splash-qb")
    git(wiki, "rm", "-q", first["page"])
    git(wiki, "commit", "-qm", "drop v048")
    (wiki / LANE_DIR / ".journal.jsonl").unlink()  # even with the journal gone, history keeps the id
    git(wiki, "commit", "-qam", "drop journal")
    assert new(wiki, "splash-q2")["vid"] == "v049"


def test_an_id_used_on_another_branch_is_not_handed_out(wiki):
    git(wiki, "checkout", "-q", "-b", "track-2")
    page = wiki / LANE_DIR / "experiments" / "2026-07-01-v060-other.md"
    page.write_text("---\nstatus: in_progress\ncreated: 2026-07-01\n---\n")
    git(wiki, "add", "-A")
    git(wiki, "commit", "-qm", "v060 on a branch")
    git(wiki, "checkout", "-q", "-")
    assert new(wiki, "splash-qb")["vid"] == "v061"


def test_concurrent_writers_get_distinct_ids(wiki):
    procs = [
        subprocess.Popen([sys.executable, "-m", "wikiengine", "exp", "new", "gemma4", "tpu", "--slug", f"c{i}",
                          "--variant", "2B/v5p-16", "--proposal", str(proposal(wiki, f"c{i}")), "--track", str(i),
                          "--json"], cwd=wiki, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for i in range(5)
    ]
    results = [p.communicate(timeout=300) for p in procs]
    assert all(p.returncode == 0 for p in procs), results
    ids = sorted(json.loads(out)["vid"] for out, _err in results)
    assert ids == ["v048", "v049", "v050", "v051", "v052"]
    assert len(git(wiki, "log", "--format=%s", "--grep=: stub").splitlines()) == 5
    assert clean(wiki) and lint_codes(wiki) == []


def test_a_mechanism_in_flight_on_another_track_is_refused(wiki):
    new(wiki, "splash-qb", tag="same", track=1)
    head = git(wiki, "rev-parse", "HEAD")
    refused = wiki_cmd(wiki, "exp", "new", "gemma4", "tpu", "--slug", "again", "--variant", "2B/v5p-16",
                       "--proposal", str(proposal(wiki, "same")), "--track", "2", check=False)
    assert refused.returncode == 2 and "already in flight on track 1" in refused.stderr
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)


# --- bad input: one line, exit 2, nothing written ---------------------------------------------


@pytest.mark.parametrize(
    "case,args,message",
    [
        ("missing proposal", ["--proposal", "/nonexistent/p.md"], "no such proposal file"),
        ("empty paragraph", ["--proposal", "EMPTY"], "proposal-empty.md:3: the **Mechanism** paragraph is empty"),
        ("falsification repeats the signal", ["--proposal", "SAME"], "only repeats the predicted signal"),
        ("variant not a row", ["--variant", "2B/v5p-8"], "is not a row of the variant matrix"),
        ("bad slug", ["--slug", "Bad_Slug"], "is not lower-case"),
    ],
)
def test_new_refuses_bad_input(wiki, case, args, message):
    empty = proposal(wiki, "empty")
    empty.write_text(empty.read_text().replace("set block_q=1024 in the splash config (empty).", "TBD"))
    same = proposal(wiki, "same")
    same.write_text(same.read_text().replace("MFU below 42.1%, or an unchanged splash share.",
                                             "expect the splash custom call share to drop from 20.1% to 19.5%."))
    argv = {"--slug": "ok", "--variant": "2B/v5p-16", "--proposal": str(proposal(wiki, "ok"))}
    for key, value in zip(args[::2], args[1::2]):
        argv[key] = {"EMPTY": str(empty), "SAME": str(same)}.get(value, value)
    head = git(wiki, "rev-parse", "HEAD")
    result = wiki_cmd(wiki, "exp", "new", "gemma4", "tpu", *[x for kv in argv.items() for x in kv], check=False)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr and len(result.stderr.strip().splitlines()) == 1
    assert "Traceback" not in result.stderr
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)


def test_unknown_lane_is_one_line(wiki):
    result = wiki_cmd(wiki, "exp", "new", "gemma4", "nolane", "--slug", "lost-lane", "--variant", "2B/v5p-16",
                      "--proposal", str(proposal(wiki)), check=False)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1


def test_malformed_metrics_file_names_its_line(wiki):
    vid = new(wiki, "splash-qb")["vid"]
    metrics = wiki.parent / "metrics.json"
    metrics.write_text('{\n  "mfu": 42.0,\n  "tps": oops\n}\n')
    head = git(wiki, "rev-parse", "HEAD")
    result = wiki_cmd(wiki, "exp", "file", vid, "gemma4", "tpu", "--verdict", "supported", "--metrics", str(metrics),
                      check=False)
    assert result.returncode == 2 and "metrics.json:3:" in result.stderr
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)


# --- exp file ------------------------------------------------------------------------------


def _file(wiki, vid, verdict="supported", mfu="42.6", hlo=HLO, profile="Splash 19.4% of step time.\n", *extra,
          exit_code=0, run_metrics=None, frontier=None, band=0.3):
    """File ``vid`` after journalling its run as the wake would (figures from the run)."""
    (wiki.parent / "hlo.md").write_text(hlo)
    (wiki.parent / "profile.md").write_text(profile)
    record_run(wiki, LANE_DIR, vid, variant="2B/v5p-16", metrics={"mfu": float(mfu), **(run_metrics or {})},
               exit_code=exit_code, frontier=frontier, band=band)
    args = ["exp", "file", vid, "gemma4", "tpu", "--verdict", verdict,
            "--hlo", str(wiki.parent / "hlo.md"), "--profile", str(wiki.parent / "profile.md"), "--reason", "as measured",
            "--json", *extra]
    return json.loads(wiki_cmd(wiki, *args).stdout)


def test_file_supported_moves_current_best_logs_and_appends_results(wiki):
    vid = new(wiki, "splash-qb")["vid"]
    result = _file(wiki, vid)
    assert result["verdict"] == "supported" and result["current_best_moved"] and result["capped"] == []
    matrix_row = next(ln for ln in (wiki / MODEL_PAGE).read_text().splitlines() if ln.startswith("| 2B |"))
    assert "[v048-splash-qb](../experiments/gemma4_autoresearch_optimization/tpu/experiments/" in matrix_row
    assert matrix_row.rstrip().endswith("| v048-splash-qb |")
    log = (wiki / LANE_DIR / "log.md").read_text()
    assert "## [" in log and log.index("loop-iteration | v048-splash-qb on 2B/v5p-16: supported") < log.index("v047")
    rows = (wiki / LANE_DIR / "RESULTS.tsv").read_text().splitlines()
    assert rows[0].split("\t")[0] == "exp_id" and rows[1].split("\t")[7] == "keep"
    page = (wiki / result["page"]).read_text()
    assert "status: filed" in page and "verdict: supported" in page
    assert "| mfu | 38.9 | 42.6 | +3.7 |" in page
    assert git(wiki, "log", "-1", "--format=%s").strip() == "exp(v048): file splash-qb — supported"
    assert clean(wiki) and lint_codes(wiki) == []


def _real_shape_model_page(wiki, baseline="1,284 ms / 6,380 TPS / 38.9% MFU",
                           best_figures="1,190 ms / 6,880 TPS / 42.0% MFU") -> None:
    """The example model page with the template's own headers and multi-figure cells, as a
    hand-grown wiki writes them (conventions.md, "A wiki that grew by hand"); committed."""
    path = wiki / MODEL_PAGE
    text = path.read_text().replace("| Baseline | Current best |",
                                    "| Baseline (step / TPS / MFU) | Current best (step / TPS / MFU) |")
    text = text.replace("| live | 38.9% MFU |", f"| live | {baseline} |").replace(".md) 42.0% MFU |", f".md) {best_figures} |")
    path.write_text(text)
    git(wiki, "commit", "-qam", "model page in the real shape")


def test_file_reads_the_mfu_figure_of_multi_figure_cells_and_keeps_their_form(wiki):
    """Issue 22: under 'Baseline (step / TPS / MFU)' the MFU baseline is 38.9 (found by its
    unit), not 1,284 (the first number), and Current best moves in the cell's own form."""
    _real_shape_model_page(wiki)
    vid = new(wiki, "splash-qb")["vid"]
    result = _file(wiki, vid, run_metrics={"tps": 6912.0, "step_time_ms": 1183.4})
    assert result["baseline"] == 38.9 and result["verdict"] == "supported" and result["current_best_moved"]
    assert "| mfu | 38.9 | 42.6 | +3.7 |" in (wiki / result["page"]).read_text()
    row = next(ln for ln in (wiki / MODEL_PAGE).read_text().splitlines() if ln.startswith("| 2B |"))
    assert ("| 1,284 ms / 6,380 TPS / 38.9% MFU | [v048-splash-qb](../experiments/gemma4_autoresearch_optimization/"
            "tpu/experiments/") in row
    assert row.endswith(".md) 1,183 ms / 6,912 TPS / 42.6% MFU | 2 | v048-splash-qb |")
    assert clean(wiki) and lint_codes(wiki) == []


def test_file_writes_the_documented_form_when_the_cell_holds_more_than_figures(wiki):
    """A Current best cell with prose or a change would be left half stale: it is rewritten
    whole, in the documented form (the run's step / TPS / MFU)."""
    _real_shape_model_page(wiki, best_figures="42.0% MFU (+3.1 over baseline)")
    vid = new(wiki, "splash-qb")["vid"]
    _file(wiki, vid, run_metrics={"tps": 6912.0})
    row = next(ln for ln in (wiki / MODEL_PAGE).read_text().splitlines() if ln.startswith("| 2B |"))
    assert row.endswith(".md) 6,912 TPS / 42.6% MFU | 2 | v048-splash-qb |")


@pytest.mark.parametrize("baseline,reason", [
    ("1,284 / 6,380 / 38.9", "none of its figures (1,284, 6,380, 38.9) is marked as mfu"),
    ("1,284 ms / 6,380 TPS", "none of its figures (1,284 ms, 6,380 TPS) is marked as mfu"),
    ("38.9% MFU / 39.4% MFU", "several mfu figures"),
])
def test_file_refuses_an_unreadable_cell_naming_the_model_page_line(wiki, baseline, reason):
    """A cell whose MFU figure cannot be told is reported with the model page's file:line
    and the cell, exit 2, nothing written: never a wrong delta on an immutable page."""
    _real_shape_model_page(wiki, baseline=baseline)
    vid = new(wiki, "splash-qb")["vid"]
    (wiki.parent / "hlo.md").write_text(HLO)
    record_run(wiki, LANE_DIR, vid, variant="2B/v5p-16", metrics={"mfu": 42.6})
    head = git(wiki, "rev-parse", "HEAD")
    result = wiki_cmd(wiki, "exp", "file", vid, "gemma4", "tpu", "--verdict", "supported", "--hlo",
                      str(wiki.parent / "hlo.md"), check=False)
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert result.stderr.startswith(f"error: {MODEL_PAGE}:26: ") and "'Baseline (step / TPS / MFU)' cell" in result.stderr
    assert baseline in result.stderr and reason in result.stderr
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)


@pytest.mark.parametrize(
    "case,kwargs,expected",
    [
        ("no firing line", {"hlo": "`splash_mha_fwd` grid is (8, 32, 4).\n"}, "inconclusive"),
        ("silent no-op", {"hlo": "Hypothesis-firing audit: SILENT NO-OP.\n"}, "inconclusive"),
        ("within noise", {"mfu": "39.0"}, "inconclusive"),
        ("wrong direction", {"mfu": "30.0"}, "inconclusive"),
    ],
)
def test_file_caps_a_supported_claim(wiki, case, kwargs, expected):
    vid = new(wiki, "splash-qb")["vid"]
    result = _file(wiki, vid, **kwargs)
    assert result["verdict"] == expected and result["capped"], result
    assert not result["current_best_moved"]
    assert "[v046-splash-blocks]" in (wiki / MODEL_PAGE).read_text()
    assert lint_codes(wiki) == []


def test_a_crashed_run_is_invalid(wiki):
    vid = new(wiki, "splash-qb")["vid"]
    result = _file(wiki, vid, "supported", "42.6", HLO, "p\n", exit_code=1)
    assert result["verdict"] == "invalid"
    assert (wiki / LANE_DIR / "RESULTS.tsv").read_text().splitlines()[1].split("\t")[7] == "crash"


def test_a_filed_page_is_immutable(wiki):
    vid = new(wiki, "splash-qb")["vid"]
    _file(wiki, vid)
    again = wiki_cmd(wiki, "exp", "file", vid, "gemma4", "tpu", "--verdict", "refuted", check=False)
    assert again.returncode == 2 and f"wiki exp retry {vid}" in again.stderr and "immutable" in again.stderr


def test_retry_takes_the_next_letter_and_the_same_mechanism(wiki):
    vid = new(wiki, "splash-qb")["vid"]
    _file(wiki, vid, "refuted", "38.0")
    first = json.loads(wiki_cmd(wiki, "exp", "retry", vid, "gemma4", "tpu", "--json").stdout)
    second = json.loads(wiki_cmd(wiki, "exp", "retry", vid, "gemma4", "tpu", "--json").stdout)
    assert (first["vid"], second["vid"]) == ("v048b", "v048c")
    assert first["workload_name"] == "demo-gemma4-tpu-v048-splash-qb-b"
    text = (wiki / first["page"]).read_text()
    assert "**Mechanism**: set block_q=1024 in the splash config (splash-qb)." in text
    assert lint_codes(wiki) == []


# --- log add and backfill ---------------------------------------------------------------------


def test_log_add_tiers_and_forms(wiki):
    refused = wiki_cmd(wiki, "log", "add", "loop-iteration", "v001 on 8B: supported", check=False)
    assert refused.returncode == 2 and "belongs in a lane log" in refused.stderr
    wrong = wiki_cmd(wiki, "log", "add", "ingest-source", "paper", "gemma4", "tpu", check=False)
    assert wrong.returncode == 2 and "global log" in wrong.stderr
    wiki_cmd(wiki, "log", "add", "analyze", "splash sweep", "gemma4", "tpu", "--field", "Key result=block 2048 best")
    head = (wiki / LANE_DIR / "log.md").read_text().split("## [2026-06-12]")[0]
    assert "] analyze | splash sweep\n\n**Op**: analyze\n**Key result**: block 2048 best\n" in head
    wiki_cmd(wiki, "log", "add", "ingest-source", "a paper on splash")
    assert "] ingest-source | a paper on splash" in (wiki / "wiki/log.md").read_text()
    assert clean(wiki) and lint_codes(wiki) == []


def _workload(wiki, name, state, exit_code, log):
    folder = wiki / ".wiki/lane-runs/gemma4_autoresearch_optimization/tpu" / name
    folder.mkdir(parents=True)
    (folder / "status.json").write_text(json.dumps({"state": state, "exit_code": exit_code}))
    (folder / "log.txt").write_text(log)


def test_backfill_files_finished_workloads_without_pages_once(wiki):
    (wiki / ".gitignore").write_text(".wiki/\n")
    git(wiki, "add", ".gitignore")
    git(wiki, "commit", "-qm", "ignore")
    _workload(wiki, "demo-gemma4-tpu-v090-ok-run", "succeeded", 0, "step 100 mfu 41.0\n")
    # a hand-named run whose slug begins with a one-letter word: `v091-b-crash.md` would read as v091b
    _workload(wiki, "demo-gemma4-tpu-v091-b-crash", "failed", 1, "step 3\nRuntimeError: RESOURCE_EXHAUSTED: HBM OOM\n")
    _workload(wiki, "demo-gemma4-tpu-v092-still", "running", None, "")
    _workload(wiki, "bob-gemma4-tpu-v093-not-mine", "succeeded", 0, "")
    result = json.loads(wiki_cmd(wiki, "backfill", "gemma4", "tpu", "--json").stdout)
    assert [(b["vid"], b["verdict"]) for b in result["backfilled"]] == [("v090", "inconclusive"), ("v091", "invalid")]
    assert result["backfilled"][1]["page"].endswith("-v091-run-b-crash.md")
    crashed = (wiki / result["backfilled"][1]["page"]).read_text()
    assert "backfilled: true" in crashed and "RESOURCE_EXHAUSTED: HBM OOM" in crashed
    assert "**Hypothesis not recovered**" in crashed
    log = (wiki / LANE_DIR / "log.md").read_text()
    assert log.count("] backfill | v09") == 2
    again = json.loads(wiki_cmd(wiki, "backfill", "gemma4", "tpu", "--json").stdout)
    assert again["backfilled"] == [] and again["commit"] is None
    assert clean(wiki) and lint_codes(wiki) == []
    # Backfilled ids count as used. (A running workload with no claim is filed by backfill
    # once it finishes; the writers never see it before, since dispatch claims first.)
    assert new(wiki, "next")["vid"] == "v092"


# --- killed writers ---------------------------------------------------------------------------

KILLER = textwrap.dedent("""
    import os, signal, sys
    from wikiengine.step import txn as lane_txn
    from wikiengine._cli import main as cli
    point = sys.argv[1]
    real_apply, real_commit = lane_txn._apply, lane_txn._commit
    def die():
        os.kill(os.getpid(), signal.SIGKILL)
    def apply(root, texts):
        if point == "before-apply":
            die()
        if point == "mid-apply":
            first = dict(list(texts.items())[:1])
            real_apply(root, first)
            die()
        real_apply(root, texts)
    def commit(root, paths, message, probe=None):
        if point == "before-commit":
            die()
        sha = real_commit(root, paths, message, probe)
        if point == "after-commit":
            die()
        return sha
    lane_txn._apply, lane_txn._commit = apply, commit
    raise SystemExit(cli.main(sys.argv[2:]))
""")


@pytest.mark.parametrize("point", ["before-apply", "mid-apply", "before-commit", "after-commit"])
def test_row22_a_writer_killed_anywhere_is_finished_by_the_next(wiki, point):
    argv = ["exp", "new", "gemma4", "tpu", "--slug", "killed", "--variant", "2B/v5p-16",
            "--proposal", str(proposal(wiki, "killed")), "--track", "1"]
    killed = subprocess.run([sys.executable, "-c", KILLER, point, *argv], cwd=wiki, capture_output=True, text=True,
                            timeout=120)
    assert killed.returncode == -signal.SIGKILL
    second = new(wiki, "after", track=2)
    assert second["recovered"] is not None or point == "after-commit"
    assert second["vid"] == "v049"  # v048 was claimed by the killed writer, and is kept
    stubs = git(wiki, "log", "--format=%s", "--grep=: stub").splitlines()
    assert stubs == ["exp(v049): stub after", "exp(v048): stub killed"]
    assert not list((Path(git(wiki, "rev-parse", "--absolute-git-dir").strip()) / "wiki-lane").glob("*.txn.json"))
    assert clean(wiki) and lint_codes(wiki) == []


def test_a_torn_redo_record_is_discarded(wiki):
    from wikiengine.model.lanes import Lane
    from wikiengine.step.txn import LaneLock, redo_path

    lane = Lane("gemma4_autoresearch_optimization", "tpu")
    record = redo_path(wiki, lane)
    record.parent.mkdir(parents=True, exist_ok=True)
    record.write_text('{"message": "exp(v0')
    with LaneLock(wiki, lane) as lock:
        assert lock.recovered is None
    assert not record.exists() and clean(wiki)


# --- the caps, as a table -------------------------------------------------------------------------

CAPS = [
    # requested, evidence, expected
    ("supported", {}, "inconclusive"),  # no delta
    ("supported", {"delta": 1.0, "noise_band": 0.4}, "supported"),
    ("supported", {"delta": 0.4, "noise_band": 0.4}, "inconclusive"),
    ("supported", {"delta": -1.0, "noise_band": 0.4, "higher_is_better": False}, "supported"),
    ("supported", {"delta": 1.0, "noise_band": 0.4, "higher_is_better": False}, "inconclusive"),
    ("supported", {"delta": 1.0, "crashed": True}, "invalid"),
    ("refuted", {"backfilled": True}, "inconclusive"),
    ("invalid", {"backfilled": True}, "invalid"),
    ("refuted", {"has_profile": False}, "inconclusive"),
    ("refuted", {"has_hlo": False}, "inconclusive"),
    ("refuted", {"firing": None}, "inconclusive"),
    ("supported", {"delta": 5.0, "firing": "silent no-op"}, "inconclusive"),
    ("refuted", {}, "refuted"),
    ("inconclusive", {"crashed": True}, "invalid"),
]


@pytest.mark.parametrize("requested,evidence,expected", CAPS)
def test_verdict_caps(requested, evidence, expected):
    verdict, reasons = cap_verdict(Evidence(requested=requested, **evidence))
    assert verdict == expected
    assert bool(reasons) == (verdict != requested)


def test_unknown_verdict_is_refused_before_anything_is_read(wiki):
    result = wiki_cmd(wiki, "exp", "file", "v047", "gemma4", "tpu", "--verdict", "done", check=False)
    assert result.returncode == 2 and "is not one of supported" in result.stderr


def test_a_frontier_co_measured_in_the_run_is_the_reference(wiki):
    """Interleaved with the frontier in one process, the delta is against that measurement and
    the recorded figure is rescaled to the frontier's recorded one (v046: mfu 42.0), so
    figures recorded under different loads stay comparable."""
    vid = new(wiki, "splash-qb")["vid"]
    result = _file(wiki, vid, "supported", "40.0", HLO, "p\n", run_metrics={"frontier_mfu": 38.0}, frontier=V046, band=0.5)
    assert result["verdict"] == "supported" and result["current_best_moved"]
    assert result["value"] == pytest.approx(42.0 * 40.0 / 38.0) and result["delta"] == pytest.approx(2.0)
    page = (wiki / result["page"]).read_text()
    assert "| mfu | 38 | 40 | +2 | ±0.5 |" in page and "the frontier, co-measured in the same process" in page
    within = new(wiki, "within", tag="w")["vid"]
    capped = _file(wiki, within, "supported", "38.2", HLO, "p\n", run_metrics={"frontier_mfu": 38.0}, frontier=V046,
                   band=0.5)
    assert capped["verdict"] == "inconclusive" and not capped["current_best_moved"]
    assert lint_codes(wiki) == []


def test_a_slug_never_ends_or_begins_in_what_reads_as_a_retry_letter(wiki):
    refused = wiki_cmd(wiki, "exp", "new", "gemma4", "tpu", "--slug", "splash-q", "--variant", "2B/v5p-16",
                       "--proposal", str(proposal(wiki, "q")), check=False)
    assert refused.returncode == 2 and "reads as a retry letter" in refused.stderr
    # `<date>-v051-t-warmup.md` reads as the retry v051t: the writer's own page would not be found by its id
    head = git(wiki, "rev-parse", "HEAD")
    refused = wiki_cmd(wiki, "exp", "new", "gemma4", "tpu", "--slug", "t-warmup", "--variant", "2B/v5p-16",
                       "--proposal", str(proposal(wiki, "t")), check=False)
    assert refused.returncode == 2 and "is the retry v001t" in refused.stderr and git(wiki, "rev-parse", "HEAD") == head
    kept = json.loads(wiki_cmd(wiki, "exp", "new", "gemma4", "tpu", "--slug", "a-warmup", "--variant", "2B/v5p-16",
                               "--proposal", str(proposal(wiki, "a")), "--json").stdout)
    assert ex.parse_file_name(Path(kept["page"]).name).exp_id == kept["vid"]  # `a` is never a retry letter
    from wikiengine.core.identity import workload_name

    assert workload_name("demo", "gemma4", "tpu", 48, "abcdefghijklmno-q-rest") == "demo-gemma4-tpu-v048-abcdefghijklmno"


def test_adopt_a_results_row_follows_the_header_the_file_has(wiki):
    """The ledger spec of a hand-grown wiki: the file's own columns and order, the bare id,
    MFU as a percent though the run reported a fraction, config as the run's knobs."""
    ledger = wiki / LANE_DIR / "RESULTS.tsv"
    ledger.write_text("exp_id\tstatus\tmfu_percent\tconfig\tdate\n")
    git(wiki, "add", "-A")
    git(wiki, "commit", "-qm", "a ledger with its own column order")
    path = proposal(wiki, "knobs")
    path.write_text(path.read_text() + "\n```yaml\nblock_q: 1024\nremat: full\n```\n")
    vid = json.loads(wiki_cmd(wiki, "exp", "new", "gemma4", "tpu", "--slug", "splash-qb", "--variant", "2B/v5p-16",
                              "--proposal", str(path), "--json").stdout)["vid"]
    record_run(wiki, LANE_DIR, vid, variant="2B/v5p-16", metrics={"mfu": 0.412})
    wiki_cmd(wiki, "exp", "file", vid, "gemma4", "tpu", "--verdict", "refuted", "--reason", "r")
    header, row = ledger.read_text().splitlines()[0], ledger.read_text().splitlines()[-1]
    assert header == "exp_id\tstatus\tmfu_percent\tconfig\tdate"
    assert row.split("\t")[:4] == [vid, "inconclusive", "41.2", "block_q=1024 remat=full"]  # no Profile: capped


def test_adopt_a_ledger_with_an_unknown_header_is_refused_with_its_line(wiki):
    ledger = wiki / LANE_DIR / "RESULTS.tsv"
    ledger.write_text("id\twhen\tscore\n")
    git(wiki, "add", "-A")
    git(wiki, "commit", "-qm", "a ledger this engine cannot fill")
    vid = new(wiki, "splash-qb")["vid"]
    record_run(wiki, LANE_DIR, vid, variant="2B/v5p-16", metrics={"mfu": 42.0})
    head = git(wiki, "rev-parse", "HEAD")
    done = wiki_cmd(wiki, "exp", "file", vid, "gemma4", "tpu", "--verdict", "refuted", check=False)
    assert done.returncode == 2 and "RESULTS.tsv:1:" in done.stderr and len(done.stderr.strip().splitlines()) == 1
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)


# --- a wiki that grew by hand (issue 22): a write is judged by what it adds ------------------------

LANE_LOG = LANE_DIR + "/log.md"
# Defects a hand-grown lane log carries, each quoting another entry's line: an iteration
# after a stop with no new start (RUN004), a stop with no retrospective since the start
# below it (RUN001), an entry below an older one (LOG002).
AFTER_STOP = "## [2026-06-09] loop-iteration | v045b-megablox on 2B/v5p-16: invalid (after the stop)\n\n"
OLD_SESSION = ("## [2026-05-30] stop | /stop-experiment, no retrospective\n\n**Op**: stop\n\n"
               "## [2026-05-29] start | /start-experiment session zero\n\n**Op**: start\n\n"
               "## [2026-06-07] analyze | a misplaced note\n\n**Op**: analyze\n")


def identities(root: Path) -> list:
    return sorted(f.identity() for f in lint(root, base=None, use_cache=False).findings)


def _grown_log(wiki) -> list:
    path = wiki / LANE_LOG
    text = path.read_text().replace("## [2026-06-09] stop |", AFTER_STOP + "## [2026-06-09] stop |")
    path.write_text(text.rstrip("\n") + "\n\n" + OLD_SESSION)
    git(wiki, "commit", "-qam", "a hand-grown lane log")
    before = identities(wiki)
    assert {code for code, _p, _s in before} >= {"LOG002", "RUN001", "RUN004"}, before
    return before


def test_adopt_log_add_and_exp_new_file_in_a_lane_log_with_defects(wiki):
    before = _grown_log(wiki)
    wiki_cmd(wiki, "log", "add", "analyze", "splash sweep", "gemma4", "tpu", "--field", "Key result=block 2048 best")
    vid = new(wiki, "splash-qb")["vid"]
    result = _file(wiki, vid)
    assert result["verdict"] == "supported"
    assert "loop-iteration | v048-splash-qb" in (wiki / LANE_LOG).read_text()
    assert clean(wiki) and identities(wiki) == before  # the writers' pages lint clean, the old findings unchanged


def test_adopt_the_old_texts_are_linted_by_the_rules_that_found_something_only(wiki, monkeypatch):
    """What a write adds is told by linting the old texts again, by the rules of the findings in
    question; git's answers to the commit's two questions, asked while the new texts were in
    place, are kept for the commit rather than asked again."""
    from wikiengine.core.git import CommitProbe
    from wikiengine.lint import runner
    from wikiengine.model.lanes import Lane
    from wikiengine.step import writers as lw

    before = _grown_log(wiki)
    selects, probes = [], []
    real_lint, real_probe = runner.lint, CommitProbe.__init__
    monkeypatch.setattr(runner, "lint", lambda root, paths, config=None, **kw: selects.append(
        config.select if config is not None else None) or real_lint(root, paths, config, **kw))
    monkeypatch.setattr(CommitProbe, "__init__", lambda self, *a: probes.append(a) or real_probe(self, *a))
    lw.add_log_entry(wiki, "analyze", "splash sweep", Lane("gemma4_autoresearch_optimization", "tpu"),
                     {"Key result": "block 2048 best"})
    assert selects[0] is None and {"LOG002", "RUN001", "RUN004"} <= set(selects[1]) <= {c for c, _p, _s in before}
    assert len(selects) == 2 and len(probes) == 1 and clean(wiki) and identities(wiki) == before


def test_adopt_the_old_texts_are_judged_against_the_other_pages_as_the_new_ones_were(wiki, monkeypatch):
    """The lint of the old texts takes the other pages' facts (IDX001's page kinds) from the lint
    of the new ones: the two judge the same wiki, so a page another hand edits between them is
    no difference of the write's, and no page but the written ones is looked at twice."""
    from wikiengine.lint import runner
    from wikiengine.model.lanes import Lane
    from wikiengine.step import writers as lw

    index = wiki / "wiki/index.md"
    listed = "## Experiments (1)\n\n- [v046 splash blocks](" + V046[len("wiki/"):] + ")\n\n"
    index.write_text(index.read_text().replace("## Hypotheses (2)", "## Hypotheses (5)")
                     .replace("## Rules", listed + "## Rules"))
    git(wiki, "commit", "-qam", "an index whose hypothesis count was already wrong")
    assert [code for code, _p, _s in identities(wiki)] == ["IDX001"]
    other = wiki / "wiki/hypotheses/fsdp-collective-overlap.md"
    lints = []
    real_lint = runner.lint

    def spy(root, paths, config=None, **kw):
        if lints:  # between the two lints another hand makes a hypothesis page a concept
            other.write_text(other.read_text().replace("---\n", "---\ntype: concept\n", 1))
        lints.append((kw.get("facts"), real_lint(root, paths, config, **kw)))
        return lints[-1][1]

    monkeypatch.setattr(runner, "lint", spy)
    lw.new_experiment(wiki, Lane("gemma4_autoresearch_optimization", "tpu"), slug="splash-qb", variant="2B/v5p-16",
                      proposal_path=proposal(wiki), track=1)
    (_none, after), (facts, old) = lints
    said = [[f.message for f in result.findings if f.code == "IDX001"] for result in (after, old)]
    assert said[0] == said[1] == ["'## Hypotheses (5)' says 5, but the wiki has 2 hypothesis pages and the section lists 2"]
    kinds = facts[("IDX001:kind", "")]
    assert kinds["wiki/hypotheses/fsdp-collective-overlap.md"] == "hypothesis"
    assert "wiki/index.md" not in kinds and len(after.page_facts[("IDX001:kind", "")]) == len(kinds) + 2
    assert old.stats["page_facts_carried"] == len(kinds)  # the written files (the index, the new stub) asked again
    assert "type: concept" in other.read_text() and git(wiki, "log", "-1", "--format=%s").startswith("exp(")


def test_a_write_re_lints_its_pages_not_its_journal(wiki, monkeypatch):
    """The re-lint's targets are the markdown pages the write made (`wiki lint` skips other files
    too); the journal it appended to is committed with them."""
    from wikiengine.lint import runner
    from wikiengine.model.lanes import Lane
    from wikiengine.step import writers as lw

    targets = []
    real_lint = runner.lint
    monkeypatch.setattr(runner, "lint", lambda root, paths, config=None, **kw: targets.append(paths) or real_lint(
        root, paths, config, **kw))
    lw.new_experiment(wiki, Lane("gemma4_autoresearch_optimization", "tpu"), slug="splash-qb", variant="2B/v5p-16",
                      proposal_path=proposal(wiki), track=1)
    committed = git(wiki, "show", "--name-only", "--format=", "HEAD").split()
    assert any(rel.endswith("/.journal.jsonl") for rel in committed)
    assert targets and all(rel.endswith(".md") for paths in targets for rel in paths), targets


def test_a_write_asks_git_whether_it_ignores_no_page_the_write_commits(wiki, monkeypatch):
    """The index links the new stub, which git does not track yet: the link rules ask `git check-ignore`
    of untracked link targets (LNK002), but the writer commits the stub with the lint (a path git ignored
    would fail that commit), so nothing is asked of it. An untracked file the write does not
    commit is still asked about, and an ignored one is still a finding (LNK002)."""
    from wikiengine.lint import gitview
    from wikiengine.model.lanes import Lane
    from wikiengine.step import writers as lw

    index = wiki / "wiki/index.md"
    index.write_text(index.read_text() + "\n## Experiments (0)\n")  # where the writer lists its stub
    git(wiki, "commit", "-qam", "an index that lists experiments")
    asked = []
    real = gitview.ignored_paths
    monkeypatch.setattr(gitview, "ignored_paths", lambda root, rels: asked.append(list(rels)) or real(root, rels))
    result = lw.new_experiment(wiki, Lane("gemma4_autoresearch_optimization", "tpu"), slug="splash-qb",
                               variant="2B/v5p-16", proposal_path=proposal(wiki), track=1)
    assert Path(result["page"]).name in index.read_text()  # a link to a page git did not track at the lint
    assert asked == [] and clean(wiki) and result["page"] in git(wiki, "show", "--name-only", "--format=", "HEAD")
    (wiki / ".gitignore").write_text("wiki/scratch.md\n")
    (wiki / "wiki/scratch.md").write_text("# scratch\n")
    index.write_text(index.read_text() + "\nSee [scratch](scratch.md).\n")
    found = lint(wiki, ["wiki/index.md"], base=None, use_cache=False).findings
    assert asked == [["wiki/scratch.md"]] and [f.code for f in found if "scratch" in f.message] == ["LNK002"]


def test_a_stub_git_ignores_is_refused_and_leaves_nothing_written_or_staged(wiki):
    """The re-lint takes the writer's own pages as tracked (no git check-ignore of them), so a
    stub a .gitignore pattern covers is found by the commit itself: `git add` refuses it (having
    staged the writer's other files). The write is refused with one line, the old texts back,
    nothing staged, no redo record left for the next writer to replay."""
    (wiki / ".gitignore").write_text("*-scratch-*.md\n")
    git(wiki, "add", ".gitignore")
    git(wiki, "commit", "-qm", "ignore scratch pages")
    head = git(wiki, "rev-parse", "HEAD")
    done = wiki_cmd(wiki, "exp", "new", "gemma4", "tpu", "--slug", "splash-scratch-qb", "--variant", "2B/v5p-16",
                    "--proposal", str(proposal(wiki)), "--track", "1", check=False)
    assert done.returncode != 0 and "git ignores" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki)
    assert git(wiki, "diff", "--cached", "--name-only") == ""
    assert not list((wiki / ".git").rglob("*.redo*")) and new(wiki, "splash-qb")["vid"] == "v048"


def test_adopt_only_the_files_with_findings_are_linted_again_and_no_written_file_s_facts_carried(tmp_path, monkeypatch):
    """Of the files a write replaced, the old texts are all put in place but only those with a
    finding after the write are linted again; the facts handed over leave out every written file,
    the files walked those the write created (and none are handed over when it deleted a page)."""
    from wikiengine.lint.finding import Finding
    from wikiengine.lint.runner import LintResult
    from wikiengine.step import txn

    (tmp_path / "wiki").mkdir()
    for name in ("log.md", "model.md", "page.md"):
        (tmp_path / "wiki" / name).write_text("new\n")
    old = {"wiki/log.md": "old\n", "wiki/model.md": "old\n", "wiki/page.md": None}
    walked = (["wiki/log.md", "wiki/model.md", "wiki/other.md", "wiki/page.md"], {"wiki"})
    after = LintResult(findings=[Finding("wiki/log.md", 3, 1, "LOG002", "an entry below an older one")], files_checked=3,
                       page_facts={("IDX001:kind", ""): {"wiki/model.md": "model", "wiki/other.md": "page"}}, walked=walked)
    asked = []

    def lint_paths(root, paths, codes=None, facts=None, walked=None):
        asked.append((paths, codes, facts, walked, (tmp_path / "wiki/model.md").read_text()))
        return LintResult(findings=[Finding("wiki/log.md", 9, 1, "LOG002", "an entry below an older one")], files_checked=1)

    monkeypatch.setattr(txn, "lint_paths", lint_paths)
    assert txn.introduced(tmp_path, sorted(old), old, after) == []
    assert asked == [(["wiki/log.md"], {"LOG002"}, {("IDX001:kind", ""): {"wiki/other.md": "page"}},
                      (["wiki/log.md", "wiki/model.md", "wiki/other.md"], {"wiki"}), "old\n")]
    asked.clear()
    (tmp_path / "wiki/other.md").write_text("new\n")  # a page the write deletes is walked for again
    old["wiki/gone.md"] = "was here\n"
    assert txn.introduced(tmp_path, sorted(old), old, after) == [] and asked[0][3] is None


def test_adopt_the_old_texts_are_put_in_place_and_the_written_files_back(tmp_path):
    """While the old texts are linted, the written files are set aside, not rewritten: the files
    committed are the very ones the write synced (the same inodes), and a created file is absent."""
    from wikiengine.step.txn import old_texts_in_place

    (tmp_path / "wiki").mkdir()
    page, created, removed = tmp_path / "wiki/page.md", tmp_path / "wiki/new.md", tmp_path / "wiki/gone.md"
    page.write_text("new\n")
    created.write_text("created\n")
    inodes = {path: path.stat().st_ino for path in (page, created)}
    old = {"wiki/page.md": "old\n", "wiki/new.md": None, "wiki/gone.md": "was here\n"}
    with old_texts_in_place(tmp_path, sorted(old), old):
        assert page.read_text() == "old\n" and not created.exists() and removed.read_text() == "was here\n"
        assert not any(p.name.endswith(".md") for p in (tmp_path / "wiki").iterdir() if p.name.startswith("."))
    assert page.read_text() == "new\n" and created.read_text() == "created\n" and not removed.exists()
    assert {path: path.stat().st_ino for path in (page, created)} == inodes
    assert sorted(p.name for p in (tmp_path / "wiki").iterdir()) == ["new.md", "page.md"]


def test_adopt_a_write_that_adds_a_finding_is_still_refused(wiki):
    path = wiki / LANE_LOG
    stop = "## [2026-06-12] stop | /stop-experiment, lane stopped\n\n**Op**: stop\n\n"
    path.write_text(path.read_text().replace("## [2026-06-12] run-experiment", stop + "## [2026-06-12] run-experiment"))
    git(wiki, "commit", "-qam", "the lane stopped")
    before, head = identities(wiki), git(wiki, "rev-parse", "HEAD")
    refused = wiki_cmd(wiki, "log", "add", "loop-iteration", "v048-more on 2B/v5p-16: supported", "gemma4", "tpu",
                       check=False)
    assert refused.returncode == 2 and "RUN004" in refused.stderr and "refused" in refused.stderr
    assert "RUN001" not in refused.stderr  # the stop's own finding was there before the write
    assert git(wiki, "rev-parse", "HEAD") == head and clean(wiki) and identities(wiki) == before


def test_adopt_an_index_section_listing_one_page_twice(wiki):
    index = wiki / "wiki/index.md"
    link = "- [v046 splash blocks](" + V046[len("wiki/"):] + ")\n"
    section = "## Experiments (1)\n\n" + link + link + "\n"
    index.write_text(index.read_text().replace("## Rules", section + "## Rules"))
    git(wiki, "commit", "-qam", "an index that lists one page twice")
    assert lint_codes(wiki) == []
    vid = new(wiki, "splash-qb")["vid"]
    text = index.read_text()
    assert "## Experiments (2)\n" in text and f"[{vid} splash-qb](" in text
    assert text.index(f"[{vid} splash-qb](") < text.index("## Rules")
    assert lint_codes(wiki) == [] and clean(wiki)


def test_adopt_a_baselined_finding_the_filing_fixes_is_pruned_in_its_commit(wiki):
    model = wiki / MODEL_PAGE
    model.write_text(model.read_text().replace("updated: 2026-06-11", "updated: 2026-06-01", 1))
    wiki_cmd(wiki, "lint", "--write-baseline", check=False)
    accepted = json.loads((wiki / ".wiki-lint-baseline.json").read_text())["entries"]
    assert [(e["path"], e["code"]) for e in accepted] == [(MODEL_PAGE, "MOD004")]
    git(wiki, "add", "-A")
    git(wiki, "commit", "-qm", "adopt the linter: accept the old findings")
    vid = new(wiki, "splash-qb")["vid"]
    _file(wiki, vid)
    assert json.loads(git(wiki, "show", "HEAD:.wiki-lint-baseline.json"))["entries"] == []
    assert ".wiki-lint-baseline.json" in git(wiki, "show", "--name-only", "--format=", "HEAD").split()
    assert clean(wiki) and lint_codes(wiki) == []
