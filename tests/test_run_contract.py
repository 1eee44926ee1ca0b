"""The run contract: what a lane run gets and writes (docs/run-contract.md).

``wikiengine.run`` writes metrics.json in the shape of ``schema/run-metrics.schema.json``
without loading anything heavy; the evidence reader validates what a run wrote against
that schema; ``wiki lane check`` runs a lane's command once as a smoke run and names
what it left out.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from wikiengine import run as wrun
from wikiengine._cli.main import main
from wikiengine.core.run_report import SMOKE_STEPS
from wikiengine.core.schemas import issues
from wikiengine.model.evidence import parse_run_metrics, read_run_metrics

REPO = Path(__file__).resolve().parents[1]


def test_importing_the_run_module_loads_nothing_heavy():
    code = ("import sys; from wikiengine import run; "
            "print(sorted(m for m in ('torch', 'jsonschema', 'numpy', 'yaml', 'ruamel', 'fsspec', 'markdown_it') "
            "if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=REPO,
                         env={"PYTHONPATH": str(REPO), "PATH": "/usr/bin:/bin"})
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def _env(tmp_path: Path, **more) -> dict:
    art = tmp_path / "artifacts"
    return {"METRICS_PATH": str(art / "metrics.json"), "ARTIFACT_DIR": str(art),
            "PROGRESS_PATH": str(tmp_path / "progress"), **more}


def test_a_run_reports_in_the_schema_s_shape_atomically(tmp_path):
    (tmp_path / "cfg.json").write_text('{"batch": 32}')
    r = wrun.Run(_env(tmp_path, WIKI_CONFIG=str(tmp_path / "cfg.json")))
    assert r.config() == {"batch": 32} and r.frontier() == {} and r.steps(1000) == 1000
    r.progress(step=7)
    assert json.loads((tmp_path / "progress").read_text())["step"] == 7
    r.log(tps=1234.5, frontier_tps=1200)
    written = json.loads((tmp_path / "artifacts/metrics.json").read_text())
    assert written == {"tps": 1234.5, "frontier_tps": 1200, "step": 7}  # every call leaves a whole record
    r.parity(ok=False, detail="rel err  1.1\n tolerance 1e-2")
    r.op_digests(candidate="ab12cd34", frontier="ab12cd35")
    (tmp_path / "prof.md").write_text("matmul 40%\n")
    assert r.artifact("profile", tmp_path / "prof.md") == "profile.md"
    (tmp_path / "artifacts/hlo.md").write_text("Hypothesis-firing audit: CONFIRMED\n")
    assert r.artifact("hlo", tmp_path / "artifacts/hlo.md") == "hlo.md"  # already inside: not copied
    r.finish()
    data = json.loads((tmp_path / "artifacts/metrics.json").read_text())
    assert issues(data, "run-metrics") == []
    assert data["parity"] == "fail" and data["parity_detail"] == "rel err 1.1 tolerance 1e-2"
    assert data["artifacts"] == {"profile": "profile.md", "hlo": "hlo.md"} and "finished" in data
    assert (tmp_path / "artifacts/profile.md").read_text() == "matmul 40%\n"
    assert not [p for p in (tmp_path / "artifacts").iterdir() if p.name.startswith(".")]  # no temp file left


@pytest.mark.parametrize("call, error", [
    (lambda r: r.log(tps="fast"), TypeError),
    (lambda r: r.log(ok=True), TypeError),
    (lambda r: r.log(tps=math.nan), ValueError),
    (lambda r: r.log(parity=1.0), ValueError),
    (lambda r: r.detail(note=3), ValueError),
    (lambda r: r.op_digests(candidate="XYZ", frontier="ab12cd34"), ValueError),
    (lambda r: r.artifact("Profile!", "x"), ValueError),
    (lambda r: r.artifact("profile", "/no/such/file"), FileNotFoundError),
    (lambda r: r.progress(step=-1), ValueError),
])
def test_a_wrong_call_is_refused_and_writes_nothing(tmp_path, call, error):
    r = wrun.Run(_env(tmp_path))
    with pytest.raises(error):
        call(r)
    assert not (tmp_path / "artifacts/metrics.json").exists()


def test_outside_a_lane_run_nothing_is_written_and_smoke_shortens(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    r = wrun.Run({"WIKI_SMOKE": "1"})
    r.progress(step=1)
    r.log(tps=1.0)
    r.finish()
    assert list(tmp_path.iterdir()) == [] and r.record["tps"] == 1.0
    assert r.smoke and r.steps(1000) == SMOKE_STEPS and r.record["smoke"] is True


def test_a_url_path_is_written_through_fsspec(tmp_path):
    import fsspec

    r = wrun.Run({"METRICS_PATH": "memory://bucket/run/metrics.json", "ARTIFACT_DIR": "memory://bucket/run"})
    (tmp_path / "hlo.md").write_text("Hypothesis-firing audit: CONFIRMED\n")
    r.log(tps=2.0)
    r.artifact("hlo", tmp_path / "hlo.md")
    with fsspec.open("memory://bucket/run/metrics.json", "r") as handle:
        assert json.load(handle)["artifacts"] == {"hlo": "hlo.md"}
    with fsspec.open("memory://bucket/run/hlo.md", "r") as handle:
        assert "CONFIRMED" in handle.read()


def test_row107_the_evidence_reader_drops_what_breaks_the_schema_and_says_so(tmp_path):
    found = parse_run_metrics({"tps": 10, "parity": "yes", "op_digest": "NOTHEX", "exit_code": 0, "step": 3,
                               "rounds": [1, 2], "flag": True, "artifacts": {"profile": "../../etc/passwd"}})
    assert found.figures == {"tps": 10.0}  # exit_code and step are fixed keys, never figures
    assert found.parity is None and found.op_digest is None and found.artifacts == {}
    assert {p.split(":")[0] for p in found.problems} == {"parity", "op_digest", "flag", "artifacts/profile"}
    assert parse_run_metrics([1, 2]).problems == ("metrics.json holds a JSON list, not an object",)
    assert read_run_metrics(tmp_path / "none.json").found is False
    (tmp_path / "bad.json").write_text("{tps: 1")
    assert read_run_metrics(tmp_path / "bad.json").problems[0].startswith("metrics.json is not JSON")
    (tmp_path / "nan.json").write_text('{"tps": NaN, "mfu": 3}')
    assert read_run_metrics(tmp_path / "nan.json").figures == {"mfu": 3.0}


# --- wiki lane check ---------------------------------------------------------------------------------

GOOD = """
from wikiengine import run
for step in range(run.steps(10**9)):
    run.progress(step=step)
run.log(tps=100.0, frontier_tps=99.0)
run.parity(ok=True, detail="rel err 1e-7")
open("p.md", "w").write("matmul 60%\\n")
run.artifact("profile", "p.md")
open("h.md", "w").write("Hypothesis-firing audit: CONFIRMED\\n")
run.artifact("hlo", "h.md")
run.finish()
"""

SCRIPTS = {
    "good": (GOOD, []),
    "no-metrics": ("print('trained')", ["the file: no metrics.json", "the file: no profile", "the file: no HLO dump"]),
    "wrong-keys": (GOOD.replace("run.log(tps=100.0, frontier_tps=99.0)", "run.log(throughput=100.0)"),
                   ["the key 'tps'"]),
    "no-parity": (GOOD.replace('run.parity(ok=True, detail="rel err 1e-7")', ""), ["the key 'parity'"]),
    "no-profile": (GOOD.replace('run.artifact("profile", "p.md")', ""), ["the file: no profile"]),
    "no-audit": (GOOD.replace("Hypothesis-firing audit: CONFIRMED", "ops"), ["no firing-audit line"]),
    "exits-0-with-nothing": ("", ["the file: no metrics.json", "the file: no profile", "the file: no HLO dump"]),
    "crashes": ("import sys\nprint('boom: CUDA out of memory')\nsys.exit(3)",
                ["the command: exited with code 3: boom: CUDA out of memory"]),
    "ignores-smoke": ("import time\ntime.sleep(30)", ["still running after 2s in a smoke run"]),
}


@pytest.fixture()
def lane(tmp_path, monkeypatch):
    monkeypatch.setenv("USER", "alice")
    monkeypatch.setenv("PYTHONPATH", str(REPO))
    root = tmp_path / "wiki"
    assert main(["init", str(root), "--model", "toy", "--lane", "cpu", "--json"]) == 0
    return root


def _set_config(root: Path, launch_cmd: str | None) -> None:
    program = root / "wiki/experiments/toy_autoresearch_optimization/cpu/program.md"
    scaffolded = root.parent / "program.md.scaffolded"
    if not scaffolded.exists():
        scaffolded.write_text(program.read_text())
    text = scaffolded.read_text().replace("wake_interval_s: 600\n", "wake_interval_s: 600\ntarget_metric: tps\n")
    if launch_cmd:
        text = text.replace("\n# launch_cmd:", f"\nlaunch_cmd: {json.dumps(launch_cmd)}\n# was:")
    program.write_text(text)


def _check(root: Path, capsys, *extra: str) -> tuple[int, dict]:
    capsys.readouterr()
    code = main(["lane", "check", "toy", "cpu", "--root", str(root), "--json", *extra])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", sorted(SCRIPTS))
def test_row108_lane_check_names_what_the_run_left_out(lane, capsys, name):
    script, expected = SCRIPTS[name]
    (lane / "train.py").write_text(textwrap.dedent(script))
    _set_config(lane, "{python} train.py --config {config} --smoke {smoke}")
    code, report = _check(lane, capsys, "--seconds", "2" if name == "ignores-smoke" else "60")
    assert code == (0 if not expected else 1), report
    for want in expected:
        assert any(want in problem for problem in report["problems"]), (want, report["problems"])
    if name == "good":
        assert report["metrics"] == {"tps": 100.0, "frontier_tps": 99.0} and report["notes"] == []
        assert set(report["files"]) == {"metrics", "profile", "hlo"}
        assert not any(f.startswith("/") for f in report["files"].values())  # repository-relative
        assert "{" not in report["command"] and str(lane) not in report["command"]
        assert report["command"].endswith("--smoke 1")


def test_row108_lane_check_refuses_a_bare_python_and_a_missing_command(lane, capsys):
    (lane / "train.py").write_text(textwrap.dedent(GOOD))
    _set_config(lane, "python train.py")
    code, report = _check(lane, capsys)
    assert code == 1 and any("starts with `python`" in p for p in report["problems"])
    _set_config(lane, "no-such-trainer --config {config}")
    code, report = _check(lane, capsys)
    assert code == 1 and report["problems"] == ["the command: 'no-such-trainer' is not found on PATH "
                                                "(launch_cmd runs without a shell)"]


def test_init_ends_by_pointing_at_lane_check(tmp_path, capsys):
    assert main(["init", str(tmp_path / "w"), "--model", "toy", "--lane", "cpu", "--lane", "gpu"]) == 0
    out = capsys.readouterr().out
    assert "run `wiki lane check toy cpu`" in out and "run `wiki lane check toy gpu`" in out
    program = (tmp_path / "w/wiki/experiments/toy_autoresearch_optimization/cpu/program.md").read_text()
    assert '# launch_cmd: "{python} -m train' in program


def test_lane_check_without_a_launch_cmd_and_on_bad_input(lane, capsys):
    _set_config(lane, None)
    code, report = _check(lane, capsys)
    assert code == 1 and report["problems"][0].startswith("the command: the lane's program has no launch_cmd")
    capsys.readouterr()
    assert main(["lane", "check", "toy", "gpu", "--root", str(lane), "--json"]) == 2
    assert "no lane 'gpu'" in json.loads(capsys.readouterr().out)["error"]
    assert main(["lane", "check", "toy", "gpu", "--root", str(lane)]) == 2
    assert capsys.readouterr().err.startswith("error: ")
