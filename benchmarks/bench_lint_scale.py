"""Warm `wiki lint` as the wiki grows: the cost of a lint in which nothing changed, per wiki size.

    python benchmarks/bench_lint_scale.py [--pages 1000,50000] [--rounds 5] [--work DIR] [--json FILE]

For each size, a generated wiki (``benchmarks/gen_wiki.py``, committed to git as
``bench_lint.py`` does) is linted once cold to fill ``.wiki_cache/``; then each round
runs, interleaved over every size so that machine noise spreads over all of them:

- ``floor``: read every page's bytes (``bench_lint.py``'s read floor, the same script);
- ``version``: ``wiki --version``, the interpreter's start and the command's own imports;
- ``git-diff``: git alone comparing the work tree with ``HEAD`` as a warm lint asks it to
  (``git diff --name-status HEAD``): an ``lstat`` of every tracked file, which no run that
  trusts git over its own ``lstat`` can spare without a filesystem monitor;
- ``warm``: a full `wiki lint`, nothing changed since the last one;
- ``touch1``: one page edited (a line appended), then a full `wiki lint`: what one edit
  costs a wiki of that size;
- ``commit1``: that page edited again and linted (not timed), the edit committed, then a full
  `wiki lint`: what a commit (a wake's, say) costs the next run; one more lint, not timed,
  settles the cache as a lint long after the commit would find it. The corpus's history is
  reset to its commit at the end.

It prints medians (wall, CPU = user + system, peak RSS of the process), each case as a
multiple of its own floor, and each size's ``warm`` as a multiple of the smallest size's, in
CPU and in wall time: warm cost should follow what changed, not the wiki's size. Last, the
engine's own part of ``warm`` (its median less ``git-diff``'s) per size: what grows with the
wiki besides git's ``lstat`` of it.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_lint import FLOOR_SCRIPT, experiment_pages, git, make_corpus, run_measured, wiki_command  # noqa: E402

from wikiengine.core.git import command as git_command  # noqa: E402
from wikiengine.lint.cache import RACY_NS  # noqa: E402
from wikiengine.lint.gitview import diff_args  # noqa: E402

GIT_DIFF = git_command(diff_args("HEAD^{commit}"))  # the very diff a warm run starts (lint/gitview.py)


def git_out(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pages", default="1000,50000", help="comma-separated wiki sizes (experiment pages)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--work", type=Path, default=Path(tempfile.gettempdir()) / "wiki-lint-bench")
    parser.add_argument("--json", type=Path, help="write the raw figures here")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.pages.split(",") if size.strip()]

    wiki = wiki_command()
    lint = [*wiki, "lint"]
    corpora = {}
    for size in sizes:
        corpus = corpora[size] = args.work / f"corpus-{size}"
        make_corpus(corpus, size)
        print(f"{size} pages: cold lint to fill the cache ...", file=sys.stderr)
        run_measured(lint, corpus)
        run_measured(lint, corpus)  # the racy-timestamp rule re-stats pages written in the same second once

    edited = {size: experiment_pages(corpora[size], 1)[0] for size in sizes}
    originals = {size: (corpora[size] / edited[size]).read_bytes() for size in sizes}
    round_no = {"n": 0}

    def touch1(size: int) -> dict:
        round_no["n"] += 1
        path = corpora[size] / edited[size]
        path.write_bytes(originals[size] + f"\nEdited in round {round_no['n']}.\n".encode())
        return run_measured(lint, corpora[size])

    def commit1(size: int) -> dict:
        round_no["n"] += 1
        path = corpora[size] / edited[size]
        path.write_bytes(originals[size] + f"\nCommitted in round {round_no['n']}.\n".encode())
        run_measured(lint, corpora[size])
        git(corpora[size], "commit", "-q", "-a", "-m", f"round {round_no['n']}")
        measured = run_measured(lint, corpora[size])
        settle(corpora[size])  # so that the next round's warm is warm, as a lint long after the commit
        return measured

    def settle(corpus: Path) -> None:
        """Lint once git's index is older than the cache's racy margin (a lint within it cannot
        keep what it learnt of the index), and again should git's diff have rewritten the index
        meanwhile (a file whose stat changed but not its bytes): the cache as a lint long after
        the commit leaves it. Before, the lint right after the commit settled nothing, and the
        next round's warm run at 50,000 pages listed the index again (0.27 against 0.17 s of CPU)."""
        index = corpus / ".git" / "index"
        for _ in range(3):
            before = index.stat()
            wait_ns = before.st_mtime_ns + RACY_NS - time.time_ns()
            if wait_ns > 0:
                time.sleep(wait_ns / 1e9 + 0.05)
            run_measured(lint, corpus)
            after = index.stat()
            if (after.st_ino, after.st_mtime_ns, after.st_size) == (before.st_ino, before.st_mtime_ns, before.st_size):
                return

    heads = {size: git_out(corpora[size], "rev-parse", "HEAD") for size in sizes}
    cases = {
        "floor": lambda size: run_measured([sys.executable, "-c", FLOOR_SCRIPT], corpora[size]),
        "version": lambda size: run_measured([*wiki, "--version"], corpora[size]),
        "git-diff": lambda size: run_measured(GIT_DIFF, corpora[size]),
        "warm": lambda size: run_measured(lint, corpora[size]),
        "touch1": touch1,
        "commit1": commit1,
    }
    results: dict[tuple[int, str], list[dict]] = {(size, name): [] for size in sizes for name in cases}
    try:
        for number in range(args.rounds):
            for size in sizes:
                for name, case in cases.items():
                    results[(size, name)].append(case(size))
            print(f"round {number + 1}/{args.rounds}: " + ", ".join(
                f"{size} {name} {results[(size, name)][-1]['cpu']:.2f}s" for size in sizes for name in cases),
                file=sys.stderr)
    finally:
        for size in sizes:
            git(corpora[size], "reset", "-q", "--hard", heads[size])
            (corpora[size] / edited[size]).write_bytes(originals[size])

    summary = {
        (size, name): {key: statistics.median(r[key] for r in runs) for key in ("wall", "cpu", "rss_mib")}
        for (size, name), runs in results.items()
    }
    smallest = sizes[0]
    print(f"\nwarm `wiki lint` by wiki size, medians of {args.rounds} interleaved rounds")
    print("| pages | case | wall s | CPU s | peak RSS MiB | x floor (CPU) | x smallest wiki (CPU) | x smallest wiki (wall) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|")
    for size in sizes:
        floor = summary[(size, "floor")]["cpu"]
        for name in cases:
            row = summary[(size, name)]
            base = summary[(smallest, name)]
            print(f"| {size} | {name} | {row['wall']:.2f} | {row['cpu']:.2f} | {row['rss_mib']:.0f} | "
                  f"{row['cpu'] / floor:.1f} | {row['cpu'] / base['cpu']:.2f} | {row['wall'] / base['wall']:.2f} |")
    own = {size: {key: summary[(size, "warm")][key] - summary[(size, "git-diff")][key] for key in ("cpu", "wall")}
           for size in sizes}
    print("\nthe engine's own part of warm (warm less git-diff), s: " + ", ".join(
        f"{size} pages {own[size]['cpu']:.3f} CPU / {own[size]['wall']:.3f} wall "
        f"({own[size]['cpu'] / own[smallest]['cpu']:.2f}x / {own[size]['wall'] / own[smallest]['wall']:.2f}x)"
        for size in sizes))
    if args.json:
        args.json.write_text(json.dumps({"summary": {f"{size}/{name}": row for (size, name), row in summary.items()},
                                         "runs": {f"{size}/{name}": runs for (size, name), runs in results.items()}},
                                        indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
