"""The median of a list of numbers, as :func:`statistics.median` gives it, without importing
:mod:`statistics` (which imports :mod:`fractions` and :mod:`decimal`, about 4 ms: a relay run's
no-op wake takes one median, of the gaps between its pointer commits)."""

from __future__ import annotations


def median(values):
    """The middle value of ``values`` sorted, or the mean of the two middle ones; ValueError
    when there are none."""
    ordered = sorted(values)
    if not ordered:
        raise ValueError("median of no values")
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2
