"""GKE compute (the ``gke`` extra): cluster files, occupancy, selection and JobSet dispatch.

- :mod:`wikiengine.executors.gke.clusters`: read ``.env/*.md`` cluster files (seed Steps 4-5);
- :mod:`wikiengine.executors.gke.kube`: one place where Kubernetes calls are made, each with a deadline;
- :mod:`wikiengine.executors.gke.occupancy`: attribute each cluster's active JobSets and select free
  clusters (seed Step 6);
- :mod:`wikiengine.executors.gke.dispatch`: workload names, GCS paths, the JobSet manifest, submit,
  status and log tail (seed Step 2(c)(iv)-(vi) and the backfill step);
- :mod:`wikiengine.executors.gke.compute`: :class:`~wikiengine.executors.compute.ComputeBackend` over JobSets;
- :mod:`wikiengine.executors.gke.kernel_pod`: a kernel session's cluster pod (seed 003 Step 1: discover,
  up, sync and run over exec, down).

The ``kubernetes`` client is imported lazily, so cluster files can be read without it.
"""
