"""Where a short command's CPU goes before its work: the imports, and in them the dataclasses
made, the regular expressions compiled and PyYAML.

    python benchmarks/bench_startup.py [--rounds 7] [--work DIR] [--json]

On the lane of ``bench_wake.py`` (a `wiki init` wiki with one lane session started and woken
once), for each command (the lane's no-op wake, `wiki lint` of one page, `wiki --version`): one
run (after one to warm its caches) records the modules the command imports, in their order;
then, in interleaved rounds, ``python -c pass``, a process that imports exactly those modules and
does nothing else (and ends as the command does, without the interpreter's teardown), and the
command itself (CPU: user + system from ``wait4``, medians). A last process per command
imports the same modules with timers on ``dataclasses``' class processing and on ``re``'s
compiler, and times ``import dataclasses`` and PyYAML's import on their own (PyYAML first,
with the standard modules it is the first to need; its compiled patterns count there, not
among the regular expressions), medians of three. Issue 28: the imports were 81% of a no-op wake.
"""

from __future__ import annotations

import json
import os
import statistics
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent

RECORD = """\
import atexit, sys
def _keep(path=sys.argv[1]):
    with open(path, "w", encoding="utf-8") as out:
        out.write("\\n".join(name for name in sys.modules if not name.startswith("__")))
atexit.register(_keep)  # an exit hook: the command then ends the ordinary way, and this runs
sys.argv = ["wiki", *sys.argv[2:]]
from wikiengine._cli.main import main
main()
"""

IMPORTS = """\
import importlib, os, sys
for name in open(sys.argv[1], encoding="utf-8").read().split():
    try:
        importlib.import_module(name)
    except Exception:
        pass  # a module the command found absent (an optional dependency) is absent here too
os._exit(0)  # as the command ends (wikiengine._cli.main.leave): no teardown of the modules
"""

ATTRIBUTE = """\
import time
began = time.perf_counter()
import dataclasses  # with inspect and ast, which it needs
dataclasses_import_s = time.perf_counter() - began
import importlib, json, re, sys
names = open(sys.argv[1], encoding="utf-8").read().split()
made, compiled, in_yaml = [0, 0.0], [0, 0.0], [False]
process_class, compile_ = dataclasses._process_class, re._compile

def timed_class(cls, *args, **kwargs):
    start = time.perf_counter()
    try:
        return process_class(cls, *args, **kwargs)
    finally:
        made[0] += 1
        made[1] += time.perf_counter() - start

def timed_compile(pattern, flags):
    key = (type(pattern), pattern, flags.value if isinstance(flags, re.RegexFlag) else flags)
    if in_yaml[0] or isinstance(pattern, re.Pattern) or key in re._cache:
        return compile_(pattern, flags)
    start = time.perf_counter()
    try:
        return compile_(pattern, flags)
    finally:
        compiled[0] += 1
        compiled[1] += time.perf_counter() - start

dataclasses._process_class, re._compile = timed_class, timed_compile
yaml_s = 0.0
if "yaml" in names:  # first and alone: its patterns and the standard modules it is first to need count here
    in_yaml[0] = True
    began = time.perf_counter()
    importlib.import_module("yaml")
    yaml_s = time.perf_counter() - began
    in_yaml[0] = False
start = time.perf_counter()
for name in names:
    try:
        importlib.import_module(name)
    except Exception:
        pass
total = time.perf_counter() - start + yaml_s + dataclasses_import_s
print(json.dumps({"imports_s": total, "dataclasses_import_s": dataclasses_import_s, "dataclasses": made[0],
                  "dataclasses_s": made[1], "patterns": compiled[0], "patterns_s": compiled[1], "yaml_s": yaml_s}))
"""


def record_modules(args: list[str], cwd: Path, env: dict, out: Path) -> Path:
    """The modules ``wiki ARGS`` imports, in their order, written to ``out``: after one run of
    it, so that the list is a warm run's (a first lint imports what a cold cache needs)."""
    subprocess.run([sys.executable, "-m", "wikiengine", *args], cwd=cwd, env=env, capture_output=True)
    done = subprocess.run([sys.executable, "-c", RECORD, str(out), *args], cwd=cwd, env=env,
                          capture_output=True, text=True)
    if done.returncode not in (0, 1) or not out.exists():
        raise SystemExit(f"wiki {' '.join(args)} failed ({done.returncode}): {done.stderr[-500:]}")
    return out


def attribute(modules: Path, cwd: Path, env: dict) -> dict:
    """One process importing ``modules`` with the timers on: what the imports made."""
    done = subprocess.run([sys.executable, "-c", ATTRIBUTE, str(modules)], cwd=cwd, env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(HERE))
    import bench_wake as wake
    import bench_writers as writers

    args = wake.parse_bench_args(argv, __doc__, "wiki-startup-bench")
    run_measured = writers.bench_lint.run_measured
    wiki = writers.bench_lint.wiki_command()
    env = {**os.environ, **wake.ENV}
    args.work.mkdir(parents=True, exist_ok=True)
    lane = wake.make_lane(args.work, wiki, env)
    writers.compile_package()
    commands = {"wiki --version": ["--version"], "wiki step (lane, no-op)": ["step"],
                "wiki lint wiki/index.md": ["lint", "wiki/index.md"]}
    lists = {name: record_modules(argv_, lane, env, args.work / f"modules-{number}.txt")
             for number, (name, argv_) in enumerate(commands.items())}
    runs: dict[str, list[dict]] = {"python -c pass": []}
    for name in commands:
        runs[f"{name}: imports alone"], runs[name] = [], []
    for number in range(args.rounds):
        runs["python -c pass"].append(run_measured([sys.executable, "-c", "pass"], lane, env))
        for name, argv_ in commands.items():
            runs[f"{name}: imports alone"].append(
                run_measured([sys.executable, "-c", IMPORTS, str(lists[name])], lane, env))
            runs[name].append(run_measured([*wiki, *argv_], lane, env))
        print(f"round {number + 1}/{args.rounds}", file=sys.stderr)
    summary = {name: {key: statistics.median(r[key] for r in rows) for key in ("wall", "cpu", "rss_mib")}
               for name, rows in runs.items()}
    made = {}
    for name in commands:
        samples = [attribute(lists[name], lane, env) for _ in range(3)]
        made[name] = {key: statistics.median(s[key] for s in samples) for key in samples[0]}
        made[name]["modules"] = len(lists[name].read_text(encoding="utf-8").split())
    load = os.getloadavg()
    if args.json:
        print(json.dumps({"rounds": args.rounds, "cores": os.cpu_count(), "load_average": load,
                          "summary": summary, "imports": made, "runs": runs}, indent=2))
        return 0
    base = summary["python -c pass"]["cpu"]
    print(f"\nshort commands and their imports, {os.cpu_count()} cores, medians of {args.rounds} interleaved rounds (CPU s)")
    print("| command | CPU s | its imports alone, CPU s | imports' share past `python -c pass` | modules |")
    print("|---|---:|---:|---:|---:|")
    for name in commands:
        whole, alone = summary[name]["cpu"], summary[f"{name}: imports alone"]["cpu"]
        share = (alone - base) / (whole - base) if whole > base else float("nan")
        print(f"| {name} | {whole:.3f} | {alone:.3f} | {share:.0%} | {made[name]['modules']} |")
    print(f"| python -c pass | {base:.3f} | | | |")
    print("\nin the imports (one process each, wall ms inside it, medians of 3)")
    print("| command | imports ms | `import dataclasses` ms | dataclasses made | their ms "
          "| patterns compiled (PyYAML's apart) | their ms | PyYAML's import ms |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for name, row in made.items():
        print(f"| {name} | {row['imports_s'] * 1000:.0f} | {row['dataclasses_import_s'] * 1000:.0f} "
              f"| {row['dataclasses']:.0f} | {row['dataclasses_s'] * 1000:.0f} "
              f"| {row['patterns']:.0f} | {row['patterns_s'] * 1000:.0f} | {row['yaml_s'] * 1000:.0f} |")
    print(f"load average during the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
