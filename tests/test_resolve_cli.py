"""`wiki resolve` as a user runs it: a subprocess on a copy of the example wiki.

Checks stdout, stderr and the exit status: the effective program, then the audit in the
seed's shape, then USER_PREFIX, MODEL_NAME and LANE; bad input gives one line on stderr
and exit 2, never a traceback.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
WIKI_BIN = Path(sys.executable).with_name("wiki")
COMMAND = [str(WIKI_BIN)] if WIKI_BIN.exists() else [sys.executable, "-m", "wikiengine"]
GEMMA = "wiki/experiments/gemma4_autoresearch_optimization"
LLAMA = "wiki/experiments/llama3_8B_autoresearch_optimization"


@pytest.fixture
def repo(tmp_path):
    """A copy of the example wiki, outside any git repository."""
    root = tmp_path / "repo"
    shutil.copytree(REPO / "wiki", root / "wiki")
    return root


def run(args, cwd, user="alice_example_com", **extra_env):
    env = {k: v for k, v in os.environ.items() if k not in ("WIKI_ROOT", "USER")}
    home = Path(cwd).anchor and str(Path(cwd).parent)
    env.update(
        HOME=home,
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_CEILING_DIRECTORIES=str(Path(cwd).resolve().parent.parent),
    )
    if user is not None:
        env["USER"] = user
    env.update(extra_env)
    return subprocess.run(COMMAND + ["resolve", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)


def assert_bad_input(result, *words):
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert result.stdout == ""
    assert "Traceback" not in result.stderr
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_resolve_prints_program_then_audit_then_identity(repo):
    result = run(["gemma4", "tpu"], repo)
    assert result.returncode == 0, result.stderr
    out = result.stdout
    program, _, rest = out.partition("Effective program for experiments: gemma4 / tpu:\n")
    assert program.startswith("# Gemma 4 program (model level)\n")
    assert "## Setup\n\nTPU lane: v5p with topology 2x2x2" in program
    lane_setup = (repo / GEMMA / "tpu/program.md").read_text().split("## Operational env vars")[0]
    assert lane_setup in program  # the lane's section, byte for byte
    root_naming = (repo / "wiki/experiments/program.md").read_text().split("## Workload naming")[1].split("## ")[0]
    assert "## Workload naming" + root_naming in program  # a root-only section, byte for byte
    audit = rest.splitlines()
    assert "  Setup                          <- lane (overrides root)" in audit
    assert "  Branching model                <- model (overrides root)" in audit
    assert "  Workload naming                <- root (no model/lane override)" in audit
    assert "  Gemma4-specific CAN additions  <- model + lane (additive)" in audit
    assert audit[-3:] == [
        "USER_PREFIX = demo  (from program)",
        "MODEL_NAME  = gemma4  (auto-derived from folder)",
        "LANE        = tpu",
    ]
    assert result.stderr == ""


def test_target_inferred_from_the_current_directory_and_user_prefix_from_user(repo):
    cwd = repo / LLAMA / "tpu"
    result = run(["--audit"], cwd, user="Alekseyv_google_com")
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Effective program for experiments: llama3_8B / tpu:\n")
    assert "## " not in result.stdout  # --audit prints only the audit
    assert result.stdout.splitlines()[-3:] == [
        "USER_PREFIX = alekseyv  (from $USER)",
        "MODEL_NAME  = llama3-8b  (auto-derived from folder)",
        "LANE        = tpu",
    ]


def test_json_has_the_documented_fields(repo):
    result = run(["--json", "gemma4", "tpu"], repo)
    assert result.returncode == 0, result.stderr
    data = json.loads(result.stdout)
    assert data["target"] == f"{GEMMA}/tpu"
    assert data["files"] == ["wiki/experiments/program.md", f"{GEMMA}/program.md", f"{GEMMA}/tpu/program.md"]
    assert (data["user_prefix"], data["model_name"], data["lane"]) == ("demo", "gemma4", "tpu")
    by_title = {s["title"]: s for s in data["sections"]}
    for section in data["sections"]:
        assert {"title", "level", "path", "overrides", "additive"} <= set(section)
    assert by_title["Setup"]["level"] == "lane" and by_title["Setup"]["overrides"] == ["root"]
    assert by_title["Setup"]["path"] == f"{GEMMA}/tpu/program.md"
    assert by_title["Gemma4-specific CAN additions"]["additive"] is True
    assert by_title["Inheritance model"]["overrides"] == []
    assert data["text"].startswith("# Gemma 4 program (model level)")
    assert data["config"]["tpu_type"] == "v5p-16"


def test_json_from_text_matches_the_plain_output(repo):
    plain = run(["gemma4", "tpu"], repo).stdout
    data = json.loads(run(["--json", "gemma4", "tpu"], repo).stdout)
    assert plain.startswith(data["text"])


@pytest.mark.parametrize(
    "args, cwd, first_line",
    [
        (["--kernel", "flash_attention"], ".", "# Kernel experiments program (root)"),
        ([f"{GEMMA}/jax"], ".", "# Gemma 4 program (model level)"),
        ([f"{GEMMA}/jax/program.md"], ".", "# Gemma 4 program (model level)"),
        (["."], GEMMA, "# Gemma 4 program (model level)"),
        (["--run", "ounce100m"], ".", "# ounce100m main run"),
        ([], "wiki/kernel_experiments/flash_attention/pallas", "# Kernel experiments program (root)"),
    ],
)
def test_other_ways_to_name_a_target(repo, args, cwd, first_line):
    result = run(args, repo / cwd)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[0] == first_line


def test_kernel_audit_names_its_levels(repo):
    result = run(["--audit", "--kernel", "flash_attention"], repo)
    assert result.stdout.splitlines() == [
        "Effective program for kernels: flash_attention / pallas:",
        "  Quick start      <- root (no pallas override)",
        "  Run target       <- pallas (overrides root)",
        "  The kernel loop  <- root (no pallas override)",
        "  Family binding   <- pallas",
        "Files read: wiki/kernel_experiments/program.md, wiki/kernel_experiments/flash_attention/pallas/program.md",
    ]


def test_list(repo):
    result = run(["--list"], repo)
    assert result.returncode == 0
    assert result.stdout.splitlines() == [
        "models (lanes with a program.md):",
        "  gemma4: jax, tpu",
        "  llama3_8B: tpu",
        "kernel families: flash_attention",
        "runs: ounce100m",
    ]
    data = json.loads(run(["--list", "--json"], repo).stdout)
    assert data == {"models": {"gemma4": ["jax", "tpu"], "llama3_8B": ["tpu"]}, "kernel_families": ["flash_attention"],
                    "runs": ["ounce100m"], "ignored_folders": []}


# --- bad input: one line, exit 2 -------------------------------------------------------


def test_no_root_program_is_refused(repo):
    (repo / "wiki/experiments/program.md").unlink()
    line = assert_bad_input(run(["gemma4", "tpu"], repo), "no root program", "wiki/experiments/program.md")
    assert line.startswith("error: ")


def test_outside_any_area_asks_for_a_target(repo):
    assert_bad_input(run([], repo / "wiki"), "cannot infer the target")


def test_no_wiki_directory(tmp_path):
    assert_bad_input(run(["gemma4"], tmp_path), "no wiki/ directory")


def test_user_prefix_cannot_be_derived(repo):
    assert_bad_input(run(["llama3_8B", "tpu"], repo, user=None), "cannot derive USER_PREFIX")


@pytest.mark.parametrize(
    "rel, edit, words",
    [
        (f"{GEMMA}/tpu/program.md", lambda t: t.replace("topology: 2x2x2", "topology: 2by2"),
         [f"{GEMMA}/tpu/program.md:23: topology: '2by2' does not match"]),
        (f"{GEMMA}/tpu/program.md", lambda t: t.replace("parallelism: 2", "parallelism: !!python/object/apply:os.system [id]"),
         ["program.md:21:", "tags are not allowed"]),
        (f"{GEMMA}/tpu/program.md", lambda t: t.replace("parallelism: 2", "parallelism: 2\nparallelism: 3"),
         ["program.md:22:", "duplicate key 'parallelism'"]),
        (f"{GEMMA}/tpu/program.md", lambda t: t.replace("parallelism: 2", "a: &a [1,1,1]\nb: &b [*a,*a,*a]"),
         ["program.md:21:", "anchors and aliases"]),
        (f"{GEMMA}/tpu/program.md", lambda t: t.replace("image: registry.example/gemma4-container:trunk", "image: no"),
         ["program.md:26:", "image: False is not of type 'string'"]),
        (f"{GEMMA}/tpu/program.md", lambda t: t.replace("wake_interval_s: 600", "wake_interval_s: 052"),
         ["program.md:24:", "42 is less than the minimum of 120"]),
        (f"{GEMMA}/program.md", lambda t: t + "\n## the goal\nagain\n", ["program.md:19:", "duplicate section '## the goal'", "first on line 5"]),
        (f"{GEMMA}/program.md", lambda t: "---\ntitle: x\n" + t, [f"{GEMMA}/program.md:1:", "unterminated frontmatter"]),
        (f"{GEMMA}/program.md", lambda t: "---\ntitle: [x\n---\n" + t, [f"{GEMMA}/program.md:", "invalid YAML"]),
        (f"{GEMMA}/tpu/program.md", lambda t: t[: t.rindex("```")], ["tpu/program.md:20:", "unterminated yaml block"]),
    ],
)
def test_bad_programs_give_one_line_with_file_and_line(repo, rel, edit, words):
    path = repo / rel
    path.write_text(edit(path.read_text(encoding="utf-8")), encoding="utf-8")
    assert_bad_input(run(["gemma4", "tpu"], repo), *words)


def test_non_utf8_program(repo):
    path = repo / GEMMA / "tpu/program.md"
    path.write_bytes(path.read_bytes().replace(b"splash attention", b"splash \xff attention"))
    assert_bad_input(run(["gemma4", "tpu"], repo), f"{GEMMA}/tpu/program.md:12: not valid UTF-8 (byte 0xff at offset 280)")


def test_json_bad_input_is_still_one_line_on_stderr_and_json_on_stdout(repo):
    (repo / "wiki/experiments/program.md").unlink()
    result = run(["--json", "gemma4", "tpu"], repo)
    assert json.loads(result.stdout) == {"error": result.stderr.strip().removeprefix("error: "), "exit_status": 2}
    assert_bad_input(subprocess.CompletedProcess(result.args, result.returncode, "", result.stderr), "no root program")


@pytest.mark.parametrize(
    "args",
    [
        ["../..", "tpu"],
        ["gemma4", "../../.."],
        ["gemma4", "/etc"],
        ["/etc"],
        ["../../../etc/passwd"],
        ["--kernel", "../../.."],
        ["--kernel", "/tmp"],
        ["--kernel", "flash_attention/pallas"],
        ["--kernel", ""],
        ["--run", "CON"],
        ["--run", "aux.md"],
        ["gemma4", "TPU"],
        ["GEMMA4", "tpu"],
        ["gemma4", "tpu\x01"],
        ["gemma4", "tpu", "extra"],
        ["--kernel", "flash_attention", "--run", "ounce100m"],
    ],
)
def test_row44_hostile_targets_exit_2(repo, args):
    assert_bad_input(run(args, repo))


def test_row44_nul_in_a_target_is_refused(repo):
    # argv cannot carry a NUL byte; the escape text a shell passes instead is refused as a name
    assert_bad_input(run(["gemma4", "tpu\\x00"], repo), "invalid lane name")


def test_row44_nothing_is_read_through_a_symlink_out_of_the_root(repo, tmp_path):
    outside = tmp_path / "outside"
    (outside / "pallas").mkdir(parents=True)
    (outside / "pallas" / "program.md").write_text("## Secret\nCANARY-7d1f\n")
    os.symlink(outside, repo / "wiki/kernel_experiments/evil")
    program = repo / "wiki/kernel_experiments/flash_attention/pallas/program.md"
    program.unlink()
    os.symlink(outside / "pallas" / "program.md", program)
    for args in (["--kernel", "evil"], ["wiki/kernel_experiments/evil/pallas"], ["--kernel", "flash_attention"]):
        result = run(args, repo)
        line = assert_bad_input(result, "outside")
        assert "CANARY" not in line


def test_row44_a_symlink_loop_exits_2(repo):
    os.symlink("loop", repo / "wiki/kernel_experiments/loop")
    assert_bad_input(run(["--kernel", "loop"], repo), "cannot resolve")
    assert_bad_input(run(["wiki/kernel_experiments/loop"], repo))


def test_row40_a_pathological_program_resolves_under_the_subprocess_timeout(repo):
    # run() gives the child 120 s: a hang guard, not a speed target.
    program = repo / GEMMA / "jax/program.md"
    hostile = "> " * 20000 + "## quoted\n" + "- " * 20000 + "x\n" + "[" * 50000 + "\n<div>\n\n" + "*a **a " * 10000
    program.write_text(program.read_text() + "\n## Notes\n\n" + hostile + "\n", encoding="utf-8")
    result = run(["--audit", "gemma4", "jax"], repo)
    assert result.returncode == 0, result.stderr
    assert "  Notes" in result.stdout and "quoted" not in result.stdout


def test_resolve_imports_no_heavy_client_library(repo):
    # DESIGN: wiki resolve runs in pre-commit and agent wakes; it must not import these.
    code = (
        "import sys\n"
        "from wikiengine._cli.main import main\n"
        "status = main(['resolve', '--json', 'gemma4', 'tpu'])\n"
        "heavy = {'torch', 'huggingface_hub', 'kaggle', 'kagglesdk', 'kubernetes', 'git', 'safetensors', 'numpy'}\n"
        "print(sorted(heavy & {m.split('.')[0] for m in sys.modules}), file=sys.stderr)\n"
        "sys.exit(status)\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "WIKI_ROOT"}
    env["USER"] = "alice"
    result = subprocess.run([sys.executable, "-c", code], cwd=repo, env=env, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert result.stderr.strip() == "[]"
    assert json.loads(result.stdout)["model_name"] == "gemma4"


def test_a_root_that_does_not_exist_is_refused(repo):
    assert_bad_input(run(["--root", str(repo / "wiki" / "typo"), "--list"], repo), "no such directory")
