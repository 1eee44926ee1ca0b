"""The embedded kernel verifier (seed 003, K6), run in a fresh process on the CPU.

``python -m wikiengine.step.kernel.verify --reference REF.py --candidate CAND.py ...`` loads
the family's pinned reference and one candidate and checks, in this order:

1. a non-degenerate probe: seeded inputs of the op-point, every floating input finite
   with spread (no constant tensor), and an oracle output with spread;
2. parity: the candidate on float32 inputs against the float64 oracle (the reference
   run on float64 copies of the same inputs), within the binding's ``atol``/``rtol``;
3. the firing audit: a :class:`~torch.utils._python_dispatch.TorchDispatchMode` trace of
   one candidate call must contain the candidate's declared op (``OP = "ns::name"``, a
   ``torch.library.custom_op``): a candidate that falls back to other code is a silent
   no-op, however fast and correct it looks;
4. timing: reference and candidate co-measured in this process, interleaved (the order
   alternates every repetition), one thread; the p50 of each and their ratio.

The measured part names the sha256 of the three files it loaded (``sources``: reference,
candidate and this verifier), so a run on a cluster pod proves which bytes it measured.
``--device-token`` prints only the hardware token (the device query of ``wiki kernel
start`` and ``stub``). The receipt (:mod:`wikiengine.model.receipt`) says PASS when the probe, parity and the
firing audit pass; the speedup is measured, and judged by ``wiki kernel file`` against
the page's pre-registered bar. Headroom leads: the non-trivial aten ops a firing
candidate still dispatches outside its own op.

Reference module: ``OP_POINTS`` (name -> shape parameters), ``make_inputs(params,
generator)`` (float32 tensors) and ``reference(*inputs)``. Candidate module: ``OP`` and
``kernel(*inputs)``. ``kgate`` (the TPU verifier) is not installable here; where it is,
it replaces this module.
"""

from __future__ import annotations

import argparse
import datetime as dt
import hashlib
import importlib.util
import json
import statistics
import sys
import time
from pathlib import Path

VERIFIER = "kernel-verifier (embedded, cpu)"
REPS = {"quick": 15, "full": 61}
WARMUP = 3
_TRIVIAL_OPS = ("view", "empty", "detach", "_to_copy", "copy_", "alias", "expand", "unsqueeze", "squeeze",
                "reshape", "contiguous", "as_strided", "clone", "lift_fresh", "_unsafe_view", "slice", "select")


def device_token() -> str:
    """The hardware token of the chip this process runs on, from a device query: a TPU's
    ``device_kind`` through jax when it is installed, else the CPU's vector capability."""
    try:
        import jax  # noqa: F401 - only where a TPU stack is installed

        kind = jax.devices()[0].device_kind
        return "-".join(kind.lower().replace("tpu", "").split()) or kind.lower()
    except Exception:  # noqa: BLE001 - no jax, or no accelerator: the CPU answers
        import torch

        return "cpu-" + torch.backends.cpu.get_cpu_capability().lower()


def verifier_args(reference: str, candidate: str, op_point: str, mode: str, atol: float, rtol: float) -> list[str]:
    """This module's command-line arguments for one measurement (locally and on a pod)."""
    return ["--reference", reference, "--candidate", candidate, "--op-point", op_point, "--mode", mode,
            "--atol", str(atol), "--rtol", str(rtol)]


def sources(reference_path: Path, candidate_path: Path) -> dict:
    """The sha256 of the bytes measured: reference, candidate and this verifier."""
    def digest(path: Path) -> str:
        return hashlib.sha256(Path(path).read_bytes()).hexdigest()

    return {"reference": digest(reference_path), "candidate": digest(candidate_path), "verifier": digest(Path(__file__))}


def _load(path: Path, name: str):
    spec = importlib.util.spec_from_file_location(name, path)
    if spec is None or spec.loader is None:
        raise ValueError(f"{path}: not a Python module")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _probe(inputs, oracle) -> list[str]:
    import torch

    problems = []
    for index, tensor in enumerate(inputs):
        if not isinstance(tensor, torch.Tensor) or not tensor.is_floating_point():
            continue
        if not torch.isfinite(tensor).all():
            problems.append(f"input {index} is not finite")
        elif tensor.numel() < 2 or float(tensor.double().std()) == 0.0:
            problems.append(f"input {index} is constant: a degenerate probe")
    if float(oracle.std()) == 0.0:
        problems.append("the oracle output is constant: a degenerate probe")
    return problems


class _OpTrace:
    def __init__(self):
        from torch.utils._python_dispatch import TorchDispatchMode

        trace = self

        class Mode(TorchDispatchMode):
            def __torch_dispatch__(self, func, types, args=(), kwargs=None):
                trace.ops.append(str(func))
                return func(*args, **(kwargs or {}))

        _defer_dynamo(Mode.__dict__["__torch_dispatch__"])
        self.ops: list[str] = []
        self.mode = Mode()


def _dynamo_guard_when_loaded(fn):
    """``fn`` behind torch's ``torch._dynamo.disable`` only once dynamo is loaded.

    A custom op's kernel is wrapped in ``torch._disable_dynamo``, which imports
    ``torch._dynamo`` (about 1.4 s of CPU, as long again as torch) at the op's first call, only
    to keep a compiling frame out of the kernel. Until something loads dynamo no frame can be
    compiling, so the kernel runs as it is; after that, behind the guard as before."""
    guarded = None

    def call(*args, **kwargs):
        nonlocal guarded
        if "torch._dynamo" not in sys.modules:
            return fn(*args, **kwargs)
        if guarded is None:
            import torch._dynamo

            guarded = torch._dynamo.disable(fn, wrapping=False)
        return guarded(*args, **kwargs)

    return call


def _defer_dynamo(wrapper) -> None:
    """Give a function wrapped in ``torch._disable_dynamo`` :func:`_dynamo_guard_when_loaded` (the
    guard that wrapper caches on the function it wraps); another layout is left as it is (it
    imports dynamo, as it did)."""
    fn = getattr(wrapper, "__wrapped__", None)
    if fn is not None and getattr(fn, "__dynamo_disable", None) is None:
        setattr(fn, "__dynamo_disable", _dynamo_guard_when_loaded(fn))


def _defer_dynamo_in_custom_ops() -> None:
    """:func:`_defer_dynamo` for the kernel of every custom op defined so far."""
    try:
        from torch._library.custom_ops import OPDEFS
    except ImportError:
        return
    for opdef in list(OPDEFS.values()):
        for wrapper in getattr(opdef, "_backend_fns", {}).values():
            _defer_dynamo(wrapper)


def firing_audit(candidate, inputs) -> dict:
    op = str(getattr(candidate, "OP", "") or "")
    trace = _OpTrace()
    with trace.mode:
        candidate.kernel(*inputs)
    wanted = op.replace("::", ".")
    fired = bool(wanted) and any(o == wanted or o.startswith(wanted + ".") for o in trace.ops)
    outside = sorted({o for o in trace.ops if not (wanted and o.startswith(wanted))
                      and not any(t in o.split(".", 1)[-1] for t in _TRIVIAL_OPS)})
    return {"pass": fired, "op": op or None, "ops_seen": sorted(set(trace.ops)), "outside_ops": outside,
            "audit": "confirmed" if fired else "silent no-op"}


def _p50_interleaved(reference, candidate, inputs, reps: int) -> tuple[float, float]:
    ref_times, cand_times = [], []
    for _ in range(WARMUP):
        reference(*inputs)
        candidate(*inputs)
    for rep in range(reps):
        order = ((reference, ref_times), (candidate, cand_times))
        for fn, times in (order if rep % 2 == 0 else order[::-1]):
            start = time.perf_counter_ns()
            fn(*inputs)
            times.append((time.perf_counter_ns() - start) / 1e6)
    return statistics.median(ref_times), statistics.median(cand_times)


def verify(reference_path: Path, candidate_path: Path, op_point: str, *, mode: str, atol: float, rtol: float,
           seed: int = 20260601) -> dict:
    """Measure one candidate; the receipt's measured part (no identity fields)."""
    import torch

    torch.set_num_threads(1)
    reference_mod = _load(reference_path, "kernel_reference")
    candidate_mod = _load(candidate_path, "kernel_candidate")
    _defer_dynamo_in_custom_ops()
    params = reference_mod.OP_POINTS[op_point]
    generator = torch.Generator().manual_seed(seed)
    inputs = tuple(reference_mod.make_inputs(params, generator))
    oracle = reference_mod.reference(*(t.double() if t.is_floating_point() else t for t in inputs))
    reasons = _probe(inputs, oracle)
    probe = {"pass": not reasons, "seed": seed, "shapes": [list(t.shape) for t in inputs],
             "oracle_std": float(oracle.std())}
    out = candidate_mod.kernel(*inputs).double()
    if out.shape != oracle.shape:
        parity = {"pass": False, "why": f"shape {list(out.shape)} is not the oracle's {list(oracle.shape)}"}
    else:
        err = (out - oracle).abs()
        parity = {"pass": bool(torch.allclose(out, oracle, atol=atol, rtol=rtol)), "max_abs_err": float(err.max()),
                  "max_rel_err": float((err / oracle.abs().clamp_min(atol)).max()), "atol": atol, "rtol": rtol,
                  "oracle": "float64 reference"}
    if not parity["pass"]:
        reasons.append("parity against the float64 oracle failed")
    firing = firing_audit(candidate_mod, inputs)
    if not firing["pass"]:
        reasons.append(f"firing audit: the candidate's op {firing['op'] or '(OP not declared)'} never ran: silent no-op")
    ref_p50, cand_p50 = _p50_interleaved(reference_mod.reference, candidate_mod.kernel, inputs, REPS[mode])
    timing = {"reps": REPS[mode], "interleaved": True, "threads": 1, "reference_p50_ms": ref_p50,
              "candidate_p50_ms": cand_p50, "speedup": ref_p50 / cand_p50 if cand_p50 > 0 else None}
    leads = [{"slug": "fuse-" + o.split(".")[1].replace("_", "-").strip("-"),
              "why": f"the candidate still dispatches {o} outside its kernel"} for o in firing["outside_ops"]
             ] if firing["pass"] else []
    return {"verdict": "PASS" if not reasons else "FAIL", "reasons": reasons, "probe": probe, "parity": parity,
            "firing": firing, "timing": timing, "leads": leads, "hardware": device_token(), "mode": mode,
            "verifier": VERIFIER, "sources": sources(reference_path, candidate_path),
            "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}


def _import_torch_for_good() -> None:
    """Import torch with the cycle collector paused, then leave what exists out of every later
    collection (``gc.freeze``): torch's 166,000 objects live as long as the process, and the
    collector's walks of them cost about 0.2 s. ``wikiengine.core.collector.collector_paused``
    does this for the engine's programs; this file runs alone on a pod, so it does it here."""
    import gc

    gc.disable()
    try:
        import torch  # noqa: F401 - loaded for verify()
    finally:
        gc.freeze()
        gc.enable()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m wikiengine.step.kernel.verify", description=__doc__.split("\n\n")[0])
    parser.add_argument("--device-token", action="store_true", help="print only this chip's hardware token")
    parser.add_argument("--reference", type=Path)
    parser.add_argument("--candidate", type=Path)
    parser.add_argument("--op-point")
    parser.add_argument("--mode", choices=sorted(REPS), default="full")
    parser.add_argument("--atol", type=float, default=1e-4)
    parser.add_argument("--rtol", type=float, default=1e-4)
    args = parser.parse_args(argv)
    if args.device_token:
        json.dump({"hardware": device_token()}, sys.stdout)
        return 0
    if not (args.reference and args.candidate and args.op_point):
        parser.error("--reference, --candidate and --op-point are required")
    if argv is None:  # this process's own run: torch imported as wikiengine/core/collector.py says
        _import_torch_for_good()
    try:
        result = verify(args.reference, args.candidate, args.op_point, mode=args.mode, atol=args.atol, rtol=args.rtol)
    except Exception as exc:  # noqa: BLE001 - the candidate's own failure is a FAIL, reported as data
        result = {"verdict": "FAIL", "reasons": [f"the candidate or reference raised {type(exc).__name__}: {exc}"[:300]],
                  "probe": {}, "parity": {"pass": False}, "firing": {"pass": False}, "timing": {}, "leads": [],
                  "hardware": device_token(), "mode": args.mode, "verifier": VERIFIER,
                  "sources": sources(args.reference, args.candidate),
                  "created": dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")}
    json.dump(result, sys.stdout)
    return 0


if __name__ == "__main__":
    status = main()
    # End without the interpreter's teardown (0.5 s of CPU once torch is loaded): the hooks run,
    # the answer is flushed. wikiengine.core.process_end does this for the engine's programs;
    # this file runs alone on a pod, so it says it here.
    import atexit
    import os
    import threading

    if threading.active_count() == 1:
        atexit._run_exitfuncs()
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        except (OSError, ValueError):  # output it cannot flush: the ordinary exit says so
            sys.exit(status)
        os._exit(status)
    sys.exit(status)
