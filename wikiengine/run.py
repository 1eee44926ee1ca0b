"""Report a lane run to the engine: ``from wikiengine import run; run.log(tps=...)``.

The public name of :mod:`wikiengine.core.run_report` (its docstring has the whole API;
``docs/run-contract.md`` the contract). Standard library only: no torch, no jsonschema.
"""

from wikiengine.core.run_report import (
    Run,
    artifact,
    config,
    current,
    detail,
    finish,
    frontier,
    log,
    op_digests,
    parity,
    progress,
    smoke,
    steps,
)

__all__ = ["Run", "artifact", "config", "current", "detail", "finish", "frontier", "log", "op_digests", "parity",
           "progress", "smoke", "steps"]
