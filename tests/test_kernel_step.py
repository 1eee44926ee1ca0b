"""`wiki step` on a kernel session (issue 16, K9): the STATE.md a kernel start writes, the
pure decide of one wake (every row), and wakes on a real family built with the real
commands and the CPU verifier: verify by the wake, the verdict's cap, the stop-at-first-win
stall and its count, a killed wake, two wakes at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.run_once import copy_of, once
from tests.test_kernel_lane import FAM, family, git, kernel, start_family  # noqa: F401 - family is a fixture
from wikiengine._cli.main import main
from wikiengine.demos.kernel import FAMILY, OP_POINT
from wikiengine.lint.runner import lint
from wikiengine.model.state import KernelState, state_mode
from wikiengine.step.kernel.decide import KernelView, Lead, decide, next_wake_s
from wikiengine.step.kernel.verdicts import KernelEvidence

REPO = Path(__file__).resolve().parents[1]


def step(root: Path, capsys) -> dict:
    capsys.readouterr()
    assert main(["step", "--root", str(root), "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def stub_next(root: Path, authoring: Path, capsys, lever: str = "row-chunking", slug: str = "chunks") -> dict:
    status, result = kernel(root, capsys, "stub", FAMILY, "--slug", slug, "--proposal", str(authoring / f"{lever}.md"),
                            "--op-point", OP_POINT, "--lever", lever, "--intervention-class", "tiling",
                            "--category", "memory-bound", "--plan", "blocks of four rows")
    assert status == 0, result
    return result


# --- the decide table (pure) -------------------------------------------------------------------


def _evidence(verdict="PASS", speedup=2.0, rows=1, commits=1) -> KernelEvidence:
    receipt = {"verdict": verdict, "mode": "full", "timing": {"speedup": speedup},
               "reasons": [] if verdict == "PASS" else ["parity against the float64 oracle failed"]}
    return KernelEvidence("supported", receipt, None, 1.05, rows, commits)


STALL = {"state": "stall", "after": "v001", "verdict": "supported"}
LEAD = Lead("row-chunking", "blocks of rows may beat one long pass", "family page")
OPEN = {"session": "running", "open_vid": "v002"}


@pytest.mark.parametrize("view,kind,extra", [
    (KernelView(None), "idle", {}),
    (KernelView("stopped"), "idle", {}),
    (KernelView("paused", resume_action="stub the open lead `row-chunking`"), "paused", {"reason": "row-chunking"}),
    (KernelView("running"), "need_stub", {"reason": "first pick"}),
    (KernelView("running", k9={"state": "paused", "after": "v002"}), "need_stub", {"reason": "resume"}),
    (KernelView(**OPEN), "need_candidate", {"cand": "cand1"}),
    (KernelView(**OPEN, ledger=("cand1",), branch_commits=1), "verify", {"cand": "cand1"}),
    (KernelView(**OPEN, ledger=("cand1", "cand2"), branch_commits=2, receipts=frozenset({"cand1"})), "verify",
     {"cand": "cand2"}),
    (KernelView(**OPEN, ledger=("cand1", "cand2"), branch_commits=1, evidence=_evidence(rows=2, commits=1)),
     "need_verdict", {"cap": "inconclusive", "reason": "2 row(s) but its branch has 1"}),
    (KernelView(**OPEN, ledger=("cand1",), branch_commits=1, receipts=frozenset({"cand1"}), evidence=_evidence()),
     "need_verdict", {"cap": "supported"}),
    (KernelView(**OPEN, ledger=("cand1",), branch_commits=1, receipts=frozenset({"cand1"}),
                evidence=_evidence("FAIL")), "need_verdict", {"cap": "inconclusive"}),
    (KernelView(**OPEN, ledger=("cand1",), branch_commits=1, receipts=frozenset({"cand1"}),
                evidence=_evidence(speedup=0.33)), "need_verdict", {"cap": "refuted"}),
    (KernelView("running", k9=STALL, stop_reasons=("headroom leads are not dry",), rank1=LEAD), "stall",
     {"owed": "stub", "stall_wakes": 1, "reason": "rank-1 lead row-chunking"}),
    (KernelView("running", k9=STALL, stop_reasons=(), rank1=None), "stall", {"owed": "close"}),
    (KernelView("running", k9=STALL, stop_reasons=("no retrospective yet",), rank1=None), "stall",
     {"owed": "stop-chain", "reason": "no retrospective yet"}),
    (KernelView("running", k9=STALL, stop_reasons=("x",), rank1=LEAD, stall_after="v001", stall_wakes=2), "stall",
     {"stall_wakes": 3, "reason": "it persists: 3 wakes in a row"}),
    (KernelView("running", k9=STALL, stop_reasons=("x",), rank1=LEAD, stall_after="v000", stall_wakes=4), "stall",
     {"stall_wakes": 1}),
    (KernelView("running", k9={"state": "next-stub", "after": "v001", "next": "v002"}), "need_stub",
     {"reason": "v002 was claimed after v001 but has no open page"}),
])
def test_kernel_wake_decision_table(view, kind, extra):
    decision = decide(view)
    assert decision.kind == kind
    if "cap" in extra:
        assert decision.cap[0] == extra["cap"]
    for key in ("cand", "owed", "stall_wakes"):
        if key in extra:
            assert getattr(decision, key) == extra[key]
    if "reason" in extra:
        assert extra["reason"] in decision.reason
    assert ("persists" in decision.reason) == (decision.stall_wakes > 1)


@pytest.mark.parametrize("ops,expected", [
    ([], None), (["start"], "running"), (["start", "claim", "file", "pause"], "paused"),
    (["start", "pause", "start", "claim"], "running"), (["start", "stop", "rule-out"], "stopped"),
])
def test_the_journal_says_the_session_status(ops, expected):
    from wikiengine.step.kernel.verdicts import session_status

    assert session_status([{"op": op} for op in ops]) == expected


def test_next_kernel_wake_is_clamped_and_none_when_nothing_is_driven():
    assert next_wake_s(decide(KernelView(None))) is None
    assert next_wake_s(decide(KernelView("paused"))) is None
    assert next_wake_s(decide(KernelView(**OPEN, ledger=("cand1",), branch_commits=1)), 600) == 120
    assert next_wake_s(decide(KernelView(**OPEN)), 5) == 120
    assert next_wake_s(decide(KernelView(**OPEN)), 9000) == 600


# --- the session in STATE.md -------------------------------------------------------------------


def test_kernel_start_points_state_md_at_the_session_and_lint_checks_it(family):
    root, _authoring, _stub = family
    state = KernelState.read(root)
    assert state_mode(root) == "kernel"
    assert (state.family, state.status, state.session, state.run_target) == (FAMILY, "running", 1, "local chip 0")
    assert git(root, "log", "-1", "--format=%s", "--", "memory/STATE.md").startswith("kernel(layernorm): start session 1")
    assert lint(root, base=None, jobs=1, use_cache=False).findings == []
    text = (root / "memory/STATE.md").read_text()
    (root / "memory/STATE.md").write_text(text.replace("family: layernorm", "family: softmax"))
    found = [f for f in lint(root, base=None, jobs=1, use_cache=False).findings if f.code == "MEM003"]
    assert len(found) == 1 and "kernel family 'softmax' does not exist" in found[0].message
    (root / "memory/STATE.md").write_text(text.replace("status: running", "status: sleeping"))
    found = [f for f in lint(root, base=None, jobs=1, use_cache=False).findings if f.path == "memory/STATE.md"]
    assert found and all("status" in f.message for f in found)


def test_the_first_wake_after_a_start_owes_the_first_stub(tmp_path, capsys):
    from wikiengine.demos.kernel import CLASS_PAGE, scaffold

    authoring = scaffold(tmp_path)
    capsys.readouterr()
    assert main(["kernel", "start", "bench_layernorm.py", "--reference", str(authoring / "reference.py"), "--op-point",
                 OP_POINT, "--class-page", CLASS_PAGE, "--root", str(tmp_path)]) == 0
    assert "memory/STATE.md points at this session: `wiki step` drives it" in capsys.readouterr().out
    wake = step(tmp_path, capsys)
    assert [d["decision"] for d in wake["decisions"]] == ["need_stub"] and wake["k9"] == {"state": "no-verdict-yet"}
    need = wake["needs"][0]
    assert need["inputs"]["lead"] == "single-pass-fusion" and need["inputs"]["source"] == "class page lever"
    assert need["inputs"]["lead_text"]  # the class page's words for the lever
    assert "--lever single-pass-fusion" in need["command"]


def test_kernel_start_never_overwrites_a_live_relay_or_lane_state(tmp_path, capsys):
    from wikiengine.demos.kernel import CLASS_PAGE, scaffold

    authoring = scaffold(tmp_path)
    relay = "---\nrun: ounce100M\nstatus: running\n---\n\n# the relay run\n"
    (tmp_path / "memory").mkdir()
    (tmp_path / "memory/STATE.md").write_text(relay)
    status, started = kernel(tmp_path, capsys, "start", "bench_layernorm.py", "--reference",
                             str(authoring / "reference.py"), "--op-point", OP_POINT, "--class-page", CLASS_PAGE)
    assert status == 0 and started["memory_state"] == "memory/STATE.md drives the relay run ounce100M"
    assert (tmp_path / "memory/STATE.md").read_text() == relay


def test_pause_and_close_end_the_session_in_state_md(family, capsys):
    root, authoring, _stub = family
    assert kernel(root, capsys, "file", FAMILY, "--verdict", "invalid")[0] == 0
    status, paused = kernel(root, capsys, "close", FAMILY, "--pause")
    assert status == 0
    assert KernelState.read(root).status == "paused" and KernelState.read(root).next_check_at is None
    head = git(root, "rev-parse", "HEAD")
    wake = step(root, capsys)
    assert wake["state"] == "paused" and wake["next_wake_s"] is None
    assert wake["commits"] == [] and git(root, "rev-parse", "HEAD") == head  # nothing is driven: nothing committed
    assert wake["needs"] == [{"kind": "resume", "vid": None, "inputs": {"resume_action": paused["resume_action"]},
                              "command": f"wiki kernel start {FAMILY}"}]
    assert kernel(root, capsys, "start", FAMILY, "--chip", "0")[0] == 0
    state = KernelState.read(root)
    assert (state.status, state.session) == ("running", 2)
    wake = step(root, capsys)
    assert wake["decisions"][0]["decision"] == "need_stub" and "follows the paused one" in wake["decisions"][0]["reason"]
    assert wake["needs"][0]["inputs"]["lead"] in ("single-pass-fusion", "row-chunking", "dispatch-fastpath")


# --- wakes on a real family --------------------------------------------------------------------


def test_a_kernel_session_driven_by_wiki_step_from_stub_to_k9(family, capsys):
    root, authoring, stub = family
    wake = step(root, capsys)
    assert wake["mode"] == "kernel" and wake["state"] == "running" and wake["k9"] == {"state": "no-verdict-yet"}
    assert [d["decision"] for d in wake["decisions"]] == ["need_candidate"]
    need = wake["needs"][0]
    assert need["kind"] == "candidate" and need["vid"] == "v001"
    assert need["command"] == f"wiki kernel cand {FAMILY} 1 --note TEXT --source FILE"
    assert need["inputs"]["plan"] == [{"cand": "cand1", "what": "the native fused pass", "done": False}]

    assert kernel(root, capsys, "cand", FAMILY, "1", "--note", "native fused pass", "--source",
                  str(authoring / "fused.py"))[0] == 0
    head = git(root, "rev-parse", "HEAD")
    wake = step(root, capsys)
    assert [d["decision"] for d in wake["decisions"]] == ["verify", "need_verdict"]
    assert wake["actions"][0].startswith("verified v001 cand1: PASS") and wake["next_wake_s"] == 120
    receipt = f"{FAM.receipts_dir}/v001-cand1-full.json"
    assert (root / receipt).is_file() and git(root, "log", "--format=%s", f"{head}..HEAD")
    assert "kernel(layernorm v001): full receipt of cand1 — PASS" in git(root, "log", "--format=%s", f"{head}..HEAD")
    need = wake["needs"][0]
    assert need["kind"] == "verdict" and need["inputs"]["cap"] == {"verdict": "supported", "reasons": []}
    assert need["command"] == f"wiki kernel file {FAMILY} --verdict supported --reason TEXT"
    assert need["inputs"]["speedup"] > 1.05 and need["inputs"]["receipt_verdict"] == "PASS"

    status, filed = kernel(root, capsys, "file", FAMILY, "--verdict", "supported", "--lead",
                           "row-chunking=blocks of rows that stay in cache may beat one long pass")
    assert status == 0 and filed["verdict"] == "supported"
    wake = step(root, capsys)
    assert wake["k9"]["state"] == "stall" and wake["decisions"][0]["owed"] == "stub"
    assert wake["findings"] and "stop-at-first-win stall" in wake["findings"][0]
    need = wake["needs"][0]
    assert need["kind"] == "stub" and need["inputs"]["lead"] == "row-chunking"
    assert need["inputs"]["lead_text"] == "blocks of rows that stay in cache may beat one long pass"
    assert f"wiki kernel stub {FAMILY} " in need["command"] and "--lever row-chunking" in need["command"]
    assert f"--op-point {OP_POINT}" in need["command"]
    assert KernelState.read(root).stall_wakes == 1
    again = step(root, capsys)
    assert again["decisions"][0]["stall_wakes"] == 2 and "persists: 2 wakes in a row" in again["findings"][0]
    assert KernelState.read(root).stall_wakes == 2 and KernelState.read(root).stall_after == "v001"

    stub_next(root, authoring, capsys)
    wake = step(root, capsys)
    assert wake["k9"] == {"state": "next-stub", "after": "v001", "next": "v002"}
    assert wake["findings"] == [] and [d["decision"] for d in wake["decisions"]] == ["need_candidate"]
    assert KernelState.read(root).stall_wakes == 0

    assert kernel(root, capsys, "cand", FAMILY, "1", "--note", "unbiased variance", "--source",
                  str(authoring / "unbiased.py"))[0] == 0
    wake = step(root, capsys)
    cap = wake["needs"][0]["inputs"]["cap"]
    assert wake["actions"][0].startswith("verified v002 cand1: FAIL")
    assert cap["verdict"] == "inconclusive" and "the receipt says FAIL" in cap["reasons"][0]
    assert lint(root, base=None, jobs=1, use_cache=False).findings == []
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""


def test_a_verify_the_wake_cannot_run_is_owed_with_its_error(family, capsys):
    root, authoring, _stub = family
    assert kernel(root, capsys, "cand", FAMILY, "1", "--note", "native fused pass", "--source",
                  str(authoring / "fused.py"))[0] == 0
    program = root / FAM.program
    text = program.read_text()
    pinned = next(ln.split(": ")[1] for ln in text.splitlines() if ln.startswith("reference_sha256: "))
    program.write_text(text.replace(pinned, "ab" * 32))
    git(root, "commit", "-qam", "the binding pins another reference")
    wake = step(root, capsys)
    assert wake["actions"][0].startswith("verify of v001 cand1 failed: the reference kernels/layernorm/reference.py")
    assert [n["kind"] for n in wake["needs"]] == ["verify-failed"]
    assert wake["needs"][0]["command"] == f"wiki kernel verify {FAMILY} --cand cand1"
    assert "is not the pinned one" in wake["needs"][0]["inputs"]["error"]
    assert not (root / FAM.receipts_dir).exists()


def test_a_bad_wake_interval_in_the_binding_is_exit_2(family, capsys):
    root, _authoring, _stub = family
    program = root / FAM.program
    program.write_text(program.read_text().replace("speedup_bar: 1.05", "speedup_bar: 1.05\nwake_interval_s: soon"))
    capsys.readouterr()
    assert main(["step", "--root", str(root)]) == 2
    err = capsys.readouterr().err
    assert f"{FAM.program}: wake_interval_s 'soon' in the family binding is not a positive number" in err
    assert "Traceback" not in err


def test_row_33_a_replayed_kernel_wake_commits_nothing(family, capsys):
    root, _authoring, _stub = family
    first = step(root, capsys)
    head = git(root, "rev-parse", "HEAD")
    second = step(root, capsys)
    assert second["decisions"] == first["decisions"] and second["commits"] == []
    assert git(root, "rev-parse", "HEAD") == head


def test_the_human_rendering_names_the_owed_command(family, capsys):
    root, _authoring, _stub = family
    capsys.readouterr()
    assert main(["step", "--root", str(root)]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"kernel family {FAMILY}: running; next wake in ")
    assert f"owed: candidate for v001: wiki kernel cand {FAMILY} 1 --note TEXT --source FILE" in out


# --- a killed wake, two wakes at once ----------------------------------------------------------


def _env() -> dict:
    return dict(os.environ, PYTHONPATH=str(REPO))


def _ancestors(pid: int) -> list[int]:
    chain = []
    while pid > 1:
        try:
            stat = Path(f"/proc/{pid}/stat").read_bytes()
        except OSError:
            break
        pid = int(stat[stat.rfind(b")") + 2:].split()[1])
        chain.append(pid)
    return chain


def _verifier_of(wake_pid: int, timeout: float = 120.0) -> int:
    """The pid of the verifier child the wake ``wake_pid`` started (through the sandbox's
    warden, in a session of its own): waits until it runs."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                cmdline = (entry / "cmdline").read_bytes()
                if b"verify.py\0--reference" in cmdline and wake_pid in _ancestors(int(entry.name)):
                    return int(entry.name)
            except OSError:
                continue
        time.sleep(0.05)
    raise AssertionError("the wake never started the verifier")


def _gone(pid: int, timeout: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if Path(f"/proc/{pid}/stat").read_bytes().split(b") ")[1][:1] == b"Z":
                return True
        except OSError:
            return True
        time.sleep(0.05)
    return False


def _wake_process(root: Path) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-m", "wikiengine", "step", "--root", str(root), "--json"],
                            env=_env(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


@pytest.fixture
def with_candidate(tmp_path_factory, tmp_path, capsys):
    """A family whose stub has candidate 1 (the fused kernel) measured: built once for the run (the
    quick measurement is a verifier process importing torch), each test on its own copy."""
    def build(folder: Path) -> dict:
        (folder / "family").mkdir()
        root, authoring, _stub = start_family(folder / "family", capsys)
        assert kernel(root, capsys, "cand", FAMILY, "1", "--note", "native fused pass", "--source",
                      str(authoring / "fused.py"))[0] == 0
        return {}

    built, _ = once(tmp_path_factory, "kernel-candidate", build)
    return copy_of(built / "family", tmp_path / "family")


@pytest.mark.slow
def test_row_22_a_wake_killed_during_the_verifier_leaves_the_family_consistent(with_candidate, capsys):
    root = with_candidate
    head = git(root, "rev-parse", "HEAD")
    wake = _wake_process(root)
    verifier = _verifier_of(wake.pid)
    os.killpg(wake.pid, signal.SIGKILL)
    wake.wait(timeout=60)
    assert _gone(verifier), "the verifier outlived the killed wake (the sandbox's warden must kill it)"
    assert git(root, "rev-parse", "HEAD") == head and git(root, "status", "--porcelain", "--untracked-files=no") == ""
    assert not (root / FAM.receipts_dir).exists()
    assert lint(root, base=None, jobs=1, use_cache=False).findings == []
    done = step(root, capsys)
    assert [d["decision"] for d in done["decisions"]] == ["verify", "need_verdict"]
    assert (root / f"{FAM.receipts_dir}/v001-cand1-full.json").is_file()
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""


KILL_AT_COMMIT = """
import os, signal, sys
from pathlib import Path
from wikiengine.step import txn as lane_txn
from wikiengine.step.engine import run_step

real = lane_txn._commit
def killed(root, paths, message, probe=None):
    if "receipt" in message:
        os.kill(os.getpid(), signal.SIGKILL)  # files written, the redo record on disk, no commit
    return real(root, paths, message, probe)
lane_txn._commit = killed
run_step(Path(sys.argv[1]))
"""


@pytest.mark.slow
def test_row_22_a_wake_killed_inside_the_receipt_commit_is_finished_by_the_next(with_candidate, capsys):
    from wikiengine.step.txn import redo_path

    root = with_candidate
    head = git(root, "rev-parse", "HEAD")
    done = subprocess.run([sys.executable, "-c", KILL_AT_COMMIT, str(root)], env=_env(), capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == -signal.SIGKILL, done.stderr[-2000:]
    assert redo_path(root, FAM.txn_lane).is_file() and git(root, "rev-parse", "HEAD") == head
    wake = step(root, capsys)
    assert wake["actions"][0].startswith("finished a killed writer first: its redo record replayed as commit")
    assert [d["decision"] for d in wake["decisions"]] == ["need_verdict"]
    assert "kernel(layernorm v001): full receipt of cand1 — PASS" in git(root, "log", "--format=%s", f"{head}..HEAD")
    assert not redo_path(root, FAM.txn_lane).exists()
    assert git(root, "status", "--porcelain", "--untracked-files=no") == ""
    assert lint(root, base=None, jobs=1, use_cache=False).findings == []


@pytest.mark.slow
def test_row_20_two_kernel_wakes_at_once_the_second_exits_locked(with_candidate, capsys):
    root = with_candidate
    first = _wake_process(root)
    _verifier_of(first.pid)
    capsys.readouterr()
    assert main(["step", "--root", str(root), "--json"]) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["decision"] == "locked" and second["mode"] == "kernel" and second["commits"] == []
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err[-2000:]
    assert [d["decision"] for d in json.loads(out)["decisions"]] == ["verify", "need_verdict"]
    receipts = git(root, "log", "--format=%s", "--grep", "full receipt of cand1")
    assert receipts.count("full receipt of cand1") == 1


def test_step_help_names_the_kernel_mode(capsys):
    with pytest.raises(SystemExit) as done:
        main(["step", "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert "kernel session" in out and "stop-at-first-win stall" in out and "--json" in out
