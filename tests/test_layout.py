"""The layout of docs/architecture.md holds: every import points down.

The package's import graph is read from the source (every ``import`` and ``from ... import``,
at module level or inside a function) and checked against the layers below. A module may
import its own folder and any folder of a lower layer, nothing else: so there is no cycle
between folders, no mode imports another mode, and nothing imports ``_cli``. A name (or a
module) that starts with ``_`` is private to its folder. Registries that name modules as
strings (the rule registry, the engine's mode table) are loaded by name on purpose and are
not arrows.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
PACKAGE = "wikiengine"
MAPPED = {"executors": REPO / "executors", "training": REPO / "training"}

# folder (dotted, below the package) -> layer; a folder not listed inherits its parent's.
LAYERS = {
    "core": 0,
    "model": 1,
    "executors": 1,
    "executors.gke": 2,
    "lint": 2,
    "training": 2,
    "lint.rules": 3,
    "step": 3,
    "step.relay": 4,
    "step.lane": 4,
    "step.kernel": 4,
    "report": 5,
    "demos": 5,
    "_cli": 6,
    "": 7,  # wikiengine/__init__.py and __main__.py: the public API sits above everything
}
MAX_TOP_LEVEL_MODULES = 10
MAX_FUNCTION_LINES = 80


@dataclass(frozen=True)
class Arrow:
    source: str  # module, dotted
    line: int
    target: str  # module, dotted
    name: str | None  # the name imported from it, if any


def module_files() -> dict[str, Path]:
    """Every module of the package, including the two mapped folders, by dotted name."""
    roots = {PACKAGE: REPO / PACKAGE, **{f"{PACKAGE}.{k}": v for k, v in MAPPED.items()}}
    modules = {}
    for prefix, folder in roots.items():
        for path in folder.rglob("*.py"):
            rel = path.relative_to(folder).with_suffix("")
            parts = [p for p in rel.parts if p != "__init__"]
            modules[".".join([prefix, *parts])] = path
    return modules


def folder_of(module: str, modules: dict[str, Path]) -> str:
    """The folder a module lies in, dotted below the package (``step.lane``; ``""`` for the top)."""
    is_package = modules[module].name == "__init__.py"
    dotted = module if is_package else module.rpartition(".")[0]
    return dotted.removeprefix(PACKAGE).lstrip(".")


def layer_of(folder: str) -> int:
    while folder not in LAYERS:
        folder = folder.rpartition(".")[0]
    return LAYERS[folder]


def arrows(modules: dict[str, Path]) -> list[Arrow]:
    found = []
    for module, path in modules.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found += [Arrow(module, node.lineno, a.name, None) for a in node.names if a.name.startswith(PACKAGE)]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1] + ([base] if base else []))
                if not base.startswith(PACKAGE):
                    continue
                for alias in node.names:
                    sub = f"{base}.{alias.name}"
                    found.append(Arrow(module, node.lineno, sub, None) if sub in modules
                                 else Arrow(module, node.lineno, base, alias.name))
    return found


def test_the_walk_sees_every_folder_and_an_upward_arrow_would_fail():
    modules = module_files()
    folders = {folder_of(m, modules) for m in modules}
    assert {"core", "model", "lint", "lint.rules", "step", "step.lane", "step.kernel", "step.relay", "demos", "_cli",
            "executors", "training"} <= folders
    assert layer_of("executors.gke.lane") == LAYERS["executors.gke"] > LAYERS["executors"]
    assert layer_of("core") < layer_of("model") < layer_of("lint") < layer_of("step") < layer_of("step.lane")
    assert violations([Arrow(f"{PACKAGE}.core.page", 1, f"{PACKAGE}.step.lane.wake", None)], modules)


def violations(found: list[Arrow], modules: dict[str, Path]) -> list[str]:
    bad = []
    for arrow in found:
        if arrow.target not in modules:
            bad.append(f"{arrow.source}:{arrow.line}: imports {arrow.target}, which is no module")
            continue
        source, target = folder_of(arrow.source, modules), folder_of(arrow.target, modules)
        where = f"{modules[arrow.source].relative_to(REPO)}:{arrow.line}"
        private_module = any(p.startswith("_") and not p.startswith("__") for p in arrow.target.split(".")[1:])
        if target != source and not (layer_of(target) < layer_of(source)):
            bad.append(f"{where}: {source or 'wikiengine'} imports {arrow.target} ({target}), which is not below it")
        elif private_module and target != source and not target.startswith("_cli") | source.startswith("_cli"):
            bad.append(f"{where}: imports the private module {arrow.target} from outside its folder")
        if arrow.name and arrow.name.startswith("_") and not arrow.name.startswith("__") and arrow.target != arrow.source:
            bad.append(f"{where}: imports the private name {arrow.name} of {arrow.target}")
    return bad


def test_every_import_points_down_and_no_private_name_crosses_a_module():
    modules = module_files()
    assert violations(arrows(modules), modules) == []


def private_uses(modules: dict[str, Path]) -> list[str]:
    """``alias._name`` where ``alias`` is another project module imported by name."""
    found = []
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases.update({a.asname: a.name for a in node.names if a.asname and a.name in modules})
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                aliases.update({a.asname or a.name: f"{node.module}.{a.name}" for a in node.names
                                if f"{node.module}.{a.name}" in modules})
        for node in ast.walk(tree):
            if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                    and node.attr.startswith("_") and not node.attr.startswith("__")
                    and aliases[node.value.id] != module):
                found.append(f"{path.relative_to(REPO)}:{node.lineno}: uses {aliases[node.value.id]}.{node.attr}")
    return sorted(set(found))


def test_no_module_reaches_into_another_module_s_private_names():
    assert private_uses(module_files()) == []


def test_no_cycle_between_folders():
    modules = module_files()
    graph: dict[str, set[str]] = {}
    for arrow in arrows(modules):
        if arrow.target in modules:
            source, target = folder_of(arrow.source, modules), folder_of(arrow.target, modules)
            if source != target:
                graph.setdefault(source, set()).add(target)
    assert _cycles(graph) == []


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one folder (Tarjan)."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in graph.get(node, ()):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in list(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]


def test_few_modules_directly_under_the_package():
    top = sorted(p.name for p in (REPO / PACKAGE).glob("*.py"))
    assert len(top) <= MAX_TOP_LEVEL_MODULES, top


@pytest.mark.parametrize("folder", [PACKAGE, "executors", "training"])
def test_no_function_is_longer_than_the_limit(folder):
    long = []
    for path in sorted((REPO / folder).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                length = node.end_lineno - node.lineno + 1
                if length >= MAX_FUNCTION_LINES:
                    long.append(f"{path.relative_to(REPO)}:{node.lineno}: {node.name} is {length} lines")
    assert long == []
