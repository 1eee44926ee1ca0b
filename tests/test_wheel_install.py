"""The built wheel, installed into a fresh venv outside the repository, resolves a wiki.

Builds the wheel (`pip wheel . --no-deps`; hatchling comes from PyPI), creates a venv in a
temporary directory, installs the wheel with its light dependencies from PyPI, copies the
example wiki next to it and runs `wiki resolve --json` from there. The schemas must come
from the installed ``wikiengine/_schema``: a config that breaks its schema gives the schema
error. Slow (network, about 1-2 minutes): ``pytest -m slow``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest
from packaging.version import Version

REPO = Path(__file__).resolve().parent.parent
# one worker builds and installs the wheel (a minute or two) for every test here
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("wheel")]


# this pip installs into the new venv (`--python`, pip 22.3 and later), which then needs no pip of
# its own: ensurepip costs 2.9 s of CPU
_WITHOUT_PIP = ["--without-pip"] if Version(version("pip")) >= Version("22.3") else []


def _run(cmd, **kwargs):
    result = subprocess.run(cmd, capture_output=True, text=True, **kwargs)
    assert result.returncode == 0, f"{cmd}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    base = tmp_path_factory.mktemp("wheel")
    assert REPO not in base.resolve().parents
    dist = base / "dist"
    _run([sys.executable, "-m", "pip", "wheel", str(REPO), "-w", str(dist), "--no-deps", "-q"], timeout=600)
    wheels = sorted(dist.glob("wikiengine-*.whl"))
    assert len(wheels) == 1, wheels
    venv = base / "venv"
    python = venv / "bin" / "python"
    _run([sys.executable, "-m", "venv", str(venv), *_WITHOUT_PIP], timeout=300)
    installer = [sys.executable, "-m", "pip", "--python", str(python)] if _WITHOUT_PIP else [str(python), "-m", "pip"]
    _run([*installer, "install", "-q", "--disable-pip-version-check", str(wheels[0])], timeout=900)
    work = base / "copy"
    shutil.copytree(REPO / "wiki", work / "wiki")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "WIKI_ROOT", "VIRTUAL_ENV")}
    env.update(USER="wheeltest", PATH=f"{venv / 'bin'}{os.pathsep}{env.get('PATH', '')}")
    return {"venv": venv, "python": python, "wiki": venv / "bin" / "wiki", "work": work, "env": env, "wheel": wheels[0]}


def test_the_installed_package_is_the_wheel_not_the_repository(installed):
    out = _run(
        [str(installed["python"]), "-c", "import wikiengine, wikiengine.core.schemas as s; print(wikiengine.__file__); print(s.schema_dir())"],
        cwd=installed["work"],
        env=installed["env"],
    ).stdout.splitlines()
    module_file, schema_dir = Path(out[0]), Path(out[1])
    assert installed["venv"] in module_file.parents
    assert schema_dir == module_file.parent / "_schema"
    assert sorted(p.name for p in schema_dir.glob("*.schema.json")) == sorted(
        p.name for p in (REPO / "schema").glob("*.schema.json")
    )


def test_wiki_resolve_json_from_a_copy_of_the_example_wiki(installed):
    result = _run(
        [str(installed["wiki"]), "resolve", "--json", "gemma4", "tpu"], cwd=installed["work"], env=installed["env"]
    )
    data = json.loads(result.stdout)
    assert data["target"] == "wiki/experiments/gemma4_autoresearch_optimization/tpu"
    assert data["files"][0] == "wiki/experiments/program.md"
    assert (data["user_prefix"], data["model_name"], data["lane"]) == ("demo", "gemma4", "tpu")
    assert {s["title"] for s in data["sections"]} >= {"Setup", "Workload naming", "Config"}
    assert data["config"]["topology"] == "2x2x2"
    # inferred from the current directory too
    lane = installed["work"] / "wiki/experiments/llama3_8B_autoresearch_optimization/tpu"
    data = json.loads(_run([str(installed["wiki"]), "resolve", "--json"], cwd=lane, env=installed["env"]).stdout)
    assert (data["user_prefix"], data["model_name"], data["lane"]) == ("wheeltest", "llama3-8b", "tpu")


def test_the_installed_schemas_are_used(installed, tmp_path):
    work = tmp_path / "copy"
    shutil.copytree(installed["work"] / "wiki", work / "wiki")
    program = work / "wiki/experiments/gemma4_autoresearch_optimization/tpu/program.md"
    program.write_text(program.read_text().replace("topology: 2x2x2", "topology: 2by2"))
    result = subprocess.run(
        [str(installed["wiki"]), "resolve", "--json", "gemma4", "tpu"],
        cwd=work,
        env=installed["env"],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 2
    assert result.stderr.strip() == (
        "error: wiki/experiments/gemma4_autoresearch_optimization/tpu/program.md:23: "
        "topology: '2by2' does not match '^[0-9]+(x[0-9]+){1,2}$' [schema program-config]"
    )
    assert "Traceback" not in result.stderr


def test_wiki_init_from_the_wheel_uses_the_packaged_templates_and_hook(installed, tmp_path):
    from wikiengine.demos import scaffold

    root = tmp_path / "fresh"
    out = json.loads(_run([str(installed["wiki"]), "init", str(root), "--model", "gemma4", "--lane", "tpu", "--agent", "claude",
                           "--json"], cwd=tmp_path, env=installed["env"]).stdout)
    assert "wiki/models/gemma4-tpu.md" in out["created"] and ".pre-commit-config.yaml" in out["created"]
    assert ".claude/settings.json" in out["created"] and ".claude/hooks/wiki_hooks.py" in out["created"]
    kit = _run([str(installed["python"]), "-c", "import wikiengine.demos.scaffold as s; print(s.agents_path())"],
               cwd=tmp_path, env=installed["env"]).stdout.strip()
    assert Path(kit).name == "_agents" and installed["venv"] in Path(kit).parents
    packaged = _run([str(installed["python"]), "-c", "import wikiengine.demos.scaffold as s; print(s.published_hooks_path())"],
                    cwd=tmp_path, env=installed["env"]).stdout.strip()
    assert Path(packaged).name == "_pre-commit-hooks.yaml" and installed["venv"] in Path(packaged).parents
    assert (root / ".pre-commit-config.yaml").read_text() == scaffold.pre_commit_text()
    assert (root / "wiki/experiments/program.md").read_bytes() == (scaffold.INIT_TEMPLATE / "experiments-program.md").read_bytes()


def test_the_wheel_installs_one_top_level_import_name(installed):
    """training/ and executors/ are wikiengine.training and wikiengine.executors in the wheel,
    so they never collide with a user's own ``training`` package (issue 15)."""
    import zipfile

    names = zipfile.ZipFile(installed["wheel"]).namelist()
    top = {n.split("/")[0] for n in names if not n.split("/")[0].endswith(".dist-info")}
    assert top == {"wikiengine"}, top
    assert "wikiengine/training/session.py" in names and "wikiengine/executors/gke/compute.py" in names
    user = installed["work"] / "user"
    (user / "training").mkdir(parents=True)
    (user / "training" / "__init__.py").write_text("MINE = True\n")
    code = ("import training, wikiengine.training.checkpoint as c, wikiengine.executors.registry as r; "
            "print(training.MINE, c.__file__, r.__file__)")
    out = _run([str(installed["python"]), "-c", code], cwd=user, env=installed["env"]).stdout.split()
    assert out[0] == "True"
    assert all(installed["venv"] in Path(p).parents for p in out[1:])
    help_out = _run([str(installed["python"]), "-m", "wikiengine.training.session", "--help"], cwd=user,
                    env=installed["env"]).stdout
    assert "usage: python -m wikiengine.training.session" in help_out
