"""The outside world: checkpoint stores and compute backends behind small Protocols.

- :mod:`wikiengine.executors.store`: the checkpoint store interface (local git store by default,
  the Hugging Face Hub with the ``hub`` extra);
- :mod:`wikiengine.executors.compute`: the compute backend interface (a local process by default,
  Kaggle with the ``kaggle`` extra, GKE with the ``gke`` extra).

Client libraries are imported lazily inside the modules that use them.
"""
