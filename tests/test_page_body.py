"""A parsed page keeps its body whole: ``Page.body`` is the text after the frontmatter,
the same string its preamble and sections join back to (the parse does not join it)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.test_page_scan import line_strategy
from wikiengine.core.page import parse_page

bodies = st.builds(lambda lines, newline, final: newline.join(lines) + (newline if final else ""),
                   st.lists(st.one_of(line_strategy(), st.just(""), st.just("plain text")), max_size=20),
                   st.sampled_from(["\n", "\r\n", "\r"]), st.booleans())


@settings(max_examples=1500, deadline=None, suppress_health_check=list(HealthCheck))
@given(bodies, st.sampled_from(["", "---\na: 1\n---\n", "\ufeff---\n---\n", "\n"]))
def test_the_body_is_the_text_after_the_frontmatter_and_the_join_of_the_parts(body, head):
    text = head + body
    if text.lstrip("\ufeff").startswith("---") and not head:
        return  # a body that opens a frontmatter of its own
    page = parse_page(text, parse_yaml=False)
    assert page.body == page.preamble + "".join(s.heading + s.body for s in page.sections)
    assert page.bom + page.frontmatter_block + page.body == text == page.to_text()
