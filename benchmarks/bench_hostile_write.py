"""The two costs issue 24 part B added or removed on the writers' path.

1. Parsing ``wiki log add OP SUBJECT --field K=V`` x n: the CLI's parse
   (``_cli._verbs.parse_args``) against argparse's own ``parse_args`` of the same argv,
   measured in the same run (argparse rescans the remaining options at each option:
   quadratic). Prints the median of ``--rounds`` per n and the ratio; a linear parse keeps
   its time per field flat as n doubles.
2. The commit guard's secret scan (``core.secrets.secret_hits``) over a corpus: pages per
   second, MB per second, and every hit (file, line, rule; never the value), which on the
   real-shape corpus and this repository's ``wiki/`` must be none (precision).

    python benchmarks/bench_hostile_write.py [--rounds 5] [--fields 1000,2000,4000,8000,16000]
                                              [--corpus DIR ...] [--json]

Without ``--corpus`` the scan runs over this repository's ``wiki/`` and ``memory/``; the
real-shape corpus is ``python benchmarks/gen_wiki.py /tmp/wreal --real-shape`` first.
"""

from __future__ import annotations

import argparse
import functools
import json
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from wikiengine._cli._verbs import parse_args  # noqa: E402
from wikiengine._cli.main import build_parser  # noqa: E402
from wikiengine.core.secrets import secret_hits  # noqa: E402

TEXT_SUFFIXES = (".md", ".tsv", ".jsonl", ".json", ".toml", ".yaml", ".yml", ".txt")


def median_s(fn, arg, rounds: int) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        fn(arg)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def bench_fields(counts: list[int], rounds: int) -> list[dict]:
    parser = build_parser("log")
    rows = []
    for n in counts:
        argv = ["log", "add", "note", "subject", *(f"--field=key{i}=value {i}" for i in range(n))]
        ours = median_s(functools.partial(parse_args, parser), argv, rounds)
        theirs = median_s(parser.parse_args, argv, rounds)
        rows.append({"fields": n, "parse_s": ours, "argparse_s": theirs, "ratio": theirs / ours,
                     "us_per_field": ours / n * 1e6})
    return rows


def bench_scan(roots: list[Path]) -> dict:
    files = [p for root in roots for p in sorted(root.rglob("*"))
             if p.is_file() and p.suffix in TEXT_SUFFIXES and ".git" not in p.parts]
    texts = [(p, p.read_text(encoding="utf-8", errors="replace")) for p in files]
    size = sum(len(t.encode("utf-8")) for _, t in texts)
    hits = []
    start = time.perf_counter()
    for path, text in texts:
        hits.extend({"file": str(path), "line": h.line, "rule": h.rule} for h in secret_hits(text))
    elapsed = time.perf_counter() - start
    return {"files": len(texts), "mb": size / 1e6, "seconds": elapsed, "mb_per_s": size / 1e6 / elapsed,
            "hits": hits}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--fields", default="1000,2000,4000,8000,16000")
    ap.add_argument("--corpus", type=Path, action="append", default=[])
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    fields = bench_fields([int(n) for n in args.fields.split(",")], args.rounds)
    scan = bench_scan(args.corpus or [REPO / "wiki", REPO / "memory"])
    if args.json:
        print(json.dumps({"fields": fields, "scan": scan}, indent=2))
        return 0
    print("| --field x n | parse_args (median) | argparse (median) | argparse / ours | us per field |")
    print("|---|---|---|---|---|")
    for row in fields:
        print(f"| {row['fields']} | {row['parse_s'] * 1e3:.1f} ms | {row['argparse_s'] * 1e3:.0f} ms | "
              f"{row['ratio']:.0f}x | {row['us_per_field']:.2f} |")
    print(f"\nsecret scan: {scan['files']} files, {scan['mb']:.1f} MB in {scan['seconds']:.2f} s "
          f"({scan['mb_per_s']:.1f} MB/s), {len(scan['hits'])} hit(s)")
    for hit in scan["hits"]:
        print(f"  {hit['file']}:{hit['line']}: {hit['rule']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
