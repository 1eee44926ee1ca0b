"""Parse benchmark: pages per second of the page model against the floor of reading the files.

    python benchmarks/gen_wiki.py /tmp/w10k 10000
    python benchmarks/bench_parse.py /tmp/w10k [--reps 5] [--markdown-it-pages N]

Stages, each over every experiment page, timed in one process with the repetitions
interleaved round-robin (stage A, B, C, ..., then A, B, C again) and the median reported:

- read floor: ``Path.read_bytes()``;
- parse without YAML: read, decode, ``parse_page(parse_yaml=False)`` (frontmatter split, H2 sections);
- parse with YAML: the same with the frontmatter loaded by ``wikiengine.core.yamlio.safe_load``;
- parse + validation: the same plus the frontmatter validated by a compiled fastjsonschema
  validator (and, for comparison, by jsonschema's Draft 7 validator);
- markdown-it-py: a full ``MarkdownIt("commonmark").parse`` of each body, for comparison.

The experiment frontmatter schema is ``schema/experiment.schema.json`` when it exists, else
the small one below. Prints a markdown table; the walk that lists the pages is not timed.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

FALLBACK_SCHEMA = {
    "$schema": "http://json-schema.org/draft-07/schema#",
    "title": "experiment page frontmatter (benchmark fallback)",
    "type": "object",
    "required": ["title", "type", "model", "lane", "vid", "status", "created", "tags"],
    "properties": {
        "title": {"type": "string", "minLength": 1},
        "type": {"const": "experiment"},
        "model": {"type": "string"},
        "lane": {"type": "string"},
        "vid": {"type": "integer", "minimum": 1},
        "slug": {"type": "string", "pattern": "^[a-z0-9][-a-z0-9]*$"},
        "variant": {"type": "string"},
        "hypothesis": {"type": "string"},
        "status": {"enum": ["in_progress", "supported", "refuted", "inconclusive", "invalid"]},
        "created": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "updated": {"type": "string", "pattern": "^[0-9]{4}-[0-9]{2}-[0-9]{2}$"},
        "tags": {"type": "array", "items": {"type": "string"}},
        "metrics": {"type": "object", "additionalProperties": {"type": ["number", "null"]}},
        "backfilled": {"type": "boolean"},
        "workload": {"type": "string", "maxLength": 39},
        "commit": {"type": "string", "pattern": "^[0-9a-f]{7,40}$"},
        "summary": {"type": "string"},
        "cluster": {"type": "string"},
    },
    "additionalProperties": True,
}


def experiment_schema() -> tuple[dict, str]:
    path = REPO / "schema" / "experiment.schema.json"
    if path.is_file():
        return json.loads(path.read_text(encoding="utf-8")), "schema/experiment.schema.json"
    return FALLBACK_SCHEMA, "the benchmark's fallback schema"


def make_stages(paths: list[Path], schema: dict, markdown_it_pages: int):
    import fastjsonschema
    import jsonschema
    from markdown_it import MarkdownIt

    from wikiengine.core.errors import PageError
    from wikiengine.core.page import decode, parse_page

    fast_validate = fastjsonschema.compile(schema)
    slow_validator = jsonschema.Draft7Validator(schema)
    md = MarkdownIt("commonmark")
    md_paths = paths[:markdown_it_pages]
    bad: dict[str, int] = {}

    def read_floor():
        for path in paths:
            path.read_bytes()

    def parse_no_yaml():
        for path in paths:
            parse_page(decode(path.read_bytes(), path), path, parse_yaml=False)

    def counting_failures(name: str, valid):
        """A stage that parses every page with its YAML, checks it with ``valid`` (an exception of
        fastjsonschema is a failure too) and records in ``bad[name]`` how many failed."""

        def stage():
            errors = 0
            for path in paths:
                try:
                    errors += not valid(parse_page(decode(path.read_bytes(), path), path))
                except (PageError, fastjsonschema.JsonSchemaException):
                    errors += 1
            bad[name] = errors

        return stage

    parse_yaml = counting_failures("yaml", lambda page: True)
    parse_fastjsonschema = counting_failures("fastjsonschema", lambda page: fast_validate(page.frontmatter) is not None)
    parse_jsonschema = counting_failures(
        "jsonschema", lambda page: next(slow_validator.iter_errors(page.frontmatter), None) is None)

    def markdown_it_full():
        for path in md_paths:
            md.parse(parse_page(decode(path.read_bytes(), path), path, parse_yaml=False).body)

    stages = [
        ("read bytes: **floor**", read_floor, len(paths)),
        ("parse_page, no YAML (split + H2 sections)", parse_no_yaml, len(paths)),
        ("parse_page + YAML (strict safe_load, CSafeLoader)", parse_yaml, len(paths)),
        ("parse_page + YAML + fastjsonschema (compiled)", parse_fastjsonschema, len(paths)),
        ("parse_page + YAML + jsonschema Draft 7", parse_jsonschema, len(paths)),
        ("markdown-it-py full parse of the body (comparison)", markdown_it_full, len(md_paths)),
    ]
    return stages, bad


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Parse benchmark of the page model (see the module docstring).")
    parser.add_argument("wiki", type=Path, help="a directory made by gen_wiki.py (holding wiki/)")
    parser.add_argument("--reps", type=int, default=5, help="interleaved repetitions per stage (median reported)")
    parser.add_argument("--markdown-it-pages", type=int, default=None, help="pages for the markdown-it stage (default: all)")
    args = parser.parse_args(argv)

    from wikiengine.core.page import _scan_h2, decode, parse_page, split_lines

    paths = sorted(args.wiki.glob("wiki/experiments/*/*/experiments/*.md"))
    if not paths:
        parser.error(f"no experiment pages under {args.wiki}/wiki/experiments/*/*/experiments/")
    total_bytes = sum(p.stat().st_size for p in paths)
    fallbacks = sum(
        _scan_h2(split_lines(parse_page(decode(p.read_bytes(), p), p, parse_yaml=False).body)) is None for p in paths
    )
    schema, schema_name = experiment_schema()
    stages, bad = make_stages(paths, schema, args.markdown_it_pages or len(paths))

    wall: dict[str, list[float]] = {name: [] for name, _, _ in stages}
    cpu: dict[str, list[float]] = {name: [] for name, _, _ in stages}
    for _ in range(args.reps):
        for name, stage, _count in stages:
            start_wall, start_cpu = time.perf_counter(), time.process_time()
            stage()
            cpu[name].append(time.process_time() - start_cpu)
            wall[name].append(time.perf_counter() - start_wall)

    floor_name = stages[0][0]
    floor_wall = len(paths) / statistics.median(wall[floor_name])
    floor_cpu = len(paths) / statistics.median(cpu[floor_name])
    print(
        f"{len(paths)} pages, {total_bytes / 1e6:.1f} MB ({total_bytes / len(paths) / 1e3:.1f} KB/page); "
        f"line scan fell back to markdown-it on {fallbacks} pages; schema: {schema_name}; "
        f"pages failing: YAML {bad.get('yaml', 0)}, fastjsonschema {bad.get('fastjsonschema', 0)}, "
        f"jsonschema {bad.get('jsonschema', 0)}"
    )
    print(
        f"Python {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs, load average "
        f"{os.getloadavg()[0]:.1f}; median of {args.reps} interleaved runs. CPU time (user + system of this "
        "process) is the steadier figure on a shared machine; wall time includes waiting for a core.\n"
    )
    print("| stage | pages/s (CPU) | µs/page (CPU) | × floor (CPU) | pages/s (wall) | × floor (wall) | wall runs (s) |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for name, _, count in stages:
        rate_cpu = count / statistics.median(cpu[name])
        rate_wall = count / statistics.median(wall[name])
        runs = ", ".join(f"{t:.2f}" for t in wall[name])
        print(
            f"| {name} | {rate_cpu:,.0f} | {1e6 / rate_cpu:,.0f} | {floor_cpu / rate_cpu:.1f} | "
            f"{rate_wall:,.0f} | {floor_wall / rate_wall:.1f} | {runs} |"
        )
    if args.markdown_it_pages:
        print(f"\n(markdown-it-py stage over the first {min(args.markdown_it_pages, len(paths))} pages)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
