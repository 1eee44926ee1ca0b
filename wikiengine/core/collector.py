"""The cycle collector paused across work that makes many objects and next to no garbage.

Python runs a collection every 700 new container objects, and a full one each time the
long-lived objects have grown by a quarter, walking all of them. Work that builds a large
structure it keeps pays that walk again and again for nothing:

- a lint run's analysis (about 0.1 s of a cold run's parent on the real shape) and a load of
  the cache's marshalled shards (twice as slow at 50,000 pages with the collector on);
- ``import torch``: 166,000 tracked objects, 373 collections during the import, 0.17-0.23 s of
  its 1.35-1.59 s of CPU (``gc.callbacks``, three runs), in every process that trains, measures
  an experiment or verifies a kernel.

The collector comes back on after the block if it was on before it, and nothing it would have
found is lost: a later collection finds it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused(*, keep: bool = False) -> Iterator[None]:
    """The cycle collector off for the block, and on again after it if it was on. ``keep``: every
    object alive at the block's end is frozen (``gc.freeze``), left out of every later collection;
    for a process's own entry, whose imports live as long as the process. (Paused alone, the
    first collection after the block walks everything the block made, and each full one after it
    again.)"""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if keep:
            gc.freeze()
        if collecting:
            gc.enable()
