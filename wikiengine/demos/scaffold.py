"""The files a new wiki starts from, in the layout of real autoresearch wikis.

:func:`plan` writes nothing: from what ``wiki init`` was asked for, the list of files to write
(path and text), declared as data in :data:`LANE_FILES` and friends. :func:`apply` writes
only those that are missing, never overwriting a byte; a ``.gitignore`` only gains the
lines it lacks. The relay run's program comes from the demo's template
(:func:`run_program_text`) and its memory files from :func:`wikiengine.model.memory.scaffold`,
so ``wiki init --memory`` and ``wiki demo`` share them.
"""

from __future__ import annotations

import datetime as dt
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.identity import MODEL_DIR_SUFFIX, model_name

INIT_TEMPLATE = Path(__file__).resolve().parent / "init_template"
DEMO_TEMPLATE = Path(__file__).resolve().parent / "demo_template"
GITIGNORE = (
    "# artifacts: profiles and HLO dumps stay out of git by design",
    "raw/profiles/",
    "# caches and local state of wiki lint / wiki step",
    ".wiki_cache/",
    ".wiki/",
    "__pycache__/",
)
RELAY_GITIGNORE = ("# the relay's local checkpoint store (a git repository of its own)", "store/")
# The step grid of the `tiny` preset: `wiki demo`'s run, and a new run's starting point.
TINY_GRID = {"max_steps": 24, "save_steps": 4, "session_steps": 8, "samples_per_step": 8, "seq_len": 64,
             "micro_batch": 4, "seed": 1234}

# (path, template) per scope; paths and texts are formatted with the scope's names.
ROOT_FILES = (("wiki/log.md", "wiki-log.md"),)
EXPERIMENTS_FILES = (("wiki/experiments/program.md", "experiments-program.md"),)
MODEL_FILES = (("wiki/experiments/{model_dir}/program.md", "model-program.md"),)
LANE_FILES = (
    ("wiki/experiments/{model_dir}/{lane}/program.md", "lane-program.md"),
    ("wiki/experiments/{model_dir}/{lane}/log.md", "lane-log.md"),
    ("wiki/models/{model}-{lane}.md", "model-page.md"),
)
KERNEL_FILES = (
    ("wiki/kernel_experiments/program.md", "kernels-program.md"),
    ("wiki/kernel_experiments/{kernel}/pallas/program.md", "kernel-program.md"),
    ("wiki/kernel_experiments/{kernel}/pallas/log.md", "kernel-log.md"),
)


@dataclass(frozen=True)
class File:
    """One file of the scaffold; ``lines``: a line set (``.gitignore``) that gains missing lines."""

    rel: str
    text: str
    lines: bool = False


@dataclass(frozen=True)
class Cluster:
    """One ``.env/`` cluster file to write: the GKE cluster, its slice (``v5p-2x2x2``), location and project."""

    name: str
    generation: str
    topology: str
    location: str  # a zone (europe-west4-b) or a region (europe-west4), as gcloud's --location takes
    project: str
    owner: str  # the file name's last part: gke-<tpu>-<topology>-<owner>.md

    @property
    def rel(self) -> str:
        return f".env/gke-{self.generation}-{self.topology}-{self.owner}.md"

    def text(self) -> str:
        import math

        from wikiengine.executors.gke.clusters import is_zone

        chips = math.prod(int(d) for d in self.topology.split("x"))
        return _template("env-cluster.md", cluster=self.name, generation=self.generation, topology=self.topology,
                         chips=str(chips), location=self.location, project=self.project,
                         location_key="Zone" if is_zone(self.location) else "Region")


@dataclass(frozen=True)
class Request:
    """What to scaffold: model folders and lanes (every lane under every model), kernel families, a relay run."""

    models: tuple[str, ...] = ()
    lanes: tuple[str, ...] = ()
    variants: tuple[tuple[str, str], ...] = ()  # (size, hardware): a Variant matrix row of every model page
    kernels: tuple[str, ...] = ()
    run: str | None = None
    cluster: Cluster | None = None
    agent: str | None = None  # "claude" | "codex": the agent kit of contrib/agents/


@dataclass
class Outcome:
    """What a scaffold did to each file: created, gained lines, or left as it was."""

    created: list[str] = field(default_factory=list)
    updated: list[str] = field(default_factory=list)  # line sets that gained lines
    skipped: list[str] = field(default_factory=list)  # already there: left byte for byte

    def as_json(self) -> dict:
        return {"created": self.created, "updated": self.updated, "skipped": self.skipped}


def _template(name: str, **names: str) -> str:
    return (INIT_TEMPLATE / name).read_text(encoding="utf-8").format(**names)


def _files(table, **names: str) -> list[File]:
    return [File(path.format(**names), _template(template, **names)) for path, template in table]


def results_header() -> str:
    """The header of a lane's ``RESULTS.tsv`` (tab-separated, one row per run below it)."""
    from wikiengine.model.results_tsv import HEADER

    return HEADER


def model_names(model: str, lane: str, today: str, variants: tuple[tuple[str, str], ...] = ()) -> dict[str, str]:
    """The names the templates of one (model, lane) use: ``gemma4`` -> its folder, MODEL_NAME, ``Gemma4``;
    the Variant matrix rows (status ``open``, nothing measured yet) and the page's ``sizes`` / ``hardwares``."""
    from wikiengine.model.variant_matrix import render_matrix

    base = model.removesuffix(MODEL_DIR_SUFFIX)
    empty = {"Status": "open", "Baseline": "—", "Current best": "—", "Open hyps": "—", "Frontier exp": "—"}
    matrix = render_matrix([{"Size": size, "Hardware": hardware, **empty} for size, hardware in variants])
    return {"model": base, "model_dir": base + MODEL_DIR_SUFFIX, "model_name": model_name(base + MODEL_DIR_SUFFIX),
            "Model": base[:1].upper() + base[1:], "lane": lane, "today": today, "variant_matrix": matrix,
            "sizes": json.dumps(list(dict.fromkeys(s for s, _ in variants))),
            "hardwares": json.dumps(list(dict.fromkeys(h for _, h in variants)))}


def index_text(model_pages: list[str]) -> str:
    """``wiki/index.md``: the catalog, one counted section per page type (``## Models (N)``)."""
    links = "".join(f"- [{Path(rel).stem}]({Path(rel).relative_to('wiki').as_posix()})\n" for rel in model_pages)
    return ("# Index\n\nThe catalog of this wiki: one section per page type, each heading counting its pages.\n\n"
            f"## Models ({len(model_pages)})\n\n" + (links or "None yet.\n") + "\n"
            "## Hypotheses (0)\n\nNone yet.\n\n## Analyses (0)\n\nNone yet.\n")


def wiki_toml_text() -> str:
    """``wiki.toml`` with every default of the lint configuration spelled out (read back by ``load_config``)."""
    from wikiengine.lint.config import LintConfig

    defaults = LintConfig()

    def value(item) -> str:  # a JSON string or list of strings is a TOML basic string or array
        return json.dumps(item)

    ops = "".join(f"{tier} = {value(names)}\n" for tier, names in defaults.log_ops.items())
    return (
        "# wiki lint configuration: the defaults, spelled out. `wiki lint --list-rules` lists the codes;\n"
        "# `wiki lint --explain CODE` documents each rule and its options.\n\n"
        f"select = {value(defaults.select)}   # prefixes or codes to run (empty: every rule)\n"
        f"ignore = {value(defaults.ignore)}   # prefixes or codes to skip\n"
        f"additive-marker = {value(defaults.additive_marker)}   # titles of sections that concatenate\n\n"
        "[per-file-ignores]   # glob = [codes]\n\n"
        "[log-ops]   # the ops each log tier knows\n" + ops + "\n"
        "[rules]   # per-rule options, e.g. [rules.EXP001] since = \"2026-01-01\" grandfathers older pages\n"
    )


def published_hooks_path() -> Path:
    """``.pre-commit-hooks.yaml``: shipped in the wheel as ``wikiengine/_pre-commit-hooks.yaml``."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "_pre-commit-hooks.yaml"
    return packaged if packaged.is_file() else package.parent / ".pre-commit-hooks.yaml"


AGENTS = ("claude", "codex")


def agents_path() -> Path:
    """``contrib/agents/``: shipped in the wheel as ``wikiengine/_agents``."""
    package = Path(__file__).resolve().parents[1]
    packaged = package / "_agents"
    return packaged if packaged.is_dir() else package.parent / "contrib" / "agents"


def agent_files(agent: str) -> list[File]:
    """The agent kit as project files: Claude Code's skill, hook script and ``.claude/settings.json``
    (the plugin's hooks with the plugin root replaced by the project's ``.claude/``), or Codex's
    ``AGENTS.md``."""
    kit = agents_path()
    if agent == "codex":
        return [File("AGENTS.md", (kit / "codex" / "AGENTS.md").read_text(encoding="utf-8"))]
    plugin = kit / "claude"
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    settings = json.dumps({"hooks": hooks}, indent=2).replace("${CLAUDE_PLUGIN_ROOT}", "${CLAUDE_PROJECT_DIR}/.claude")
    return [File(".claude/skills/wiki-wake/SKILL.md",
                 (plugin / "skills" / "wiki-wake" / "SKILL.md").read_text(encoding="utf-8")),
            File(".claude/hooks/wiki_hooks.py", (plugin / "hooks" / "wiki_hooks.py").read_text(encoding="utf-8")),
            File(".claude/settings.json", settings + "\n")]


def pre_commit_text() -> str:
    """A ``.pre-commit-config.yaml`` running the published ``wiki-lint`` hook with the installed ``wiki``."""
    import yaml

    hooks = yaml.safe_load(published_hooks_path().read_text(encoding="utf-8"))
    hook = next(h for h in hooks if h["id"] == "wiki-lint")
    local = {k: hook[k] for k in ("id", "name", "entry", "files", "require_serial") if k in hook}
    local["language"] = "system"  # the `wiki` installed beside this wiki, not a copy built by pre-commit
    config = yaml.safe_dump({"repos": [{"repo": "local", "hooks": [local]}]}, sort_keys=False)
    return (
        "# wiki lint on every commit: pip install pre-commit && pre-commit install\n"
        "# The hook is wikiengine's published `wiki-lint` hook (its .pre-commit-hooks.yaml), run\n"
        "# with the installed `wiki`. To pin a wikiengine release instead, use the remote form:\n"
        "#   - repo: <wikiengine repository>\n#     rev: <tag>\n#     hooks: [{id: wiki-lint}]\n" + config
    )


def relay_config(run: str) -> dict:
    """The config of a new relay run: the tiny grid, a local git store, local processes."""
    grid = {"preset": "tiny", **TINY_GRID}
    slug = re.sub(r"[^A-Za-z0-9._-]", "-", run).lstrip("-._") or "run"
    return {
        **grid, "tokens_per_step": grid["samples_per_step"] * grid["seq_len"], "session_timeout_s": 600,
        "store": {"kind": "local-git", "path": "store"},
        "compute": {"kind": "local-process", "accelerator": "cpu", "state_dir": ".wiki/compute",
                    "slug_prefix": f"{slug}-session"},
        "quota": {"session_hours": 1.0, "reserve_hours": 0.1},
    }


def run_program_text(run: str, config: dict, scaffolded_by: str, next_steps: str = "") -> str:
    """``wiki/runs/<run>/program.md`` from the demo's template: a description and the ``## Config`` block."""
    import yaml

    template = (DEMO_TEMPLATE / "run-program.md.tmpl").read_text(encoding="utf-8")
    return template.format(run=run, scaffolded_by=scaffolded_by, next_steps=next_steps,
                           config_yaml=yaml.safe_dump(config, sort_keys=False, width=4096), **config)


RELAY_NEXT_STEPS = (
    "\n\n`wiki init` created the checkpoint store (`store/`, a local git repository). Before the\n"
    "first launch, pin the data (`dataset_files_sha`, `shuffle_perm_sha`) and the launcher (a\n"
    "`bootstrap:` block with repo, rev and launcher_sha256), and size the grid and `quota` for\n"
    "real sessions: until then a wake that would launch stops with a clear error. The config\n"
    "of `wiki demo` is a complete example."
)


def plan(request: Request, today: dt.date, existing: set[str], *, configured: bool = False) -> list[File]:
    """Every file of the scaffold.

    ``existing``: the model pages already in the wiki (a new index counts them);
    ``configured``: ``pyproject.toml`` already holds ``[tool.wiki]``, which a new
    ``wiki.toml`` would silently override, so none is planned.
    """
    files = _files(ROOT_FILES)
    if request.models:
        files += _files(EXPERIMENTS_FILES)
    model_pages = sorted(existing)
    for model in request.models:
        for lane in request.lanes or (None,):
            names = model_names(model, lane or "", today.isoformat(), request.variants)
            files += _files(MODEL_FILES, **names)
            if lane is None:
                continue
            files += _files(LANE_FILES, **names)
            files.append(File(f"wiki/experiments/{names['model_dir']}/{lane}/RESULTS.tsv", results_header()))
            model_pages.append(f"wiki/models/{names['model']}-{lane}.md")
    for kernel in request.kernels:
        files += _files(KERNEL_FILES, kernel=kernel)
        files.append(File(f"wiki/kernel_experiments/{kernel}/pallas/RESULTS.tsv", results_header()))
        files.append(File(f"wiki/kernels/{kernel}.md",
                          _template("model-page.md", **model_names(kernel, "pallas", today.isoformat()))))
        model_pages.append(f"wiki/kernels/{kernel}.md")
    if request.run is not None:
        files.append(File("wiki/runs/program.md", (DEMO_TEMPLATE / "wiki/runs/program.md").read_text(encoding="utf-8")))
        files.append(File(f"wiki/runs/{request.run}/program.md",
                          run_program_text(request.run, relay_config(request.run), "wiki init", RELAY_NEXT_STEPS)))
    files.append(File("wiki/index.md", index_text(sorted(set(model_pages)))))
    if not configured:
        files.append(File("wiki.toml", wiki_toml_text()))
    files.append(File(".pre-commit-config.yaml", pre_commit_text()))
    files.append(File(".env/README.md", _template("env-readme.md")))
    if request.cluster is not None:
        files.append(File(request.cluster.rel, request.cluster.text()))
    if request.agent is not None:
        files += agent_files(request.agent)
    ignore = GITIGNORE + (RELAY_GITIGNORE if request.run is not None else ())
    files.append(File(".gitignore", "\n".join(ignore) + "\n", lines=True))
    unique: dict[str, File] = {}
    for item in files:
        unique.setdefault(item.rel, item)
    return list(unique.values())


def apply(root: Path, files: list[File]) -> Outcome:
    """Write the missing files of ``files`` under ``root``; existing ones are skipped (a line set gains its missing lines)."""
    from wikiengine.core.atomic import atomic_write_text

    outcome = Outcome()
    paths = check_inside(root, [item.rel for item in files])
    for item, path in zip(files, paths):
        if path.exists() and not item.lines:
            outcome.skipped.append(item.rel)
            continue
        if path.exists():
            current = path.read_text(encoding="utf-8")
            have = {line.strip() for line in current.splitlines()}
            missing = [line for line in item.text.splitlines() if line.strip() not in have and not line.startswith("#")]
            if not missing:
                outcome.skipped.append(item.rel)
                continue
            sep = "" if not current or current.endswith("\n") else "\n"
            atomic_write_text(path, current + sep + "\n".join(missing) + "\n")
            outcome.updated.append(item.rel)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, item.text)
        outcome.created.append(item.rel)
    return outcome


def relay_rels(run: str) -> list[str]:
    """What :func:`scaffold_relay` writes: the memory files and the store folder."""
    from wikiengine.model import memory

    return [f"{memory.MEMORY_DIR}/{name}" for name in memory.MEMORY_FILES] + [relay_config(run)["store"]["path"]]


def check_inside(root: Path, rels: list[str]) -> list[Path]:
    """Every ``rel`` joined under ``root``, refusing one that leaves it (``..``, a symlink out): before any write."""
    from wikiengine.model.targets import safe_join

    return [safe_join(root, *rel.split("/")) for rel in rels]


def scaffold_relay(root: Path, run: str, now: dt.datetime) -> Outcome:
    """The relay's memory files (:func:`wikiengine.model.memory.scaffold`, which keeps existing ones) and,
    when missing, the local git checkpoint store that :func:`relay_config` names."""
    from wikiengine.executors.local_store import LocalGitStore
    from wikiengine.model import memory

    *rels, store = relay_rels(run)
    check_inside(root, [*rels, store])
    before = {rel for rel in rels if (root / rel).exists()}
    memory.scaffold(root, run, now)
    outcome = Outcome(created=[r for r in rels if r not in before], skipped=[r for r in rels if r in before])
    if (root / store).exists():
        outcome.skipped.append(store + "/")
    else:
        LocalGitStore.create(root / store, description=f"checkpoint store of the {run} relay run")
        outcome.created.append(store + "/")
    return outcome
