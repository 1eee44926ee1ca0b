"""A shared autouse fixture for the training tests: import it into a test module with
``from torch_threads import one_torch_thread  # noqa: F401`` to apply it there."""

import os

import pytest


@pytest.fixture(autouse=True, scope="module")
def one_torch_thread():
    """One intra-op thread, here and in spawned sessions: the tiny model gains nothing from
    more, and on a shared two-core machine they only contend."""
    import torch

    saved = torch.get_num_threads(), os.environ.get("OMP_NUM_THREADS")
    torch.set_num_threads(1)
    os.environ["OMP_NUM_THREADS"] = "1"
    yield
    torch.set_num_threads(saved[0])
    if saved[1] is None:
        os.environ.pop("OMP_NUM_THREADS", None)
    else:
        os.environ["OMP_NUM_THREADS"] = saved[1]
