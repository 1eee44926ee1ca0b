"""Nothing heavy on the wake and writer paths: `wiki step` (a lane's and a relay run's),
`wiki loop status`, `wiki watch`, `wiki exp new` and `wiki exp file` on a lane import none of
GitPython, jsonschema, filelock, markdown-it or ruamel.yaml when they do not need them (a
valid document is judged by the compiled validator; jsonschema only words what is wrong),
nor fastjsonschema once the per-user cache holds the validators (core/validators.py).

Issue 28: each path also leaves out what it does not use. A no-op wake imports neither the
writers nor the linter (a lane's: nothing to file; a relay run's: nothing changed since the
trusted commit, so row 38's re-lint has nothing to read), nor statistics and hashlib (a band
measured, a digest taken) nor the relay's memory tables and session types. The writers and the watcher need
the linter (they re-lint what they write, the watcher's battery is lint; its rules read the
relay's tables), so only the rest is held for them; the watcher reads the session without the
wake's deciding and writing (it runs a wake only to revive an idle session). In a lane, neither
imports the relay's memory tables (a table cell is escaped by core/text), nor the watcher the run
evidence (the A/A id is model/experiment's)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

HEAVY = ("git", "jsonschema", "filelock", "markdown_it", "ruamel", "fastjsonschema")
# A lane's writers and its watcher read no relay memory tables; the watcher no run evidence either
# (each module a handful of frozen dataclasses, a millisecond apiece to create).
# argparse's help formatter imports shutil (and bz2, lzma) for the terminal's width; git's spill file tempfile (and random)
# inspect's own imports: dataclasses asks inspect only for a class without a docstring (core/deferred.py)
NOT_FOR_A_WRITER = ("shutil", "tempfile", "ast", "dis", "tokenize")
NOT_LANE_DATA = ("wikiengine.model.memory", "wikiengine.model.evidence")
# nor the lane runner's shutil (its runs' cleanup) and the inherited findings' tempfile (a worktree, made once a session)
WATCHER = ("statistics", "wikiengine.step.writers", "wikiengine.step.lane.wake", "wikiengine.step.engine", *NOT_FOR_A_WRITER)
NO_OP_WAKE = ("wikiengine.step.writers", "wikiengine.lint", "statistics", "hashlib", "wikiengine.model.memory",
              "wikiengine.executors.compute", "decimal", *NOT_FOR_A_WRITER)  # decimal: the compiled validators name it only in isinstance
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
    from re import _parser
    from wikiengine._cli.main import main
    parsed, parse = [], _parser.parse
    _parser.parse = lambda pattern, *rest: parsed.append(pattern) or parse(pattern, *rest)
    try:
        code = main(sys.argv[1:])
    except SystemExit as exc:
        code = exc.code
    heavy = sorted(n for n in json.loads(sys.stdin.read()) if any(m == n or m.startswith(n + ".") for m in sys.modules))
    print(json.dumps({"code": code, "heavy": heavy, "parsed": [str(p)[:60] for p in parsed]}), file=sys.stderr)
""")


@pytest.fixture(scope="module", autouse=True)
def user_cache(tmp_path_factory):
    """A per-user cache of this module's own (outside every work tree) that holds every
    shipped schema's compiled validator, as a user's earlier commands leave it."""
    os.environ["XDG_CACHE_HOME"] = str(tmp_path_factory.mktemp("user-cache"))
    fill = "from wikiengine.core import schemas, validators\nfor name in schemas.schema_names(): validators.code_of(name)"
    subprocess.run([sys.executable, "-c", fill], env=_env(), check=True, timeout=300)
    yield
    os.environ.pop("XDG_CACHE_HOME")


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


def _probe(cwd, argv, forbidden, what="heavy"):
    """The forbidden modules the command imported (``what="parsed"``: the regular expressions
    it parsed once its CLI was imported)."""
    done = subprocess.run([sys.executable, "-c", PROBE, *argv], cwd=cwd, env=_env(), input=json.dumps(forbidden),
                          capture_output=True, text=True, timeout=300)
    report = json.loads(done.stderr.strip().splitlines()[-1])
    assert report["code"] in (0, None), done.stderr
    return report[what]


@pytest.fixture(scope="module")
def relay(tmp_path_factory):
    """A relay run driven to the end by real `wiki step` processes and a fake trainer
    (tests/relay_process.py); every later wake is a no-op."""
    sys.path.insert(0, str(Path(__file__).parent))
    from relay_process import process_wiki, session_ended, stop_all, wait_for, wiki_step

    root = process_wiki(tmp_path_factory.mktemp("relay"), [{}, {}, {}], eval_plan=[])
    try:
        for number in (1, 2, 3):  # the run's three sessions, each launched by a wake
            code, out, err = wiki_step(root)
            assert out.get("decision") == "launch", (out, err)
            wait_for(lambda number=number: session_ended(root, number), what=f"session {number} to end")
        code, out, err = wiki_step(root)
        assert (code, out.get("state")) == (0, "complete"), (out, err)
        yield root
    finally:
        stop_all(root)


def test_a_second_no_op_wake_imports_no_yaml_parser(lane):
    """What a no-op wake parses (its state page, its lane's program) is kept per user
    (core/yamlio.py): the next wake reads the same texts without importing PyYAML."""
    assert _wiki(lane, "step").returncode == 0
    heavy = _probe(lane, ["step"], [*HEAVY, *NO_OP_WAKE, "yaml"])
    assert heavy == [], f"a second no-op wake imported {heavy}"


@pytest.mark.parametrize("argv", [["step"], ["watch", "--once"]], ids=["step", "watch"])
def test_the_next_no_op_run_parses_no_regular_expression(lane, argv):
    """The patterns a command compiles are kept per user (core/regex_code.py): the same
    command run again parses none."""
    assert _wiki(lane, *argv).returncode in (0, 1)
    parsed = _probe(lane, argv, [], what="parsed")
    assert parsed == [], f"{' '.join(argv)} parsed {parsed}"


@pytest.mark.parametrize("argv,also", [
    (["step"], NO_OP_WAKE),
    (["loop", "status", "--json"], NO_OP_WAKE),
    (["watch", "--once"], WATCHER),
    (["exp", "new", "mlp", "cpu", "--track", "1", "--slug", "lr-big", "--variant", "1M/cpu", "--proposal", "../proposal.md"],
     ("statistics", "wikiengine.model.memory", *NOT_FOR_A_WRITER)),
], ids=["step", "loop-status", "watch", "exp-new"])
def test_the_wake_and_writer_paths_import_nothing_heavy(lane, argv, also):
    heavy = _probe(lane, argv, [*HEAVY, *also])
    assert heavy == [], f"{' '.join(argv)} imported {heavy}"


def test_an_unchanged_watcher_rerun_imports_no_relay_tables_nor_run_evidence(lane):
    """The cron watcher's usual run: nothing changed since its cursor (the first run linted the
    session's memory/STATE.md, whose rules read the memory tables)."""
    assert _wiki(lane, "watch", "--once").returncode in (0, 1)
    heavy = _probe(lane, ["watch", "--once"], [*HEAVY, *WATCHER, *NOT_LANE_DATA])
    assert heavy == [], f"an unchanged wiki watch --once imported {heavy}"


def test_a_stub_without_knobs_imports_no_yaml_nor_toml_parser(lane):
    """A stub's frontmatter is written without PyYAML (core/yaml_dump.py), which remembers
    what it loads to, and the configuration's parse is kept per user (lint/config.py): the
    writer's lint of the page it wrote imports neither PyYAML nor tomllib."""
    assert (lane / "wiki.toml").is_file()  # read by the writer's lint
    plain = PROPOSAL.split("## Setup")[0]  # no Setup block: no knobs to parse
    for name in ("warm", "probe"):
        (lane.parent / f"proposal-{name}.md").write_text(plain.replace("(1 - 2 lr)", f"(1 - 2 lr), {name} run"))
    warm = _wiki(lane, "exp", "new", "mlp", "cpu", "--slug", "lr-warm", "--variant", "1M/cpu", "--proposal",
                 "../proposal-warm.md")
    assert warm.returncode == 0, warm.stdout + warm.stderr
    argv = ["exp", "new", "mlp", "cpu", "--slug", "lr-probe", "--variant", "1M/cpu", "--proposal", "../proposal-probe.md"]
    heavy = _probe(lane, argv, [*HEAVY, "yaml", "tomllib"])
    assert heavy == [], f"a stub without knobs imported {heavy}"
    assert "lr-probe" in subprocess.run(["git", "log", "-1", "--format=%s"], cwd=lane, capture_output=True,
                                        text=True).stdout


def test_filing_a_run_imports_nothing_heavy(lane):
    """`wiki exp file` of a run the journal recorded (tests/lane_runs.py): the writers and the
    re-lint need the rest (the filing's digest, the band's median, the linter's rules)."""
    from tests.lane_runs import record_run

    (lane.parent / "proposal-small.md").write_text(PROPOSAL.replace("larger", "smaller").replace("lr: 0.1", "lr: 0.001"))
    stub = _wiki(lane, "exp", "new", "mlp", "cpu", "--track", "1", "--slug", "lr-small", "--variant", "1M/cpu",
                 "--proposal", "../proposal-small.md", "--json")
    assert stub.returncode == 0, stub.stdout + stub.stderr
    vid = json.loads(stub.stdout)["vid"]
    record_run(lane, "wiki/experiments/mlp_autoresearch_optimization/cpu", vid, variant="1M/cpu", metrics={"loss": 0.5})
    argv = ["exp", "file", vid, "mlp", "cpu", "--verdict", "inconclusive", "--reason", "within the band"]
    heavy = _probe(lane, argv, [*HEAVY, "wikiengine.model.memory", *NOT_FOR_A_WRITER])
    assert heavy == [], f"wiki exp file imported {heavy}"


@pytest.mark.waits
def test_a_relay_run_s_no_op_wake_imports_no_linter_and_nothing_heavy(relay):
    before = subprocess.run(["git", "rev-parse", "HEAD"], cwd=relay, capture_output=True, text=True).stdout
    heavy = _probe(relay, ["step"], [*HEAVY, "wikiengine.lint", "wikiengine.step.writers", "decimal"])
    assert heavy == [], f"the relay's no-op wake imported {heavy}"
    assert _wiki(relay, "step").returncode == 0  # a wake process keeps what it parsed (core/yamlio.py)
    assert _probe(relay, ["step"], ["yaml"]) == [], "the next no-op wake parsed its texts again"
    assert subprocess.run(["git", "rev-parse", "HEAD"], cwd=relay, capture_output=True, text=True).stdout == before


def test_a_warm_lint_imports_no_typing_nor_anything_heavy(tmp_path):
    """A whole-wiki `wiki lint` with nothing changed since the last one (the pre-commit and
    watcher case) takes its findings from the cache: no parser, no client, and not typing either
    (about 5 ms of its start; the engine's modules name types under ``TYPE_CHECKING = False``).
    The example wiki, committed: no lane session whose state page a rule reads each run."""
    shutil.copytree(Path(__file__).parents[1] / "wiki", tmp_path / "wiki")
    subprocess.run(["git", "init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(["git", "add", "-A"], cwd=tmp_path, check=True)
    subprocess.run(["git", "commit", "-qm", "wiki"], cwd=tmp_path, check=True, env=_env())
    assert _wiki(tmp_path, "lint").returncode == 0
    heavy = _probe(tmp_path, ["lint"], [*HEAVY, "typing", "yaml"])
    assert heavy == [], f"a warm lint imported {heavy}"
