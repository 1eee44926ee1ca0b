"""The link scan on pages it is not certain of: markdown-it per page against per block.

    python benchmarks/bench_link_scan.py [--corpus DIR] [--rounds 5]

A page with one line the line scan cannot judge (an ``&`` entity, a ``<tag>``, an escape,
a tab beside a link) used to go to markdown-it-py whole; now only the top-level block
that holds the line does (``core/links.py``: ``_blockwise_links``). The benchmark takes
every page of the real-shape corpus (``gen_wiki.py --real-shape``, generated into
``DIR`` unless it is there) whose body holds more than one block with links, and makes
it such a page: the first line with a link gets `` &amp; `` after the link. Each round
times, over those pages, in turn:

- ``markdown-it per page``: ``markdown_it_links`` of the whole body (what the scan did);
- ``per block``: ``link_destinations`` (what it does now);
- ``line scan, unchanged pages``: ``link_destinations`` of the same pages before the
  edit (the scan certain of every line), for scale.

It checks that both find the same links (destinations and lines) and prints the median
CPU seconds of each, and the ratio of the first two.
"""

from __future__ import annotations

import argparse
import importlib.util
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from wikiengine.core.links import link_destinations, markdown_it_links, relative_target  # noqa: E402
from wikiengine.core.page import load_page  # noqa: E402
from wikiengine.lint.context import discover  # noqa: E402

_LINK_LINE_RE = re.compile(r"^(.*?\]\([^)\s]+\))(.*)$", re.M)


def corpus_pages(corpus: Path) -> list[tuple[str, int]]:
    """``(body, first line)`` of every page of the corpus with links in more than one block."""
    if not (corpus / "wiki").is_dir():
        spec = importlib.util.spec_from_file_location("gen_wiki", HERE / "gen_wiki.py")
        gen_wiki = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(gen_wiki)
        print(f"generating the real-shape corpus into {corpus} ...", file=sys.stderr)
        gen_wiki.generate_real(corpus, seed=0, git=False)
    pages = []
    for rel in discover(corpus):
        try:
            page = load_page(corpus / rel, parse_yaml=False)
        except Exception:  # noqa: BLE001 - the corpus plants unreadable pages; they have no links
            continue
        blocks_with_links = sum(1 for block in page.body.split("\n\n") if "](" in block)
        if blocks_with_links > 1:
            pages.append((page.body, page.body_line))
    return pages


def made_odd(body: str) -> str:
    """``body`` with `` &amp; `` after the first link of its first line holding one."""
    return _LINK_LINE_RE.sub(lambda m: m.group(1) + " &amp;" + m.group(2), body, count=1)


def _relative(found) -> list[tuple[int, str]]:
    return sorted((line, dest) for line, _col, dest in found if relative_target(dest) is not None)


def _timed(function, pages) -> float:
    start = time.process_time()
    for body, first in pages:
        function(body, first)
    return time.process_time() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=Path(tempfile.gettempdir()) / "wiki-link-scan-real")
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)

    plain = corpus_pages(args.corpus)
    odd = [(made_odd(body), first) for body, first in plain]
    for body, first in odd:
        assert _relative(link_destinations(body, first)) == _relative(markdown_it_links(body, first))
    cases = {
        "markdown-it per page": (markdown_it_links, odd),
        "per block": (link_destinations, odd),
        "line scan, unchanged pages": (link_destinations, plain),
    }
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(args.rounds):
        for name, (function, pages) in cases.items():
            times[name].append(_timed(function, pages))
    size = sum(len(body) for body, _first in odd) / 1e6
    print(f"link scan of {len(odd)} real-shape pages ({size:.1f} MB) with one odd line each, "
          f"CPU s, medians of {args.rounds} interleaved rounds")
    print("| case | CPU s |")
    print("|---|---:|")
    medians = {name: statistics.median(values) for name, values in times.items()}
    for name, value in medians.items():
        print(f"| {name} | {value:.3f} |")
    print(f"per block: {medians['markdown-it per page'] / medians['per block']:.1f}x faster than markdown-it per page")
    return 0


if __name__ == "__main__":
    sys.exit(main())
