"""core/median.py gives what statistics.median gives, without importing statistics."""

from __future__ import annotations

import statistics

import pytest
from hypothesis import given
from hypothesis import strategies as st

from wikiengine.core.median import median

NUMBERS = st.one_of(st.integers(-10**6, 10**6), st.floats(allow_nan=False, allow_infinity=False, width=64))


@given(st.lists(NUMBERS, min_size=1, max_size=40))
def test_the_median_is_the_standard_librarys(values):
    assert median(values) == statistics.median(values)


def test_the_median_of_nothing_is_refused():
    with pytest.raises(ValueError):
        median([])
