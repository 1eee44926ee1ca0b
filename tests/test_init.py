"""`wiki init`: a fresh wiki in the conventions' layout that lints clean; idempotent in an existing one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from wikiengine.core.page import parse_page
from wikiengine.lint.config import LintConfig, load_config

REPO = Path(__file__).resolve().parents[1]
MODEL_DIR = "wiki/experiments/gemma4_autoresearch_optimization"
MATRIX_HEADER = "| Size | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp |"


def wiki(cwd: Path, *argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wikiengine", *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300)


def init(cwd: Path, *argv: str) -> dict:
    done = wiki(cwd, "init", *argv, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def snapshot(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*"))
            if p.is_file() and "/.git/" not in f"/{p.relative_to(root).as_posix()}" and not p.relative_to(root).as_posix().startswith("store/")}


@pytest.fixture
def fresh(tmp_path):
    root = tmp_path / "w"
    out = init(tmp_path, str(root), "--model", "gemma4", "--lane", "tpu", "--lane", "jax", "--kernel", "flash_attention")
    return root, out


def test_a_fresh_init_writes_the_conventions_layout(fresh):
    root, out = fresh
    assert out["root"] == str(root) and out["skipped"] == [] and out["updated"] == [] and out["notes"] == []
    lanes = [f"{MODEL_DIR}/{lane}/{name}" for lane in ("tpu", "jax") for name in ("program.md", "log.md", "RESULTS.tsv")]
    kernel = [f"wiki/kernel_experiments/flash_attention/pallas/{n}" for n in ("program.md", "log.md", "RESULTS.tsv")]
    assert set(out["created"]) == {
        "wiki/log.md", "wiki/index.md", "wiki/experiments/program.md", f"{MODEL_DIR}/program.md", *lanes,
        "wiki/models/gemma4-tpu.md", "wiki/models/gemma4-jax.md", "wiki/kernel_experiments/program.md", *kernel,
        "wiki/kernels/flash_attention.md", "wiki.toml", ".pre-commit-config.yaml", ".gitignore", ".env/README.md",
    }
    assert all((root / rel).is_file() for rel in out["created"])


def test_results_tsv_and_the_model_page_variant_matrix(fresh):
    root, _ = fresh
    header = (root / MODEL_DIR / "tpu" / "RESULTS.tsv").read_text()
    assert header == "exp_id\tdate\ttps\tmfu_percent\tstep_time_ms\tpeak_hbm_gib\tconfig\tstatus\tdescription\n"
    page = parse_page((root / "wiki/models/gemma4-tpu.md").read_text(), "gemma4-tpu.md")
    assert page.frontmatter["type"] == "model" and page.frontmatter["lane"] == "tpu"
    assert page.frontmatter["architecture"] == "gemma4" and page.frontmatter["model"] == "gemma4"
    assert [s.title for s in page.sections] == [
        "Target metrics", "How to run", "Variant matrix", "Cross-variant open hypotheses",
        "Variant-specific open hypotheses", "Retired hypotheses", "Knobs translation matrix", "Iteration ladder",
    ]
    matrix = next(s for s in page.sections if s.title == "Variant matrix").body
    tables = [line for line in matrix.splitlines() if line.startswith("|")]
    assert tables[0] == MATRIX_HEADER and tables[1].count("---") == 7 and len(tables) == 2  # one table, no rows yet


def test_index_counts_its_pages_and_logs_start_empty(fresh):
    root, _ = fresh
    index = parse_page((root / "wiki/index.md").read_text(), "index.md")
    models = next(s for s in index.sections if s.title.startswith("Models"))
    links = [line for line in models.body.splitlines() if line.startswith("- [")]
    assert models.title == f"Models ({len(links)})" == "Models (3)"
    for name in ("wiki/log.md", f"{MODEL_DIR}/tpu/log.md"):
        assert parse_page((root / name).read_text(), name).sections == []  # no entry yet, only the how-to


def test_programs_carry_the_standard_sections_and_resolve(fresh):
    root, _ = fresh
    done = wiki(root, "resolve", "gemma4", "tpu", "--json")
    assert done.returncode == 0, done.stderr
    resolved = json.loads(done.stdout)
    origins = {s["title"]: s["level"] for s in resolved["sections"]}
    assert origins == {
        "Inheritance model": "root", "Concurrency model": "root", "Setup": "lane", "Workload naming": "root",
        "Branching model": "model", "The experiment loop": "root", "Config": "lane", "The goal": "model",
        "Gemma4-specific CAN additions": "model", "Operational env vars": "lane", "Kernels available": "lane",
    }
    assert next(s for s in resolved["sections"] if s["title"] == "Gemma4-specific CAN additions")["additive"]
    assert resolved["config"] == {"parallelism": 1, "wake_interval_s": 600}
    kernel = wiki(root, "resolve", "--kernel", "flash_attention", "--json")
    assert kernel.returncode == 0 and json.loads(kernel.stdout)["files"][0] == "wiki/kernel_experiments/program.md"


def test_wiki_toml_spells_out_the_defaults_and_pre_commit_uses_the_published_hook(fresh):
    import pre_commit.clientlib

    root, _ = fresh
    config = load_config(root)
    assert config.source == root / "wiki.toml"
    assert config.fingerprint() == LintConfig().fingerprint()
    assert "select = []" in (root / "wiki.toml").read_text()
    loaded = pre_commit.clientlib.load_config(str(root / ".pre-commit-config.yaml"))
    hook = loaded["repos"][0]["hooks"][0]
    published = next(h for h in yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text()) if h["id"] == "wiki-lint")
    for key in ("id", "entry", "files", "require_serial"):
        assert hook[key] == published[key], key
    ignored = (root / ".gitignore").read_text().splitlines()
    assert {"raw/profiles/", ".wiki_cache/", ".wiki/"} <= set(ignored)


def git_commit_all(root: Path) -> None:
    for args in (["init", "-q"], ["add", "-A"],
                 ["-c", "user.name=t", "-c", "user.email=t@t.invalid", "commit", "-qm", "wiki init"]):
        subprocess.run(["git", *args], cwd=root, check=True, capture_output=True)


def test_a_fresh_init_lints_clean(fresh):
    root, _ = fresh
    git_commit_all(root)  # the git-aware rules run too
    done = wiki(root, "lint", "--no-cache")
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stdout.startswith("All checks passed")


def test_init_again_changes_nothing_and_says_so(fresh):
    root, first = fresh
    before = snapshot(root)
    again = init(root.parent, str(root), "--model", "gemma4", "--lane", "tpu", "--lane", "jax",
                 "--kernel", "flash_attention")
    assert again["created"] == [] and again["updated"] == []
    assert sorted(again["skipped"]) == sorted(first["created"])
    assert snapshot(root) == before


def test_in_an_existing_wiki_init_adds_only_what_is_missing(fresh):
    root, _ = fresh
    (root / "wiki/experiments/program.md").write_text("# my own root\n\n## Setup\n\nmine\n")
    (root / ".gitignore").write_text("node_modules/\n.wiki_cache/\n")
    before = snapshot(root)
    out = init(root, "--model", "gemma4", "--lane", "torchax", "--model", "llama3_8B")
    assert set(out["created"]) == {
        f"{MODEL_DIR}/torchax/program.md", f"{MODEL_DIR}/torchax/log.md", f"{MODEL_DIR}/torchax/RESULTS.tsv",
        "wiki/models/gemma4-torchax.md", "wiki/experiments/llama3_8B_autoresearch_optimization/program.md",
        "wiki/experiments/llama3_8B_autoresearch_optimization/torchax/program.md",
        "wiki/experiments/llama3_8B_autoresearch_optimization/torchax/log.md",
        "wiki/experiments/llama3_8B_autoresearch_optimization/torchax/RESULTS.tsv", "wiki/models/llama3_8B-torchax.md",
    }
    assert out["updated"] == [".gitignore"]
    assert "wiki/experiments/program.md" in out["skipped"] and "wiki/index.md" in out["skipped"]
    assert any("## Models (N)" in note for note in out["notes"])
    after = snapshot(root)
    changed = {rel for rel in before if after[rel] != before[rel]}
    assert changed == {".gitignore"}  # every other existing byte is kept
    gitignore = (root / ".gitignore").read_text().splitlines()
    assert gitignore[:2] == ["node_modules/", ".wiki_cache/"] and gitignore.count(".wiki_cache/") == 1
    assert "raw/profiles/" in gitignore


def test_human_output_lists_what_was_created_and_skipped(tmp_path):
    done = wiki(tmp_path, "init", "--model", "m1")
    assert done.returncode == 0
    assert "created           wiki/experiments/m1_autoresearch_optimization/program.md" in done.stdout
    again = wiki(tmp_path, "init", "--model", "m1")
    assert "skipped (exists)  wiki/experiments/m1_autoresearch_optimization/program.md" in again.stdout
    assert ": 0 created, 0 updated, " in again.stdout


def test_a_pyproject_tool_wiki_is_never_shadowed_by_a_new_wiki_toml(tmp_path):
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n\n[tool.wiki]\nignore = ["LNK001"]\n')
    out = init(tmp_path)
    assert "wiki.toml" not in out["created"] and not (tmp_path / "wiki.toml").exists()
    assert any("[tool.wiki]" in note for note in out["notes"])
    assert load_config(tmp_path).ignore == ["LNK001"]


@pytest.mark.parametrize("argv, message", [
    (["--lane", "tpu"], "--lane needs a --model"),
    (["--model", "gemma4", "--lane", "TPU"], "invalid lane name 'TPU'"),
    (["--model", "../x"], "invalid model name '../x'"),
    (["--model", "/etc"], "invalid model name '/etc'"),
    (["--model", "CON"], "a device name reserved on Windows"),
    (["--kernel", "a\x01b"], "invalid kernel family name"),
    (["--memory", "a/b"], "invalid run name 'a/b'"),
    (["--memory", ".."], "invalid run name '..'"),
])
def test_row44_hostile_names_are_refused_in_one_line_with_exit_2(tmp_path, argv, message):
    done = wiki(tmp_path, "init", *argv)
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1
    assert not (tmp_path / "wiki").exists()


def test_dir_that_is_a_file_is_bad_input(tmp_path):
    (tmp_path / "f").write_text("x")
    done = wiki(tmp_path, "init", "f")
    assert done.returncode == 2 and done.stderr.strip() == f"error: {tmp_path / 'f'}: not a directory"


def test_memory_scaffolds_a_relay_that_wiki_step_can_wake_on(tmp_path):
    from wikiengine.demos.scaffold import DEMO_TEMPLATE
    from wikiengine.model import memory
    from wikiengine.model.state import RelayState

    out = init(tmp_path, "--memory", "ounce")
    assert {"memory/STATE.md", "memory/QUOTA.md", "memory/ASSETS.md", "memory/ERRORS.md", "store/",
            "wiki/runs/program.md", "wiki/runs/ounce/program.md"} <= set(out["created"])
    assert (tmp_path / "wiki/runs/program.md").read_bytes() == (DEMO_TEMPLATE / "wiki/runs/program.md").read_bytes()
    assert (tmp_path / "memory/QUOTA.md").read_text() == memory.QUOTA_TEMPLATE
    assert RelayState.read(tmp_path).run == "ounce"
    assert "store/" in (tmp_path / ".gitignore").read_text().splitlines()
    resolved = json.loads(wiki(tmp_path, "resolve", "--run", "ounce", "--json").stdout)
    assert resolved["config"]["store"] == {"kind": "local-git", "path": "store"}
    assert resolved["config"]["compute"]["slug_prefix"] == "ounce-session"
    lint = wiki(tmp_path, "lint", "--no-cache")
    assert lint.returncode == 0, lint.stdout
    git_commit_all(tmp_path)
    dry = wiki(tmp_path, "step", "--dry-run", "--json")
    assert dry.returncode == 0, dry.stderr
    assert json.loads(dry.stdout)["decision"] == "launch"
    wake = wiki(tmp_path, "step")
    assert wake.returncode == 2 and "no bootstrap block" in wake.stderr  # the config says what to pin first
    again = init(tmp_path, "--memory", "ounce")
    assert again["created"] == [] and "memory/STATE.md" in again["skipped"] and "store/" in again["skipped"]


def test_variants_become_rows_keyed_size_slash_hardware(tmp_path):
    from wikiengine.model.variant_matrix import parse_matrix

    init(tmp_path, "--model", "qwen3", "--lane", "jax", "--variant", "8B/v6e-8", "--variant", "3B/v6e-8")
    page = parse_page((tmp_path / "wiki/models/qwen3-jax.md").read_text(), "qwen3-jax.md")
    assert page.frontmatter["sizes"] == ["8B", "3B"] and page.frontmatter["hardwares"] == ["v6e-8"]
    matrix = next(s for s in page.sections if s.title == "Variant matrix").body.splitlines()
    rows = [line for line in matrix if line.startswith("| ")][1:]
    assert rows == ["| 8B | v6e-8 | open | — | — | — | — |", "| 3B | v6e-8 | open | — | — | — | — |"]
    parsed = parse_matrix(page)
    assert [row.key for row in parsed.rows] == ["8B/v6e-8", "3B/v6e-8"]


@pytest.mark.parametrize("argv, message", [
    (["--model", "q", "--lane", "jax", "--variant", "8B"], "invalid variant '8B'"),
    (["--model", "q", "--lane", "jax", "--variant", "8B/a/b"], "invalid variant '8B/a/b'"),
    (["--model", "q", "--variant", "8B/v6e-8"], "--variant needs a --lane"),
])
def test_bad_variants_are_one_line_and_exit_2(tmp_path, argv, message):
    done = wiki(tmp_path, "init", *argv)
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1


def test_the_lane_writers_work_on_a_fresh_init_and_it_stays_clean(tmp_path):
    """init, then `wiki exp new` and `wiki exp file` (the lane writers) on its pages: lint stays clean."""
    root = tmp_path / "w"
    init(tmp_path, str(root), "--model", "gemma4", "--lane", "tpu", "--variant", "2b/v5p-8")
    git_commit_all(root)
    for key, value in (("user.name", "Tester"), ("user.email", "t@t.invalid")):
        subprocess.run(["git", "config", key, value], cwd=root, check=True)
    proposal = tmp_path / "proposal.md"
    proposal.write_text("**Hypothesis**: remat frees HBM.\n\n**Mechanism**: save matmul outputs only.\n\n"
                        "**Predicted signal**: +1 MFU.\n\n**Falsification criterion**: no gain beyond noise.\n")
    (tmp_path / "profile.md").write_text("Step time 812 ms.\n")
    (tmp_path / "hlo.md").write_text("Firing audit: confirmed.\n")
    steps = [
        ["exp", "new", "gemma4", "tpu", "--slug", "remat", "--variant", "2b/v5p-8", "--proposal", str(proposal)],
        ["lint", "--no-cache"],
        ["exp", "file", "v001", "gemma4", "tpu", "--verdict", "inconclusive", "--external", "--metric", "mfu=41.0",
         "--profile", str(tmp_path / "profile.md"), "--hlo", str(tmp_path / "hlo.md"), "--reason", "no baseline yet"],
        ["lint", "--no-cache"],
    ]
    for argv in steps:
        done = wiki(root, *argv)
        assert done.returncode == 0, (argv, done.stdout, done.stderr)
    results = (root / MODEL_DIR / "tpu" / "RESULTS.tsv").read_text().splitlines()
    assert results[0].split("\t")[0] == "exp_id" and results[1].startswith("v001")


def test_without_dir_init_adds_to_the_wiki_it_runs_in(fresh):
    root, _ = fresh
    out = init(root / "wiki" / "experiments", "--model", "gemma4", "--lane", "pallas2")
    assert out["root"] == str(root)
    assert f"{MODEL_DIR}/pallas2/program.md" in out["created"]
    assert not (root / "wiki/experiments/wiki").exists()


def test_the_scaffolded_pre_commit_config_runs_wiki_lint_through_pre_commit(tmp_path):
    """The real pre-commit framework, on the generated config: clean as scaffolded, a bad page refused."""
    pytest.importorskip("pre_commit")
    root = tmp_path / "w"
    init(tmp_path, str(root), "--model", "gemma4", "--lane", "tpu", "--variant", "2b/v5p-8")
    subprocess.run(["git", "init", "-q"], cwd=root, check=True)
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    env = {"PATH": f"{Path(sys.executable).parent}:/usr/bin:/bin", "HOME": str(tmp_path),
           "PRE_COMMIT_HOME": str(tmp_path / "pre-commit-home")}
    pre_commit = [sys.executable, "-m", "pre_commit", "run"]
    clean = subprocess.run([*pre_commit, "--all-files"], cwd=root, capture_output=True, text=True, env=env, timeout=300)
    assert clean.returncode == 0 and "wiki lint" in clean.stdout and "Passed" in clean.stdout, clean.stdout + clean.stderr
    bad = root / MODEL_DIR / "tpu" / "2026-06-01-v001-bad.md"
    bad.write_text("---\ntitle: bad\ntype: experiment\nstatus: done\n---\n# bad\n")
    subprocess.run(["git", "add", "-A"], cwd=root, check=True)
    refused = subprocess.run(pre_commit, cwd=root, capture_output=True, text=True, env=env, timeout=300)
    assert refused.returncode == 1 and "Failed" in refused.stdout
    assert "2026-06-01-v001-bad.md:4:1: WK002" in refused.stdout


def test_row44_a_symlink_out_of_the_wiki_is_never_written_through(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "w"
    (root / "wiki").mkdir(parents=True)
    (root / "wiki" / "models").symlink_to(outside)
    done = wiki(tmp_path, "init", str(root), "--model", "gemma4", "--lane", "tpu")
    assert done.returncode == 2 and "resolves outside" in done.stderr and done.stderr.count("\n") == 1
    assert list(outside.iterdir()) == []
    assert sorted(p.name for p in (root / "wiki").iterdir()) == ["models"]  # nothing written at all


def test_row44_a_memory_folder_symlinked_out_is_refused_before_anything_is_written(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    root = tmp_path / "w"
    root.mkdir()
    (root / "memory").symlink_to(outside)
    done = wiki(tmp_path, "init", str(root), "--memory", "r1")
    assert done.returncode == 2 and "resolves outside" in done.stderr
    assert list(outside.iterdir()) == [] and sorted(p.name for p in root.iterdir()) == ["memory"]


def test_the_env_readme_documents_cluster_files_and_is_not_one(fresh):
    from wikiengine.executors.gke.clusters import discover_clusters, parse_cluster_file

    root, _ = fresh
    readme = root / ".env" / "README.md"
    assert "gke-<tpu>-<topology>-<owner>.md" in readme.read_text()
    assert discover_clusters(root / ".env") == []
    example = "\n".join(line[4:] for line in readme.read_text().splitlines() if line.startswith("    "))
    (root / "example.md").write_text(example[example.index("## Topology"):])
    parsed = parse_cluster_file(root / "example.md")  # the README's example is a valid cluster file
    assert (parsed.name, parsed.tpu.xpk_type, parsed.zone) == ("alice-v5p-16", "v5p-16", "europe-west4-b")
    assert parsed.context == "gke_example-tpu-project_europe-west4-b_alice-v5p-16" and not parsed.context_derived


def test_a_cluster_file_from_flags_is_read_back_by_wiki_clusters(tmp_path):
    from wikiengine.executors.gke.clusters import discover_clusters

    def init_cluster(name, project):
        return subprocess.run([sys.executable, "-m", "wikiengine", "init", "--json", "--cluster", name, "--tpu",
                               "v6e-2x4", "--location", "us-east5", "--project", project], cwd=tmp_path,
                              capture_output=True, text=True, timeout=300,
                              env={"PATH": "/usr/bin:/bin", "USER": "bob", "HOME": str(tmp_path)})

    done = init_cluster("bob-v6e-8", "p-1")
    assert done.returncode == 0, done.stderr
    assert ".env/gke-v6e-2x4-bob.md" in json.loads(done.stdout)["created"]
    [cluster] = discover_clusters(tmp_path / ".env", "v6e", "2x4")
    assert (cluster.name, cluster.tpu.chips, cluster.tpu.xpk_type, cluster.region, cluster.zone) == (
        "bob-v6e-8", 8, "v6e-8", "us-east5", None)
    assert cluster.context == "gke_p-1_us-east5_bob-v6e-8"
    before = (tmp_path / ".env/gke-v6e-2x4-bob.md").read_bytes()
    again = init_cluster("bob-v6e-8-b", "p-2")  # same file name: an existing cluster file is never overwritten
    assert again.returncode == 0 and ".env/gke-v6e-2x4-bob.md" in json.loads(again.stdout)["skipped"]
    assert (tmp_path / ".env/gke-v6e-2x4-bob.md").read_bytes() == before


@pytest.mark.parametrize("argv, message", [
    (["--cluster", "c1", "--tpu", "v5p-2x2x2"], "missing --location, --project"),
    (["--cluster", "Bad_Name", "--tpu", "v5p-2x2x2", "--location", "europe-west4-b", "--project", "p"],
     "--cluster: cluster name 'Bad_Name' is not a valid GKE cluster name"),
    (["--cluster", "c1", "--tpu", "v9-2x2", "--location", "europe-west4-b", "--project", "p"],
     "--tpu: unknown TPU generation 'v9'"),
    (["--cluster", "c1", "--tpu", "v5p-2x2", "--location", "europe-west4-b", "--project", "p"],
     "--tpu: v5p topology must be AxBxC, not 2x2"),
    (["--cluster", "c1", "--tpu", "v5p-2x2x2", "--location", "mars", "--project", "p"],
     "--cluster: no region or zone"),
])
def test_bad_cluster_flags_are_one_line_exit_2_and_write_nothing(tmp_path, argv, message):
    done = wiki(tmp_path, "init", *argv)
    assert done.returncode == 2 and message in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert not (tmp_path / ".env").exists() and not (tmp_path / "wiki").exists()
