"""`wiki report`: the lane's history as data and as a static page a real browser opens.

The demo's lane (``wiki demo autoresearch``, run once for the session) is the real case: the
report's figures are checked against the journal the demo wrote, and its page is opened in
a headless Chromium (Debian's ``chromium``; skipped, saying why, when it is absent): no
console error, both plots in the DOM, a link to every experiment page, a screenshot
(``WIKI_REPORT_SCREENSHOT=docs/img/report.png`` writes the one the docs embed). A small
generated wiki stands for a hand-grown one (no journal: the pages' frontmatter alone).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

import pytest

from tests.lint_support import gen_wiki
from wikiengine.model.lanes import Lane
from wikiengine.report.data import Experiment, lane_report, replay_frontier

REPO = Path(__file__).resolve().parent.parent
DEMO_LANE = Lane("mlp_autoresearch_optimization", "cpu")
ENV = dict(os.environ, PYTHONPATH=str(REPO))


def wiki(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "wikiengine", *args], cwd=cwd, env=ENV, capture_output=True,
                          text=True, timeout=600)


@pytest.fixture(scope="module")
def demo(tmp_path_factory, autoresearch_demo) -> tuple[Path, Path, dict]:
    """The demo's wiki (the session's run, tests/conftest.py), its report folder and
    ``wiki report --json``'s object."""
    done, root = autoresearch_demo
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    out = tmp_path_factory.mktemp("report-demo") / "report"
    done = wiki("report", "mlp", "cpu", "-o", str(out), "--json", cwd=root)
    assert done.returncode == 0, done.stderr
    return root, out, json.loads(done.stdout)


def journal(root: Path) -> list[dict]:
    return [json.loads(line) for line in (root / DEMO_LANE.journal).read_text().splitlines() if line.strip()]


def test_the_demo_lane_s_figures_are_the_journal_s(demo):
    root, out, result = demo
    (data,) = result["lanes"]
    records = journal(root)
    filings = [r for r in records if r["op"] == "file"]
    summary = data["summary"]
    assert summary["filed"] == len(filings) == len(list((root / DEMO_LANE.experiments_dir).glob("*.md")))
    mix = Counter(r["verdict"] for r in filings)
    assert summary["verdict_mix"] == {v: mix[v] for v in ("supported", "refuted", "inconclusive", "invalid")}
    assert summary["keep_rate"] == pytest.approx(mix["supported"] / len(filings))
    assert summary["per_track"] == {str(t): {"filed": n, "per_hour": pytest.approx(n / summary["span_hours"])}
                                    for t, n in Counter(r["track"] for r in records if r["op"] == "claim").items()}
    # every crash the engine recorded is listed with its cause, and nothing else but invalid filings
    exits = {r["vid"]: r.get("exit_code") for r in records if r["op"] == "complete"}
    crashed = {vid for vid, code in exits.items() if code not in (0, None)}
    listed = {c["vid"]: c["cause"] for c in data["crashes"]}
    assert crashed and crashed <= set(listed)
    assert all(f"code {exits[vid]}" in listed[vid] for vid in crashed)
    assert set(listed) <= crashed | {r["vid"] for r in filings if r["verdict"] == "invalid"}
    # the filings that moved Current best, as `wiki exp file` recorded them: a supported run beats its
    # co-measured frontier, but on a loaded machine its own figure need not beat the last win's (and a
    # machine loaded enough files the demo's wins inconclusive: tests/test_demo.py)
    (variant,) = data["variants"]
    moved = [r["vid"] for r in filings if r.get("moved")]
    assert [s["vid"] for s in variant["steps"][1:]] == moved
    slug_of = {r["vid"]: r["slug"] for r in records if r["op"] == "claim"}
    # the demo's first win, when it is filed one, moves Current best off the Baseline
    assert bool(moved) >= any(slug_of[r["vid"]] == "batch256" for r in filings if r["verdict"] == "supported")
    # the replayed frontier ends at the page the model page's Current best links
    last = variant["steps"][-1]
    assert not moved or (last["page"] and Path(last["page"]).name in variant["current_best"])
    assert variant["bands"] and all(w >= 0 for _t, w in variant["bands"])
    assert sorted(p.name for p in out.iterdir()) == [".figures", "index.html", "mlp-cpu.html", "mlp-cpu.json"]
    assert sorted(p.name.rsplit("-", 1)[0] for p in (out / ".figures").iterdir()) == ["mlp-cpu-delta", "mlp-cpu-frontier"]
    assert json.loads((out / "mlp-cpu.json").read_text()) == data


class _Dom(HTMLParser):
    """The figures (by id, with whether an ``<svg>`` is inside) and every link of a page."""

    def __init__(self):
        super().__init__()
        self.figures: dict[str, bool] = {}
        self.links: set[str] = set()
        self.fetches: list[str] = []
        self._figure: str | None = None

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "figure":
            self._figure = attrs.get("id") or ""
            self.figures[self._figure] = False
        elif tag == "svg" and self._figure is not None:
            self.figures[self._figure] = True
        elif tag == "a":
            self.links |= {v for k, v in attrs.items() if k in ("href", "xlink:href") and v}
        if tag in ("script", "link", "img", "iframe") or "src" in attrs:
            self.fetches.append(tag)

    def handle_endtag(self, tag):
        if tag == "figure":
            self._figure = None


def chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["chromium", "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                           "--enable-logging=stderr", "--v=0", *args], capture_output=True, text=True, timeout=120)


def console_errors(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if "CONSOLE" in line or "Uncaught" in line
            or "Failed to load resource" in line]


@pytest.mark.skipif(shutil.which("chromium") is None, reason="no chromium on PATH (Debian: apt-get install chromium)")
def test_the_demo_report_opens_in_a_headless_chromium(demo, tmp_path):
    root, out, result = demo
    page = out / "mlp-cpu.html"
    # the console check sees an error when there is one
    probe = tmp_path / "probe.html"
    probe.write_text('<!DOCTYPE html><html><body><script>console.error("probe-error")</script></body></html>')
    assert any("probe-error" in line for line in console_errors(chromium("--dump-dom", probe.as_uri()).stderr))

    done = chromium("--dump-dom", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert console_errors(done.stderr) == []
    dom = _Dom()
    dom.feed(done.stdout)
    assert dom.figures == {"plot-frontier": True, "plot-delta": True}
    assert dom.fetches == []  # nothing to load: offline by construction
    linked = {(out / href).resolve() for href in dom.links if not href.startswith(("#", "http"))}
    pages = {(root / e["page"]).resolve() for e in result["lanes"][0]["experiments"]}
    assert pages and pages <= linked
    assert all(p.is_file() for p in linked if p.suffix == ".md")

    shot = Path(os.environ.get("WIKI_REPORT_SCREENSHOT") or tmp_path / "report.png").resolve()
    shot.parent.mkdir(parents=True, exist_ok=True)
    done = chromium("--hide-scrollbars", "--window-size=1100,2300", f"--screenshot={shot}", page.as_uri())
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and shot.stat().st_size > 20_000


# --- a lane without a journal ----------------------------------------------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory) -> Path:
    root = tmp_path_factory.mktemp("report-gen")
    gen_wiki().generate(root, 80, seed=5)
    return root


def test_every_lane_of_a_hand_grown_wiki_is_read_from_its_pages(generated, tmp_path):
    done = wiki("report", "--all", "--root", str(generated), "-o", str(tmp_path), "--json", "-j", "2")
    assert done.returncode == 0, done.stderr
    lanes = json.loads(done.stdout)["lanes"]
    assert len(lanes) == 20 and sorted(p.name for p in tmp_path.glob("*.html")) == sorted(
        ["index.html", *(f"{d['lane'].replace('/', '-')}.html" for d in lanes)])
    from wikiengine.core.page import read_frontmatter

    for data in lanes:
        statuses = Counter(read_frontmatter((generated / e["page"]).read_text())["status"] for e in data["experiments"])
        assert data["summary"]["verdict_mix"] == {v: statuses[v] for v in ("supported", "refuted", "inconclusive", "invalid")}
        assert data["summary"]["open"] == statuses["in_progress"]
        assert all(e["source"] == "page" for e in data["experiments"])
        assert any("journal" in note for note in data["notes"])
    index = (tmp_path / "index.html").read_text()
    assert all(f'href="{d["lane"].replace("/", "-")}.html"' in index for d in lanes)


def test_budgets_and_stale_stubs(generated):
    lane = next(Lane(p.parent.parent.name, p.parent.name) for p in sorted(generated.glob("wiki/experiments/*/*/program.md"))
                if any("in_progress" in x.read_text() for x in p.parent.glob("experiments/*.md")))
    from wikiengine.report.html import Page

    plain = lane_report(generated, lane)
    assert plain.budgets == [] and "no budgets set" in Page(generated, generated, plain).render()
    later = plain.experiments[-1].stub_at + 400 * 86400  # a year later every open stub is stale
    report = lane_report(generated, lane, budgets={"max_experiments": (7, 20)}, now=later)
    assert report.as_json()["budgets"] == [{"name": "max_experiments", "used": 7.0, "limit": 20.0, "fraction": 0.35}]
    stale = {s.path for s in report.signals if s.check == "stale-stub"}
    assert stale == {e.page for e in report.open} and stale


def test_the_budgets_are_the_sessions_burn_of_the_programs_limits(generated, tmp_path):
    import shutil

    from wikiengine.model.journal import append_record

    root = tmp_path / "wiki-copy"
    shutil.copytree(generated, root)
    program = sorted(root.glob("wiki/experiments/*/*/program.md"))[0]
    lane = Lane(program.parent.parent.name, program.parent.name)
    text = program.read_text()
    program.write_text(text.replace("```yaml\n", "```yaml\nmax_experiments: 20\n", 1))
    journal = ""
    for record in ({"op": "start", "session": 1, "at": "2026-06-01T00:00:00Z"},
                   {"op": "dispatch", "vid": "v001", "track": 1, "at": "2026-06-01T01:00:00Z"},
                   {"op": "dispatch", "vid": "v002", "track": 1, "at": "2026-06-01T02:00:00Z"}):
        journal = append_record(journal, record)
    (root / lane.journal).write_text(journal)
    report = lane_report(root, lane)
    assert report.as_json()["budgets"] == [{"name": "max_experiments", "used": 2.0, "limit": 20.0, "fraction": 0.1}]


# --- the frontier replay ---------------------------------------------------------------------


def _exp(vid: str, verdict: str, at: float, value: float | None, delta: float | None = None) -> Experiment:
    return Experiment(vid, f"p/{vid}.md", "v", verdict, stub_at=at - 1, filed_at=at, value=value, delta=delta)


def test_the_frontier_moves_only_on_a_supported_filing_that_beats_it():
    exps = [_exp("v001", "supported", 10, 90.0), _exp("v002", "supported", 20, 95.0),  # lower is better: 95 is worse
            _exp("v003", "refuted", 30, 80.0), _exp("v004", "supported", 40, 70.0, delta=-3.0)]
    steps, out = replay_frontier(100.0, exps, higher_is_better=False, since=None)
    assert [(s.at, s.value, s.vid) for s in steps] == [(9, 100.0, None), (10, 90.0, "v001"), (40, 70.0, "v004")]
    deltas = {e.vid: e.delta for e in out}
    # against the frontier then; a co-measured delta the run recorded is kept as recorded
    assert deltas == {"v001": -10.0, "v002": 5.0, "v003": -10.0, "v004": -3.0}


def test_a_lane_that_does_not_exist_is_one_json_refusal(generated):
    done = wiki("report", "nosuch", "lane", "--root", str(generated), "--json")
    assert done.returncode == 2 and "error" in json.loads(done.stdout) and done.stderr.count("\n") == 1
    done = wiki("report", "gemma4", "tpu", "--all", "--root", str(generated))
    assert done.returncode == 2 and "not both" in done.stderr and "Traceback" not in done.stderr


# --- kernel families -------------------------------------------------------------------------


def _receipt(vid: str, cand: str, speedup: float, verdict: str = "PASS") -> dict:
    return {"family": "layernorm", "vid": vid, "candidate": cand, "commit": "a" * 40, "mode": "quick",
            "variant": "rows512/cpu", "verifier": "v1", "verdict": verdict, "parity": {}, "firing": {},
            "timing": {"speedup": speedup}, "created": "2026-12-01T00:00:00Z"}


def test_a_family_s_receipts_say_what_they_are_worth(tmp_path, monkeypatch):
    from wikiengine.model.journal import append_record
    from wikiengine.model.kernels import KernelFamily
    from wikiengine.model.receipt import seal
    from wikiengine.report.kernels import VERIFIED, family_report, receipt_status

    family, key = KernelFamily("layernorm"), b"k" * 32
    receipts = {"v001-cand1": seal(_receipt("v001", "cand1", 1.8), key), "v001-cand2": seal(_receipt("v001", "cand2", 3.0), key),
                "v002-cand1": seal(_receipt("v002", "cand1", 9.0)), "v002-cand2": seal(_receipt("v002", "cand2", 5.0), key),
                "v003-cand1": seal(_receipt("v003", "cand1", 7.0), key)}
    receipts["v001-cand2"] = receipts["v001-cand2"].replace('"speedup": 3.0', '"speedup": 30.0')  # edited by hand
    folder = tmp_path / family.receipts_dir
    folder.mkdir(parents=True)
    journal = ""
    for name, text in receipts.items():
        (folder / f"{name}.json").write_text(text)
        digest = json.loads(text)["sha256"] if name != "v002-cand2" else "0" * 64  # v002-cand2: not the record's digest
        journal = append_record(journal, {"op": "verify", "vid": name[:4], "cand": name[5:], "mode": "quick", "verdict": "PASS",
                                          "receipt": f"{family.receipts_dir}/{name}.json", "receipt_sha256": digest})
    journal = append_record(journal, {"op": "verify", "vid": "v004", "cand": "cand1", "verdict": "PASS",
                                      "receipt": f"{family.receipts_dir}/gone.json"})
    (tmp_path / family.journal).write_text(journal)
    records = [json.loads(line) for line in journal.splitlines()]
    statuses = {f"{r['vid']}-{r['cand']}": receipt_status(tmp_path, r, key, "")[1] for r in records}
    assert statuses == {"v001-cand1": VERIFIED, "v001-cand2": statuses["v001-cand2"], "v002-cand1": "unsigned",
                        "v002-cand2": "unbound: its digest is not the one the verify record committed",
                        "v003-cand1": VERIFIED, "v004-cand1": "missing"}
    assert statuses["v001-cand2"].startswith("invalid: its sha256 does not match")
    assert receipt_status(tmp_path, records[0], b"x" * 32, "")[1] == "signature does not verify"
    assert receipt_status(tmp_path, records[0], None, "no key here")[1] == "signed (not checked: no key here)"
    monkeypatch.setattr("wikiengine.report.kernels._receipt_key", lambda root: (key, ""))  # the machine's key
    report = family_report(tmp_path, family)
    assert [c.speedup for c in report.candidates] == [1.8, None, 9.0, 5.0, 7.0, None]
    assert [c.status == VERIFIED for c in report.candidates] == [True, False, False, False, True, False]
    best = report.best  # the unsigned 9.0 and the unbound 5.0 do not count
    assert (best.vid, best.cand, best.speedup) == ("v003", "cand1", 7.0)
    assert report.as_json()["best"]["speedup"] == 7.0


def test_a_torn_journal_line_mid_file_is_one_line_naming_it_even_from_a_worker(generated, tmp_path):
    root = tmp_path / "wiki"
    shutil.copytree(generated, root)
    journal = root / "wiki/experiments/gemma4_autoresearch_optimization/tpu/.journal.jsonl"
    journal.write_text('{"op": "claim"}\nnot json\n{"op": "start"}\n')
    for jobs in ("1", "2"):
        done = wiki("report", "--all", "--root", str(root), "-o", str(tmp_path / "out"), "-j", jobs)
        assert done.returncode == 2
        assert done.stderr == f"error: {journal.relative_to(root)}:2: journal line is not JSON\n"


def test_an_unchanged_lane_s_figures_are_not_drawn_again(generated, tmp_path, monkeypatch):
    from dataclasses import replace

    from wikiengine.report import plots
    from wikiengine.report.html import Page

    lane = Lane("gemma4_autoresearch_optimization", "tpu")
    now = 1.9e9
    report, cache = lane_report(generated, lane, now=now), tmp_path / "figures"
    first = Page(generated, tmp_path, report, cache).render()
    kept = sorted(p.name for p in cache.iterdir())
    assert len(kept) == 2
    drawn = []
    real = plots.delta_svg
    monkeypatch.setattr(plots, "frontier_svg", lambda *a: drawn.append("frontier") or "")
    monkeypatch.setattr(plots, "delta_svg", lambda *a: drawn.append("delta") or real(*a))
    assert Page(generated, tmp_path, lane_report(generated, lane, now=now), cache).render() == first and drawn == []
    moved = replace(report, experiments=[replace(e, delta=(e.delta or 0) + 1) for e in report.experiments])
    Page(generated, tmp_path, moved, cache).render()
    assert drawn == ["delta"]  # the frontier's inputs did not change
    now = sorted(p.name for p in cache.iterdir())
    assert len(now) == 2 and now[0] != kept[0] and now[1] == kept[1]  # the delta figure replaced, the frontier kept


def test_each_id_s_records_are_led_by_the_session_they_fell_in():
    from wikiengine.report.data import records_by_vid

    records = [{"op": "start", "session": 1}, {"op": "claim", "vid": "v001"}, {"op": "dispatch", "vid": "v001"},
               {"op": "start", "session": 2}, {"op": "dispatch", "vid": "v001"}, {"op": "claim", "vid": "v002"}, {"op": "x"}]
    grouped = records_by_vid(records)
    assert [r.get("session") or r["op"] for r in grouped["v001"]] == [1, "claim", "dispatch", 2, "dispatch"]
    assert [r.get("session") or r["op"] for r in grouped["v002"]] == [2, "claim"]
    assert set(grouped) == {"v001", "v002"}


def test_open_opens_the_written_page(generated, tmp_path, monkeypatch, capsys):
    import webbrowser

    from wikiengine._cli import main as cli

    opened = []
    monkeypatch.setattr(webbrowser, "open", opened.append)
    assert cli.main(["report", "gemma4", "tpu", "--root", str(generated), "-o", str(tmp_path), "--open", "-j", "1"]) == 0
    assert opened == [(tmp_path / "gemma4-tpu.html").resolve().as_uri()]
    assert capsys.readouterr().out.endswith(f"wrote {tmp_path / 'gemma4-tpu.html'}\n")
