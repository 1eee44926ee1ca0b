"""The one-pass link scan (core.links._scan_plain) tells a "](" it did not take by a count:
each link it takes holds one, so any other must lie in a code span or send the text to
the careful scan. These hold the count both ways, and the whole-text searches written as
regexes to the substring tests they stand for; tests/test_links_blockwise.py holds the
scan's answers to the careful scan's on generated texts."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from wikiengine.core import links


def _careful_refused(monkeypatch):
    def refused(text, first_line):
        raise AssertionError("sent to the careful scan")

    monkeypatch.setattr(links, "_scan_careful", refused)


def test_a_link_arrow_inside_a_code_span_keeps_the_one_pass_scan(monkeypatch):
    text = "see `[a](b.md)` then [c](c.md#L3)\nand ![i](i%20j.png) `](`\n"
    assert links._plain(text)
    expected = [(5, 22, "c.md#L3"), (6, 5, "i j.png")]
    assert links._scan_careful(text, 5) == expected
    _careful_refused(monkeypatch)
    assert links._scan_plain(text, 5) == expected


@pytest.mark.parametrize("text", [
    "[a](b.md) and [x](y z)\n",  # after the last link (a space in a destination: no link the regex takes)
    "[x](y z) then [a](b.md)\n",  # before a link
    "[a [b](c.md)](d.md)\n",  # a link inside link text: the regex takes the inner one only
    "see [a](b c.md)\n",  # the only one
])
def test_an_arrow_the_regex_did_not_take_goes_to_the_careful_scan(monkeypatch, text):
    assert links._plain(text)
    seen = []
    monkeypatch.setattr(links, "_scan_careful", lambda text, first_line: seen.append(text) or [])
    assert links._scan_plain(text, 1) == []
    assert seen == [text]


_INDENTED = re.compile(r"^[ >*+\-0-9.)]*?    ", re.M)


def _plain_by_substrings(text: str) -> bool:
    return (text.isascii() and "]:" not in text and "][" not in text
            and not ("    " in text and _INDENTED.search(text)))


@settings(max_examples=1500, deadline=None)
@given(st.lists(st.sampled_from(["    ", "  ", " ", "\n", "\n", "> ", "- ", "1.", ")", "*", "x", "]", ":", "[", "(",
                                 "\r", "\t", "`", "``", "\u00e9"]), max_size=24).map("".join))
def test_the_regex_searches_are_the_substring_tests(text):
    assert links._plain(text) == _plain_by_substrings(text)
    assert bool(links._TICK_RUN_RE.search(text)) == ("``" in text)
    no_link = "](" not in text and not links._REFERENCE_RE.search(text)
    assert no_link == ("](" not in text and "]:" not in text and "][" not in text)


SEGMENTS = st.sampled_from(["wiki", "models", "a.md", ".", "..", "", ".env", "x..y.md", "b c", "é.md", "..md"])


@settings(max_examples=400, deadline=None)
@given(directory=st.lists(SEGMENTS, max_size=4).map("/".join), file_part=st.lists(SEGMENTS, min_size=1, max_size=5).map("/".join))
def test_a_link_joined_to_its_page_s_folder_is_normpath_s_join(directory, file_part):
    """``joined`` takes the plain case as it stands; every path, plain or not, is normpath's."""
    import posixpath

    if not file_part:
        return
    assert links.joined(directory, file_part) == posixpath.normpath(posixpath.join(directory, file_part))
