"""How a backend call fails: the errors of every compute backend (a relay run's sessions and
a lane's workloads), apart from :mod:`wikiengine.executors.compute` so that a lane's wake,
which only lists its runs, imports none of the relay's session types."""

from __future__ import annotations

from wikiengine.core.errors import BackendError, BackendUnavailable, Busy


class ComputeError(BackendError):
    """A backend call failed; the message names the request and never a secret."""


class CapacityError(ComputeError, Busy):
    """The platform refused for capacity (too many sessions): infrastructure, not ours."""


class ComputeUnavailableError(ComputeError, BackendUnavailable):
    """The backend could not be reached or answered ambiguously: state is unknown."""
