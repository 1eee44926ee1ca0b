"""The real optimization target of ``wiki demo autoresearch`` and its scripted queue.

No timed assertions: the figures that say which queue entry wins, loses or stays within
noise on a given machine are measured by running the CLI (see the module docstring of
:mod:`wikiengine.training.autoresearch_target`), never asserted here. What is asserted is what
cannot depend on load: the parity check, the op digest, the crash path, the files and
keys the lane reads, and that every queue entry demonstrates what it claims to.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from torch_threads import one_torch_thread  # noqa: F401  (autouse: one torch thread)

from wikiengine.core.errors import ExitCode
from wikiengine.training import autoresearch_target as target
from wikiengine.training.autoresearch_queue import BASELINE_CONFIG, OUTCOMES, QUEUE, VERDICTS, baseline_config
from wikiengine.training.autoresearch_target import (
    AUDIT_CONFIRMED,
    AUDIT_SILENT_NO_OP,
    PARITY_TOLERANCE,
    TargetConfig,
    TargetConfigError,
    TrainingStep,
    half_iqr,
    op_digest,
    op_trace,
    ops_markdown,
    parity_rel_err,
)

PROJECT = Path(__file__).resolve().parents[1]
METRIC_KEYS = {"tps", "frontier_tps", "noise_band", "parity", "parity_rel_err", "op_digest",
               "frontier_op_digest", "exit_code"}
QUICK = ["--rounds", "2", "--seconds", "0.05"]


@functools.cache
def _digest(config: TargetConfig) -> str:
    """The op digest of a config (deterministic, so computed once per config for the whole module)."""
    return op_digest(op_trace(config))


@functools.cache
def _parity(config: TargetConfig) -> float:
    return parity_rel_err(config)


def _config(**knobs) -> TargetConfig:
    return TargetConfig.from_dict({**BASELINE_CONFIG, **knobs})


def _write(path: Path, knobs: dict) -> Path:
    path.write_text(json.dumps(knobs))
    return path


def _run_cli(tmp_path: Path, candidate: dict, frontier: dict | None = None, *extra: str) -> tuple[int, Path]:
    tmp_path.mkdir(parents=True, exist_ok=True)
    out = tmp_path / "out"
    code = target.main(["--config", str(_write(tmp_path / "cand.json", candidate)),
                        "--frontier", str(_write(tmp_path / "front.json", frontier or {})),
                        "--out", str(out), *QUICK, *extra])
    return code, out


# --- parity ---------------------------------------------------------------------------------


@pytest.mark.parametrize("knobs", [{}, {"dtype": "bfloat16"}, {"dtype": "bfloat16", "batch": 96},
                                   {"layout": "in-out", "gelu": "fused", "adamw": "fused"},
                                   {"micro_batch": 16}, {"adamw": "foreach", "pin_memory": True}])
def test_parity_passes_for_implementations_of_the_same_math(knobs):
    assert _parity(_config(**knobs)) <= PARITY_TOLERANCE


def test_parity_fails_for_the_numerics_breaking_knob():
    error = _parity(_config(logsumexp="max"))
    assert error > 10 * PARITY_TOLERANCE


def test_bfloat16_is_measurably_less_exact_than_float32_yet_passes():
    """The check is sensitive enough to see bfloat16 at all (not a tolerance nothing reaches)."""
    fp32, bf16 = _parity(_config()), _parity(_config(dtype="bfloat16"))
    assert fp32 < 1e-4 < bf16 <= PARITY_TOLERANCE


def test_row_13_nan_outputs_fail_parity_closed():
    """RELIABILITY row 13: a NaN never passes a comparison; it counts as an infinite error."""
    nan = torch.tensor([1.0, math.nan], dtype=torch.float64)
    assert target._relative_error(nan, torch.tensor([1.0, 2.0], dtype=torch.float64)) == math.inf


def test_reference_is_the_definition_not_the_implementation():
    reference = target.reference_config(_config(batch=32, seed=5, dtype="bfloat16", adamw="fused",
                                                 logsumexp="max", layout="in-out", pin_memory=True))
    assert reference == TargetConfig(batch=32, seed=5)


# --- op digest ------------------------------------------------------------------------------


def test_op_digest_is_stable_across_traces_and_processes():
    here = op_digest(op_trace(_config()))
    assert here == op_digest(op_trace(_config()))
    code = ("from wikiengine.training.autoresearch_target import *; import torch; torch.set_num_threads(1); "
            "print(op_digest(op_trace(TargetConfig())))")
    elsewhere = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                               cwd=PROJECT).stdout.strip()
    assert elsewhere == here


def test_silent_no_op_knob_gives_the_frontiers_digest():
    assert _digest(_config(pin_memory=True)) == _digest(_config())


@pytest.mark.parametrize("knobs, expected_op", [
    ({"batch": 256}, "aten::addmm(float32[1024],float32[256, 256],float32[256, 1024])"),
    ({"adamw": "fused"}, "aten::_fused_adamw_"),
    ({"adamw": "foreach"}, "aten::_foreach_"),
    ({"gelu": "fused"}, "aten::gelu("),
    ({"dtype": "bfloat16"}, "bfloat16"),
    ({"logsumexp": "max"}, "aten::max.dim("),
])
def test_real_changes_change_the_digest_and_show_the_op(knobs, expected_op):
    ops = op_trace(_config(**knobs))
    assert op_digest(ops) != _digest(_config())
    assert any(expected_op in op for op in ops)


def test_op_trace_sees_forward_backward_and_optimizer():
    ops = op_trace(_config())
    names = {op.split("(")[0] for op in ops}
    assert {"aten::addmm", "aten::mm", "aten::erf", "aten::_log_softmax_backward_data", "aten::addcdiv_"} <= names


def test_ops_markdown_has_exactly_one_audit_line():
    base, changed = op_trace(_config()), op_trace(_config(gelu="fused"))
    confirmed, silent = ops_markdown(changed, base), ops_markdown(base, base)
    assert [line for line in confirmed.splitlines() if line.startswith("Hypothesis-firing audit")] == [AUDIT_CONFIRMED]
    assert [line for line in silent.splitlines() if line.startswith("Hypothesis-firing audit")] == [AUDIT_SILENT_NO_OP]
    assert "aten::gelu(" in confirmed and "| --- |" not in silent


# --- the step and the measurement ------------------------------------------------------------


def test_micro_batches_accumulate_to_the_full_batch_step():
    full, split = TrainingStep(_config()), TrainingStep(_config(micro_batch=16))
    losses = [(full.run(), split.run()) for _ in range(3)]
    assert all(a == pytest.approx(b, rel=1e-5) for a, b in losses)
    # AdamW divides by sqrt(v): float32 rounding of tiny gradients moves weights by a few 1e-6
    assert all(torch.allclose(a, b, atol=5e-5) for pa, pb in zip(full.params, split.params) for a, b in zip(pa, pb))


def test_the_step_trains():
    step = TrainingStep(_config(batch=128))
    losses = [step.run() for _ in range(30)]
    assert losses[-1] < 0.8 * losses[0]


def test_crash_knob_raises_in_the_step_not_in_validation():
    config = _config(micro_batch=48)
    with pytest.raises(RuntimeError, match="invalid for input of size"):
        TrainingStep(config).run()


def test_measure_interleaves_and_reports_one_line_per_round():
    lines = []
    result = target.measure(TrainingStep(_config()), TrainingStep(_config(batch=32)), rounds=3, seconds=0.01,
                            progress=lines.append)
    assert len(result.rounds) == 3 and len(lines) == 3 and lines[0].startswith("round 1/3: ")
    assert result.steps_per_round >= 2
    assert result.tps == pytest.approx(result.frontier_tps * result.speedup)
    assert result.noise_band >= 0 and result.frontier_tps > 0


def test_half_iqr():
    assert half_iqr([1.0, 2.0, 3.0, 4.0, 5.0]) == 1.0
    assert half_iqr([7.0]) == 0.0


# --- bad knobs -------------------------------------------------------------------------------


@pytest.mark.parametrize("data, needle", [
    ({"batchsize": 64}, "unknown knob 'batchsize'"),
    ({"batch": 0}, "batch must be a positive integer"),
    ({"batch": True}, "batch must be a positive integer"),
    ({"batch": 64.0}, "batch must be a positive integer"),
    ({"micro_batch": "8"}, "micro_batch must be a positive integer or null"),
    ({"dtype": "float16"}, "dtype must be one of float32, bfloat16"),
    ({"pin_memory": 1}, "pin_memory must be true or false"),
    ([1, 2], "must be a JSON object"),
])
def test_bad_knobs_are_one_clear_error(data, needle):
    with pytest.raises(TargetConfigError, match=needle):
        TargetConfig.from_dict(data)


def test_row_15_duplicate_knob_is_rejected_with_exit_2(tmp_path, capsys):
    """RELIABILITY row 15: ``{"batch": 64, "batch": 256}`` is refused, not read as the last value."""
    (tmp_path / "cand.json").write_text('{"batch": 64, "batch": 256}')
    _write(tmp_path / "front.json", {})
    code = target.main(["--config", str(tmp_path / "cand.json"), "--frontier", str(tmp_path / "front.json"),
                        "--out", str(tmp_path / "out"), *QUICK])
    err = capsys.readouterr().err
    assert code == 2 and "duplicate key 'batch'" in err and len(err.strip().splitlines()) == 1
    assert json.loads((tmp_path / "out" / "metrics.json").read_text())["exit_code"] == 2


def test_unknown_knob_exits_2_naming_the_file(tmp_path, capsys):
    code, out = _run_cli(tmp_path, {"compile": True})
    err = capsys.readouterr().err
    assert code == 2 and "cand.json: unknown knob 'compile'" in err
    assert not (out / "profile.md").exists()


# --- the CLI ---------------------------------------------------------------------------------


def test_cli_writes_metrics_profile_and_op_dump(tmp_path, capsys):
    code, out = _run_cli(tmp_path, {"gelu": "fused"}, {}, "--json")
    stdout = capsys.readouterr().out
    assert code == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert METRIC_KEYS <= set(metrics)
    assert metrics["exit_code"] == 0 and metrics["parity"] == "pass"
    assert metrics["op_digest"] != metrics["frontier_op_digest"]
    assert metrics["tps"] > 0 and metrics["frontier_tps"] > 0 and metrics["noise_band"] >= 0
    assert len(metrics["rounds"]) == 2
    assert [line for line in stdout.splitlines() if line.startswith("round ")][:2] == [
        line for line in stdout.splitlines() if line.startswith("round ")]
    assert json.loads(stdout[stdout.index("{"):]) == metrics
    profile = (out / "profile.md").read_text()
    assert "| op | candidate self ms | frontier self ms |" in profile and "`aten::addmm`" in profile
    hlo = (out / "hlo.md").read_text().splitlines()
    assert [line for line in hlo if line.startswith("Hypothesis-firing audit")] == [AUDIT_CONFIRMED]


def test_cli_no_op_and_numerics_break(tmp_path):
    code, out = _run_cli(tmp_path / "noop", {"pin_memory": True})
    metrics = json.loads((out / "metrics.json").read_text())
    assert code == 0 and metrics["op_digest"] == metrics["frontier_op_digest"]
    assert AUDIT_SILENT_NO_OP in (out / "hlo.md").read_text().splitlines()
    code, out = _run_cli(tmp_path / "xent", {"logsumexp": "max"})
    metrics = json.loads((out / "metrics.json").read_text())
    assert code == 0 and metrics["parity"] == "fail" and metrics["parity_rel_err"] > PARITY_TOLERANCE


def test_cli_crash_exits_non_zero_with_the_error_and_metrics(tmp_path):
    """A real process: the crash is an exit status, one line on stderr, and metrics.json says so."""
    cand, front = _write(tmp_path / "cand.json", {"micro_batch": 48}), _write(tmp_path / "front.json", {})
    out = tmp_path / "out"
    done = subprocess.run([sys.executable, "-m", "wikiengine.training.autoresearch_target", "--config", str(cand),
                           "--frontier", str(front), "--out", str(out), *QUICK],
                          capture_output=True, text=True, cwd=PROJECT)
    assert done.returncode == ExitCode.CRASHED == 8
    assert done.stderr.strip().splitlines() == [done.stderr.strip()]
    assert done.stderr.startswith("crash: RuntimeError: shape '[1, 48, 256]' is invalid")
    metrics = json.loads((out / "metrics.json").read_text())
    assert metrics["exit_code"] == ExitCode.CRASHED and metrics["error"].startswith("RuntimeError")
    assert "Traceback" in (out / "crash.txt").read_text()
    assert not (out / "profile.md").exists()


def test_cli_help(capsys):
    # in this process, which has torch already: a process of its own would import torch only to
    # print the help (the `-m` entry point itself runs in the CLI tests above)
    with pytest.raises(SystemExit) as done:
        target.main(["--help"])
    out = capsys.readouterr().out
    assert done.value.code == 0 and "--frontier" in out and "--seconds" in out
    assert out.startswith("usage: python -m wikiengine.training.autoresearch_target")


# --- the scripted queue ----------------------------------------------------------------------


def test_queue_covers_every_outcome_with_unique_workload_safe_slugs():
    assert {p.outcome for p in QUEUE} == set(OUTCOMES)
    slugs = [p.slug for p in QUEUE]
    assert len(set(slugs)) == len(slugs)
    # the workload name <prefix>-<model>-<lane>-v<NNN>-<slug> must stay under 40 characters
    assert all(len(s) <= 14 and s.replace("-", "").isalnum() and s == s.lower() for s in slugs)


@pytest.mark.parametrize("proposal", QUEUE, ids=lambda p: p.slug)
def test_queue_entry_paragraphs_are_four_distinct_sentences(proposal):
    paragraphs = [proposal.hypothesis, proposal.mechanism, proposal.predicted_signal,
                  proposal.falsification_criterion]
    assert len(set(paragraphs)) == 4 and all(len(p.split()) >= 10 and p.endswith(".") for p in paragraphs)
    section = proposal.hypothesis_section()
    for label in ("**Hypothesis**", "**Mechanism**", "**Predicted signal**", "**Falsification criterion**"):
        assert section.count(label) == 1
    assert proposal.requested_verdict in VERDICTS and proposal.expected_verdict in VERDICTS


def test_queue_dependencies_name_earlier_entries():
    seen = set()
    for proposal in QUEUE:
        assert set(proposal.after) <= seen
        seen.add(proposal.slug)


def _frontiers(excluding=None) -> list[dict]:
    """The baseline, and every frontier the queue's wins (but ``excluding``) can make, in any order."""
    wins = [p for p in QUEUE if p.outcome == "win" and p is not excluding]
    frontiers = [baseline_config()]
    for win in wins:
        frontiers += [win.config(f) for f in list(frontiers)]
    return frontiers


@pytest.mark.parametrize("proposal", QUEUE, ids=lambda p: p.slug)
def test_queue_entry_does_what_it_claims_against_every_frontier(proposal):
    """Load-independent half of each entry's claim: the crash crashes, the numerics break fails
    parity, the no-op keeps the digest, everything else passes parity and changes the digest."""
    for frontier in _frontiers(excluding=proposal):
        candidate = TargetConfig.from_dict(proposal.config(frontier))
        if proposal.outcome == "crash":
            with pytest.raises(RuntimeError):
                TrainingStep(candidate).run()
            continue
        passes = _parity(candidate) <= PARITY_TOLERANCE
        assert passes == (proposal.outcome != "numerics-break")
        same_digest = _digest(candidate) == _digest(TargetConfig.from_dict(frontier))
        assert same_digest == (proposal.outcome == "silent-no-op")


def test_queue_expected_verdicts_follow_the_caps():
    caps = {"crash": "invalid", "numerics-break": "invalid", "silent-no-op": "inconclusive",
            "within-noise": "inconclusive", "win": "supported", "loss": "refuted"}
    assert all(p.expected_verdict == caps[p.outcome] for p in QUEUE)
    # the no-op and the numerics break ask for more than they get: the lane's caps are exercised
    assert {p.slug for p in QUEUE if p.requested_verdict != p.expected_verdict} >= {
        p.slug for p in QUEUE if p.outcome in ("silent-no-op", "numerics-break", "within-noise")}


def test_queue_and_knobs_import_without_torch():
    code = "import sys, training.autoresearch_queue; print('torch' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=PROJECT)
    assert done.stdout.strip() == "False"


def test_baseline_config_is_the_targets_default_and_a_copy():
    config = baseline_config()
    assert TargetConfig.from_dict(config) == TargetConfig()
    config["batch"] = 1
    assert baseline_config()["batch"] == TargetConfig().batch


def test_frontiers_are_distinct():
    frontiers = _frontiers()
    assert len({json.dumps(f, sort_keys=True) for f in frontiers}) == len(frontiers) == 4
    assert dataclasses.asdict(TargetConfig()) == frontiers[0]
