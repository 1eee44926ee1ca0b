"""RELIABILITY row 49 for the kernel pages: the ledger table, the plan, the leads and the
receipt parsers take any text without raising, and a sealed receipt survives a round trip."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from wikiengine.core.errors import PageError
from wikiengine.core.page import parse_page
from wikiengine.model import kernel_page as kp
from wikiengine.model import receipt as kernel_receipt

LINES = st.sampled_from([
    "## Candidate ledger", "## Candidate ledger — 3 candidates", "## Candidate plan", "## Next hypotheses",
    "## Cross-variant open hypotheses", "## Retired hypotheses", "## Ruled-out levers", "## Levers (verified)",
    "| cand | commit | what | p50 ms | speedup | parity |", "|---|---|---|---|---|---|", "| cand1 | `abc` | x | 1 | 2x | pass |",
    "|", "| a \\| b |", "- [ ] cand1: x", "- [x] cand2:", "- **lead-a**: why", "- **Lead**:", "TBD", "", "<...>",
])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(LINES, st.text(max_size=40)), max_size=30))
@example(["---", "## Candidate ledger"])  # a fence opened on line 1 and never closed
def test_row_49_kernel_page_parsers_take_any_text(lines):
    text = "\n".join(lines)
    try:
        page = parse_page(text, "wiki/kernel_experiments/f/pallas/2026-06-01-v001-x.md", parse_yaml=False)
    except PageError as exc:  # parse_page's one refusal of such text, which its callers report in one line
        assert text.startswith("---") and "unterminated frontmatter" in str(exc)
        return
    found = kp.ledger(page)
    assert found is None or all(isinstance(r.cells, dict) for r in found.rows)
    assert all(len(item) == 3 for item in kp.plan(page))
    assert set(kp.experiment_leads(page)) <= set(kp.leads_in(page, (kp.NEXT_HYPOTHESES,)))
    kp.family_leads(page), kp.ruled_out(page), kp.levers_verified(page)


@settings(max_examples=300, deadline=None)
@given(st.text(max_size=200))
def test_row_49_receipt_validation_never_raises(text):
    data, problem = kernel_receipt.validate(text)
    assert (data is None) != (problem is None)


@given(st.dictionaries(st.sampled_from(["extra", "note", "leads"]), st.text(max_size=20)), st.floats(0.01, 100))
def test_row_49_a_sealed_receipt_round_trips(extra, speedup):
    data = {"family": "f", "vid": "v001", "candidate": "cand1", "commit": "a" * 40, "mode": "full", "variant": "p/cpu",
            "verifier": "v", "verdict": "PASS", "parity": {}, "firing": {}, "timing": {"speedup": speedup},
            "created": "2026-06-01T00:00:00Z", **extra}
    sealed, problem = kernel_receipt.validate(kernel_receipt.seal(data))
    assert problem is None and kernel_receipt.speedup(sealed) == speedup
