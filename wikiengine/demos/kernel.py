"""`wiki demo kernel`: a kernel family run end to end on the CPU by a scripted author.

The family is a layer norm whose pinned reference is the textbook composition of torch
ops (mean, centred square, mean, rsqrt, scale, shift: several passes over memory). The
class page lists three verified levers. The scripted author, through `wiki kernel`:

1. starts the family on local chip 0 (bootstrap: binding, family page, integration branch;
   ``memory/STATE.md`` points at the session) and arms the watcher (`wiki kernel watch
   --once` after each verdict, as a timer would); `wiki step` verifies each experiment's
   newest candidate and, after each verdict, reports K9 (the stall until the next stub);
2. v001 ``single-pass-fusion``: cand1 uses the unbiased variance (a parity failure,
   caught by the quick measurement), cand2 the fused native pass (a real win); the full
   receipt says PASS above the bar: filed supported, Current best moves;
3. v002 ``dispatch-fastpath``: a candidate whose op only runs on a GPU, so on this chip
   it silently falls back (the firing audit says silent no-op): supported is requested,
   the FAIL receipt caps it at inconclusive;
4. the close is refused (the lever ``row-chunking`` is untried and still an open lead);
   the author pauses (a retrospective with the resume action) and starts session 2;
5. v003 ``row-chunking``: correct but slower, a speedup below 1.0x: refuted;
6. the close is earned: the closing retrospective, ``.stop-authorized`` and the stop marker.

The wiki it leaves lints clean; the git log shows every commit, the candidate branches
included.
"""

from __future__ import annotations

import subprocess
import textwrap
import time
from pathlib import Path

from wikiengine.demos import demo_git

FAMILY = "layernorm"
OP_POINT = "rows512x1024"
CLASS_PAGE = "wiki/concepts/kernel-class-normalization.md"

REFERENCE = '''\
"""Pinned reference: layer norm as a composition of torch ops."""
import torch

EPS = 1e-5
OP_POINTS = {"rows512x1024": {"rows": 512, "cols": 1024}}


def make_inputs(params, generator):
    rows, cols = params["rows"], params["cols"]
    x = torch.randn(rows, cols, generator=generator) * 3.0 + 0.5
    weight = 1.0 + 0.1 * torch.randn(cols, generator=generator)
    bias = 0.1 * torch.randn(cols, generator=generator)
    return x, weight, bias


def reference(x, weight, bias):
    mean = x.mean(-1, keepdim=True)
    var = ((x - mean) ** 2).mean(-1, keepdim=True)
    return (x - mean) * torch.rsqrt(var + EPS) * weight + bias
'''

_CANDIDATE_HEAD = '''\
import torch

EPS = 1e-5
OP = "kcand::{name}"


@torch.library.custom_op(OP, mutates_args=())
def _{name}(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor) -> torch.Tensor:
{body}
'''

CANDIDATES = {
    "unbiased": ("layernorm_unbiased", "    var, mean = torch.var_mean(x, -1, keepdim=True, correction=1)\n"
                                      "    return (x - mean) * torch.rsqrt(var + EPS) * weight + bias\n",
                 "def kernel(x, weight, bias):\n    return _layernorm_unbiased(x, weight, bias)\n"),
    "fused": ("layernorm_fused", "    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, EPS)\n",
              "def kernel(x, weight, bias):\n    return _layernorm_fused(x, weight, bias)\n"),
    "gpu-only": ("layernorm_fastpath", "    return torch.nn.functional.layer_norm(x, (x.shape[-1],), weight, bias, EPS)\n",
                 "def kernel(x, weight, bias):\n    if x.is_cuda:  # the fast path only exists on a GPU: on this chip it never runs\n"
                 "        return _layernorm_fastpath(x, weight, bias)\n"
                 "    mean = x.mean(-1, keepdim=True)\n    var = ((x - mean) ** 2).mean(-1, keepdim=True)\n"
                 "    return (x - mean) * torch.rsqrt(var + EPS) * weight + bias\n"),
    "chunked": ("layernorm_chunked",
                "    out = torch.empty_like(x)\n    for start in range(0, x.shape[0], 4):\n"
                "        rows = x[start:start + 4]\n        mean = rows.mean(-1, keepdim=True)\n"
                "        var = ((rows - mean) ** 2).mean(-1, keepdim=True)\n"
                "        out[start:start + 4] = (rows - mean) * torch.rsqrt(var + EPS) * weight + bias\n    return out\n",
                "def kernel(x, weight, bias):\n    return _layernorm_chunked(x, weight, bias)\n"),
}


def candidate_source(key: str) -> str:
    """The text of the demo's candidate ``key`` (one of :data:`CANDIDATES`): a custom op and its ``kernel``."""
    name, body, tail = CANDIDATES[key]
    return _CANDIDATE_HEAD.format(name=name, body=body) + "\n\n" + tail


CLASS_PAGE_TEXT = """\
---
title: Kernel class — normalization
type: concept
tags: [kernels]
created: 2026-06-01
updated: 2026-06-01
---
# Kernel class: normalization

Row-wise reductions followed by an elementwise affine map: memory-bound.

## Levers (verified)

- **single-pass-fusion**: compute the statistics and the affine map in one pass over the row.
- **dispatch-fastpath**: route the op to a specialised path for the target device.
- **row-chunking**: process rows in blocks that stay in cache.
"""

ROOT_PROGRAM = """\
# Kernel experiments program (root)

## Quick start

1. Derive the family slug from the kernel path (`wiki kernel start PATH`).
2. Bootstrap the family binding if it is new.

## The kernel loop

K0 baseline, K3 stub, K4 candidates, K6 verify, K7 verdict, K8 family page, K9 next stub or the stop chain.
"""

PROPOSALS = {
    "single-pass-fusion": (
        "one fused pass over each row beats the reference's five passes by more than the bar",
        "compute mean and variance and apply the affine map in a single native kernel over each row",
        "p50 below the reference's by more than 1.05x at parity, with the candidate's op in the dispatch trace",
        "a speedup at or below 1.05x, a parity failure, or the op missing from the trace"),
    "dispatch-fastpath": (
        "a device-specialised fast path beats the composition",
        "dispatch the op to a specialised implementation chosen by the device of the input",
        "the fast-path op in the dispatch trace and a p50 below the reference's",
        "the fast-path op absent from the trace on the target chip, or no speedup"),
    "row-chunking": (
        "processing rows in blocks of four keeps the working set in cache and beats the reference",
        "split the rows into blocks of four and normalise each block with the reference's composition",
        "p50 below the reference's at parity",
        "a p50 at or above the reference's"),
}


def scaffold(root: Path) -> Path:
    """A git repository with the kernel root program and the class page; the authoring folder."""
    (root / "wiki" / "kernel_experiments").mkdir(parents=True)
    (root / "wiki" / "concepts").mkdir(parents=True)
    (root / "wiki" / "kernel_experiments" / "program.md").write_text(ROOT_PROGRAM)
    (root / CLASS_PAGE).write_text(CLASS_PAGE_TEXT)
    (root / ".gitignore").write_text(".wiki/\n.wiki_cache/\n")
    demo_git(root, "init", "--quiet")
    demo_git(root, "config", "user.name", "wiki demo")
    demo_git(root, "config", "user.email", "demo@wikiengine.invalid")
    demo_git(root, "add", "-A")
    demo_git(root, "commit", "--quiet", "-m", "demo: the kernel root program and the normalization class page")
    authoring = root / ".wiki" / "authoring"
    authoring.mkdir(parents=True)
    (authoring / "reference.py").write_text(REFERENCE)
    for key in CANDIDATES:
        (authoring / f"{key}.py").write_text(candidate_source(key))
    for lever, (hyp, mech, signal, falsify) in PROPOSALS.items():
        (authoring / f"{lever}.md").write_text(
            f"**Hypothesis**: {hyp}.\n\n**Mechanism**: {mech}.\n\n**Predicted signal**: {signal}.\n\n"
            f"**Falsification criterion**: {falsify}.\n")
    return authoring


def _wiki(root: Path, *args: str, expect: int = 0) -> dict | str:
    """One `wiki` call, as an agent makes it (``--json``, its own process): its result, or its refusal."""
    import json
    import sys

    done = subprocess.run([sys.executable, "-m", "wikiengine", *args, "--root", str(root), "--json"],
                          capture_output=True, text=True, check=False)
    if done.returncode != expect:
        from wikiengine.core.errors import WikiError

        raise WikiError(f"wiki {' '.join(args[:3])} exited {done.returncode}, expected {expect}: {done.stderr.strip()}")
    out = json.loads(done.stdout) if done.stdout.strip() else None
    if out is None or (done.returncode and isinstance(out, dict) and set(out) == {"error", "exit_status"}):
        return done.stderr.strip()  # a refusal: its line(s), as the agent reads them
    return out


def _kernel(root: Path, say, *args: str, expect: int = 0) -> dict | str:
    """One `wiki kernel` call (``--json``): its result, or its refusal."""
    return _wiki(root, "kernel", *args, expect=expect)


def _step(root: Path, say) -> dict:
    """One `wiki step` wake of the kernel session memory/STATE.md names: what it did and what is owed."""
    wake = _wiki(root, "step")
    for line in wake["actions"]:
        say(f"step     {line}")
    for need in wake["needs"]:
        cap = need["inputs"].get("cap")
        say(f"step     owed: {need['kind']}" + (f" (strongest allowed: {cap['verdict']})" if cap else "")
            + f": {need['command']}")
    for finding in wake["findings"]:
        say(f"step     ! {finding}")
    return wake


def _stub(root, say, lever, slug, plan):
    authoring = root / ".wiki" / "authoring"
    result = _kernel(root, say, "stub", FAMILY, "--slug", slug, "--proposal", str(authoring / f"{lever}.md"),
                     "--op-point", OP_POINT, "--lever", lever, "--lever-queue", lever,
                     "--intervention-class", "fusion" if lever != "dispatch-fastpath" else "dispatch",
                     "--category", "memory-bound", *[a for p in plan for a in ("--plan", p)])
    say(f"stub     {result['vid']} {slug} on {result['variant']} (bar {result['speedup_bar']:g}x)")
    return result["vid"]


def _cand(root, say, number, note, key):
    result = _kernel(root, say, "cand", FAMILY, str(number), "--note", note,
                     "--source", str(root / ".wiki" / "authoring" / f"{key}.py"))
    say(f"cand     {result['subject']}  [{result['branch']}]")


def _watch(root, say, expect: int = 0) -> None:
    """One firing of the family watcher (the scheduler would repeat it)."""
    audit = _kernel(root, say, "watch", FAMILY, "--once", expect=expect)
    say("watch    " + ("clean: " + audit["all_clear"] if audit.get("clean") else
                        ", ".join(f["check"] for f in audit["findings"]))
        + "".join(f" ({note})" for note in audit.get("notes", [])))


def _verify_and_file(root, say, verdict, *leads):
    """K6 by `wiki step` (the wake runs the verifier), K7/K8 by the author, then the wake that checks K9."""
    wake = _step(root, say)
    if not any(d["decision"] == "verify" for d in wake["decisions"]):
        from wikiengine.core.errors import WikiError

        raise WikiError(f"wiki step did not verify: {wake['decisions']}")
    filed = _kernel(root, say, "file", FAMILY, "--verdict", verdict, *[a for lead in leads for a in ("--lead", lead)])
    say(f"file     {filed['vid']}: asked {verdict}, filed {filed['verdict']}"
        + "".join(f"\n           {c}" for c in filed["capped"]))
    _watch(root, say)
    _step(root, say)


def run_demo(root: Path, say=print) -> dict:
    """The scripted run in ``root`` (a new directory); the facts a test checks."""
    began = time.monotonic()
    authoring = scaffold(root)
    started = _kernel(root, say, "start", "bench_layernorm.py", "--chip", "0", "--yes", "--reference",
                      str(authoring / "reference.py"), "--op-point", OP_POINT, "--class-page", CLASS_PAGE)
    say(f"start    family {started['family']} session {started['session']} on {started['run_target']}"
        f"{' (bootstrapped)' if started['bootstrapped'] else ''}")
    _watch(root, say)  # armed once: the first audit is full (no cursor yet), a note and no finding
    _stub(root, say, "single-pass-fusion", "fused-layernorm", ["unbiased variance in one var_mean call",
                                                               "the native fused layer norm pass"])
    _cand(root, say, 1, "var_mean in one call", "unbiased")
    _cand(root, say, 2, "native fused pass", "fused")
    _verify_and_file(root, say, "supported", "row-chunking=blocks of rows that stay in cache may beat one long pass")
    _stub(root, say, "dispatch-fastpath", "device-fastpath", ["a device-specialised fast path"])
    _cand(root, say, 1, "device fast path", "gpu-only")
    _verify_and_file(root, say, "supported")
    refused = _kernel(root, say, "close", FAMILY, expect=3)
    say("close    refused:\n           " + "\n           ".join(refused.splitlines()[1:]))
    paused = _kernel(root, say, "close", FAMILY, "--pause")
    say(f"pause    {paused['retrospective']}; resume: {paused['resume_action']}")
    again = _kernel(root, say, "start", FAMILY, "--chip", "0", "--yes")
    say(f"start    session {again['session']} on {again['run_target']}")
    _stub(root, say, "row-chunking", "chunked-rows", ["blocks of four rows"])
    _cand(root, say, 1, "blocks of four rows", "chunked")
    _verify_and_file(root, say, "supported")
    closed = _kernel(root, say, "close", FAMILY)
    say(f"close    earned: {closed['final_audit']}\n" + textwrap.indent(closed["evidence"] + "\n" + closed["levers"], "           "))
    from wikiengine.lint.runner import lint

    findings = [f.render() for f in lint(root, base=None, jobs=1, use_cache=False).findings]
    branches = demo_git(root, "branch", "--list", "kernel/*", "--format=%(refname:short)").split()
    say(f"lint     {'clean' if not findings else f'{len(findings)} finding(s)'}; branches {', '.join(branches)}; "
        f"{time.monotonic() - began:.0f}s")
    for finding in findings:
        say("  " + finding)
    return {"findings": findings, "branches": branches, "refused": refused, "closed": closed,
            "seconds": time.monotonic() - began}


def run_command(directory: Path | None) -> int:
    """`wiki demo kernel [DIR]`: the scripted run in DIR (default: a new temporary directory)."""
    import tempfile

    from wikiengine.core.errors import WikiError

    root = (directory or Path(tempfile.mkdtemp(prefix="wiki-demo-kernel-"))).resolve()
    if root.exists() and any(root.iterdir()):
        raise WikiError("the demo directory must be empty or new", root)
    root.mkdir(parents=True, exist_ok=True)
    print(f"wiki demo kernel: a layer-norm kernel family on the CPU in {root}")
    result = run_demo(root, say=lambda line: print(line, flush=True))
    print("\n==== git log --oneline --all ====")
    print(demo_git(root, "log", "--oneline", "--all"), end="")
    return 0 if not result["findings"] else 1
