"""Benchmark the lane writers `wiki exp new` and `wiki exp file` as whole processes on a
generated 10,000-page wiki, with `python -c pass` and `wiki --version` as baselines.

    python benchmarks/bench_writers.py [--pages 10000 | --real-shape] [--rounds 7] [--work DIR] [--json]

The corpus comes from ``benchmarks/gen_wiki.py`` (no broken pages), committed to a git
repository once under ``WORK``. Its model pages are not in the conventions format the
writers need (a ``## Variant matrix`` keyed by ``Size``/``Hardware`` with ``Baseline``,
``Current best`` and ``Frontier exp`` columns), so the ``gemma4 tpu`` lane (500 pages at
10,000) is converted: each generated variant becomes a ``Size/Hardware`` row, its pages'
``variant:`` follows, and the model page gets the matrix with Current best naming the
best supported page of each row. The other 19 lanes stay as generated.

Each round runs, interleaved: ``python -c pass``, ``wiki --version``, ``wiki exp new gemma4
tpu`` (a new stub on row ``2B/v5p-16``, committed) and ``wiki exp file`` of that stub as
``supported`` (profile, HLO dump with the firing-audit line, an mfu beyond the noise band:
it moves Current best, so the model page, lane log, RESULTS.tsv and journal are all
rewritten, re-linted and committed). Figures are medians of the rounds: wall time, CPU
(user + system, from ``wait4``), peak RSS, and each case as a multiple of both baselines.
Issue 28's target is 0.25 s each for the two writers. The package is byte-compiled
first (``compileall``), as a wheel install leaves it.

``--real-shape``: the same two writers on the real-shape corpus (``gen_wiki.py
--real-shape``, about 4,600 pages and 43 MB, the shape of ``tests/test_adopt_real_shape.py``)
in its ``qwen3 jax`` lane as it is, on row ``8B/v6e-8``: the long hand-grown lane log, the
matrix with its Baseline and Current best, the curated index. The lane's newest marker is
a stop, so a ``log add start`` is committed into the corpus once; each round's filing
beats every Current best, so the model page moves every time.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
MODEL, LANE = "gemma4", "tpu"
LANE_DIR = f"wiki/experiments/{MODEL}_autoresearch_optimization/{LANE}"
MODEL_PAGE = f"wiki/models/{MODEL}-{LANE}.md"
ROWS = {"base": ("2B", "v5p-16"), "long-ctx": ("2B", "v5p-32"), "moe-lite": ("9B", "v5p-16"), "ref": ("9B", "v5p-32")}
BENCH_ROW = "2B/v5p-16"
REAL = {"model": "qwen3", "lane": "jax", "row": "8B/v6e-8"}  # the real-shape corpus's long hand-grown lane
TARGET_S = 0.25
PACKAGE_DIRS = ("wikiengine", "executors", "training")
PROPOSAL = """\
**Hypothesis**: a 1024 splash q block raises MFU on {row} by half a point.

**Mechanism**: set block_q=1024 in the splash attention config (benchmark round {round}).

**Predicted signal**: the splash custom call's share of step time drops by 2 points.

**Falsification criterion**: MFU within the noise band, or an unchanged splash share.

## Setup

Same as the frontier with block_q=1024.
"""
PROFILE = "| op | share |\n|---|---|\n| splash_mha_fwd | 18.2% |\n| fusion.12 | 11.0% |\n"
HLO = "`splash_mha_fwd` grid is (8, 32, 4).\n\nHypothesis-firing audit: CONFIRMED.\n"


def _load(name: str):
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


bench_lint = _load("bench_lint")
run_measured, git = bench_lint.run_measured, bench_lint.git


def convert_lane(corpus: Path) -> None:
    """Give the generated ``gemma4 tpu`` lane a conventions-format variant matrix."""
    import frontmatter

    best: dict[str, tuple[float, str]] = {}
    baseline: dict[str, float] = {}
    open_count: dict[str, int] = {key: 0 for key in ROWS}
    latest = ""
    for path in sorted((corpus / LANE_DIR / "experiments").glob("*.md")):
        text = path.read_text(encoding="utf-8")
        meta = frontmatter.loads(text).metadata
        variant = meta["variant"]
        size, hardware = ROWS[variant]
        text = re.sub(r"(?m)^variant: .*$", f"variant: {size}/{hardware}", text, count=1)
        path.write_text(text, encoding="utf-8")
        baseline.setdefault(variant, float(meta["metrics"]["baseline_mfu"]))
        latest = max(latest, str(meta.get("created", ""))[:10], str(meta.get("updated", ""))[:10], path.name[:10])
        open_count[variant] += meta["status"] == "in_progress"
        if meta["status"] == "supported" and (variant not in best or meta["mfu"] > best[variant][0]):
            best[variant] = (float(meta["mfu"]), path.name)
    rows = []
    for variant, (size, hardware) in ROWS.items():
        if variant in best:
            mfu, name = best[variant]
            exp = name[11:-3]  # vNNN-slug
            current = f"[{exp}](../experiments/{MODEL}_autoresearch_optimization/{LANE}/experiments/{name}) {mfu}% MFU"
        else:
            exp, current = "—", "—"
        rows.append(f"| {size} | {hardware} | live | {baseline.get(variant, '—')}% MFU | {current} | "
                    f"{open_count[variant]} | {exp} |")
    page = corpus / MODEL_PAGE
    meta_block = page.read_text(encoding="utf-8").split("\n---\n", 1)[0] + "\n---\n"
    meta_block = re.sub(r"(?m)^updated: .*$", f"updated: {latest}", meta_block)  # reviewed after the last filing
    rest = "".join(f"\n## {title}\n\nNone.\n" for title in (
        "How to run", "Cross-variant open hypotheses", "Variant-specific open hypotheses", "Retired hypotheses",
        "Knobs translation matrix", "Iteration ladder"))
    page.write_text(
        meta_block + f"# {MODEL} on {LANE}\n\n## Target metrics\n\nMFU (percent, higher is better).\n\n"
        "## Variant matrix\n\n| Size | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp |\n"
        "|---|---|---|---|---|---|---|\n" + "\n".join(rows) + "\n" + rest, encoding="utf-8")


def make_corpus(corpus: Path, pages: int, wiki: list[str]) -> None:
    """Generate, convert and commit the corpus once; later runs reuse it."""
    marker = corpus / ".bench-corpus"
    if not (marker.is_file() and marker.read_text() == str(pages)):
        import shutil

        shutil.rmtree(corpus, ignore_errors=True)
        print(f"generating {pages} pages into {corpus} ...", file=sys.stderr)
        _load("gen_wiki").generate(corpus, pages, seed=0, broken_fraction=0.0)
        convert_lane(corpus)
        (corpus / ".gitignore").write_text(".wiki_cache/\n.bench-corpus\n")
        git(corpus, "init", "-q")
        git(corpus, "add", "-A")
        git(corpus, "commit", "-q", "-m", "corpus")
        git(corpus, "tag", "-f", "corpus")
        check = subprocess.run([*wiki, "lint", MODEL_PAGE, f"{LANE_DIR}/log.md"], cwd=corpus, capture_output=True, text=True)
        if check.returncode != 0:
            raise SystemExit(f"the converted lane is not lint-clean:\n{check.stdout[-2000:]}{check.stderr[-500:]}")
        marker.write_text(str(pages))
    reset_corpus(corpus)


def make_real_corpus(corpus: Path, wiki: list[str], env: dict) -> None:
    """Generate the real-shape corpus once (``gen_wiki.py --real-shape``), its lane's new
    session started; later runs reuse it from its tag."""
    marker = corpus / ".bench-corpus"
    if not (marker.is_file() and marker.read_text() == "real-shape"):
        import shutil

        shutil.rmtree(corpus, ignore_errors=True)
        print(f"generating the real-shape corpus into {corpus} ...", file=sys.stderr)
        _load("gen_wiki").generate_real(corpus, seed=0)
        with open(corpus / ".gitignore", "a", encoding="utf-8") as ignore:
            ignore.write(".wiki/\n.wiki_cache/\n.bench-corpus\n")
        git(corpus, "commit", "-qam", "bench: ignore the local backend's runs and the lint cache")
        subprocess.run([*wiki, "log", "add", "start", "bench session", REAL["model"], REAL["lane"], "--field",
                        "Cluster pool=ar-v5p-16", "--field", "Parallelism=1", "--field", "First-pick hypothesis=bench"],
                       cwd=corpus, env=env, check=True, capture_output=True)
        git(corpus, "tag", "-f", "corpus")
        marker.write_text("real-shape")
    reset_corpus(corpus)


def reset_corpus(corpus: Path) -> None:
    """Every run starts from the committed corpus: no stubs of an earlier run, no redo record."""
    git(corpus, "reset", "-q", "--hard", "corpus")
    git(corpus, "clean", "-q", "-fdx", "wiki")
    for leftover in (corpus / ".git" / "wiki-lane").glob("*.txn.json"):
        leftover.unlink()


def last_claim(corpus: Path, lane_dir: str = LANE_DIR) -> str:
    lines = (corpus / lane_dir / ".journal.jsonl").read_text(encoding="utf-8").splitlines()
    return next(json.loads(ln)["vid"] for ln in reversed(lines) if json.loads(ln).get("op") == "claim")


def journal_run(corpus: Path, vid: str, mfu: float, env: dict, lane_dir: str = LANE_DIR, row: str = BENCH_ROW) -> None:
    """What a lane wake records of a run before `wiki exp file` (untimed): a session and its
    A/A band for ``row`` (once), the dispatch and the completion with the run's own figure."""
    from wikiengine.model.journal import append_record, parse_journal

    path = corpus / lane_dir / ".journal.jsonl"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    at = "2026-06-13T10:00:00Z"
    records = parse_journal(text)
    if not any(r.get("op") == "band" and r.get("variant") == row for r in records):
        if not any(r.get("op") == "start" for r in records):
            text = append_record(text, {"op": "start", "session": 1, "tracks": [], "backend": "local", "at": at})
        session = [r["session"] for r in parse_journal(text) if r.get("op") == "start"][-1]
        text = append_record(text, {"op": "band", "session": session, "variant": row, "frontier": None, "round": 1,
                                    "band": 0.1, "mad": 0.05, "n": 3, "samples": [0.0, 0.05, 0.1], "at": at})
    text = append_record(text, {"op": "dispatch", "vid": vid, "track": 1, "workload": f"bench-{vid}", "frontier": None,
                                "at": at})
    text = append_record(text, {"op": "complete", "vid": vid, "workload": f"bench-{vid}", "state": "succeeded",
                                "exit_code": 0, "metrics": {"mfu": mfu}, "at": at})
    path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", "--", str(path)], cwd=corpus, env=env, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-qm", f"exp({vid}): run recorded", "--", str(path)], cwd=corpus, env=env,
                   check=True, capture_output=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", type=int, default=10000, help="experiment pages to generate (default 10000)")
    parser.add_argument("--real-shape", action="store_true",
                        help="the real-shape corpus (gen_wiki.py --real-shape) and its qwen3/jax lane instead")
    parser.add_argument("--rounds", type=int, default=7, help="interleaved rounds; figures are medians (default 7)")
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "wiki-writers-bench")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of the table")
    args = parser.parse_args(argv)
    if args.pages < 20 or args.rounds < 1:
        parser.error("--pages must be at least 20 (one page per lane) and --rounds at least 1")

    wiki = bench_lint.wiki_command()
    env = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "bench@example.com",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "bench@example.com", "USER": "bench"}
    if args.real_shape:
        model, lane, bench_row = REAL["model"], REAL["lane"], REAL["row"]
        corpus = args.work / "corpus-real-shape"
        make_real_corpus(corpus, wiki, env)
        extra: list[str] = []
    else:
        model, lane, bench_row = MODEL, LANE, BENCH_ROW
        corpus = args.work / f"corpus-{args.pages}"
        make_corpus(corpus, args.pages, wiki)
        extra = ["--track", "1"]
    lane_dir = f"wiki/experiments/{model}_autoresearch_optimization/{lane}"
    model_page = f"wiki/models/{model}-{lane}.md"
    inputs = args.work / "inputs"
    inputs.mkdir(parents=True, exist_ok=True)
    (inputs / "profile.txt").write_text(PROFILE, encoding="utf-8")
    (inputs / "hlo.txt").write_text(HLO, encoding="utf-8")
    # Each run's pages differ from every earlier run's, as a lane's new stubs and filings do: the
    # corpus is reset to the same commit every run, and the same slugs and figures would make
    # the same frontmatter texts, which a per-user cache keeps (core/yamlio.py) and a lane never
    # meets again.
    fresh = "".join(random.choice("abcdefghijkmnpqrstuvwxyz") for _ in range(4))
    state = {"round": 0, "mfu": (60.0 if not args.real_shape else 70.0) + random.randrange(1, 1000) / 1000}

    def exp_new():
        state["round"] += 1
        proposal = inputs / f"proposal-{state['round']}.md"
        proposal.write_text(PROPOSAL.format(row=bench_row, round=state["round"]), encoding="utf-8")
        return run_measured([*wiki, "exp", "new", model, lane, "--slug", f"bench-{fresh}-r{state['round']}", "--variant",
                             bench_row, "--proposal", str(proposal), *extra], corpus, env)

    def exp_file():
        state["mfu"] += 0.5  # each round beats the last: Current best moves every time
        vid = last_claim(corpus, lane_dir)
        journal_run(corpus, vid, state["mfu"], env, lane_dir, bench_row)
        result = run_measured([*wiki, "exp", "file", vid, model, lane, "--verdict", "supported",
                               "--profile", str(inputs / "profile.txt"), "--hlo",
                               str(inputs / "hlo.txt"), "--reason", "benchmark round"], corpus, env)
        row = next(ln for ln in (corpus / model_page).read_text(encoding="utf-8").splitlines()
                   if ln.startswith(f"| {bench_row.replace('/', ' | ')} |"))
        if vid not in row:
            raise SystemExit(f"wiki exp file {vid} did not move Current best: {row}")
        return result

    cases = {
        "python -c pass": lambda: run_measured([sys.executable, "-c", "pass"], corpus),
        "wiki --version": lambda: run_measured([*wiki, "--version"], corpus),
        "wiki exp new": exp_new,
        "wiki exp file": exp_file,
    }
    results: dict[str, list[dict]] = {name: [] for name in cases}
    compile_package()
    run_measured([*wiki, "--version"], corpus)  # warm the interpreter's files
    for number in range(args.rounds):
        for name, case in cases.items():
            results[name].append(case())
        print(f"round {number + 1}/{args.rounds}: " + ", ".join(f"{n} {results[n][-1]['wall']:.3f}s" for n in cases),
              file=sys.stderr)
    for name, runs in results.items():
        if any(r["status"] != 0 for r in runs):
            raise SystemExit(f"{name} exited non-zero")
    summary = {
        name: {key: statistics.median(r[key] for r in runs) for key in ("wall", "cpu", "rss_mib")}
        | {"min_wall": min(r["wall"] for r in runs), "runs": len(runs)}
        for name, runs in results.items()
    }
    python_s, version_s = summary["python -c pass"]["wall"], summary["wiki --version"]["wall"]
    for row in summary.values():
        row["x_python"], row["x_version"] = row["wall"] / python_s, row["wall"] / version_s
    try:
        load = os.getloadavg()
    except OSError:
        load = None
    pages = sum(1 for _ in (corpus / "wiki" / "experiments").rglob("*.md"))
    corpus_name = "the real-shape corpus" if args.real_shape else f"{args.pages} generated pages"
    if args.json:
        print(json.dumps({"corpus": "real-shape" if args.real_shape else "generated", "lane": f"{model}/{lane}",
                          "pages": None if args.real_shape else args.pages, "markdown_files_under_experiments": pages, "rounds": args.rounds,
                          "target_s": TARGET_S, "cores": os.cpu_count(), "load_average": load, "summary": summary,
                          "runs": results}, indent=2))
        return 0
    print(f"\nlane writers ({model}/{lane}) on {corpus_name} ({pages} markdown files under wiki/experiments), "
          f"{os.cpu_count()} cores, medians of {args.rounds} interleaved rounds")
    print_cases(summary, min_wall=True)
    verdicts = [f"{n}: {'under' if summary[n]['wall'] < TARGET_S else 'OVER'} {TARGET_S} s"
                for n in ("wiki exp new", "wiki exp file")]
    print("target (issue 28): " + "; ".join(verdicts))
    if load:
        print(f"load average during the run: {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    return 0


def compile_package() -> None:
    """Byte-compile the package that runs (the one ``wikiengine`` imports from), as
    installing a wheel does: with PYTHONDONTWRITEBYTECODE set (it is on this machine) an
    editable checkout would otherwise compile every module of every run, about 0.065 s
    that no installed user pays."""
    import wikiengine

    checkout = Path(wikiengine.__file__).resolve().parents[1]
    folders = [checkout / d for d in PACKAGE_DIRS if (checkout / d).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *map(str, folders)], check=True, stdout=subprocess.DEVNULL)


def print_cases(summary: dict[str, dict], min_wall: bool) -> None:
    """The cases as a markdown table (``min_wall``: with the fastest run's column), each wall
    time also as a multiple of the two startup cases'."""
    python_s, version_s = summary["python -c pass"]["wall"], summary["wiki --version"]["wall"]
    print("| case | wall s |" + (" min s |" if min_wall else "") + " CPU s | peak RSS MiB | x python -c pass | "
          "x wiki --version |")
    print("|---|---:|" + ("---:|" if min_wall else "") + "---:|---:|---:|---:|")
    for name, row in summary.items():
        fastest = f" {row['min_wall']:.3f} |" if min_wall else ""
        print(f"| {name} | {row['wall']:.3f} |{fastest} {row['cpu']:.3f} | {row['rss_mib']:.0f} | "
              f"{row['wall'] / python_s:.1f} | {row['wall'] / version_s:.1f} |")


if __name__ == "__main__":
    sys.exit(main())
