"""Nothing heavy on the wake and writer paths: `wiki step`, `wiki loop status`, `wiki watch`
and `wiki exp new` on a lane import none of GitPython, jsonschema, filelock, markdown-it or
ruamel.yaml when they do not need them (a valid document is judged by the compiled
validator; jsonschema only words what is wrong)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("git", "jsonschema", "filelock", "markdown_it", "ruamel")
PROGRAM = textwrap.dedent("""\
    # mlp / cpu lane

    ## Config

    ```yaml
    launch_cmd: "{python} -c pass {config}"
    target_metric: loss
    higher_is_better: false
    baseline_config: {lr: 0.01}
    ```
""")
PROPOSAL = textwrap.dedent("""\
    **Hypothesis**: a larger learning rate reaches a lower loss in the same 100 steps.

    **Mechanism**: each step multiplies w by (1 - 2 lr).

    **Predicted signal**: the final loss falls.

    **Falsification criterion**: the loss is not lower than the baseline's by more than the noise band.

    ## Setup

    ```yaml
    lr: 0.1
    ```
""")
PROBE = textwrap.dedent("""\
    import json, sys
    from wikiengine._cli.main import main
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    heavy = sorted({m.split(".")[0] for m in sys.modules} & set(json.loads(sys.stdin.read())))
    print(json.dumps({"code": code, "heavy": heavy}), file=sys.stderr)
""")


def _env():
    return {**os.environ, "USER": "tester", "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.invalid",
            "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.invalid"}


def _wiki(cwd, *args):
    return subprocess.run([sys.executable, "-m", "wikiengine", *args], cwd=cwd, env=_env(), capture_output=True,
                          text=True, timeout=300)


@pytest.fixture(scope="module")
def lane(tmp_path_factory):
    base = tmp_path_factory.mktemp("weight")
    assert _wiki(base, "init", "lab", "--model", "mlp", "--lane", "cpu", "--variant", "1M/cpu").returncode == 0
    root = base / "lab"
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    (root / "wiki/experiments/mlp_autoresearch_optimization/cpu/program.md").write_text(PROGRAM)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    subprocess.run(["git", "commit", "-qm", "lane"], cwd=root, check=True, env=_env())
    assert _wiki(root, "loop", "start", "mlp", "cpu", "--yes").returncode == 0
    assert _wiki(root, "step").returncode == 0  # the first wake: what follows are no-op wakes
    (base / "proposal.md").write_text(PROPOSAL)
    return root


@pytest.mark.parametrize("argv", [
    ["step"],
    ["loop", "status", "--json"],
    ["watch", "--once"],
    ["exp", "new", "mlp", "cpu", "--track", "1", "--slug", "lr-big", "--variant", "1M/cpu", "--proposal", "../proposal.md"],
])
def test_the_wake_and_writer_paths_import_nothing_heavy(lane, argv):
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=lane, env=_env(), input=json.dumps(HEAVY),
                          capture_output=True, text=True, timeout=300)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    assert report["heavy"] == [], f"{' '.join(argv)} imported {report['heavy']}"
