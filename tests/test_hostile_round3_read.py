"""Hostile files, round 3 (issue 24 part A): the one reading path (``core/safe_read.py``).

Every case runs the real ``wiki`` command in a process bounded in time (``timeout``) and in
address space (``RLIMIT_AS``), on a git copy of the example wiki, and asserts what the
issue demands: exit 2, one line naming the file, no traceback, and nothing written or
committed. Named after RELIABILITY rows 80 and 81 and the rows 85-94 this issue adds.

Before the fix each of these hung forever, grew to gigabytes, exited 70, or committed a
file from outside the repository. ``docs/hostile-input.md`` records the worst case's time
and peak memory; ``WIKI_HOSTILE_REPORT=path`` makes this file write them there as JSON.
"""

from __future__ import annotations

import importlib.util
import json
import os
import resource
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.lane_runs import record_run

REPO = Path(__file__).resolve().parent.parent
LANE_DIR = "wiki/experiments/gemma4_autoresearch_optimization/tpu"
JOURNAL = f"{LANE_DIR}/.journal.jsonl"
LANE_LOG = f"{LANE_DIR}/log.md"
V046 = "v046"
TIME_LIMIT_S = 60  # a hang is caught by this, never by a timing assertion
MEMORY_LIMIT = 1536 * 1024 * 1024  # RLIMIT_AS of each command: /dev/zero read whole would pass it at once
SECRET = "hunter2-outside-the-repo"
PROPOSAL = """\
**Hypothesis**: raising the splash q block to 1024 lifts MFU by 0.3 points.

**Mechanism**: set block_q=1024 in the splash config.

**Predicted signal**: expect the splash custom call share to drop from 20.1% to 19.5%.

**Falsification criterion**: MFU below 42.1%, or an unchanged splash share.

## Setup

Same as v046 with block_q=1024.
"""
ENV = {"USER": "alice", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid", "GIT_COMMITTER_NAME": "t",
       "GIT_COMMITTER_EMAIL": "t@example.invalid", "WIKI_TRACEBACK": ""}
WORST: dict = {"seconds": 0.0, "case": None, "max_rss_kib": 0, "max_rss_case": None}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=root, capture_output=True, text=True, check=True,
                          env={**os.environ, **ENV}).stdout


@pytest.fixture(scope="module")
def template(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("template") / "repo"
    root.mkdir()
    shutil.copytree(REPO / "wiki", root / "wiki")
    shutil.copy(REPO / "pyproject.toml", root / "pyproject.toml")
    git(root, "init", "-q")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


@pytest.fixture()
def wiki(template, tmp_path) -> Path:
    root = tmp_path / "repo"
    shutil.copytree(template, root, symlinks=True)
    return root


def _limits() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


GNU_TIME = Path("/usr/bin/time")  # measures the command alone (a child's own peak counts the pytest pages it forked from)


def run_wiki(root: Path, *args: str, case: str) -> subprocess.CompletedProcess:
    """``wiki ARGS`` in ``root``, bounded in time and memory; its cost kept for the worst case."""
    argv = [sys.executable, "-m", "wikiengine", *args]
    usage = root.parent / "usage.txt"
    if GNU_TIME.exists():
        argv = [str(GNU_TIME), "-q", "-f", "%M", "-o", str(usage), *argv]
    started = time.monotonic()
    proc = subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=TIME_LIMIT_S, preexec_fn=_limits,
                          env={**os.environ, **ENV})
    seconds = time.monotonic() - started
    if seconds > WORST["seconds"]:
        WORST.update(seconds=round(seconds, 2), case=case)
    if usage.exists():
        rss = int(usage.read_text().split()[-1])
        usage.unlink()
        if rss > WORST["max_rss_kib"]:
            WORST.update(max_rss_kib=rss, max_rss_case=case)
    return proc


def refused(root: Path, *args: str, names: str, case: str, exit_code: int = 2) -> str:
    """Run ``wiki ARGS`` and assert the refusal: ``exit_code``, one line on stderr naming
    ``names``, no traceback, HEAD and the work tree as they were. Returns the line."""
    head, status = git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain", "--untracked-files=all")
    proc = run_wiki(root, *args, case=case)
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip() and not ln.startswith("notice:")]
    assert "Traceback" not in proc.stderr and "internal error" not in proc.stderr, proc.stderr
    assert proc.returncode == exit_code and len(lines) == 1, (proc.returncode, proc.stdout, proc.stderr)
    assert names in lines[0], lines[0]
    assert git(root, "rev-parse", "HEAD") == head, "a refused command committed"
    assert git(root, "status", "--porcelain", "--untracked-files=all") == status, "a refused command wrote"
    return lines[0]


def commit_all(root: Path, message: str = "hostile") -> None:
    git(root, "add", "-A")
    git(root, "commit", "-qm", message)


def proposal_file(tmp_path: Path) -> Path:
    path = tmp_path / "proposal.md"
    path.write_text(PROPOSAL)
    return path


def exp_new(proposal: Path) -> tuple[str, ...]:
    return ("exp", "new", "gemma4", "tpu", "--slug", "qb", "--variant", "2B/v5p-16", "--proposal", str(proposal),
            "--track", "1")


def outside_secret(tmp_path: Path) -> Path:
    secret = tmp_path / "outside" / "secrets.txt"
    secret.parent.mkdir()
    secret.write_text(f"password={SECRET}\n")
    return secret


def relink(root: Path, rel: str, target: str | Path) -> None:
    path = root / rel
    if path.exists() or path.is_symlink():
        path.unlink()
    os.symlink(target, path)


# --- row 80: writers never read or write through a link out of the repository ---------------


def test_row80_log_add_through_a_committed_link_out_is_refused(wiki, tmp_path):
    secret = outside_secret(tmp_path)
    relink(wiki, "wiki/log.md", secret)
    commit_all(wiki, "log.md is a link out")
    line = refused(wiki, "log", "add", "note", "hello", names="wiki/log.md", case="log add, wiki/log.md -> outside")
    assert "outside the repository" in line
    assert SECRET not in git(wiki, "log", "-p", "-1") and secret.read_text() == f"password={SECRET}\n"


def test_row80_a_lane_log_linked_out_is_never_written_by_exp_new(wiki, tmp_path):
    relink(wiki, LANE_LOG, outside_secret(tmp_path))
    relink(wiki, JOURNAL, tmp_path / "outside" / "journal.jsonl")  # dangling: a write would create it outside
    commit_all(wiki)
    refused(wiki, *exp_new(proposal_file(tmp_path)), names=JOURNAL, case="exp new, journal -> outside")
    assert not (tmp_path / "outside" / "journal.jsonl").exists()


def _finished_local_run(root: Path, name: str) -> Path:
    from wikiengine.executors.lane_local import runs_folder

    folder = runs_folder(root, "gemma4_autoresearch_optimization", "tpu") / name
    folder.mkdir(parents=True)
    (folder / "status.json").write_text(json.dumps({"state": "failed", "exit_code": 1, "started": "2026-06-13T10:00:00Z",
                                                    "finished": "2026-06-13T10:05:00Z"}))
    (folder / "spec.json").write_text(json.dumps({"argv": ["python", "train.py"], "env": {}}))
    return folder


def test_row93_backfill_never_quotes_a_run_log_linked_out(wiki, tmp_path):
    folder = _finished_local_run(wiki, "demo-gemma4-tpu-v050-leak")
    os.symlink(outside_secret(tmp_path), folder / "log.txt")
    line = refused(wiki, "backfill", "gemma4", "tpu", names="log.txt", case="backfill, log.txt -> outside")
    assert "outside the repository" in line and SECRET not in line


def test_row94_a_link_planted_after_staging_is_refused_before_anything_is_written(wiki, tmp_path):
    from wikiengine.core.errors import PageError
    from wikiengine.model.lanes import Lane
    from wikiengine.step.txn import LaneTxn, redo_path

    lane = Lane("gemma4_autoresearch_optimization", "tpu")
    txn = LaneTxn(wiki, lane)
    txn.write(LANE_LOG, txn.read(LANE_LOG) + "\nstaged\n")
    txn.write("wiki/index.md", txn.read("wiki/index.md") + "\nstaged\n")
    outside = tmp_path / "outside.md"
    relink(wiki, LANE_LOG, outside)  # after staging, before the commit
    with pytest.raises(PageError, match="outside the repository"):
        txn.commit("staged")
    assert not outside.exists() and not redo_path(wiki, lane).exists()
    assert "staged" not in (wiki / "wiki/index.md").read_text()  # checked before the first file is written


# --- row 81: pipes and devices: one line, exit 2, bounded time and memory -------------------


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_row81_exp_new_with_a_pipe_or_dev_zero_proposal(wiki, tmp_path, kind):
    path = tmp_path / "proposal.md"
    os.mkfifo(path) if kind == "fifo" else os.symlink("/dev/zero", path)
    line = refused(wiki, *exp_new(path), names=str(path), case=f"exp new --proposal {kind}")
    assert line.endswith("not a regular file")


@pytest.fixture()
def dispatched(wiki, tmp_path) -> Path:
    """A stub of v048 whose run the engine recorded (so `exp file` reaches its inputs)."""
    assert run_wiki(wiki, *exp_new(proposal_file(tmp_path)), case="exp new").returncode == 0
    record_run(wiki, LANE_DIR, "v048", variant="2B/v5p-16", metrics={"tps": 100.0})
    return wiki


@pytest.mark.parametrize("option", ["--metrics", "--profile", "--hlo"])
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_row81_exp_file_with_a_pipe_or_dev_zero_input(dispatched, tmp_path, option, kind):
    path = tmp_path / f"input-{option[2:]}"
    os.mkfifo(path) if kind == "fifo" else os.symlink("/dev/zero", path)
    line = refused(dispatched, "exp", "file", "v048", "gemma4", "tpu", "--verdict", "inconclusive", option, str(path),
                   names=str(path), case=f"exp file {option} {kind}")
    assert line.endswith("not a regular file")


def test_row81_kernel_stub_and_cand_with_pipes(wiki, tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    refused(wiki, "kernel", "stub", "flash_attention", "--slug", "piped", "--proposal", str(fifo), "--op-point", "p",
            "--lever", "l", "--plan", "p", "--intervention-class", "c", "--category", "c", names=str(fifo), case="kernel stub fifo")
    refused(wiki, "kernel", "cand", "flash_attention", "1", "--note", "n", "--source", str(fifo), names=str(fifo),
            case="kernel cand fifo")


def test_row93_backfill_with_a_pipe_as_a_run_log(wiki):
    folder = _finished_local_run(wiki, "demo-gemma4-tpu-v050-pipe")
    os.mkfifo(folder / "log.txt")
    line = refused(wiki, "backfill", "gemma4", "tpu", names="log.txt", case="backfill, log.txt fifo")
    assert line.endswith("not a regular file")


@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_row87_a_committed_lint_cache_on_a_pipe_or_dev_zero_is_ignored(wiki, kind):
    clean = run_wiki(wiki, "lint", "--no-cache", case="lint")
    cache = wiki / ".wiki_cache" / "lint.marshal"
    cache.parent.mkdir(exist_ok=True)
    os.mkfifo(cache) if kind == "fifo" else os.symlink("/dev/zero", cache)
    proc = run_wiki(wiki, "lint", case=f"lint, lint.marshal {kind}")
    assert "Traceback" not in proc.stderr and proc.returncode == clean.returncode, proc.stderr
    assert proc.stdout == clean.stdout


# --- row 85: files that are not valid text, or not files at all -----------------------------


def test_row85_a_non_utf8_log_journal_or_proposal_names_file_line_and_offset(wiki, tmp_path):
    (wiki / "wiki/log.md").write_bytes(b"# Log\n\nok\n\xff\n")
    line = refused(wiki, "log", "add", "note", "x", names="wiki/log.md:4:", case="log add, non-UTF-8 log")
    assert "not valid UTF-8 (byte 0xff at offset 10)" in line
    git(wiki, "checkout", "--", "wiki/log.md")
    (wiki / JOURNAL).write_bytes(b'{"op": "x"}\n\xfe\n')
    commit_all(wiki)
    line = refused(wiki, *exp_new(proposal_file(tmp_path)), names=f"{JOURNAL}:2:", case="exp new, non-UTF-8 journal")
    assert "offset 12" in line


def test_row85_a_directory_where_a_file_should_be(wiki, tmp_path):
    folder = tmp_path / "proposal.md"
    folder.mkdir()
    assert "is a directory" in refused(wiki, *exp_new(folder), names=str(folder), case="exp new, proposal a directory")
    (wiki / "wiki/log.md").unlink()
    (wiki / "wiki/log.md").mkdir()
    (wiki / "wiki/log.md/keep").write_text("x")
    commit_all(wiki)
    assert "is a directory" in refused(wiki, "log", "add", "note", "x", names="wiki/log.md", case="log.md a directory")


@pytest.mark.parametrize("kind", ["non-UTF-8", "/dev/zero"])
def test_row90_state_md_that_is_not_a_readable_file_is_named_as_such(wiki, kind):
    state = wiki / "memory" / "STATE.md"
    state.parent.mkdir()
    if kind == "/dev/zero":
        os.symlink("/dev/zero", state)
    else:
        state.write_bytes(b"---\nmode: lane\n---\n\xc3(\n")
    line = refused(wiki, "step", names="memory/STATE.md", case=f"step, STATE.md {kind}")
    assert "does not exist" not in line and "no STATE" not in line
    assert ("outside the repository: not read" if kind == "/dev/zero" else "not valid UTF-8 (byte 0xc3 at offset 19)") in line


# --- row 86: JSON with huge integers or deep nesting ----------------------------------------


@pytest.mark.parametrize("payload", ['{"tps": 1' + "0" * 5000 + "}", '{"tps": ' + "[" * 100_000 + "]" * 100_000 + "}"],
                         ids=["5000-digit integer", "100000-deep"])
def test_row86_metrics_with_a_huge_integer_or_deep_nesting(dispatched, tmp_path, payload):
    path = tmp_path / "metrics.json"
    path.write_text(payload)
    refused(dispatched, "exp", "file", "v048", "gemma4", "tpu", "--verdict", "inconclusive", "--metrics", str(path),
            names=str(path), case="exp file --metrics hostile JSON")


@pytest.mark.parametrize(("record", "exit_code"), [
    ('{"op": "claim", "vid": "v1' + "0" * 5000 + '"}', 0),  # a 5000-digit id is no id: skipped, never int()
    ('{"n": 1' + "0" * 5000 + "}", 2),
    ('{"op": ' + "[" * 50_000 + "]" * 50_000 + "}", 2),
], ids=["5000-digit id", "5000-digit integer", "50000-deep"])
def test_row86_a_journal_line_with_a_huge_integer_or_deep_nesting(wiki, tmp_path, record, exit_code):
    (wiki / JOURNAL).write_text(record + "\n" + '{"op": "start", "session": 1}\n')
    commit_all(wiki)
    if exit_code == 2:
        refused(wiki, *exp_new(proposal_file(tmp_path)), names=f"{JOURNAL}:1:", case="exp new, hostile journal")
    else:
        proc = run_wiki(wiki, *exp_new(proposal_file(tmp_path)), case="exp new, hostile journal")
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr


def test_row86_the_reading_path_bounds_json_by_digits_and_depth_not_by_brackets_in_strings():
    from wikiengine.core.errors import PageError
    from wikiengine.core.safe_read import MAX_INT_DIGITS, MAX_JSON_DEPTH, load_json

    assert load_json('{"a": "' + "[" * 500 + '", "b": -' + "9" * MAX_INT_DIGITS + "}")["b"] == -int("9" * MAX_INT_DIGITS)
    assert load_json("[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH) is not None  # at the bound: read
    with pytest.raises(PageError, match=r"x\.json:3: an integer of 65 digits"):
        load_json('{"n": -' + "1" * (MAX_INT_DIGITS + 1) + "}", "x.json", 3)
    with pytest.raises(PageError, match=r"nested too deep \(more than"):
        load_json('{"a": ' + "[" * (MAX_JSON_DEPTH + 1) + "]" * (MAX_JSON_DEPTH + 1) + "}", "x.json")
    with pytest.raises(ValueError):  # invalid JSON stays json's own error, for the caller to word
        load_json("{", "x.json")


def test_row81_the_reading_path_reads_a_log_tail_and_refuses_what_is_not_a_file(tmp_path):
    from wikiengine.core.errors import PageError
    from wikiengine.core.safe_read import read_regular, read_tail, repo_text

    log = tmp_path / "log.txt"
    log.write_bytes(b"x" * 100 + b"tail")
    assert read_tail(log, 4) == b"tail" and read_tail(tmp_path / "none", 4) == b""
    os.mkfifo(tmp_path / "pipe")
    for read in (lambda p: read_tail(p, 4), lambda p: read_regular(p, limit=10)):
        with pytest.raises(PageError, match="not a regular file"):
            read(tmp_path / "pipe")
    with pytest.raises(PageError, match=r"too large \(104 bytes; the limit is 10\)"):
        read_regular(log, limit=10)
    os.symlink(log, tmp_path / "inside.md")
    assert repo_text(tmp_path, "inside.md").endswith("tail")  # a link that stays inside is followed
    assert repo_text(tmp_path, "absent.md") is None
    os.symlink("absent-target", tmp_path / "dangling.md")  # something is there: never "absent"
    with pytest.raises(PageError, match="no such file"):
        repo_text(tmp_path, "dangling.md")


# --- row 88: the authorization record -----------------------------------------------------


def test_row88_a_non_ascii_signature_in_stop_authorized_is_refused_not_a_crash(wiki):
    from wikiengine.model.lanes import Lane
    from wikiengine.step.audit import STOP_AUTHORIZED, check_authorization

    lane = Lane("gemma4_autoresearch_optimization", "tpu")
    path = wiki / lane.dir / STOP_AUTHORIZED
    path.write_text("all clear\nwiki=0\ncode=0\nsession=1\nsignature=é\n", encoding="utf-8")
    record, why = check_authorization(wiki, lane, 1)
    assert record is None and "signature" in why
    path.unlink()
    os.mkfifo(path)
    with pytest.raises(Exception, match="not a regular file"):
        check_authorization(wiki, lane, 1)


# --- row 89: a 5000-digit topology ----------------------------------------------------------


def test_row89_a_5000_digit_topology_is_one_line(wiki):
    env = wiki / ".env"
    env.mkdir()
    (env / "gke-v5p-2x2x2-alice.md").write_text(
        "# cluster\n\n## Topology\n\n- **TPU**: v5p, 2x2x" + "9" * 5000 + " topology = 8 chips per slice\n\n"
        "## Connection\n\n- **Cluster**: c1\n- **Zone**: us-east5-a\n- **Project**: p\n")
    line = refused(wiki, "clusters", "--list", names="gke-v5p-2x2x2-alice.md:5", case="clusters, 5000-digit topology")
    assert "too large" in line


# --- row 92: a local lane run leaves nothing in the host's TMPDIR ----------------------------

INDUCTOR_PROGRAM = """
import os, pathlib
from torch._inductor.runtime.cache_dir_utils import cache_dir
made = pathlib.Path(cache_dir())  # where torch.compile puts its cache, and creates it
(made / "kernel.py").write_text("# a compiled kernel")
pathlib.Path(os.environ["TMPDIR"], "scratch.bin").write_bytes(b"x")
print("cache at", made, flush=True)
"""


@pytest.mark.waits
def test_row92_a_local_lane_run_has_its_own_tmpdir_and_inductor_cache_removed_after(tmp_path, monkeypatch):
    if importlib.util.find_spec("torch") is None:
        pytest.skip("torch is not installed")
    from wikiengine.core.identity import workload_name
    from wikiengine.executors.lane_backend import LaunchSpec
    from wikiengine.executors.lane_local import LocalLaneBackend, runs_folder

    host_tmp = tmp_path / "host-tmp"
    host_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(host_tmp))
    monkeypatch.delenv("TORCHINDUCTOR_CACHE_DIR", raising=False)
    root = tmp_path / "repo"
    root.mkdir()
    backend = LocalLaneBackend(root, "gemma4_autoresearch_optimization", "tpu", kill_grace_s=1.0)
    name = workload_name("demo", "gemma4", "tpu", 51, "compile")
    backend.launch(LaunchSpec(name, "v051", "compile", 1, [sys.executable, "-c", INDUCTOR_PROGRAM], timeout_s=120))
    deadline = time.monotonic() + 120
    while not ((run := backend.status(name)) and run.is_finished):
        assert time.monotonic() < deadline, "the run did not end"
        time.sleep(0.1)
    assert run.state == "succeeded", backend.logs(name)
    folder = runs_folder(root, "gemma4_autoresearch_optimization", "tpu") / name
    assert f"cache at {folder / 'tmp' / 'torchinductor'}" in backend.logs(name)  # the run's own cache, not /tmp's
    assert not (folder / "tmp").exists()  # removed when the run ended
    assert list(host_tmp.iterdir()) == []  # no torchinductor_<user> left in the host's TMPDIR


def test_worst_case_report():
    """Write the worst case's cost where ``WIKI_HOSTILE_REPORT`` asks (run last, by file order)."""
    target = os.environ.get("WIKI_HOSTILE_REPORT")
    if target and WORST["case"]:
        Path(target).write_text(json.dumps(WORST, indent=2) + "\n")
