"""Sessions: exact resume, interrupted saves (row 1), the stale-stop guard, refusals, time budget."""

from __future__ import annotations

import hashlib
import io
import json
import signal
import subprocess
import sys
import textwrap

import pytest
import torch
from torch_threads import one_torch_thread  # noqa: E402,F401  (autouse: one torch thread)

from wikiengine.executors.local_store import LocalGitStore
from wikiengine.training import session
from wikiengine.training.checkpoint import read_cursor, read_trainer_state, read_verified_from_store
from wikiengine.training.demo import create_demo_run


def _events(capsys) -> list[dict]:
    return [json.loads(line) for line in capsys.readouterr().out.splitlines() if line.startswith("{")]


def _final(run, step):
    store = run.store()
    return read_verified_from_store(store, step, store.head())


def _losses(files):
    return [(e["step"], e["loss"], e["grad_norm"], e["learning_rate"])
            for e in read_trainer_state(files["trainer_state.json"])["log_history"]]


def _torch(files, name):
    return torch.load(io.BytesIO(files[name]), weights_only=True)


def _assert_same_state(a, b):
    assert a["model.safetensors"] == b["model.safetensors"]  # bitwise-identical weights
    assert _losses(a) == _losses(b)
    opt_a, opt_b = _torch(a, "optimizer.pt"), _torch(b, "optimizer.pt")
    assert opt_a["param_groups"] == opt_b["param_groups"]
    for key in opt_a["state"]:
        for name, value in opt_a["state"][key].items():
            assert torch.equal(value, opt_b["state"][key][name]), (key, name)
    assert _torch(a, "scheduler.pt") == _torch(b, "scheduler.pt")
    assert torch.equal(_torch(a, "rng_state.pth")["cpu"], _torch(b, "rng_state.pth")["cpu"])
    assert a["cursor.json"] == b["cursor.json"]


@pytest.mark.parametrize("logging_steps", [1, 2])
def test_exact_resume_is_bitwise_identical(tmp_path, logging_steps):
    """0 -> 8 in one session equals 0 -> 4, stop, resume -> 8 (weights, optimizer, losses, RNG)."""
    straight = create_demo_run(tmp_path / "straight", max_steps=8, session_steps=8, logging_steps=logging_steps)
    assert session.main(straight.session_argv()) == 0
    relay = create_demo_run(tmp_path / "relay", max_steps=8, session_steps=4, logging_steps=logging_steps)
    assert session.main(relay.session_argv()) == 0
    assert relay.store().read_pointer(relay.store().head()).step == 4
    torch.manual_seed(999)  # disturb every RNG between the sessions: the resume must restore them
    torch.rand(100)
    assert session.main(relay.session_argv()) == 0
    _assert_same_state(_final(straight, 8), _final(relay, 8))


def test_demo_runs_three_sessions_and_the_wake_arithmetic_holds(tmp_path, capsys):
    run = create_demo_run(tmp_path / "run")
    ends, _outputs = [], []
    for _ in range(4):
        assert session.main(run.session_argv()) == 0
        _outputs.append(capsys.readouterr().out)
        ends.append(json.loads(_outputs[-1].strip().splitlines()[-1]))
    assert [(e["start_step"], e["end_step"], e["reason"]) for e in ends] == [
        (0, 8, "boundary"), (8, 16, "boundary"), (16, 24, "max_steps"), (24, 24, "finished")]
    store = run.store()
    head = store.head()
    titles = [c.title for c in store.list_commits(head)]
    assert titles[:3] == ["final 24", "latest -> 24", "checkpoint 24"]  # final/ once, after the last pointer
    assert titles.count("create checkpoint store") == 1 and len(titles) == 1 + 2 * 6 + 1
    final = {p.split("/", 1)[1]: store.read_file(p, head) for p in store.list_files("final", head)}
    assert final["model.safetensors"] == read_verified_from_store(store, 24, head)["model.safetensors"]
    events = [json.loads(line) for line in "".join(_outputs).splitlines() if line.startswith("{")]
    logged = {e["step"]: e["manifest_sha256"] for e in events if e["event"] == "checkpoint"}
    assert logged == {s: hashlib.sha256(read_verified_from_store(store, s, head)["manifest.json"]).hexdigest()
                      for s in range(4, 25, 4)}  # the session's own record of what it wrote
    assert [e["manifest_sha256"] for e in events if e["event"] == "final"] == [
        hashlib.sha256(final["manifest.json"]).hexdigest()]
    previous_loss = float("inf")
    for step in range(4, 25, 4):
        files = read_verified_from_store(store, step, head)
        cursor = read_cursor(files["cursor.json"])
        assert (cursor.tokens_consumed, cursor.samples_consumed) == (step * 8 * 64, step * 8)
        state = read_trainer_state(files["trainer_state.json"])
        assert state["global_step"] == step
        loss = state["log_history"][-1]["loss"]
        assert loss < previous_loss
        previous_loss = loss


def test_log_entries_average_their_interval_like_the_hf_trainer(tmp_path):
    every = create_demo_run(tmp_path / "every", max_steps=8, session_steps=8, logging_steps=1)
    pairs = create_demo_run(tmp_path / "pairs", max_steps=8, session_steps=8, logging_steps=2)
    assert session.main(every.session_argv()) == 0 and session.main(pairs.session_argv()) == 0
    step_losses = [loss for _, loss, _, _ in _losses(_final(every, 8))]
    logged = read_trainer_state(_final(pairs, 8)["trainer_state.json"])["log_history"]
    assert [e["step"] for e in logged] == [2, 4, 6, 8]
    assert [e["loss"] for e in logged] == pytest.approx(
        [(step_losses[i] + step_losses[i + 1]) / 2 for i in (0, 2, 4, 6)], rel=1e-6)


KILLER = textwrap.dedent("""
    import os, signal, sys
    from wikiengine.executors.local_store import LocalGitStore
    from wikiengine.training import session
    real = LocalGitStore.commit_pointer
    def commit_pointer(self, step, parent):
        if step == int(sys.argv[1]):
            os.kill(os.getpid(), signal.SIGKILL)  # killed between the checkpoint commit and the pointer commit
        return real(self, step, parent)
    LocalGitStore.commit_pointer = commit_pointer
    raise SystemExit(session.main(sys.argv[2:]))
""")


def test_row01_killed_between_checkpoint_and_pointer_commit_loses_nothing(tmp_path, capsys):
    run = create_demo_run(tmp_path / "run", max_steps=8, session_steps=8)
    killed = subprocess.run([sys.executable, "-c", KILLER, "8", *run.session_argv()], capture_output=True, text=True,
                            timeout=300)
    assert killed.returncode == -signal.SIGKILL
    store = run.store()
    head = store.head()
    assert [c.title for c in store.list_commits(head)][:3] == ["checkpoint 8", "latest -> 4", "checkpoint 4"]
    assert store.read_pointer(head).step == 4  # the pointer did not move: checkpoint 8 is not trusted

    assert session.main(run.session_argv()) == 0
    events = _events(capsys)
    assert {"event": "unnamed_checkpoint", "path_in_repo": "ckpt/checkpoint-8", "pointer_step": 4,
            "commit": head}.items() <= next(e for e in events if e["event"] == "unnamed_checkpoint").items()
    assert next(e for e in events if e["event"] == "plan")["resume_step"] == 4
    assert events[-1]["start_step"] == 4 and events[-1]["end_step"] == 8
    assert store.read_pointer(store.head()).step == 8
    assert store.is_ancestor(head, store.head())  # the quarantined commit stays in the history

    clean = create_demo_run(tmp_path / "clean", max_steps=8, session_steps=8)
    assert session.main(clean.session_argv()) == 0
    _assert_same_state(_final(clean, 8), _final(run, 8))


def test_row01_unnamed_checkpoint_is_never_loaded(tmp_path, capsys):
    """A corrupt checkpoint 8 beyond the pointer does not stop a resume from 4."""
    run = create_demo_run(tmp_path / "run", max_steps=8, session_steps=4)
    assert session.main(run.session_argv()) == 0
    store = run.store()
    junk = tmp_path / "junk"
    junk.mkdir()
    (junk / "model.safetensors").write_bytes(b"not a model")
    store.commit_checkpoint(8, junk, store.head())
    assert session.main(run.session_argv()) == 0
    assert _events(capsys)[-1]["end_step"] == 8


class MovingStore:
    """A store whose branch another writer moves right before our save of ``step``."""

    def __init__(self, inner: LocalGitStore, mode: str):
        self.inner, self.mode, self.heads = inner, mode, 0

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def head(self):
        self.heads += 1
        real = self.inner.head()
        if self.heads == 3:  # 1: observe, 2: guard before save 4, 3: guard before save 8
            moved = self.inner.commit_pointer(4, real)  # another session's commit
            return real if self.mode == "lie" else moved
        return real


@pytest.mark.parametrize("mode", ["guard", "lie"])
def test_stale_stop_guard_stops_when_another_session_moved_the_pointer(tmp_path, capsys, mode):
    run = create_demo_run(tmp_path / "run", max_steps=8, session_steps=8)
    store = MovingStore(run.store(), mode)
    assert session.main(run.session_argv(), store=store) == session.EXIT_STALE
    end = _events(capsys)[-1]
    assert (end["event"], end["reason"], end["start_step"], end["end_step"]) == ("session_end", "stale_pointer", 0, 4)
    titles = [c.title for c in run.store().list_commits(run.store().head())]
    assert titles[0] == "latest -> 4" and "checkpoint 8" not in titles  # we never wrote over the other writer


class LostResponseStore(MovingStore):
    """The pointer commit of step 8 lands, but its answer is lost (a Hub 500 after the commit)."""

    def head(self):
        return self.inner.head()

    def commit_pointer(self, step, parent):
        commit = self.inner.commit_pointer(step, parent)
        if step == 8:
            from wikiengine.executors.store import StoreUnavailableError

            raise StoreUnavailableError("hub: 500 Internal Server Error")
        return commit


def test_save_with_an_unknown_outcome_stops_and_the_next_session_plans_from_the_pointer(tmp_path, capsys):
    run = create_demo_run(tmp_path / "run", max_steps=12, session_steps=12)
    assert session.main(run.session_argv(), store=LostResponseStore(run.store(), "")) == session.EXIT_STALE
    end = _events(capsys)[-1]
    assert (end["reason"], end["end_step"]) == ("store_error", 4)
    assert run.store().read_pointer(run.store().head()).step == 8  # it had landed
    assert session.main(run.session_argv()) == 0
    assert [e for e in _events(capsys) if e["event"] == "plan"][0]["resume_step"] == 8


def test_planner_disagreement_refuses_to_start(tmp_path, capsys):
    run = create_demo_run(tmp_path / "run", max_steps=8, session_steps=4)
    assert session.main(run.session_argv()) == 0
    capsys.readouterr()
    # the same store resumed with a config whose save grid does not contain the pointer step
    run.config_path.write_text(run.config_path.read_text().replace('"save_steps": 4', '"save_steps": 3')
                               .replace('"session_steps": 4', '"session_steps": 6'))
    assert session.main(run.session_argv()) == session.EXIT_REFUSED
    err = capsys.readouterr().err
    assert err.startswith("error: planner arithmetic disagrees") and err.count("\n") == 1


def test_pinned_data_sha_mismatch_refuses_to_start(tmp_path, capsys):
    run = create_demo_run(tmp_path / "run", dataset_files_sha="0123456789abcdef")
    assert session.main(run.session_argv()) == session.EXIT_REFUSED
    assert "dataset_files_sha" in capsys.readouterr().err


def test_pinned_shas_that_match_are_accepted(tmp_path):
    from wikiengine.training.data import open_corpus

    corpus = open_corpus(None, 64, 1234)
    run = create_demo_run(tmp_path / "run", max_steps=4, session_steps=4, dataset_files_sha=corpus.files_sha,
                          shuffle_perm_sha=corpus.perm_sha)
    assert session.main(run.session_argv()) == 0


def test_resume_with_another_seed_is_refused(tmp_path, capsys):
    run = create_demo_run(tmp_path / "run", max_steps=8, session_steps=4)
    assert session.main(run.session_argv()) == 0
    run.config_path.write_text(run.config_path.read_text().replace('"seed": 1234', '"seed": 1235'))
    assert session.main(run.session_argv()) == session.EXIT_REFUSED
    assert "cursor.json seed 1234 != 1235" in capsys.readouterr().err
    assert run.store().read_pointer(run.store().head()).step == 4


def test_time_budget_stops_at_the_last_save_that_fits(tmp_path, capsys, monkeypatch):
    """The session asks the planner after every step whether the next save still fits."""
    from wikiengine.training import plan

    asked = []

    def fits_until_4(step, next_save, elapsed_s, budget_s, seconds_per_step, seconds_per_save):
        asked.append((step, next_save))
        return step < 4

    monkeypatch.setattr(plan, "next_save_fits", fits_until_4)
    run = create_demo_run(tmp_path / "run")
    assert session.main(run.session_argv("--timeout-seconds", "3600")) == 0
    end = _events(capsys)[-1]
    assert (end["start_step"], end["end_step"], end["reason"]) == (0, 4, "time")
    assert asked == [(1, 4), (2, 4), (3, 4), (4, 8)]
    assert run.store().read_pointer(run.store().head()).step == 4


def test_a_first_interval_longer_than_the_budget_stops_before_any_save(tmp_path, capsys):
    run = create_demo_run(tmp_path / "run", save_margin_s=0.0)
    assert session.main(run.session_argv("--timeout-seconds", "0.000001")) == 0
    end = _events(capsys)[-1]
    assert (end["start_step"], end["end_step"], end["reason"]) == (0, 0, "time")
    assert run.store().read_pointer(run.store().head()) is None


def test_no_budget_never_asks(tmp_path, capsys, monkeypatch):
    from wikiengine.training import plan

    monkeypatch.setattr(plan, "next_save_fits", lambda *args: pytest.fail("asked without a budget"))
    monkeypatch.delenv("QUOTA_LEFT_HOURS", raising=False)
    monkeypatch.delenv("SESSION_TIMEOUT_SECONDS", raising=False)
    run = create_demo_run(tmp_path / "run", max_steps=4, session_steps=4)
    assert session.main(run.session_argv()) == 0
    assert _events(capsys)[-1]["end_step"] == 4


def test_checkpoint_of_another_world_size_resumes_with_a_warning(tmp_path, capsys):
    """A 2-rank checkpoint (rng_state_0/1.pth) resumes on one process: same cursor, a warning."""
    run = create_demo_run(tmp_path / "run", max_steps=8, session_steps=4)
    assert session.main(run.session_argv()) == 0
    store = run.store()
    head = store.head()
    folder = tmp_path / "two-ranks"
    folder.mkdir()
    files = read_verified_from_store(store, 4, head)
    files["rng_state_0.pth"] = files["rng_state_1.pth"] = files.pop("rng_state.pth")
    del files["manifest.json"]
    from wikiengine.training.checkpoint import build_manifest

    for name, data in files.items():
        (folder / name).write_bytes(data)
    (folder / "manifest.json").write_bytes(build_manifest(files, 4))
    store.commit_pointer(4, store.commit_checkpoint(4, folder, head))
    capsys.readouterr()
    assert session.main(run.session_argv()) == 0
    events = _events(capsys)
    assert any(e["event"] == "warning" and "another world size" in e["detail"] for e in events)
    assert events[-1]["end_step"] == 8


def test_no_quota_left_refuses_to_start(tmp_path, capsys, monkeypatch):
    run = create_demo_run(tmp_path / "run")
    monkeypatch.setenv("QUOTA_LEFT_HOURS", "0")
    assert session.main(run.session_argv()) == session.EXIT_REFUSED
    assert "no time budget" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("argv_extra", "config_text", "message"),
    [
        ([], '{"preset": "tiny", "max_steps": 24.0}', "max_steps must be an integer"),
        ([], '{"preset": "huge"}', "preset must be one of"),
        ([], '{"max_steps": 8, "max_steps": 9}', "duplicate key"),
        ([], '{"bogus": 1}', "unknown config key"),
        ([], '{"samples_per_step": 6, "micro_batch": 4}', "not a multiple of micro_batch"),
        ([], "not json", "invalid JSON"),
        (["--quota-left-hours", "lots"], "{}", "not a number"),
        (["--timeout-seconds", "nan"], "{}", "finite"),
        (["--frobnicate"], "{}", "unrecognized arguments"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv_extra, config_text, message):
    run = create_demo_run(tmp_path / "run")
    run.config_path.write_text(config_text)
    assert session.main(run.session_argv(*argv_extra)) == 2
    captured = capsys.readouterr()
    assert captured.err.count("\n") == 1 and message in captured.err and captured.err.startswith("error: ")
    assert json.loads(captured.out.splitlines()[-1])["reason"] == "bad_input"


def test_bad_input_at_the_command_line_has_no_traceback(tmp_path):
    run = create_demo_run(tmp_path / "run")
    run.config_path.write_text('{"preset": "tiny", "max_steps": 24.0}')
    result = subprocess.run([sys.executable, "-m", "wikiengine.training.session", *run.session_argv()], capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 2
    assert result.stderr == f"error: {run.config_path}: max_steps must be an integer, got 24.0\n"
    assert json.loads(result.stdout.splitlines()[-1]) == {
        "event": "session_end", "start_step": None, "end_step": None, "reason": "bad_input",
        "detail": f"{run.config_path}: max_steps must be an integer, got 24.0"}


@pytest.mark.parametrize("config_text", ['{"preset": "tiny", "max_steps": 24.0}', "not json"])
def test_a_bad_run_config_is_refused_before_torch_is_imported(tmp_path, config_text):
    """The refusal is one line and costs no torch import (1.3 s of CPU when the device default
    was asked for before the run config was read)."""
    run = create_demo_run(tmp_path / "run")
    run.config_path.write_text(config_text)
    probe = ("import sys; from wikiengine.training import session; code = session.main(sys.argv[1:]); "
             "print('torch' in sys.modules, code, file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", probe, *run.session_argv()], capture_output=True, text=True,
                            timeout=300)
    assert result.stderr.splitlines()[-1] == "False 2", result.stderr


def test_missing_store_is_a_refusal_not_a_traceback(tmp_path):
    run = create_demo_run(tmp_path / "run")
    result = subprocess.run([sys.executable, "-m", "wikiengine.training.session", "--store", str(tmp_path / "nowhere"),
                             "--config", str(run.config_path), "--no-progress"], capture_output=True, text=True,
                            timeout=120)
    assert result.returncode == 3 and "Traceback" not in result.stderr
    assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1


@pytest.mark.parametrize("case", ["missing store", "no time left"])
def test_a_session_refused_by_its_store_or_plan_imports_no_torch(tmp_path, case):
    """A single process reads the store and makes its plan before it imports torch (1.3 s of
    CPU): a store it cannot read, or a budget already spent, is answered without it."""
    run = create_demo_run(tmp_path / "run")
    argv = run.session_argv("--timeout-seconds", "0") if case == "no time left" else \
        ["--store", str(tmp_path / "nowhere"), "--config", str(run.config_path), "--no-progress"]
    probe = ("import sys; from wikiengine.training import session; code = session.main(sys.argv[1:]); "
             "print('torch' in sys.modules, code, file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, timeout=300)
    assert result.stderr.splitlines()[-1] == "False 3", result.stderr
    expected = "error: no time budget left" if case == "no time left" else "error: "
    assert result.stderr.startswith(expected), result.stderr


class NoFinalStore(MovingStore):
    """The final/ commit fails with an unknown outcome (and did not land)."""

    def head(self):
        return self.inner.head()

    def commit_final(self, step, local_dir, parent):
        from wikiengine.executors.store import StoreUnavailableError

        raise StoreUnavailableError("hub: 503 Service Unavailable")


def test_a_session_that_finds_the_run_finished_without_final_writes_it(tmp_path, capsys):
    """Issue 13 item 1: final/ is required at the finish; a last session stopped before its final/ commit
    leaves it to the next one, which writes it from the verified last checkpoint."""
    run = create_demo_run(tmp_path / "run", max_steps=8, session_steps=8)
    assert session.main(run.session_argv(), store=NoFinalStore(run.store(), "")) == session.EXIT_STALE
    assert _events(capsys)[-1]["reason"] == "store_error"
    store = run.store()
    assert store.list_files("final", store.head()) == []
    assert session.main(run.session_argv()) == 0
    events = _events(capsys)
    assert [e["event"] for e in events if e["event"] in ("final", "session_end")] == ["final", "session_end"]
    head = store.head()
    final = {p.split("/", 1)[1]: store.read_file(p, head) for p in store.list_files("final", head)}
    assert final["model.safetensors"] == read_verified_from_store(store, 8, head)["model.safetensors"]
    assert events[-1]["reason"] == "finished"
