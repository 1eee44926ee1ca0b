"""`wiki kernel` (issue 16): the family layout, the writers, the verifier, the verdict caps,
the stop rule, and `wiki demo kernel` end to end."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from wikiengine._cli.main import main
from wikiengine.core.errors import WikiError
from wikiengine.demos.kernel import CLASS_PAGE, FAMILY, OP_POINT, REFERENCE, candidate_source, scaffold
from wikiengine.lint.runner import lint
from wikiengine.model import receipt as kernel_receipt
from wikiengine.model.kernels import KernelFamily, derive_slug, operation_name
from wikiengine.step.kernel.verdicts import KernelEvidence, LeverFact, StopFacts, cap_kernel_verdict, stop_rule
from wikiengine.step.kernel.verify import verify

FAM = KernelFamily(FAMILY)


def kernel(root: Path, capsys, *args: str) -> tuple[int, dict | str]:
    capsys.readouterr()
    status = main(["kernel", *args, "--root", str(root), "--json"])
    out, err = capsys.readouterr()
    return status, (json.loads(out) if status == 0 else err.strip())


def start_family(root: Path, capsys) -> tuple[Path, Path, dict]:
    """A family started in ``root`` with one committed stub (no candidate yet): the root, the
    authoring folder and what ``stub`` answered."""
    authoring = scaffold(root)
    status, _ = kernel(root, capsys, "start", "bench_layernorm.py", "--reference", str(authoring / "reference.py"),
                       "--op-point", OP_POINT, "--class-page", CLASS_PAGE, "--yes")
    assert status == 0
    status, stub = kernel(root, capsys, "stub", FAMILY, "--slug", "fused-layernorm", "--proposal",
                          str(authoring / "single-pass-fusion.md"), "--op-point", OP_POINT, "--lever",
                          "single-pass-fusion", "--intervention-class", "fusion", "--category", "memory-bound",
                          "--plan", "the native fused pass")
    assert status == 0, stub
    return root, authoring, stub


@pytest.fixture
def family(tmp_path, capsys):
    """A started family with one committed stub (no candidate yet)."""
    return start_family(tmp_path, capsys)


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


# --- layout and slug -------------------------------------------------------------------------


def test_two_paths_of_one_kernel_land_on_one_slug(tmp_path):
    assert operation_name("kernels/bench_flash_attention.py") == "flash-attention"
    assert operation_name("flash-attention-kernel") == "flash-attention"
    assert derive_slug(tmp_path, "bench_flash_attention.py") == derive_slug(tmp_path, "flash_attention_test") == "flash-attention"
    (tmp_path / "wiki/kernels").mkdir(parents=True)
    (tmp_path / "wiki/kernels/flash_attention.md").write_text("# fa\n")
    assert derive_slug(tmp_path, "kernels/bench_flash_attention.py") == "flash_attention"
    with pytest.raises(WikiError):
        derive_slug(tmp_path, "bench_test.py")


# --- start -----------------------------------------------------------------------------------


def test_start_bootstraps_the_family_and_records_the_run_target(family):
    root, _authoring, stub = family
    assert git(root, "rev-parse", "--verify", "refs/heads/kernel/layernorm")
    log = (root / FAM.log).read_text()
    assert "**Run target**: local chip 0" in log and "**Parallelism**: 1" in log
    assert stub["variant"].startswith(f"{OP_POINT}/cpu-")
    assert lint(root, base=None, jobs=1, use_cache=False).findings == []


def test_start_deletes_a_leftover_stop_authorized(family, capsys):
    root, _authoring, _stub = family
    status, err = kernel(root, capsys, "start", FAMILY, "--chip", "1")
    assert status == 2 and "the run target is fixed for the whole run" in err
    assert kernel(root, capsys, "close", FAMILY, "--pause")[0] == 0
    leftover = root / FAM.dir / ".stop-authorized"
    leftover.write_text("ALL-CLEAR layernorm/pallas session 0 wiki=0 code=0\n")
    status, result = kernel(root, capsys, "start", FAMILY, "--chip", "1")
    assert status == 0 and result["stale_stop_authorized"] and not leftover.exists()
    assert result["session"] == 2 and result["run_target"] == "local chip 1"


def test_a_pod_target_needs_gs_artifacts_before_any_cluster_call(family, capsys):
    """Refused from the arguments alone (no kubeconfig here); the pod itself: tests/test_kernel_pod.py."""
    root, _authoring, _stub = family
    assert kernel(root, capsys, "close", FAMILY, "--pause")[0] == 0
    status, err = kernel(root, capsys, "start", FAMILY, "--pod", "kx-1", "--accelerator", "tpu-v6e-slice",
                         "--topology", "2x2", "--image", "img", "--artifacts", "/tmp/out")
    assert status == 2 and "gs://" in err
    status, err = kernel(root, capsys, "start", FAMILY, "--pod", "--accelerator", "tpu-v6e-slice",
                         "--topology", "2x2", "--artifacts", "gs://b/k")
    assert status == 2 and "--image" in err
    status, err = kernel(root, capsys, "start", FAMILY, "--pod", "Bad_Name", "--accelerator", "tpu-v6e-slice",
                         "--topology", "2x2", "--image", "img", "--artifacts", "gs://b/k", "--hours", "0")
    assert status == 2 and "--hours" in err


# --- stub ------------------------------------------------------------------------------------


def test_stub_takes_the_hardware_token_from_the_device_query(family, capsys):
    root, authoring, _stub = family
    page = (root / FAM.family_page).read_text()
    (root / FAM.family_page).write_text(page.replace("| cpu-", "| v5p-").replace("- cpu-", "- v5p-"))
    git(root, "commit", "-qam", "family page says v5p")
    status, _ = kernel(root, capsys, "file", FAMILY, "--verdict", "invalid")
    assert status == 0
    status, err = kernel(root, capsys, "stub", FAMILY, "--slug", "other", "--proposal", str(authoring / "row-chunking.md"),
                         "--op-point", OP_POINT, "--lever", "row-chunking", "--intervention-class", "tiling",
                         "--category", "memory-bound", "--plan", "x")
    assert status == 2 and "the pinned chip reports 'cpu-" in err and "no row" in err


def test_stub_refuses_a_second_open_stub_and_optimization_without_a_profile(family, capsys):
    root, authoring, _stub = family
    args = ["stub", FAMILY, "--slug", "chunks", "--proposal", str(authoring / "row-chunking.md"), "--op-point",
            OP_POINT, "--lever", "row-chunking", "--intervention-class", "tiling", "--category", "memory-bound",
            "--plan", "x"]
    status, err = kernel(root, capsys, *args)
    assert status == 2 and "v001 is still open" in err
    status, err = kernel(root, capsys, *args, "--activity", "optimization")
    assert status == 2 and "needs --profile" in err
    status, err = kernel(root, capsys, *[("c-chunks" if arg == "chunks" else arg) for arg in args])
    assert status == 2 and "is the retry v001c" in err  # its page's name would read as another id


def test_the_family_watcher_flags_an_open_stub_idle_past_its_hours_and_no_filed_page(family, capsys):
    """The kernel watcher's stale stubs: an open stub committed longer ago than ``stale_hours``
    is one; the first commit times come from one walk kept along HEAD (step/audit.py)."""
    from wikiengine.step.kernel.audit import run_family_audit

    root, _authoring, stub = family
    committed = float(git(root, "log", "-1", "--format=%ct", "--", stub["page"]))
    idle = [f for f in run_family_audit(root, FAM, now=committed + 30 * 3600).findings if f.check == "stale-stub"]
    assert [f.path for f in idle] == [stub["page"]] and "in progress for 30 h" in idle[0].message
    assert not [f for f in run_family_audit(root, FAM, now=committed + 3600).findings if f.check == "stale-stub"]
    status, _ = kernel(root, capsys, "file", FAMILY, "--verdict", "invalid")
    assert status == 0
    filed = run_family_audit(root, FAM, now=committed + 30 * 3600).findings
    assert not [f for f in filed if f.check == "stale-stub"]


# --- cand ------------------------------------------------------------------------------------


def test_cand_refuses_another_mechanism_and_a_skipped_number(family, capsys):
    root, authoring, _stub = family
    status, err = kernel(root, capsys, "cand", FAMILY, "1", "--note", "x", "--source", str(authoring / "fused.py"),
                         "--mechanism", "tile the rows in blocks")
    assert status == 2 and "a new mechanism is `v002`" in err
    status, err = kernel(root, capsys, "cand", FAMILY, "2", "--note", "x", "--source", str(authoring / "fused.py"))
    assert status == 2 and "is cand1, not cand2" in err
    status, err = kernel(root, capsys, "file", FAMILY, "--verdict", "supported-ish")
    assert status == 2 and "is not one of supported" in err


def test_cand_never_resets_a_colliding_branch(family, capsys):
    root, authoring, _stub = family
    git(root, "branch", "kernel/layernorm-v001", "HEAD~1")
    foreign = git(root, "rev-parse", "kernel/layernorm-v001")
    status, result = kernel(root, capsys, "cand", FAMILY, "1", "--note", "native fused pass", "--source",
                            str(authoring / "fused.py"))
    assert status == 0, result
    assert result["branch"] == "kernel/layernorm-v001-b" and result["branch_suffixed"]
    assert git(root, "rev-parse", "kernel/layernorm-v001") == foreign
    assert git(root, "merge-base", "--is-ancestor", "kernel/layernorm", "kernel/layernorm-v001-b") == ""
    subject = git(root, "log", "-1", "--format=%s", "kernel/layernorm-v001-b")
    assert subject.startswith("cand1(layernorm v001): native fused pass — p50 ") and "parity pass" in subject
    journal = (root / FAM.journal).read_text()
    assert '"branch":"kernel/layernorm-v001-b"' in journal and '"wanted":"kernel/layernorm-v001"' in journal
    # no receipt: supported is capped, and the ledger matches the branch
    status, filed = kernel(root, capsys, "file", FAMILY, "--verdict", "supported")
    assert status == 0 and filed["verdict"] == "inconclusive"
    assert "no valid receipt (no verification_receipt)" in filed["capped"][0]
    assert lint(root, base=None, jobs=1, use_cache=False).findings == []


def test_dry_run_writes_nothing(family, capsys):
    root, authoring, _stub = family
    head = git(root, "rev-parse", "HEAD")
    status, result = kernel(root, capsys, "cand", FAMILY, "1", "--note", "x", "--source", str(authoring / "fused.py"),
                            "--dry-run")
    assert status == 0 and result["dry_run"] and git(root, "rev-parse", "HEAD") == head
    assert not git(root, "branch", "--list", "kernel/layernorm-v001")


# --- the verifier ----------------------------------------------------------------------------


def _write(tmp_path: Path, key: str) -> Path:
    path = tmp_path / f"{key}.py"
    path.write_text(candidate_source(key))
    return path


@pytest.mark.parametrize("key,verdict,why", [
    ("fused", "PASS", None),
    ("unbiased", "FAIL", "parity against the float64 oracle failed"),
    ("gpu-only", "FAIL", "firing audit: the candidate's op kcand::layernorm_fastpath never ran: silent no-op"),
])
def test_verifier_parity_and_firing(tmp_path, key, verdict, why):
    (tmp_path / "reference.py").write_text(REFERENCE)
    result = verify(tmp_path / "reference.py", _write(tmp_path, key), OP_POINT, mode="quick", atol=1e-4, rtol=1e-4)
    assert result["verdict"] == verdict
    assert (why in result["reasons"]) if why else result["reasons"] == []
    assert result["timing"]["interleaved"] and result["timing"]["reps"] == 15


def test_verifier_refuses_a_degenerate_probe(tmp_path):
    (tmp_path / "reference.py").write_text(REFERENCE.replace("torch.randn(rows, cols, generator=generator) * 3.0 + 0.5",
                                                             "torch.ones(rows, cols)"))
    result = verify(tmp_path / "reference.py", _write(tmp_path, "fused"), OP_POINT, mode="quick", atol=1e-4, rtol=1e-4)
    assert result["verdict"] == "FAIL" and "input 0 is constant: a degenerate probe" in result["reasons"]


def test_the_verifier_process_measures_custom_ops_without_importing_dynamo(tmp_path):
    """torch imports ``torch._dynamo`` at a custom op's first call and a dispatch mode's first
    op (about 1.4 s of CPU per verifier process, as long again as torch); nothing there compiles.
    The process imports torch with the cycle collector paused and leaves its objects out of later
    collections (frozen: wikiengine/core/collector.py)."""
    from wikiengine.step.kernel import verify as kernel_verify

    (tmp_path / "reference.py").write_text(REFERENCE)
    _write(tmp_path, "fused")
    # asked by an exit hook: the verifier ends without the interpreter's teardown, its hooks run
    script = ("import atexit, gc, runpy, sys\nsys.argv = sys.argv[1:]\n"
              "atexit.register(lambda: print('\\ndynamo loaded:', 'torch._dynamo' in sys.modules, gc.get_freeze_count()))\n"
              "runpy.run_path(sys.argv[0], run_name='__main__')\n")
    run = subprocess.run([sys.executable, "-c", script, kernel_verify.__file__, "--reference", "reference.py",
                          "--candidate", "fused.py", "--op-point", OP_POINT, "--mode", "quick"],
                         cwd=tmp_path, capture_output=True, text=True, timeout=300)
    measured, loaded = run.stdout.rsplit("\n", 2)[:2]
    result = json.loads(measured)
    assert result["verdict"] == "PASS" and result["firing"]["audit"] == "confirmed", run.stderr
    assert loaded.startswith("dynamo loaded: False ") and int(loaded.split()[-1]) > 100_000


def test_the_dynamo_guard_is_kept_once_dynamo_is_loaded(monkeypatch):
    import torch._dynamo

    from wikiengine.step.kernel.verify import _dynamo_guard_when_loaded

    guarded_fns = []

    def disable(fn, **kwargs):
        guarded_fns.append(fn)
        return lambda *args: ("guarded", fn(*args))

    monkeypatch.setattr(torch._dynamo, "disable", disable)
    plus_one = _dynamo_guard_when_loaded(lambda x: x + 1)
    with monkeypatch.context() as unloaded:
        unloaded.delitem(sys.modules, "torch._dynamo")
        assert plus_one(1) == 2 and guarded_fns == []
    assert plus_one(1) == ("guarded", 2) and plus_one(2) == ("guarded", 3) and len(guarded_fns) == 1


# --- the pure decisions ----------------------------------------------------------------------


def _receipt(verdict="PASS", speedup=2.0, mode="full") -> dict:
    return {"verdict": verdict, "mode": mode, "timing": {"speedup": speedup}, "reasons": [] if verdict == "PASS" else ["no-op"]}


@pytest.mark.parametrize("receipt,bar,rows,commits,expected", [
    (_receipt(), 1.05, 2, 2, "supported"),
    (_receipt("FAIL"), 1.05, 2, 2, "inconclusive"),
    (_receipt(speedup=0.33), 1.05, 2, 2, "refuted"),
    (_receipt(speedup=1.0), 1.05, 2, 2, "refuted"),
    (_receipt(speedup=1.03), 1.05, 2, 2, "inconclusive"),
    (_receipt(mode="quick"), 1.05, 2, 2, "inconclusive"),
    (_receipt(), None, 2, 2, "inconclusive"),
    (_receipt(), 1.05, 5, 0, "inconclusive"),
    (_receipt(), 1.05, 5, None, "inconclusive"),
    (None, 1.05, 2, 2, "inconclusive"),
])
def test_cap_kernel_verdict(receipt, bar, rows, commits, expected):
    verdict, reasons = cap_kernel_verdict(KernelEvidence("supported", receipt, None if receipt else "none cited", bar,
                                                         rows, commits))
    assert verdict == expected and (reasons == []) == (expected == "supported")


def test_the_stop_rule_names_every_unmet_condition():
    facts = StopFacts(open_leads=["row-chunking"], latest_page_leads=[],
                      levers=[LeverFact("a", "v001", "supported", "r.json", None), LeverFact("b", None, None, None, None)],
                      retrospectives=[], experiments_since_last_retro=2, frontier="v001",
                      frontier_receipt={"verdict": "PASS", "mode": "full"})
    reasons = stop_rule(facts)
    assert len(reasons) == 3 and "row-chunking" in reasons[0] and reasons[1].endswith(": b")
    earned = StopFacts([], [], [LeverFact("a", "v001", "supported", "r.json", None), LeverFact("b", None, None, None, "needs a GPU")],
                       [("r1.md", "v001")], 1, "v001", {"verdict": "PASS", "mode": "full"})
    assert stop_rule(earned) == []
    moved = StopFacts([], [], [], [("r1.md", "v001")], 1, "v002", {"verdict": "PASS", "mode": "full"})
    assert "the frontier moved since r1.md (v001 -> v002)" in stop_rule(moved)[0]
    idle = StopFacts([], [], [], [("r1.md", "v001")], 0, "v001", {"verdict": "PASS", "mode": "full"})
    assert "no experiment was filed since r1.md" in stop_rule(idle)[0]


def test_every_verb_has_help_json_and_dry_run(capsys):
    for verb in ("start", "stub", "cand", "verify", "file", "rule-out", "watch", "status", "close", "pod down"):
        with pytest.raises(SystemExit) as done:
            main(["kernel", *verb.split(), "--help"])
        assert done.value.code == 0
        out = capsys.readouterr().out
        assert "--json" in out and "--dry-run" in out


# --- the demo --------------------------------------------------------------------------------


@pytest.mark.slow
def test_wiki_demo_kernel_runs_the_whole_fast_path_and_lints_clean(tmp_path):
    root = tmp_path / "demo"
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parents[1]))
    done = subprocess.run([sys.executable, "-m", "wikiengine", "demo", "kernel", str(root)], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-2000:]
    out = done.stdout
    assert "lint     clean" in out and "watch    clean: ALL-CLEAR layernorm/pallas session 2" in out
    assert "cand1(layernorm v001): var_mean in one call" in out and "parity fail" in out
    assert "supported capped at inconclusive: the receipt says FAIL: firing audit" in out
    assert "supported capped at refuted: the speedup" in out
    assert "levers of the class page neither tried with a receipt nor ruled out on mechanism: row-chunking" in out
    assert "step     verified v001 cand2: PASS" in out and "step     verified v002 cand1: FAIL" in out
    assert "step     owed: verdict (strongest allowed: refuted)" in out
    assert "v001 was filed supported and neither the next stub nor the stop chain followed" in out
    assert "status: stopped" in (root / "memory/STATE.md").read_text()
    verdicts = {}
    for page in sorted((root / FAM.dir).glob("*-v*.md")):
        text = page.read_text()
        verdicts[page.name[11:15]] = next(ln.split(": ")[1] for ln in text.splitlines() if ln.startswith("verdict: "))
    assert verdicts == {"v001": "supported", "v002": "inconclusive", "v003": "refuted"}
    for receipt in (root / FAM.receipts_dir).glob("*.json"):
        assert kernel_receipt.validate(receipt.read_text())[1] is None
    family_page = (root / FAM.family_page).read_text()
    assert "[v001-fused-layernorm](../kernel_experiments/layernorm/pallas/" in family_page
    log = (root / FAM.log).read_text()
    authorized = (root / FAM.dir / ".stop-authorized").read_text().splitlines()[0]
    assert f"**Final audit**: {authorized}" in log and log.index("] stop |") < log.index("] start |")
    assert len(list((root / FAM.dir).glob("*-retrospective*.md"))) == 2
    assert git(root, "branch", "--list", "kernel/*", "--format=%(refname:short)").split() == [
        "kernel/layernorm", "kernel/layernorm-v001", "kernel/layernorm-v002", "kernel/layernorm-v003"]


def test_k9_reports_the_stop_at_first_win_stall_until_the_next_stub(family, capsys):
    root, authoring, _stub = family
    status, state = kernel(root, capsys, "status", FAMILY)
    assert status == 0 and state["k9"] == {"state": "no-verdict-yet"} and state["open"] == ["v001"]
    assert kernel(root, capsys, "file", FAMILY, "--verdict", "invalid")[0] == 0
    status, state = kernel(root, capsys, "status", FAMILY)
    assert state["k9"]["state"] == "stall" and "stop-at-first-win stall" in state["k9"]["message"]
    assert any("single-pass-fusion" in r or "row-chunking" in r for r in state["stop_rule"])
    status, _ = kernel(root, capsys, "stub", FAMILY, "--slug", "chunks", "--proposal", str(authoring / "row-chunking.md"),
                       "--op-point", OP_POINT, "--lever", "row-chunking", "--intervention-class", "tiling",
                       "--category", "memory-bound", "--plan", "blocks of four rows")
    assert status == 0
    assert kernel(root, capsys, "status", FAMILY)[1]["k9"] == {"state": "next-stub", "after": "v001", "next": "v002"}


def test_close_refused_writes_nothing_and_exits_3(family, capsys):
    root, _authoring, _stub = family
    head = git(root, "rev-parse", "HEAD")
    status, err = kernel(root, capsys, "close", FAMILY)
    assert status == 3 and err.startswith("error: close refused:") and "open stubs: v001" in err
    assert git(root, "rev-parse", "HEAD") == head


def test_a_lever_ruled_out_on_mechanism_counts_as_covered(family, capsys):
    root, _authoring, _stub = family
    status, err = kernel(root, capsys, "rule-out", FAMILY, "dispatch-fastpath", "--reason", "TBD")
    assert status == 2 and "on mechanism" in err
    before = kernel(root, capsys, "status", FAMILY)[1]["stop_rule"]
    assert any("dispatch-fastpath" in r for r in before)
    status, result = kernel(root, capsys, "rule-out", FAMILY, "dispatch-fastpath", "--reason",
                            "the chip has one execution path, so there is no device to dispatch to")
    assert status == 0 and result["commit"]
    assert "- **dispatch-fastpath**: the chip has one execution path" in (root / FAM.family_page).read_text()
    after = kernel(root, capsys, "status", FAMILY)[1]["stop_rule"]
    assert not any("dispatch-fastpath" in r for r in after) and any("row-chunking" in r for r in after)
    assert lint(root, base=None, jobs=1, use_cache=False).findings == []


def test_a_supported_optimization_opens_the_model_lane_validation_stub(tmp_path, capsys, monkeypatch):
    import shutil

    from wikiengine.demos.kernel import PROPOSALS

    repo = Path(__file__).resolve().parents[1]
    root = tmp_path / "repo"
    shutil.copytree(repo / "wiki", root / "wiki")
    shutil.copy(repo / "pyproject.toml", root / "pyproject.toml")
    monkeypatch.setenv("USER", "alice")
    for key in ("AUTHOR", "COMMITTER"):
        monkeypatch.setenv(f"GIT_{key}_NAME", "t")
        monkeypatch.setenv(f"GIT_{key}_EMAIL", "t@example.invalid")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    (tmp_path / "reference.py").write_text(REFERENCE)
    fused = _write(tmp_path, "fused")
    hyp, mech, signal, falsify = PROPOSALS["single-pass-fusion"]
    (tmp_path / "p.md").write_text(f"**Hypothesis**: {hyp}.\n\n**Mechanism**: {mech}.\n\n**Predicted signal**: {signal}."
                                   f"\n\n**Falsification criterion**: {falsify}.\n")
    profile = "wiki/experiments/gemma4_autoresearch_optimization/tpu/2026-06-02-v042-splash-attn.md"
    model_page = (root / "wiki/models/gemma4-tpu.md").read_text()
    assert kernel(root, capsys, "start", "layernorm", "--reference", str(tmp_path / "reference.py"), "--op-point",
                  OP_POINT)[0] == 0
    status, stub = kernel(root, capsys, "stub", "layernorm", "--slug", "fused", "--proposal", str(tmp_path / "p.md"),
                          "--op-point", OP_POINT, "--lever", "single-pass-fusion", "--intervention-class", "fusion",
                          "--category", "memory-bound", "--plan", "native pass", "--activity", "optimization",
                          "--profile", profile)
    assert status == 0, stub
    assert kernel(root, capsys, "cand", "layernorm", "1", "--note", "native pass", "--source", str(fused))[0] == 0
    status, receipt = kernel(root, capsys, "verify", "layernorm")
    assert status == 0 and receipt["verdict"] == "PASS", receipt
    status, filed = kernel(root, capsys, "file", "layernorm", "--verdict", "supported")
    assert status == 0 and filed["verdict"] == "supported" and filed["current_best_moved"]
    stub_page = filed["validation_stub"]["page"]
    assert stub_page.startswith("wiki/experiments/gemma4_autoresearch_optimization/tpu/experiments/")
    assert "validate-layernorm-v001" in stub_page and "status: in_progress" in (root / stub_page).read_text()
    assert (root / "wiki/models/gemma4-tpu.md").read_text() == model_page
    assert filed["integration_advanced"] is True
    assert lint(root, base=None, jobs=1, use_cache=False).findings == []


def test_one_measurement_per_chip(tmp_path):
    from wikiengine.step.kernel.chip import chip_lock, compile_slot

    git(tmp_path, "init", "-q")
    with chip_lock(tmp_path, 0):
        with pytest.raises(WikiError, match="local chip 0 is held"):
            with chip_lock(tmp_path, 0, timeout=0.1):
                pass
        with chip_lock(tmp_path, 1, timeout=0.1):
            pass
    with compile_slot(tmp_path, slots=1) as first:
        assert first == 0
        with pytest.raises(WikiError, match="compile slots"):
            with compile_slot(tmp_path, slots=1, timeout=0.3):
                pass


def test_the_family_watcher_audits_since_its_cursor_and_names_the_stall(family, capsys):
    root, _authoring, _stub = family
    capsys.readouterr()
    assert main(["kernel", "watch", FAMILY, "--once", "--root", str(root), "--json"]) == 0  # full: news, no finding
    first = json.loads(capsys.readouterr().out)
    assert first["findings"] == [] and first["full"] and "no .audit-cursor" in first["notes"][0]
    cursor = (root / FAM.dir / ".audit-cursor").read_text()
    assert cursor.startswith("wiki=") and "\ncode=" in cursor
    assert main(["kernel", "watch", FAMILY, "--once", "--root", str(root)]) == 0
    assert "ALL-CLEAR layernorm/pallas session 1" in capsys.readouterr().out
    assert kernel(root, capsys, "file", FAMILY, "--verdict", "invalid")[0] == 0
    assert main(["kernel", "watch", FAMILY, "--once", "--root", str(root)]) == 0  # within the grace: no stall yet
    capsys.readouterr()
    assert main(["kernel", "watch", FAMILY, "--once", "--root", str(root), "--json", "--stall-minutes", "0"]) == 1
    found = json.loads(capsys.readouterr().out)["findings"]
    assert [f["check"] for f in found] == ["stall"] and "stop-at-first-win stall" in found[0]["message"]


def test_a_candidate_measured_from_a_directory_of_stray_modules_is_not_shadowed(family, capsys, monkeypatch):
    """The verifier child does not put the caller's working directory on sys.path (-P): a
    ``statistics.py`` there would otherwise replace the module it times with."""
    root, authoring, _stub = family
    stray = root.parent / "stray"
    stray.mkdir()
    (stray / "statistics.py").write_text("raise ImportError('a stray statistics.py was imported')\n")
    monkeypatch.chdir(stray)
    status, out = kernel(root, capsys, "cand", FAMILY, "1", "--note", "fused pass", "--source",
                         str(authoring / "fused.py"))
    assert status == 0, out
    assert "stray" not in json.dumps(out)


def test_an_unpinned_reference_hash_is_refused_not_skipped(family, capsys):
    root, authoring, _stub = family
    program = root / FAM.program
    text = program.read_text()
    pinned = next(line for line in text.splitlines() if line.strip().startswith("reference_sha256:"))
    program.write_text(text.replace(pinned, "reference_sha256: 0"))  # a hand edit; YAML reads it as the integer 0
    git(root, "commit", "-qam", "hand edit of the binding")
    status, err = kernel(root, capsys, "cand", FAMILY, "1", "--note", "x", "--source", str(authoring / "fused.py"))
    assert status == 2 and "reference_sha256 0 is not a sha256" in err
