"""The page model's whole-text section split gives the line split's page, byte for byte.

``core.page._parts_from_text`` hands the H2 scan only the lines it must judge (each run of
other lines standing as its last line) and slices the sections out of the body; these
tests compare it with ``_parts_from_lines`` (every line, then ``find_h2``) on the grammar
of hostile lines of ``test_page_scan`` (HTML comments spread over lines, setext
underlines after blank and non-blank lines, indented and tabbed lines) and on the
example wiki, and check that it steps aside exactly where it must.
"""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_page_scan import _example_pages, line_strategy
from wikiengine.core.page import _parts_from_lines, _parts_from_text, _scan_h2, load_page, parse_page, split_lines

bodies = st.builds(lambda lines, final: "\n".join(lines) + ("\n" if final else ""),
                   st.lists(st.one_of(line_strategy(), st.just(""), st.just("plain text")), max_size=20),
                   st.booleans())


def _check(body: str) -> None:
    lines = split_lines(body)
    quick = _parts_from_text(body, 5)
    certain = "\r" not in body and "```" not in body and "~~~" not in body and _scan_h2(lines) is not None
    assert (quick is not None) == certain, "the text path steps aside only where the line scan is not certain"
    if quick is not None:
        assert quick == _parts_from_lines(lines, 5)
    for text in ("---\na: 1\n---\n" + body, "\n" + body):
        page = parse_page(text, parse_yaml=False)
        assert page.body == page.preamble + "".join(s.heading + s.body for s in page.sections)  # the body kept whole


@settings(max_examples=3000, deadline=None, suppress_health_check=list(HealthCheck))
@given(bodies)
def test_text_split_equals_the_line_split_on_generated_bodies(body):
    _check(body)


def test_text_split_known_cases():
    for body in ["", "## a", "## a\n", "\n\n## a\nx\n## b\n", "x\n---\n## a\n", "x\n\n---\n## a\n",
                 "<!--\n## hidden\n\n-->\n## B\n", "<!--\nx\n## hidden -->\n## B\n", "  \n- a\n## c\n",
                 "x\n  ---\n## a\n", "\n\n\n", "a\n## b ##\n\tc\n## d"]:
        _check(body)


def test_text_split_on_every_example_page():
    for path in _example_pages():
        text = path.read_text(encoding="utf-8")
        page = parse_page(text, path)
        assert page.to_text() == text
        body = load_page(path).body
        _check(body)
