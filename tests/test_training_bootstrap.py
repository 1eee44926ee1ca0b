"""The pinned bootstrap (RELIABILITY row 48): the executed bytes are the hashed bytes.

A scratch git repository holds a copy of ``training/`` and ``executors/`` at a commit;
the bootstrap pinned to that commit fetches ``training/launcher.py``, checks its sha256,
and the launcher runs a session from the tree exported at the same commit.
"""

from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from torch_threads import one_torch_thread  # noqa: E402,F401  (autouse: one torch thread)

from wikiengine.training.demo import create_demo_run
from wikiengine.training.launch import (
    QUOTA_LINE_NUMBER,
    BootstrapError,
    bootstrap_template,
    check_rendered,
    launcher_sha,
    pin_bootstrap,
    render_bootstrap,
)

PROJECT = Path(__file__).resolve().parents[1]
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t.invalid", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t.invalid"}


def _git(repo, *args):
    import os

    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          env={**os.environ, **GIT_ENV}).stdout.decode().strip()


def _commit_all(repo, message):
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", message)
    return _git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def code_repo(tmp_path_factory):
    """A git repository with the project's training/ and executors/ packages at one commit."""
    repo = tmp_path_factory.mktemp("code") / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "--initial-branch=main")
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in ("training", "executors"):
        shutil.copytree(PROJECT / package, repo / package, ignore=ignore)
    rev = _commit_all(repo, "code")
    return repo, rev


def _pinned(repo, rev, run, launcher=None):
    sha = launcher or launcher_sha(repo, rev)
    return pin_bootstrap(bootstrap_template(), str(repo), rev, sha,
                         ["--store", str(run.store_path), "--config", "{tree}/run.json", "--out", str(run.out_dir),
                          "--no-progress"])


def _run_bootstrap(text, tmp_path):
    script = tmp_path / "kernel.py"
    script.write_text(text)
    return subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, cwd=tmp_path)


def _repo_with_config(code_repo, tmp_path, run):
    """A clone of the code repository with the run config committed (a pinned config)."""
    repo, _ = code_repo
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    shutil.copy(run.config_path, clone / "run.json")
    return clone, _commit_all(clone, "pin the run config")


def test_template_has_the_quota_line_on_line_13():
    lines = bootstrap_template().split("\n")
    assert lines[QUOTA_LINE_NUMBER - 1] == 'os.environ["QUOTA_LEFT_HOURS"] = "0"'
    assert sum("QUOTA_LEFT_HOURS\"] =" in line for line in lines) == 1


def test_row48_rendered_bootstrap_runs_a_session_at_the_pinned_rev(code_repo, tmp_path):
    run = create_demo_run(tmp_path / "run", max_steps=4, session_steps=4)
    repo, rev = _repo_with_config(code_repo, tmp_path, run)
    text = render_bootstrap(_pinned(repo, rev, run), "7.25")
    assert check_rendered(_pinned(repo, rev, run), text) == "7.25"
    result = _run_bootstrap(text, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    events = [json.loads(line) for line in result.stdout.splitlines() if line.startswith("{")]
    assert events[0] == {"event": "bootstrap", "rev": rev, "launcher_sha256": launcher_sha(repo, rev)}
    plan = next(e for e in events if e["event"] == "plan")
    assert plan["budget_s"] == pytest.approx(7.25 * 3600 - 60)  # QUOTA_LEFT_HOURS reached the session
    assert events[-1]["event"] == "session_end" and events[-1]["end_step"] == 4
    assert run.store().read_pointer(run.store().head()).step == 4


@pytest.mark.parametrize("rev", ["main", "HEAD", "c237b478", "C237B478076F68DA43DABD3403DAA5639286899E",
                                 "c237b478076f68da43dabd3403daa5639286899e0", "UNPINNED"])
def test_row48_rev_not_40_hex_is_refused_before_any_fetch(tmp_path, rev):
    with pytest.raises(BootstrapError, match="40-hex"):
        pin_bootstrap(bootstrap_template(), "/nowhere", rev, "a" * 64, [])
    text = bootstrap_template().replace('REV = "UNPINNED"', f"REV = {json.dumps(rev)}")
    text = text.replace('LAUNCHER_SHA = "UNPINNED"', f'LAUNCHER_SHA = "{"a" * 64}"').replace(
        'REPO = "UNPINNED"', f'REPO = "{tmp_path / "no-such-repo"}"')
    result = _run_bootstrap(text, tmp_path)
    assert result.returncode == 3
    assert result.stderr.startswith("bootstrap refused: REV is not a 40-hex commit id")
    assert "git" not in result.stderr  # refused before fetching anything


def test_row48_shipped_unpinned_template_refuses_to_run(tmp_path):
    result = _run_bootstrap(bootstrap_template(), tmp_path)
    assert result.returncode == 3 and "REV is not a 40-hex" in result.stderr


def test_row48_changed_launcher_bytes_are_refused(code_repo, tmp_path):
    run = create_demo_run(tmp_path / "run", max_steps=4, session_steps=4)
    repo, rev = _repo_with_config(code_repo, tmp_path, run)
    good_sha = launcher_sha(repo, rev)
    launcher = repo / "training" / "launcher.py"
    launcher.write_text(launcher.read_text() + "\nprint('tampered')\n")
    tampered_rev = _commit_all(repo, "tamper with the launcher")
    text = render_bootstrap(_pinned(repo, tampered_rev, run, launcher=good_sha), "3")
    result = _run_bootstrap(text, tmp_path)
    assert result.returncode == 3
    assert "training/launcher.py at" in result.stderr and "has sha256" in result.stderr
    assert "tampered" not in result.stdout
    assert run.store().read_pointer(run.store().head()) is None  # nothing ran


def test_row48_files_swapped_after_pinning_do_not_reach_exec(code_repo, tmp_path):
    """The working tree and later commits change; the pinned REV's bytes are what runs."""
    run = create_demo_run(tmp_path / "run", max_steps=4, session_steps=4)
    repo, rev = _repo_with_config(code_repo, tmp_path, run)
    text = render_bootstrap(_pinned(repo, rev, run), "3")
    marker = tmp_path / "evil-ran"
    launcher = repo / "training" / "launcher.py"
    launcher.write_text(f"open({str(marker)!r}, 'w').write('x')\n")
    _commit_all(repo, "swap the launcher after pinning")
    launcher.write_text(f"open({str(marker)!r}, 'w').write('y')\n")  # and an uncommitted swap on disk
    result = _run_bootstrap(text, tmp_path)
    assert result.returncode == 0, result.stderr[-2000:]
    assert not marker.exists()


def test_row48_executed_bytes_are_the_hashed_bytes(tmp_path):
    """A source that answers differently on a second read cannot swap the code after the hash."""
    good = f"open({str(tmp_path / 'ran')!r}, 'w').write('good')\n".encode()
    evil = f"open({str(tmp_path / 'ran')!r}, 'w').write('evil')\n".encode()
    answers = [good, evil, evil]
    calls = []

    def fetch(repo, rev, path):
        calls.append((repo, rev, path))
        return answers[len(calls) - 1]

    text = bootstrap_template().replace('REV = "UNPINNED"', f'REV = "{"1" * 40}"').replace(
        'LAUNCHER_SHA = "UNPINNED"', f'LAUNCHER_SHA = "{hashlib.sha256(good).hexdigest()}"').replace(
        'os.environ["QUOTA_LEFT_HOURS"] = "0"', 'os.environ["QUOTA_LEFT_HOURS"] = "1"')
    namespace = {"__name__": "bootstrap_under_test"}
    exec(compile(text, "bootstrap.py", "exec"), namespace)
    namespace["fetch"] = fetch
    namespace["main"]()
    assert len(calls) == 1
    assert (tmp_path / "ran").read_text() == "good"


def test_render_changes_line_13_only():
    template = pin_bootstrap(bootstrap_template(), "/repo", "c237b478076f68da43dabd3403daa5639286899e", "5f" * 32,
                             ["--store", "/s"])
    rendered = render_bootstrap(template, "11.5")
    differing = [n for n, (a, b) in enumerate(zip(template.split("\n"), rendered.split("\n")), 1) if a != b]
    assert differing == [13]
    assert rendered.split("\n")[12] == 'os.environ["QUOTA_LEFT_HOURS"] = "11.5"'
    assert 'REV = "c237b478076f68da43dabd3403daa5639286899e"' in rendered
    assert check_rendered(template, rendered) == "11.5"
    assert render_bootstrap(template, 4.0).split("\n")[12] == 'os.environ["QUOTA_LEFT_HOURS"] = "4.0"'


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t.replace('REV = "c237', 'REV = "d237'),
        lambda t: t.replace("fail(f\"REV is not", "print(f\"REV is not"),
        lambda t: t + "\nimport os; os.system('curl evil')",
        lambda t: t.replace('os.environ["QUOTA_LEFT_HOURS"] = "2"', 'os.environ["QUOTA_LEFT_HOURS"] = "2"; 1'),
        lambda t: t.replace('os.environ["QUOTA_LEFT_HOURS"] = "2"', 'os.environ["QUOTA_LEFT_HOURS"] = "2\\nx"'),
        lambda t: t.replace("\n", "\r\n"),
        lambda t: "\n".join(t.split("\n")[:-2]),
    ],
    ids=["rev", "logic", "appended", "quota-line-code", "quota-line-escape", "crlf", "truncated"],
)
def test_check_rendered_refuses_any_other_change(mutate):
    template = pin_bootstrap(bootstrap_template(), "/repo", "c237b478076f68da43dabd3403daa5639286899e", "5f" * 32, [])
    rendered = render_bootstrap(template, "2")
    with pytest.raises(BootstrapError):
        check_rendered(template, mutate(rendered))


@pytest.mark.parametrize("hours", ["-1", "1e3", "nan", "", "2 ", "1;import os", True, float("inf")])
def test_render_refuses_a_bad_quota(hours):
    with pytest.raises(BootstrapError):
        render_bootstrap(bootstrap_template(), hours)


def test_pin_refuses_a_bad_launcher_sha():
    with pytest.raises(BootstrapError, match="64 hex"):
        pin_bootstrap(bootstrap_template(), "/repo", "c237b478076f68da43dabd3403daa5639286899e", "5fb14bc3", [])


def test_row63_the_launcher_removes_the_session_tree_it_exported(tmp_path, monkeypatch):
    """A session runs from a tree exported into the temporary directory; the launcher removes
    it when the session ends (on Kaggle too), so nothing of a session is left behind."""
    import subprocess as sp

    from wikiengine.training import launcher

    repo = tmp_path / "pinned"
    (repo / "training").mkdir(parents=True)
    (repo / "training" / "__init__.py").write_text("")
    (repo / "training" / "session.py").write_text(
        "import sys, pathlib\npathlib.Path(sys.argv[1]).write_text(pathlib.Path(__file__).resolve().as_posix())\n")
    for args in (["init", "-q"], ["add", "-A"], ["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "pin"]):
        sp.run(["git", *args], cwd=repo, check=True)
    rev = sp.run(["git", "rev-parse", "HEAD"], cwd=repo, capture_output=True, text=True, check=True).stdout.strip()
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    monkeypatch.setattr(launcher.tempfile, "tempdir", None)  # read TMPDIR again
    ran_from = tmp_path / "ran-from.txt"
    import sys

    monkeypatch.setattr(launcher, "session_command",
                        lambda tree, args: [sys.executable, f"{tree}/training/session.py", *args])
    assert launcher.launch({"repo": str(repo), "rev": rev, "session_args": [str(ran_from)]}) == 0
    assert ran_from.read_text().startswith(str(scratch.resolve()) + "/session-tree-")
    assert list(scratch.iterdir()) == []


@pytest.mark.parametrize("driver", [False, True])
def test_the_launcher_asks_torch_for_gpus_only_where_a_gpu_driver_is(tmp_path, driver):
    """On Linux without a GPU driver's device node the launcher runs one session process
    without importing torch (1.3 s of CPU in a process that only waits); with one, torch counts.
    The probe names the node the launcher looks for, present or absent, whatever this machine has."""
    if not sys.platform.startswith("linux"):
        pytest.skip("the device nodes are Linux's")
    node = tmp_path / "nvidiactl"
    node.write_text("")
    probe = ("import sys\n"
             "from wikiengine.training import launcher\n"
             f"launcher.GPU_DRIVER_NODES = ({str(node) if driver else str(tmp_path / 'absent')!r},)\n"
             "command = launcher.session_command('/tree', ['--config', '{tree}/run.json'])\n"
             "print(launcher.gpu_count(), 'torch' in sys.modules, command[1:3])\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300)
    count, imported, command = done.stdout.split(" ", 2)
    assert imported == str(driver), done.stderr
    assert command.strip() == "['-m', 'wikiengine.training.session']" or int(count) > 1
