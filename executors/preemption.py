"""Preemption is not failure: the shared vocabulary, and one pure classifier per backend.

A run the infrastructure took away (a scheduler preempted it, its node failed, a
controller restarted its JobSet, someone outside the lane sent it SIGTERM) says nothing
about the experiment. Every lane backend reports such a run in one of two states, never
``failed``:

- ``retrying`` (:data:`RETRYING`): the backend restarts it by itself (Slurm requeued it,
  the JobSet controller is recreating its jobs); it is in flight, and the lane waits;
- ``preempted`` (:data:`PREEMPTED`): it ended and nothing restarts it; the lane
  re-dispatches it under the same v-id as the next attempt (the journal's ``preempted``
  record counts it), and never processes it as a crash.

A run preempted and then completed is filed once, from its completed attempt; its
Results say how many attempts it took.
"""

from __future__ import annotations

import signal

RETRYING = "retrying"
PREEMPTED = "preempted"
DISRUPTED = (RETRYING, PREEMPTED)

# Slurm job states (squeue(1) "JOB STATE CODES") that are the cluster's doing, not the run's.
SLURM_RETRYING = frozenset({"REQUEUED", "REQUEUE_FED", "REQUEUE_HOLD", "SUSPENDED", "STOPPED"})
SLURM_PREEMPTED = frozenset({"PREEMPTED", "NODE_FAIL", "BOOT_FAIL"})
# Kubernetes pod condition DisruptionTarget reasons: the pod was taken away.
K8S_DISRUPTION_REASONS = frozenset({"PreemptionByScheduler", "PreemptionByKubeScheduler", "DeletionByTaintManager",
                                    "EvictionByEvictionAPI", "DeletionByPodGC", "TerminationByKubelet"})
# Exit codes a disrupted container ends with: 143 (SIGTERM at eviction) and 42, the code
# the training entry point exits with when it saved a checkpoint on SIGTERM.
DISRUPTION_EXIT_CODES = frozenset({42, 128 + signal.SIGTERM})
LOCAL_RUNNER_SIGTERM = "the runner got SIGTERM"


def slurm(job_state: str, restarts: int) -> str | None:
    """What a Slurm job state says: RETRYING, PREEMPTED, or None (the run's own state).

    A ``PENDING`` job with restarts was requeued (by ``scontrol requeue`` or a
    ``PreemptMode=REQUEUE`` partition): the scheduler runs it again.
    """
    state = job_state.split()[0].upper() if job_state else ""
    if state in SLURM_RETRYING or (state in ("PENDING", "CONFIGURING") and restarts > 0):
        return RETRYING
    if state in SLURM_PREEMPTED:
        return PREEMPTED
    return None


def jobset(terminal: str | None, restarts: int, restarting: bool, exit_code: int | None,
           disruption_reasons: frozenset[str] | set[str]) -> str | None:
    """What a JobSet says: RETRYING (the controller is restarting it: a ``RestartingJobSet``
    condition, or restarts while it is still active), PREEMPTED (it failed, and its failed
    pod was disrupted: a ``DisruptionTarget`` condition, or exit code 42/143 alongside
    one), or None.

    ``terminal`` is ``Completed``/``Failed``/None; ``disruption_reasons`` the reasons of the
    failed pods' ``DisruptionTarget`` conditions.
    """
    disrupted = bool(set(disruption_reasons) & K8S_DISRUPTION_REASONS)
    if terminal is None:
        return RETRYING if restarting or (restarts > 0 and disrupted) else None
    if terminal == "Failed" and disrupted and (exit_code is None or exit_code in DISRUPTION_EXIT_CODES):
        return PREEMPTED
    return None


def local(exit_code: int | None, reason: str | None) -> str | None:
    """What a local run's end says: PREEMPTED when SIGTERM came from outside the lane (the
    runner got it, or the run died of it while the runner sent none), else None."""
    if reason and reason.startswith(LOCAL_RUNNER_SIGTERM):
        return PREEMPTED
    if reason is None and exit_code == 128 + signal.SIGTERM:
        return PREEMPTED
    return None
