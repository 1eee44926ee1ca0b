"""Benchmark `wiki lint` on a generated wiki, in one run, as whole processes.

    python benchmarks/bench_lint.py [--pages 10000 | --real-shape] [--rounds 3] [--work DIR]
                                    [--peer-rounds 1] [--no-peer] [--serial] [--json FILE]

Cases, run round-robin (interleaved) so that machine noise spreads over all of them:

- ``floor``: walk the linted directories and read every page's bytes (the physical floor);
- ``cold``: a full `wiki lint` with no ``.wiki_cache/`` (2 workers);
- ``cold-serial`` (``--serial``): the same with ``--jobs 1``;
- ``warm``: a full `wiki lint` again, nothing changed;
- ``changed5``: pre-commit's case: 5 experiment pages edited and staged, `wiki lint` on those
  5 paths (git-aware rules compare with HEAD), after a warm run;
- ``changed5-engine``: the same with only the engine's own rules (``--select WK0,WK1,PRG,LNK``), to
  tell the engine's cost from the domain rules' cost;
- ``pass`` and ``version``: ``python -c pass`` and ``wiki --version``, the interpreter's and the
  CLI's own start-up, as baselines for the small cases;
- ``rumdl-cold``, ``rumdl-warm``, ``rumdl-changed5`` (peer, Rust): rumdl over the same pages with
  ``--no-cache``, with its cache, and on the 5 edited paths (with its cache warm, and with
  ``--no-cache``: rumdl loads its whole cache for 5 paths), installed from PyPI into a
  virtual environment ``WORK/rumdl`` (outside the repository), in every round;
- ``peer``: markdownlint-cli2 (default rules) over the same pages, installed with npm into
  ``WORK/peer`` (outside the repository), ``--peer-rounds`` times after the rounds (about a
  minute a run).

The corpus comes from ``benchmarks/gen_wiki.py`` (10,000 experiment pages by default) and
is committed to a git repository once. ``--real-shape`` uses the real-shape corpus instead
(``gen_wiki.py --real-shape``: about 4,500 pages and 35 MB, half of them large generated
codebase pages linking into submodules that are not checked out); its 5 changed pages
are current-form experiment pages, as a new run writes them. Each figure is the median wall time; peak RSS is
the largest single process (from ``wait4``), CPU is user + system time. The table gives
each case as a multiple of the read floor and the peer as a multiple of each case.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
PEER_VERSION = "markdownlint-cli2@0.22.1"
RUMDL_VERSION = "rumdl==0.3.0"
FLOOR_SCRIPT = """
import os, sys
total = 0
for top in ("wiki", "memory", ".env"):
    for dirpath, dirnames, filenames in os.walk(top):
        for name in filenames:
            if name.endswith(".md"):
                with open(os.path.join(dirpath, name), "rb") as handle:
                    total += len(handle.read())
print(total)
"""


def run_measured(argv: list[str], cwd: Path, env: dict | None = None) -> dict:
    """Run one process; wall seconds, CPU seconds, peak RSS (MiB) and exit status."""
    with tempfile.TemporaryFile() as errors:  # a file, not a pipe: a chatty tool must not block
        start = time.perf_counter()
        proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.DEVNULL, stderr=errors, env=env)
        _pid, status, usage = os.wait4(proc.pid, 0)
        wall = time.perf_counter() - start
        proc.returncode = os.waitstatus_to_exitcode(status)
        errors.seek(0)
        stderr = errors.read().decode(errors="replace")
    if proc.returncode not in (0, 1):
        raise SystemExit(f"{' '.join(argv)} failed ({proc.returncode}): {stderr.strip()[-500:]}")
    return {
        "wall": wall,
        "cpu": usage.ru_utime + usage.ru_stime,
        "rss_mib": usage.ru_maxrss / 1024,
        "status": proc.returncode,
    }


def git(cwd: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com"}
    subprocess.run(["git", "-c", "commit.gpgsign=false", *args], cwd=cwd, env=env, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def make_corpus(corpus: Path, pages: int) -> None:
    """Generate the wiki once (gen_wiki.py) and commit it to a git repository."""

    def generate(gen_wiki) -> None:
        gen_wiki.generate(corpus, pages, seed=0, broken_fraction=0.01)
        (corpus / ".gitignore").write_text(".wiki_cache/\n.bench-corpus\n")
        git(corpus, "init", "-q")
        git(corpus, "add", "-A")
        git(corpus, "commit", "-q", "-m", "corpus")

    _generated(corpus, str(pages), f"{pages} pages", generate)


def _generated(corpus: Path, key: str, what: str, generate) -> None:
    """Run ``generate(gen_wiki)`` into an emptied ``corpus`` unless its marker says it holds ``key``."""
    marker = corpus / ".bench-corpus"
    if marker.is_file() and marker.read_text() == key:
        return
    shutil.rmtree(corpus, ignore_errors=True)
    spec = importlib.util.spec_from_file_location("gen_wiki", HERE / "gen_wiki.py")
    gen_wiki = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(gen_wiki)
    print(f"generating {what} into {corpus} ...", file=sys.stderr)
    generate(gen_wiki)
    marker.write_text(key)


def install_peer(peer_dir: Path) -> Path | None:
    """markdownlint-cli2 from the npm registry, into a directory outside the repository."""
    binary = peer_dir / "node_modules" / ".bin" / "markdownlint-cli2"
    if binary.exists():
        return binary
    if shutil.which("npm") is None:
        print("npm not found: the peer figure is skipped", file=sys.stderr)
        return None
    peer_dir.mkdir(parents=True, exist_ok=True)
    print(f"npm install {PEER_VERSION} into {peer_dir} ...", file=sys.stderr)
    proc = subprocess.run(["npm", "install", "--no-audit", "--no-fund", "--silent", PEER_VERSION], cwd=peer_dir,
                          capture_output=True, text=True)
    if proc.returncode != 0 or not binary.exists():
        print(f"npm install failed: the peer figure is skipped\n{proc.stderr[-500:]}", file=sys.stderr)
        return None
    return binary


def install_rumdl(venv: Path) -> Path | None:
    """rumdl from PyPI into its own virtual environment outside the repository."""
    binary = venv / "bin" / "rumdl"
    if binary.exists():
        return binary
    print(f"pip install {RUMDL_VERSION} into {venv} ...", file=sys.stderr)
    made = subprocess.run([sys.executable, "-m", "venv", str(venv)], capture_output=True, text=True)
    proc = made if made.returncode else subprocess.run(
        [str(venv / "bin" / "python"), "-m", "pip", "install", "--quiet", RUMDL_VERSION], capture_output=True, text=True)
    if proc.returncode != 0 or not binary.exists():
        print(f"rumdl install failed: its figures are skipped\n{proc.stderr[-500:]}", file=sys.stderr)
        return None
    return binary


def tool_version(argv: list[str]) -> str:
    """The first line a tool prints for its version."""
    proc = subprocess.run(argv, capture_output=True, text=True)
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0] if lines else "unknown"


def make_real_corpus(corpus: Path) -> None:
    """The real-shape corpus (gen_wiki.py --real-shape commits it, submodule gitlinks included)."""
    _generated(corpus, "real", "the real-shape corpus", lambda gen_wiki: gen_wiki.generate_real(corpus, seed=0))


def experiment_pages(corpus: Path, count: int, current_form: bool = False) -> list[str]:
    """``count`` experiment pages spread over the corpus (``current_form``: only pages
    with ``status: filed``, as a run files them today)."""
    found = sorted(
        p.relative_to(corpus).as_posix() for p in (corpus / "wiki" / "experiments").rglob("*.md")
        if p.name not in ("program.md", "log.md") and p.name == p.name.lower()
        and (not current_form or "\nstatus: filed\n" in p.read_text(encoding="utf-8"))
    )
    step = max(1, len(found) // count)
    return found[::step][:count]


def wiki_command() -> list[str]:
    """The installed ``wiki`` script beside this interpreter, else ``python -m wikiengine``."""
    script = Path(sys.executable).with_name("wiki")
    return [str(script)] if script.exists() else [sys.executable, "-m", "wikiengine"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10000)
    parser.add_argument("--real-shape", action="store_true", help="the real-shape corpus instead of --pages")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer-rounds", type=int, default=1)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "wiki-lint-bench")
    parser.add_argument("--no-peer", action="store_true", help="skip both peers (markdownlint-cli2 and rumdl)")
    parser.add_argument("--serial", action="store_true", help="also time a cold run with one worker")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args(argv)

    if args.real_shape:
        corpus = args.work / "corpus-real"
        make_real_corpus(corpus)
    else:
        corpus = args.work / f"corpus-{args.pages}"
        make_corpus(corpus, args.pages)
    lint = [*wiki_command(), "lint"]
    peer = None if args.no_peer else install_peer(args.work / "peer")
    rumdl = None if args.no_peer else install_rumdl(args.work / "rumdl")
    versions = {"wiki": tool_version([*lint[:-1], "--version"]), "python": sys.version.split()[0]}
    if peer is not None:
        versions["markdownlint-cli2"] = tool_version([str(peer), "--help"])
    if rumdl is not None:
        versions["rumdl"] = tool_version([str(rumdl), "--version"])
    changed = experiment_pages(corpus, 5, current_form=args.real_shape)
    originals = {rel: (corpus / rel).read_bytes() for rel in changed}
    cache = corpus / ".wiki_cache"

    def cold():
        shutil.rmtree(cache, ignore_errors=True)
        return run_measured(lint, corpus)

    def cold_serial():
        shutil.rmtree(cache, ignore_errors=True)
        return run_measured([*lint, "--jobs", "1"], corpus)

    edit = {"round": 0}

    def changed5(*options: str, tool: list[str] | None = None, whole: tuple[str, ...] = ()):
        """Edit and stage the 5 pages after a full run (``tool`` + ``whole``), then check those 5."""
        tool = tool or [*lint, *options]
        run_measured([*tool, *whole], corpus)  # the cache is warm, as on a developer's machine
        edit["round"] += 1
        for rel in changed:
            (corpus / rel).write_bytes(originals[rel] + f"\nEdited in round {edit['round']}.\n".encode())
        git(corpus, "add", *changed)
        return run_measured([*tool, *changed], corpus)

    rumdl_check = [str(rumdl), "check", "--silent", "--cache-dir", str(args.work / "rumdl-cache")] if rumdl else []
    rumdl_cases = {
        "rumdl-cold": lambda: run_measured([*rumdl_check, "--no-cache", "wiki"], corpus),
        "rumdl-warm": lambda: run_measured([*rumdl_check, "wiki"], corpus),
        "rumdl-changed5": lambda: changed5(tool=rumdl_check, whole=("wiki",)),
        "rumdl-changed5-nocache": lambda: changed5(tool=[*rumdl_check, "--no-cache"], whole=("wiki",)),
    } if rumdl else {}

    cases = {
        "floor": lambda: run_measured([sys.executable, "-c", FLOOR_SCRIPT], corpus),
        "pass": lambda: run_measured([sys.executable, "-c", "pass"], corpus),
        "version": lambda: run_measured([*lint[:-1], "--version"], corpus),
        "cold": cold,
        **({"cold-serial": cold_serial} if args.serial else {}),
        "warm": lambda: run_measured(lint, corpus),
        "changed5": changed5,
        "changed5-engine": lambda: changed5("--select", "WK0,WK1,PRG,LNK"),
        **rumdl_cases,
    }
    results: dict[str, list[dict]] = {name: [] for name in cases}
    run_measured(lint, corpus)  # prime the page cache and the signed schema cache
    try:
        for number in range(args.rounds):
            for name, case in cases.items():
                results[name].append(case())
            print(f"round {number + 1}/{args.rounds}: "
                  + ", ".join(f"{n} {results[n][-1]['wall']:.2f}s" for n in cases), file=sys.stderr)
        if peer is not None:
            results["peer"] = []
            for _ in range(args.peer_rounds):
                results["peer"].append(run_measured([str(peer), "wiki/**/*.md"], corpus))
                print(f"peer {results['peer'][-1]['wall']:.1f}s", file=sys.stderr)
    finally:
        for rel, data in originals.items():
            (corpus / rel).write_bytes(data)
        git(corpus, "add", *changed)

    summary = {
        name: {key: statistics.median(r[key] for r in runs) for key in ("wall", "cpu", "rss_mib")} | {"runs": len(runs)}
        for name, runs in results.items() if runs
    }
    floor = summary["floor"]
    what = "the real-shape corpus" if args.real_shape else f"{args.pages} generated pages"
    print(f"\n`wiki lint` on {what}, {os.cpu_count()} cores, medians of {args.rounds} interleaved rounds")
    print("versions: " + ", ".join(f"{tool} {version}" for tool, version in versions.items()))
    print("| case | wall s | CPU s | peak RSS MiB | x read floor (CPU) | x read floor (wall) |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, row in summary.items():
        print(f"| {name} | {row['wall']:.2f} | {row['cpu']:.2f} | {row['rss_mib']:.0f} "
              f"| {row['cpu'] / floor['cpu']:.1f} | {row['wall'] / floor['wall']:.1f} |")
    try:
        load = os.getloadavg()
        print(f"load average during the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    except OSError:
        pass
    if args.json:
        args.json.write_text(json.dumps({"pages": "real" if args.real_shape else args.pages, "versions": versions,
                                         "summary": summary, "runs": results}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
