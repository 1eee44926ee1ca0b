"""`wiki step` for a relay training run: observe (read only), decide (pure), act, finish.

One wake is ``step.run_step``: lock, check, decide, act, write memory, commit, summary.
"""
