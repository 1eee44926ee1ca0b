"""The torch trainer that executors launch: model, data cursor, checkpoints, session planner, bootstrap.

Modules (one concept each):

- :mod:`wikiengine.training.config`: the run config (``RunConfig``, ``load_config``);
- :mod:`wikiengine.training.model`: the GPT decoder and its presets (``tiny``, ``ounce100m``);
- :mod:`wikiengine.training.data`: shards, ``dataset_files_sha``, ``shuffle_perm_sha``, the permutation;
- :mod:`wikiengine.training.checkpoint`: the HF-Trainer checkpoint layout, manifest, verification,
  ``read_cursor``;
- :mod:`wikiengine.training.plan`: the pure session planner and its cross-check;
- :mod:`wikiengine.training.trainer`: the training state and one optimizer step;
- :mod:`wikiengine.training.session`: ``python -m wikiengine.training.session``, one session of a relay run;
- :mod:`wikiengine.training.bootstrap`: the pinned kernel body; :mod:`wikiengine.training.launch` pins, renders and
  checks it; :mod:`wikiengine.training.launcher`: what the bootstrap fetches and runs at the pinned commit;
- :mod:`wikiengine.training.demo`: a fresh local store and run config for the tiny demo run;
- :mod:`wikiengine.training.make_corpus`: regenerates the shipped tiny corpus (``training/corpus/``);
- :mod:`wikiengine.training.evaluate`: held-out evaluation of published weights;
- :mod:`wikiengine.training.autoresearch_target`: ``python -m wikiengine.training.autoresearch_target``, the real
  optimization target of ``wiki demo autoresearch`` (a training step's throughput, measured
  interleaved with the frontier, with a float64 parity check and an op digest);
  :mod:`wikiengine.training.autoresearch_knobs`: its knobs (torch-free);
  :mod:`wikiengine.training.autoresearch_queue`: the scripted proposal queue and the baseline config.

Importing this package does not import torch.
"""
