"""Report a lane run to the engine, the way ``wandb.log`` or ``mlflow.log_metric`` would
(the public face is :mod:`wikiengine.run`; this module sits in core so that the trainer,
below the rest of the package, may use it too).

A training script that a lane's ``launch_cmd`` runs calls this module; it writes what
``schema/run-metrics.schema.json`` defines, atomically, at the paths the backend put in the
environment (``docs/run-contract.md`` has the table)::

    from wikiengine import run

    knobs = run.config()                      # the stub's Setup knobs ({config}); run.frontier() too
    for step in range(run.steps(1000)):       # run.steps: 3 in a smoke run (`wiki lane check`)
        ...
        run.progress(step=step)               # $PROGRESS_PATH: the sign of life the hang check reads
    run.log(tps=tps, frontier_tps=frontier_tps, mfu=mfu)   # numbers: the metrics
    run.parity(ok=rel_err <= tol, detail=f"rel err {rel_err:.1e}, tolerance {tol:.0e}")
    run.op_digests(candidate=cand_digest, frontier=front_digest)
    run.artifact("profile", "profile.md")     # copied into $ARTIFACT_DIR when it is elsewhere
    run.artifact("hlo", "hlo.md")             # with its "Hypothesis-firing audit: ..." line
    run.finish()

Every call rewrites ``$METRICS_PATH`` whole (temp file, rename), so a run killed at any
point leaves the last complete record. Outside a lane run (no ``$METRICS_PATH``) the calls
keep the values and write nothing, so the script runs unchanged by hand. A path with a
scheme (``gs://...`` on GKE) is written through ``fsspec``, imported only then.

Standard library only (and :mod:`wikiengine.core.atomic`): importing it loads neither
torch nor jsonschema, so it costs a training script nothing.
"""

from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import shutil
import time
from pathlib import Path

from wikiengine.core.atomic import atomic_write_bytes

__all__ = ["Run", "artifact", "config", "current", "detail", "finish", "frontier", "log", "op_digests", "parity",
           "progress", "smoke", "steps"]

# The fixed keys of metrics.json (schema/run-metrics.schema.json); any other number is a metric.
RESERVED = frozenset({"exit_code", "parity", "parity_detail", "op_digest", "frontier_op_digest", "artifacts", "step",
                      "smoke", "error", "finished"})
_KIND_RE = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_DIGEST_RE = re.compile(r"[0-9a-f]{8,64}")
PROGRESS_EVERY_S = 1.0  # progress() rewrites the progress file at most this often
SMOKE_STEPS = 3


def _is_url(path: str) -> bool:
    return "://" in path


def _write(path: str, data: bytes, *, durable: bool = True) -> None:
    """``data`` at ``path``, atomically (a local file), or through fsspec (a URL)."""
    if _is_url(path):
        import fsspec  # a remote store (GKE: gs://): only a run there pays for it

        with fsspec.open(path, "wb") as handle:
            handle.write(data)
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(Path(path), data, durable=durable)


def _number(name: str, value) -> float | int:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"run.log: {name}={value!r} is not a number (use run.detail for text)")
    if not math.isfinite(value):
        raise ValueError(f"run.log: {name}={value!r} is not finite")
    return value


class Run:
    """One run's record, bound to the paths in ``env`` (the process environment by default)."""

    def __init__(self, env: dict[str, str] | None = None):
        env = os.environ if env is None else env
        self.metrics_path = env.get("METRICS_PATH") or None
        self.progress_path = env.get("PROGRESS_PATH") or None
        self.artifact_dir = env.get("ARTIFACT_DIR") or (
            self.metrics_path.rsplit("/", 1)[0] if self.metrics_path and "/" in self.metrics_path else None)
        self.config_path = env.get("WIKI_CONFIG") or None
        self.frontier_path = env.get("WIKI_FRONTIER") or None
        self.smoke = env.get("WIKI_SMOKE", "") not in ("", "0")
        self.record: dict = {"smoke": True} if self.smoke else {}
        self._progress_at = 0.0

    # --- what the run reads ----------------------------------------------------------------

    def config(self) -> dict:
        """The knobs the run was launched with (``$WIKI_CONFIG``, the file ``{config}`` names); {} without one."""
        return self._read_json(self.config_path)

    def frontier(self) -> dict:
        """The frontier's knobs (``$WIKI_FRONTIER``, the file ``{frontier}`` names); {} without one."""
        return self._read_json(self.frontier_path)

    def steps(self, full: int) -> int:
        """``full``, or a few steps in a smoke run (``WIKI_SMOKE=1``)."""
        return min(full, SMOKE_STEPS) if self.smoke else full

    @staticmethod
    def _read_json(path: str | None) -> dict:
        if not path:
            return {}
        data = json.loads(Path(path).read_text(encoding="utf-8"))
        if not isinstance(data, dict):
            raise ValueError(f"{path}: not a JSON object of knob: value")
        return data

    # --- what the run reports ----------------------------------------------------------------

    def progress(self, step: int | None = None, **figures) -> None:
        """A sign of life (the lane kills a run silent past its hang limit); at most one write a second."""
        if step is not None:
            if isinstance(step, bool) or not isinstance(step, int) or step < 0:
                raise ValueError(f"run.progress: step={step!r} is not a count")
            self.record["step"] = step
        now = time.monotonic()
        if self.progress_path and (now - self._progress_at >= PROGRESS_EVERY_S or not self._progress_at):
            self._progress_at = now
            body = {"step": step, "at": _now(), **{k: _number(k, v) for k, v in figures.items()}}
            _write(self.progress_path, json.dumps(body).encode() + b"\n", durable=False)

    def log(self, **metrics) -> None:
        """Record figures (numbers): the lane's target metric, ``frontier_<metric>``, anything else."""
        for name, value in metrics.items():
            if name in RESERVED:
                raise ValueError(f"run.log: {name!r} is a fixed key of metrics.json (see run.parity, run.finish, ...)")
            self.record[name] = _number(name, value)
        self._flush()

    def detail(self, **values) -> None:
        """Record detail the engine keeps but never reads as a figure (text, lists, mappings)."""
        for name, value in values.items():
            if name in RESERVED or isinstance(value, (bool, int, float)):
                raise ValueError(f"run.detail: {name}={value!r}: numbers go through run.log, fixed keys their own call")
            self.record[name] = value
        self._flush()

    def parity(self, ok: bool, detail: str | None = None) -> None:
        """The numerics check of the candidate against a reference; a failure makes any verdict invalid."""
        self.record["parity"] = "pass" if ok else "fail"
        if detail is not None:
            self.record["parity_detail"] = " ".join(str(detail).split())
        self._flush()

    def op_digests(self, candidate: str, frontier: str) -> None:
        """Hashes of the ops one step of candidate and frontier dispatched (equal: the change never fired)."""
        for name, value in (("candidate", candidate), ("frontier", frontier)):
            if not isinstance(value, str) or not _DIGEST_RE.fullmatch(value):
                raise ValueError(f"run.op_digests: {name}={value!r} is not 8-64 lower-case hex digits")
        self.record.update(op_digest=candidate, frontier_op_digest=frontier)
        self._flush()

    def artifact(self, kind: str, path) -> str:
        """Declare a file of the run (``profile``, ``hlo``, ...): one outside ``$ARTIFACT_DIR`` is
        copied in as ``<kind><suffix>``; returns its path relative to the artifact dir."""
        if not _KIND_RE.fullmatch(kind):
            raise ValueError(f"run.artifact: kind {kind!r} is not a lower-case word")
        source = Path(path)
        if not source.is_file():
            raise FileNotFoundError(f"run.artifact({kind!r}): {source} is not a file")
        rel = source.name
        if self.artifact_dir:
            inside = not _is_url(self.artifact_dir) and _within(source, Path(self.artifact_dir))
            if inside:
                rel = source.resolve().relative_to(Path(self.artifact_dir).resolve()).as_posix()
            else:
                rel = f"{kind}{source.suffix}"
                target = f"{self.artifact_dir.rstrip('/')}/{rel}"
                if _is_url(target):
                    _write(target, source.read_bytes())
                else:
                    Path(target).parent.mkdir(parents=True, exist_ok=True)
                    shutil.copyfile(source, target)
        self.record.setdefault("artifacts", {})[kind] = rel
        self._flush()
        return rel

    def finish(self, exit_code: int | None = None, error: str | None = None) -> None:
        """The last write: when the run ended, and (optionally) its own exit code and error line."""
        if exit_code is not None:
            self.record["exit_code"] = int(exit_code)
        if error:
            self.record["error"] = " ".join(str(error).split())
        self.record["finished"] = _now()
        self._flush()

    def _flush(self) -> None:
        if self.metrics_path:
            _write(self.metrics_path, (json.dumps(self.record, indent=2, sort_keys=True) + "\n").encode())


def _within(path: Path, folder: Path) -> bool:
    try:
        path.resolve().relative_to(folder.resolve())
    except ValueError:
        return False
    return True


def _now() -> str:
    return _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


_current: Run | None = None


def current() -> Run:
    """The run of this process, bound to its environment at the first call."""
    global _current
    if _current is None:
        _current = Run()
    return _current


def config() -> dict:
    return current().config()


def frontier() -> dict:
    return current().frontier()


def steps(full: int) -> int:
    return current().steps(full)


def smoke() -> bool:
    """True in a smoke run (``WIKI_SMOKE=1``, `wiki lane check`): a few steps are enough."""
    return current().smoke


def progress(step: int | None = None, **figures) -> None:
    current().progress(step, **figures)


def log(**metrics) -> None:
    current().log(**metrics)


def detail(**values) -> None:
    current().detail(**values)


def parity(ok: bool, detail: str | None = None) -> None:
    current().parity(ok, detail)


def op_digests(candidate: str, frontier: str) -> None:
    current().op_digests(candidate, frontier)


def artifact(kind: str, path) -> str:
    return current().artifact(kind, path)


def finish(exit_code: int | None = None, error: str | None = None) -> None:
    current().finish(exit_code, error)
