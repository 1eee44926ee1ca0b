"""Precision and recall of `wiki lint` on the real-shape corpus, against its manifest.

    python benchmarks/precision.py [--corpus DIR] [--seed S] [--json FILE]

Generates the corpus with ``gen_wiki.py --real-shape`` into ``DIR`` (default
``$TMPDIR/wiki-lint-real``) unless it is already there, runs ``wiki lint --format json``
in it with no configuration at all (a new user's first run), and compares the findings
with the planted violations of ``DIR/manifest.json``.

A finding is true when the manifest plants a violation of the same code on the same
path; a path with k planted violations of a code accounts for at most k findings of
that code (a log with two out-of-order entries, a page with two broken links). Per code:
findings, true findings, precision (true / findings), planted, found (planted matched),
recall (found / planted). Every finding that is not planted is a false alarm: the
corpus follows the conventions of ``../shared/reference/conventions.md`` everywhere else.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

HERE = Path(__file__).resolve().parent


def ensure_corpus(corpus: Path, seed: int) -> None:
    """Generate the real-shape corpus unless ``corpus`` already holds this seed's, made by
    this generator (its sha256 is kept beside the corpus: a changed generator regenerates)."""
    import hashlib

    manifest, stamp = corpus / "manifest.json", corpus.parent / f"{corpus.name}.generator"
    generator = hashlib.sha256((HERE / "gen_wiki.py").read_bytes()).hexdigest()
    if (manifest.is_file() and json.loads(manifest.read_text())["seed"] == seed and stamp.is_file()
            and stamp.read_text().strip() == generator):
        return
    import shutil

    shutil.rmtree(corpus, ignore_errors=True)
    print(f"generating the real-shape corpus into {corpus} ...", file=sys.stderr)
    _sibling("gen_wiki").generate_real(corpus, seed=seed)
    stamp.write_text(generator + "\n")


def _sibling(name: str):
    """benchmarks/NAME.py, loaded by its path (this script runs as a file or with -m)."""
    spec = importlib.util.spec_from_file_location(name, HERE / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lint_findings(corpus: Path) -> list[dict]:
    """``wiki lint --format json`` in the corpus, no configuration, no cache."""
    proc = subprocess.run([*_sibling("bench_lint").wiki_command(), "lint", "--format", "json", "--no-cache"], cwd=corpus, capture_output=True, text=True)
    if proc.returncode not in (0, 1):
        raise SystemExit(f"wiki lint failed ({proc.returncode}): {proc.stderr.strip()[-500:]}")
    return json.loads(proc.stdout)


def score(findings: list[dict], planted: list[dict]) -> dict[str, dict]:
    """Per code: findings, true, planted, found, precision, recall (see the module docstring)."""
    found_at = Counter((f["code"], f["path"]) for f in findings)
    planted_at = Counter((p["code"], p["path"]) for p in planted)
    codes = sorted({code for code, _ in found_at} | {code for code, _ in planted_at})
    table = {}
    for code in codes:
        keys = {k for k in found_at if k[0] == code} | {k for k in planted_at if k[0] == code}
        matched = sum(min(found_at[k], planted_at[k]) for k in keys)
        n_found = sum(found_at[k] for k in keys)
        n_planted = sum(planted_at[k] for k in keys)
        table[code] = {
            "findings": n_found,
            "true": matched,
            "planted": n_planted,
            "precision": matched / n_found if n_found else None,
            "recall": matched / n_planted if n_planted else None,
        }
    return table


def false_alarms(findings: list[dict], planted: list[dict], limit: int = 3) -> dict[str, list[str]]:
    """A few findings per code that the manifest does not plant (what to read first)."""
    left = Counter((p["code"], p["path"]) for p in planted)
    out: dict[str, list[str]] = {}
    for f in findings:
        key = (f["code"], f["path"])
        if left[key] > 0:
            left[key] -= 1
        elif len(out.setdefault(f["code"], [])) < limit:
            out[f["code"]].append(f"{f['path']}:{f['line']}: {f['message']}")
    return {code: rows for code, rows in out.items() if rows}


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:.0%}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "wiki-lint-real")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the table here")
    parser.add_argument("--examples", action="store_true", help="print a few false alarms per code")
    args = parser.parse_args(argv)
    ensure_corpus(args.corpus, args.seed)
    planted = json.loads((args.corpus / "manifest.json").read_text())["planted"]
    findings = lint_findings(args.corpus)
    table = score(findings, planted)
    print("| code | findings | true | precision | planted | found | recall |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for code, row in table.items():
        print(f"| {code} | {row['findings']} | {row['true']} | {_pct(row['precision'])} | {row['planted']} | "
              f"{row['true']} | {_pct(row['recall'])} |")
    total_true = sum(r["true"] for r in table.values())
    print(f"| total | {len(findings)} | {total_true} | {_pct(total_true / len(findings) if findings else None)} | "
          f"{len(planted)} | {total_true} | {_pct(total_true / len(planted) if planted else None)} |")
    below = [code for code, row in table.items() if row["findings"] and row["precision"] < 0.9]
    print(f"\ncodes that fire with precision under 90%: {', '.join(below) or 'none'}")
    if args.examples:
        for code, rows in false_alarms(findings, planted).items():
            print(f"\n{code}:")
            for row in rows:
                print(f"  {row}")
    if args.json:
        args.json.write_text(json.dumps({"findings": len(findings), "codes": table}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
