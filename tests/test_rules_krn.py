"""KRN001..KRN007: kernel experiment pages and family pages (issue 16), in ruff's shape:
each fixture breaks one thing and the expected findings (path, line, code, message) are
compared whole; the clean fixture has none."""

from __future__ import annotations

import json

import pytest

from tests.rules_wiki import commit_all, git, git_init
from wikiengine.lint import lint
from wikiengine.lint.config import LintConfig
from wikiengine.model import receipt as kernel_receipt

FAMILY_DIR = "wiki/kernel_experiments/layernorm/pallas"
FAMILY_PAGE = "wiki/kernels/layernorm.md"
PAGE = f"{FAMILY_DIR}/2026-06-02-v001-fused.md"
REFUTED = f"{FAMILY_DIR}/2026-06-03-v002-chunked.md"
RECEIPT = f"{FAMILY_DIR}/receipts/v001-cand2-full.json"
KRN = [f"KRN00{n}" for n in range(1, 8)]

LEDGER = """\
| cand | commit | what | p50 ms | speedup | parity |
|---|---|---|---|---|---|
| cand1 | `aaaaaaaaaaaa` | unbiased variance | 10.3 | 0.345x | fail |
| cand2 | `bbbbbbbbbbbb` | native fused pass | 0.3 | 3.91x | pass |
"""


def front(**keys) -> str:
    base = {"title": "v001 fused", "type": "experiment", "model": "layernorm", "variant": "rows512x1024/cpu-avx512",
            "status": "filed", "verdict": "supported", "verified_by": "kernel-verifier", "speedup_bar": "1.05",
            "branch": "kernel/layernorm-v001", "verification_receipt": "receipts/v001-cand2-full.json",
            "created": "2026-06-02"}
    base.update(keys)
    return "---\n" + "".join(f"{k}: {v}\n" for k, v in base.items() if v is not None) + "---\n"


def kernel_page(ledger: str = LEDGER, leads: str = "- **row-chunking**: blocks of rows may stay in cache\n",
                **keys) -> str:
    return (front(**keys) + "# v001: fused\n\n## Hypothesis under test\n\n**Hypothesis**: one pass wins.\n\n"
            "## Setup\n\n**Lever queue**: single-pass-fusion\n\n## Candidate plan\n\n- [x] cand1: unbiased\n"
            "- [x] cand2: fused\n\n## Results\n\n| metric | baseline | this run |\n|---|---|---|\n| p50 ms | 1.2 | 0.3 |\n\n"
            f"## Candidate ledger\n\n{ledger}\n## HLO Dump\n\nFiring audit: confirmed.\n\n## Verdict\n\n"
            f"**{keys.get('verdict', 'supported')}** — 4x.\n\n## Next hypotheses\n\n{leads}")


def family_page(best: str = "[v001-fused](../kernel_experiments/layernorm/pallas/2026-06-02-v001-fused.md) 4.05x",
                open_leads: str = "- **row-chunking**: from v001\n") -> str:
    return ("---\ntitle: layernorm kernel family\ntype: model\nlane: pallas\n---\n# layernorm\n\n## Variant matrix\n\n"
            "| Op-point | Hardware | Status | Baseline | Current best | Open hyps | Frontier exp |\n"
            "|---|---|---|---|---|---|---|\n"
            f"| rows512x1024 | cpu-avx512 | live | 1.0x | {best} | 1 | v001-fused |\n\n"
            f"## Cross-variant open hypotheses\n\n{open_leads}\n## Retired hypotheses\n\n")


def receipt(**changes) -> str:
    data = {"family": "layernorm", "vid": "v001", "candidate": "cand2", "commit": "b" * 40, "mode": "full",
            "variant": "rows512x1024/cpu-avx512", "verifier": "kernel-verifier (embedded, cpu)", "verdict": "PASS",
            "reasons": [], "parity": {"pass": True}, "firing": {"pass": True, "audit": "confirmed"},
            "timing": {"speedup": 4.05, "reference_p50_ms": 1.2, "candidate_p50_ms": 0.3}, "created": "2026-06-02T10:00:00Z"}
    data.update(changes)
    return kernel_receipt.seal(data)


def build(root, *, page: str | None = None, stub_first: bool = True, cand_commits: int = 2,
          files: dict[str, str] | None = None, cand_date: str | None = None) -> None:
    """A git repository holding one family: the stub committed first, then the candidate
    branch with ``cand_commits`` commits, then the filed page and its receipt."""
    git_init(root)
    (root / "wiki").mkdir()
    (root / "wiki/index.md").write_text("# index\n")
    commit_all(root, "init", date="2026-06-01T00:00:00Z")
    target = root / PAGE
    target.parent.mkdir(parents=True)
    if stub_first:
        target.write_text(kernel_page(status="in_progress", verdict=None, verified_by=None, verification_receipt=None)
                          .replace("**supported** — 4x.", ""))
        commit_all(root, "stub", date="2026-06-02T09:00:00Z")
    git(root, "checkout", "-q", "-b", "kernel/layernorm-v001")
    for n in range(1, cand_commits + 1):
        git(root, "commit", "-q", "--allow-empty", "-m", f"cand{n}(layernorm v001): try {n} — p50 1 ms, speedup 1x, parity pass",
            date=cand_date or f"2026-06-02T10:0{n}:00Z")
    git(root, "checkout", "-q", "main")
    written = {PAGE: kernel_page() if page is None else page, FAMILY_PAGE: family_page(), RECEIPT: receipt(),
               **(files or {})}
    for rel, text in written.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    commit_all(root, "file v001", date="2026-06-02T12:00:00Z")


def krn_findings(root) -> list[tuple[str, int, str, str]]:
    result = lint(root, config=LintConfig(select=KRN), base=None, use_cache=False)
    return [(f.path, f.line, f.code, f.message) for f in result.findings]


def line_of(text: str, needle: str) -> int:
    return text.splitlines().index(needle) + 1


def test_clean_family_has_no_findings(tmp_path):
    build(tmp_path)
    assert krn_findings(tmp_path) == []


def test_krn001_supported_without_verifier(tmp_path):
    build(tmp_path, page=kernel_page(verified_by=None))
    assert krn_findings(tmp_path) == [(PAGE, 7, "KRN001", "verdict is 'supported' but there is no verified_by: a "
                                                          "supported kernel needs verified_by: kernel-verifier")]


def test_krn001_names_a_self_verified_page(tmp_path):
    build(tmp_path, page=kernel_page(verified_by="author"))
    assert krn_findings(tmp_path) == [(PAGE, 8, "KRN001", "verdict is 'supported' but verified_by is 'author': a "
                                                          "supported kernel needs verified_by: kernel-verifier")]


def test_krn002_ledger_written_as_prose(tmp_path):
    text = kernel_page(ledger="Tried two variants; the second was fastest.\n")
    build(tmp_path, page=text)
    assert krn_findings(tmp_path) == [(PAGE, line_of(text, "## Candidate ledger"), "KRN002",
                                       "'## Candidate ledger' is not a table: write one row per candidate "
                                       "(| cand | commit | what | p50 ms | speedup | parity |)")]


def test_krn002_filed_page_without_ledger(tmp_path):
    text = kernel_page().replace("## Candidate ledger\n\n" + LEDGER, "")
    build(tmp_path, page=text)
    assert krn_findings(tmp_path) == [(PAGE, 7, "KRN002", "verdict is 'supported' but the page has no '## Candidate ledger'")]


def test_krn003_more_ledger_rows_than_branch_commits(tmp_path):
    text = kernel_page()
    build(tmp_path, page=text, cand_commits=1)
    assert krn_findings(tmp_path) == [(PAGE, line_of(text, "## Candidate ledger"), "KRN003",
                                       "the Candidate ledger has 2 rows but branch kernel/layernorm-v001 has 1 "
                                       "candidate commit(s) of v001")]


def test_krn003_skips_when_the_branch_is_absent(tmp_path):
    build(tmp_path, page=kernel_page(branch="kernel/layernorm-v001-gone"))
    assert krn_findings(tmp_path) == []


def test_krn004_page_committed_already_filed(tmp_path):
    build(tmp_path, stub_first=False)
    assert krn_findings(tmp_path) == [(PAGE, 6, "KRN004", "the page was committed already filed ("
                                       + git(tmp_path, "log", "--format=%h", "--abbrev=12", "-1", "--", PAGE)
                                       + "): no stub commit came before the verdict")]


def test_krn004_candidate_older_than_its_stub(tmp_path):
    build(tmp_path, cand_date="2026-06-01T08:00:00Z")
    first_cand = git(tmp_path, "log", "--reverse", "--format=%h", "--abbrev=12", "kernel/layernorm-v001", "--grep=^cand1")
    stub = git(tmp_path, "log", "--reverse", "--format=%h", "--abbrev=12", "--", PAGE).splitlines()[0]
    assert krn_findings(tmp_path) == [(PAGE, 6, "KRN004", f"candidate commit {first_cand} on kernel/layernorm-v001 "
                                       f"is older than the stub commit {stub}: candidates are authored after their stub")]


@pytest.mark.parametrize("content,message", [
    (None, "verification_receipt receipts/v001-cand2-full.json does not exist"),
    (receipt().replace('"speedup": 4.05', '"speedup": 9.5'), "verification_receipt receipts/v001-cand2-full.json does "
     "not validate: its sha256 does not match its content (edited, truncated or hand-written)"),
    (receipt(vid="v007"), "verification_receipt receipts/v001-cand2-full.json is the receipt of layernorm v007, not of this page"),
    (receipt(verdict="FAIL", reasons=["firing audit: the candidate's op never ran: silent no-op"]),
     "verdict is 'supported' but the receipt receipts/v001-cand2-full.json says FAIL: firing audit: the candidate's op "
     "never ran: silent no-op"),
    (receipt(timing={"speedup": 0.33}), "verdict is 'supported' but the receipt shows a speedup of 0.33x, not above "
     "the pre-registered bar 1.05x"),
    (receipt(timing={"speedup": 1.03}), "verdict is 'supported' but the receipt shows a speedup of 1.03x, not above "
     "the pre-registered bar 1.05x"),
], ids=["missing", "tampered", "other-page", "fail-receipt", "slower", "below-bar"])
def test_krn005_receipt(tmp_path, content, message):
    build(tmp_path)
    if content is None:
        (tmp_path / RECEIPT).unlink()
    else:
        (tmp_path / RECEIPT).write_text(content)
    assert krn_findings(tmp_path) == [(PAGE, 11, "KRN005", message)]


def test_krn005_supported_without_a_receipt(tmp_path):
    build(tmp_path, page=kernel_page(verification_receipt=None))
    assert krn_findings(tmp_path) == [(PAGE, 7, "KRN005", "verdict is 'supported' but no verification_receipt is cited")]


def test_krn005_an_inconclusive_page_may_cite_a_fail_receipt(tmp_path):
    text = kernel_page(verdict="inconclusive", verified_by=None)
    build(tmp_path, page=text, files={RECEIPT: receipt(verdict="FAIL", reasons=["silent no-op"]),
                                      FAMILY_PAGE: family_page(best="—")})
    assert krn_findings(tmp_path) == []


def test_krn006_current_best_points_at_a_refuted_page(tmp_path):
    refuted = kernel_page(verdict="refuted", verified_by=None, verification_receipt=None).replace("v001 fused", "v002 chunked")
    best = "[v002-chunked](../kernel_experiments/layernorm/pallas/2026-06-03-v002-chunked.md) 0.33x"
    text = family_page(best=best)
    build(tmp_path, files={REFUTED: refuted, FAMILY_PAGE: text})
    # the hand-made refuted page also breaks KRN003/KRN004 (no stub, no branch commits): only KRN006 is under test
    assert [f for f in krn_findings(tmp_path) if f[2] == "KRN006"] == [(FAMILY_PAGE, 12, "KRN006",
                                       f"Current best of rows512x1024/cpu-avx512 names {REFUTED}, which is 'refuted', "
                                       "not 'supported'")]


def test_krn006_current_best_names_a_missing_page(tmp_path):
    text = family_page(best="v009 5.0x")
    build(tmp_path, files={FAMILY_PAGE: text})
    assert krn_findings(tmp_path) == [(FAMILY_PAGE, 12, "KRN006", "Current best of rows512x1024/cpu-avx512 names v009, "
                                       f"which is not an experiment page of {FAMILY_DIR}")]


def test_krn007_lead_missing_from_the_family_page(tmp_path):
    text = kernel_page(leads="- **row-chunking**: blocks\n- **split-rows**: two threads per row\n")
    build(tmp_path, page=text)
    assert krn_findings(tmp_path) == [(PAGE, line_of(text, "- **split-rows**: two threads per row"), "KRN007",
                                       f"lead 'split-rows' is not on the family page {FAMILY_PAGE} (open or retired): "
                                       "propagate it there (K8)")]


def test_krn007_a_retired_lead_is_kept(tmp_path):
    retired = family_page(open_leads="") + "- **row-chunking**: tried by v003: refuted\n"
    build(tmp_path, files={FAMILY_PAGE: retired})
    assert krn_findings(tmp_path) == []


def test_receipt_seal_round_trips_and_detects_a_flipped_verdict():
    text = receipt()
    data, problem = kernel_receipt.validate(text)
    assert problem is None and data["verdict"] == "PASS"
    flipped = json.loads(text)
    flipped["verdict"] = "FAIL"
    assert kernel_receipt.validate(json.dumps(flipped))[1].startswith("its sha256 does not match")


def test_older_forms_status_verdict_and_a_suffixed_ledger_heading(tmp_path):
    text = kernel_page(status="supported", verdict=None, verified_by=None).replace(
        "## Candidate ledger\n", "## Candidate ledger — 2 candidates, the second wins\n")
    build(tmp_path, page=text, files={RECEIPT: receipt()})
    assert krn_findings(tmp_path) == [(PAGE, 6, "KRN001", "verdict is 'supported' but there is no verified_by: a "
                                                          "supported kernel needs verified_by: kernel-verifier")]


def test_krn005_a_receipt_path_from_the_repository_root_resolves(tmp_path):
    build(tmp_path, page=kernel_page(verification_receipt=RECEIPT))
    assert krn_findings(tmp_path) == []


def test_in_progress_stub_with_placeholders_is_not_judged(tmp_path):
    build(tmp_path, page=kernel_page(status="in_progress", verdict=None, verified_by=None, verification_receipt=None,
                                     ledger="TBD\n", leads="(Pending)\n").replace("**None** — 4x.", ""),
          files={FAMILY_PAGE: family_page(best="—")})
    assert krn_findings(tmp_path) == []
