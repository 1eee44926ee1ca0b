"""Candidate code in a sandbox, and receipts bound to the journal (issue 21; RELIABILITY rows 77, 78, 79).

Real processes throughout: the sandbox's warden, ``setsid`` children, rlimits, Landlock
where this kernel has it, a hostile candidate through `wiki kernel cand`, and receipts
re-sealed or borrowed the way an agent would try it.
"""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid
from pathlib import Path

import pytest

from tests.run_once import copy_of, once
from tests.test_kernel_lane import family, kernel  # noqa: F401 - the fixture
from wikiengine.core import repo_guard
from wikiengine.core.sandbox import Limits, run_confined
from wikiengine.core.warden import landlock_abi
from wikiengine.demos.kernel import FAMILY
from wikiengine.model import receipt as kernel_receipt
from wikiengine.model.kernels import KernelFamily
from wikiengine.step.kernel import run as kernel_run
from wikiengine.step.kernel import sealing

FAM = KernelFamily(FAMILY)
REPO = Path(__file__).resolve().parent.parent
LANDLOCK = landlock_abi() > 0


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True).stdout.strip()


def running_with(marker: str) -> list[int]:
    """Live (not zombie) processes whose command line holds ``marker``."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            if marker.encode() in (entry / "cmdline").read_bytes() and \
                    (entry / "stat").read_bytes().rsplit(b") ", 1)[1][:1] != b"Z":
                found.append(int(entry.name))
        except OSError:
            continue
    return found


def tree_state(folder: Path) -> dict[str, bytes]:
    return {str(p.relative_to(folder)): (p.read_bytes() if p.is_file() else b"<dir>") for p in sorted(folder.rglob("*"))}




# --- row 77: nothing of a run outlives it ------------------------------------------------------


def test_row77_a_setsid_grandchild_is_killed_when_the_run_ends():
    marker = f"row77-{uuid.uuid4().hex}"
    code = textwrap.dedent(f"""
        import subprocess, sys
        child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(300)", "{marker}"],
                                 start_new_session=True)
        print(child.pid)
    """)
    started = time.monotonic()
    outcome = run_confined([sys.executable, "-c", code], limits=Limits(wall_s=60))
    assert outcome.returncode == 0 and not outcome.timed_out, outcome
    assert outcome.killed >= 1 and outcome.survivors == []
    assert running_with(marker) == [] and not Path(f"/proc/{outcome.stdout.strip()}").exists()
    assert time.monotonic() - started < 30


def test_row77_a_run_cut_at_its_deadline_leaves_nothing_running():
    marker = f"row77-{uuid.uuid4().hex}"
    code = textwrap.dedent(f"""
        import os, time
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                os.execv("/bin/sleep", ["sleep", "300", "{marker}"])
            os._exit(0)
        while True:
            pass
    """)
    outcome = run_confined([sys.executable, "-c", code], limits=Limits(wall_s=2))
    assert outcome.timed_out and outcome.returncode is None and outcome.killed >= 2
    assert running_with(marker) == []


def test_row77_the_warden_cleans_up_when_its_caller_is_killed(tmp_path):
    marker = f"row77-{uuid.uuid4().hex}"
    caller = textwrap.dedent(f"""
        import sys
        from wikiengine.core.sandbox import Limits, run_confined
        run_confined(["/bin/sh", "-c", "sleep 300 {marker}; true"], limits=Limits(wall_s=120))
    """)
    proc = subprocess.Popen([sys.executable, "-c", caller], env={**os.environ, "PYTHONPATH": str(REPO)})
    deadline = time.monotonic() + 30
    while not running_with(f"sleep 300 {marker}") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running_with(f"sleep 300 {marker}"), "the confined command never started"
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    deadline = time.monotonic() + 15
    while running_with(marker) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert running_with(marker) == []


# --- row 78: a scratch directory, a clean environment, limits, Landlock -----------------------------------


def test_row78_the_child_gets_a_scratch_home_and_a_clean_environment(monkeypatch, tmp_path):
    for name in ("HF_TOKEN", "KAGGLE_KEY", "AWS_SECRET_ACCESS_KEY", "GOOGLE_APPLICATION_CREDENTIALS", "GITHUB_TOKEN"):
        monkeypatch.setenv(name, "canary-" + name)
    code = "import json, os; print(json.dumps({'env': dict(os.environ), 'cwd': os.getcwd()}))"
    outcome = run_confined([sys.executable, "-c", code], files={"note.txt": b"hi"}, env={"OMP_NUM_THREADS": "1"})
    seen = json.loads(outcome.stdout)
    assert "canary" not in outcome.stdout
    assert set(seen["env"]) <= {"PATH", "LANG", "LC_ALL", "HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME",
                                "PYTHONNOUSERSITE", "PYTHONDONTWRITEBYTECODE", "OMP_NUM_THREADS", "LC_CTYPE"}
    cwd = Path(seen["cwd"])
    assert seen["env"]["HOME"].startswith(str(cwd)) and seen["env"]["TMPDIR"].startswith(str(cwd))
    assert seen["env"]["HOME"] != os.environ.get("HOME")
    assert not cwd.exists(), "the scratch directory is removed after the run"


def test_row78_rlimits_bound_memory_and_cpu():
    memory = run_confined([sys.executable, "-c", "bytearray(64 << 30)"], limits=Limits(address_space=2 << 30))
    assert memory.returncode == 1 and "MemoryError" in memory.stderr
    cpu = run_confined([sys.executable, "-c", "while True: pass"], limits=Limits(wall_s=60, cpu_s=1))
    assert cpu.returncode is not None and cpu.returncode < 0 and not cpu.timed_out  # SIGXCPU, then SIGKILL
    files = run_confined([sys.executable, "-c", "open('big', 'wb').write(bytes(8 << 20))"],
                         limits=Limits(file_size=1 << 20))
    assert files.returncode != 0


@pytest.mark.skipif(not LANDLOCK, reason="this kernel offers no Landlock")
def test_row78_landlock_keeps_the_child_out_of_home_and_the_repository(tmp_path):
    secret = tmp_path / "home" / ".cache" / "huggingface" / "token"
    secret.parent.mkdir(parents=True)
    secret.write_text("canary-token")
    code = textwrap.dedent(f"""
        import json, os, socket
        results = {{}}
        for name, act in (("read", lambda: open({str(secret)!r}).read()),
                          ("write", lambda: open({str(tmp_path / 'pwned')!r}, "w").write("x")),
                          ("parent_environ", lambda: open(f"/proc/{{os.getppid()}}/environ", "rb").read()),
                          ("caller_environ", lambda: open(f"/proc/{os.getpid()}/environ", "rb").read()),
                          ("own_status", lambda: open("/proc/self/status").read()),
                          ("signal", lambda: os.kill(os.getppid(), 0)),
                          ("tcp", lambda: socket.create_connection(("127.0.0.1", 9), timeout=1))):
            try:
                act()
                results[name] = "allowed"
            except OSError as exc:
                results[name] = type(exc).__name__
        open("scratch-ok", "w").write("x")
        print(json.dumps(results))
    """)
    outcome = run_confined([sys.executable, "-c", code])
    assert outcome.returncode == 0, outcome.stderr
    assert outcome.confinement["landlock"] >= 1
    results = json.loads(outcome.stdout)
    assert results["read"] == results["write"] == "PermissionError", results
    assert results["parent_environ"] != "allowed" and results["caller_environ"] != "allowed", results
    assert results["own_status"] == "allowed" and not (tmp_path / "pwned").exists()
    if outcome.confinement["landlock"] >= 6:
        assert results["signal"] == "PermissionError", results
    if outcome.confinement["landlock"] >= 4:
        assert results["tcp"] == "PermissionError", results


def test_row78_the_guard_names_every_change_to_the_work_tree_and_git(family):
    root, _authoring, _stub = family
    before = repo_guard.snapshot(root)
    assert repo_guard.changed_paths(before, repo_guard.snapshot(root)) == []
    (root / "pwned.txt").write_text("x")
    hook = root / ".git" / "hooks" / "post-commit"
    hook.write_text("#!/bin/sh\ntouch hooked\n")
    with open(root / FAM.program, "a") as handle:
        handle.write("\nedited\n")
    (root / ".git" / "config").write_text((root / ".git" / "config").read_text() + "[core]\n\thooksPath = /tmp\n")
    changed = repo_guard.changed_paths(before, repo_guard.snapshot(root))
    assert any(c.startswith("pwned.txt") for c in changed) and ".git/hooks/post-commit" in changed
    assert any(c.startswith(FAM.program) for c in changed) and ".git/config" in changed


HOSTILE = '''
import os, pathlib, subprocess, sys, time

def attempt(act):
    try:
        act()
    except BaseException:
        pass

attempt(lambda: pathlib.Path("{home}/stolen").write_text(pathlib.Path("{home}/.cache/huggingface/token").read_text()))
attempt(lambda: pathlib.Path("{root}/pwned.txt").write_text("x"))
attempt(lambda: (pathlib.Path("{root}/.git/hooks/post-commit").write_text("#!/bin/sh\\ntouch {root}/hooked\\n"),
                 os.chmod("{root}/.git/hooks/post-commit", 0o755)))
attempt(lambda: open("{root}/{program}", "a").write("pwned"))
attempt(lambda: subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)", "{marker}"],
                                 start_new_session=True))
attempt(lambda: bytearray(64 << 30))
while True:  # never returns: the verifier's wall deadline ends it (idle, not spinning: the suite's cores are shared)
    time.sleep(0.05)
'''


def _hostile(tmp_path: Path, root: Path, home: Path, marker: str) -> Path:
    path = tmp_path.parent / f"hostile-{marker}.py"
    path.write_text(HOSTILE.format(home=home, root=root, program=FAM.program, marker=marker))
    return path


@pytest.fixture
def fake_home(tmp_path_factory, monkeypatch):
    home = tmp_path_factory.mktemp("home")
    (home / ".cache" / "huggingface").mkdir(parents=True)
    (home / ".cache" / "huggingface" / "token").write_text("canary-hf-token")
    monkeypatch.setenv("HOME", str(home))
    return home


@pytest.mark.skipif(not LANDLOCK, reason="this kernel offers no Landlock")
@pytest.mark.waits
def test_row78_a_hostile_candidate_fails_and_changes_nothing(family, fake_home, capsys, monkeypatch, tmp_path):
    root, _authoring, _stub = family
    marker = f"row78-{uuid.uuid4().hex}"
    monkeypatch.setattr(kernel_run, "VERIFY_LIMITS", Limits(wall_s=12, cpu_s=60, address_space=16 << 30))
    home_before, program_before = tree_state(fake_home), (root / FAM.program).read_bytes()
    hooks_before = tree_state(root / ".git" / "hooks")
    status, result = kernel(root, capsys, "cand", FAMILY, "1", "--note", "hostile", "--source",
                            str(_hostile(tmp_path, root, fake_home, marker)))
    assert status == 0, result
    assert result["quick"]["verdict"] == "FAIL" and "killed at its deadline" in result["quick"]["reasons"][0]
    assert result["quick"]["sandbox"]["landlock_abi"] >= 1 and result["quick"]["sandbox"]["killed_at_end"] >= 1
    assert running_with(marker) == []
    assert tree_state(fake_home) == home_before
    assert not (root / "pwned.txt").exists() and not (root / "hooked").exists()
    assert tree_state(root / ".git" / "hooks") == hooks_before
    assert (root / FAM.program).read_bytes() == program_before
    assert git(root, "status", "--porcelain", "--untracked-files=all") == ""


@pytest.mark.waits
def test_row78_without_landlock_a_write_to_the_repository_refuses_the_measurement(family, fake_home, capsys,
                                                                                  monkeypatch, tmp_path):
    root, _authoring, _stub = family
    marker = f"row78-{uuid.uuid4().hex}"
    monkeypatch.setattr(kernel_run, "VERIFY_LIMITS", Limits(wall_s=12, cpu_s=60, address_space=16 << 30))
    monkeypatch.setattr(kernel_run, "VERIFY_LANDLOCK", "off")
    head = git(root, "rev-parse", "HEAD")
    status, err = kernel(root, capsys, "cand", FAMILY, "1", "--note", "hostile", "--source",
                         str(_hostile(tmp_path, root, fake_home, marker)))
    assert status == 2 and len(err.splitlines()) == 1 and "verifier FAIL: the repository changed" in err
    assert "pwned.txt" in err and ".git/hooks/post-commit" in err and FAM.program in err
    assert "nothing was committed" in err and running_with(marker) == []
    # nothing committed after the branch record, so the planted hook never ran; nothing reverted
    assert git(root, "log", "-1", "--format=%s").startswith(f"kernel({FAMILY} v001): branch ")
    assert git(root, "rev-list", "--count", f"{head}..HEAD") == "1"
    assert (root / "pwned.txt").exists() and not (root / "hooked").exists()


# --- row 79: receipts bound to the journal ----------------------------------------------------------------


def _build_verified(folder: Path) -> dict:
    """A started family whose v001 holds a PASS full receipt of cand1 (the fused kernel), cited
    by the page: two verifier processes (torch and its custom-op machinery to import), so it is
    built once for the run and each test works on a copy."""
    import contextlib
    import io

    from wikiengine._cli.main import main
    from wikiengine.demos.kernel import CLASS_PAGE, OP_POINT, scaffold

    def run(*args: str) -> dict:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            status = main(["kernel", *args, "--root", str(folder), "--json"])
        assert status == 0, (args, err.getvalue())
        return json.loads(out.getvalue())

    authoring = scaffold(folder)
    run("start", "bench_layernorm.py", "--reference", str(authoring / "reference.py"), "--op-point", OP_POINT,
        "--class-page", CLASS_PAGE, "--yes")
    run("stub", FAMILY, "--slug", "fused-layernorm", "--proposal", str(authoring / "single-pass-fusion.md"),
        "--op-point", OP_POINT, "--lever", "single-pass-fusion", "--intervention-class", "fusion", "--category",
        "memory-bound", "--plan", "the native fused pass")
    run("cand", FAMILY, "1", "--note", "fused", "--source", str(authoring / "fused.py"))
    done = run("verify", FAMILY)
    assert done["verdict"] == "PASS", done
    return {"receipt": done["receipt"], "authoring": str(authoring.relative_to(folder))}


@pytest.fixture
def verified(tmp_path_factory, tmp_path):
    """v001 with a PASS full receipt of cand1 (the fused kernel), cited by the page: a private copy
    of the run's one build (tests/run_once.py)."""
    built, made = once(tmp_path_factory, "kernel-verified", _build_verified)
    root = copy_of(built, tmp_path / "family")
    return root, root / made["authoring"], made["receipt"]


def _reseal(path: Path, **changes) -> None:
    """What an agent can do without the key: change figures and recompute the plain sha256."""
    data = json.loads(path.read_text())
    for key, value in changes.items():
        if isinstance(value, dict):
            data[key] = {**data[key], **value}
        else:
            data[key] = value
    body = {k: v for k, v in data.items() if k not in ("sha256", "signature")}
    data["sha256"] = hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")


def test_row79_the_verify_record_carries_the_receipts_digest_and_sources(verified):
    root, _authoring, receipt_rel = verified
    receipt = json.loads((root / receipt_rel).read_text())
    record = [json.loads(line) for line in (root / FAM.journal).read_text().splitlines() if '"op":"verify"' in line][-1]
    assert record["receipt_sha256"] == receipt["sha256"] and record["sources"] == receipt["sources"]
    assert record["commit"] == receipt["commit"] and receipt["signature"].startswith("hmac-sha256:")
    assert kernel_receipt.validate((root / receipt_rel).read_text())[1] is None


def test_row79_a_resealed_receipt_is_refused(verified, capsys):
    root, _authoring, receipt_rel = verified
    _reseal(root / receipt_rel, timing={"speedup": 9.99})
    assert kernel_receipt.validate((root / receipt_rel).read_text())[1] is None  # the plain digest still "validates"
    git(root, "commit", "-qam", "a better figure")
    head = git(root, "rev-parse", "HEAD")
    status, err = kernel(root, capsys, "file", FAMILY, "--verdict", "supported")
    assert status == 2 and len(err.splitlines()) == 1
    assert receipt_rel in err and "signature does not verify" in err
    # without the signature as well: its verify record is signed, so it is still refused
    data = json.loads((root / receipt_rel).read_text())
    data.pop("signature")
    (root / receipt_rel).write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    status, err = kernel(root, capsys, "file", FAMILY, "--verdict", "supported")
    assert status == 2 and "carries no signature" in err
    assert git(root, "rev-parse", "HEAD") == head


def test_row79_a_receipt_borrowed_from_another_candidate_is_refused(verified, capsys):
    root, authoring, pass_rel = verified
    status, cand2 = kernel(root, capsys, "cand", FAMILY, "2", "--note", "unbiased", "--source",
                           str(authoring / "unbiased.py"))
    assert status == 0, cand2
    status, done = kernel(root, capsys, "verify", FAMILY)
    assert status == 0 and done["verdict"] == "FAIL"
    fail_rel = done["receipt"]
    cand2 = json.loads((root / fail_rel).read_text())
    # cand1's PASS receipt, re-sealed as cand2's: the signature no longer holds
    (root / fail_rel).write_bytes((root / pass_rel).read_bytes())
    _reseal(root / fail_rel, candidate="cand2", commit=cand2["commit"], sources=cand2["sources"])
    status, err = kernel(root, capsys, "file", FAMILY, "--verdict", "supported")
    assert status == 2 and fail_rel in err and "signature does not verify" in err
    # cand1's receipt copied byte for byte to cand2's path: not the digest cand2's record committed
    (root / fail_rel).write_bytes((root / pass_rel).read_bytes())
    status, err = kernel(root, capsys, "file", FAMILY, "--verdict", "supported")
    assert status == 2 and "not the one the journal's verify record committed" in err


def test_row79_a_receipt_without_its_verify_record_is_refused(verified, capsys):
    root, _authoring, receipt_rel = verified
    journal = root / FAM.journal
    journal.write_text("".join(line for line in journal.read_text().splitlines(keepends=True)
                               if '"op":"verify"' not in line))
    status, err = kernel(root, capsys, "file", FAMILY, "--verdict", "supported")
    assert status == 2 and receipt_rel in err and "no verify record" in err


def test_row79_a_signed_receipt_whose_sources_are_not_the_committed_candidate_is_refused(verified, capsys):
    """Defence in depth: even with the key (the engine's own bug, say), a receipt whose
    sources.candidate is not the candidate committed at its commit does not file."""
    root, _authoring, receipt_rel = verified
    data = json.loads((root / receipt_rel).read_text())
    data["sources"] = {**data["sources"], "candidate": hashlib.sha256(b"other bytes").hexdigest()}
    text = sealing.seal_receipt(root, data)
    (root / receipt_rel).write_text(text)
    journal = root / FAM.journal
    journal.write_text("".join(line if '"op":"verify"' not in line else
                               json.dumps({**json.loads(line), **sealing.verify_fields(text)}, sort_keys=True,
                                          separators=(",", ":")) + "\n"
                               for line in journal.read_text().splitlines(keepends=True)))
    status, err = kernel(root, capsys, "file", FAMILY, "--verdict", "supported")
    assert status == 2 and receipt_rel in err and "is not the candidate committed at" in err


def test_row79_an_unsigned_receipt_from_before_signing_never_files_supported(verified, capsys):
    root, _authoring, receipt_rel = verified
    data = json.loads((root / receipt_rel).read_text())
    data.pop("signature")
    (root / receipt_rel).write_text(kernel_receipt.seal(data))
    journal = root / FAM.journal
    journal.write_text("".join(line if '"op":"verify"' not in line else
                               json.dumps({k: v for k, v in json.loads(line).items()
                                           if k not in ("receipt_sha256", "sources", "commit")},
                                          sort_keys=True, separators=(",", ":")) + "\n"
                               for line in journal.read_text().splitlines(keepends=True)))
    git(root, "commit", "-qam", "a journal and receipt from before signing")
    status, filed = kernel(root, capsys, "file", FAMILY, "--verdict", "supported")
    assert status == 0 and filed["verdict"] == "inconclusive"
    assert "unsigned (written before receipts were signed)" in filed["capped"][0]
