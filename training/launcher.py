"""The session launcher: what a bootstrap fetches at its pinned revision and executes.

It runs only from :mod:`wikiengine.training.bootstrap` (which hashes these bytes first and passes
``BOOTSTRAP = {"repo", "rev", "session_args"}``). It exports the repository tree at
that same revision into a temporary directory, so that every module the session
imports is the pinned one, and runs ``python -m wikiengine.training.session`` from it (through
``torch.distributed.run`` with one process per GPU when there are several). In
``session_args`` the token ``{tree}`` stands for the exported tree (a config file pinned
in the repository: ``{tree}/training/runs/demo.json``). The exit code is the session's.
"""

import io
import os
import subprocess
import sys
import tarfile
import tempfile


def _git(*args):
    out = subprocess.run(["git", *args], capture_output=True)
    if out.returncode != 0:
        print(f"launcher: git {args[0]} failed: {out.stderr.decode(errors='replace').strip()[-200:]}", file=sys.stderr)
        raise SystemExit(3)
    return out.stdout


def export_tree(repo, rev, target):
    """Write the tree of commit ``rev`` of ``repo`` (a directory or a git URL) into ``target``."""
    if os.path.isdir(repo):
        archive = _git("-C", repo, "archive", "--format=tar", rev)
    else:
        with tempfile.TemporaryDirectory(prefix="launcher-git-") as scratch:
            _git("init", "--quiet", "--bare", scratch)
            _git("--git-dir", scratch, "fetch", "--quiet", "--depth", "1", repo, rev)
            archive = _git("--git-dir", scratch, "archive", "--format=tar", rev)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        try:
            tar.extractall(target, filter="data")
        except TypeError:  # Python without extraction filters (< 3.11.4): the archive is our pinned commit
            tar.extractall(target)


# Device nodes without one of which no GPU driver answers torch on Linux: NVIDIA's control
# device, ROCm's kernel driver, WSL2's GPU paravirtualization.
GPU_DRIVER_NODES = ("/dev/nvidiactl", "/dev/kfd", "/dev/dxg")


def gpu_count():
    """The GPUs torch sees here. On Linux without a GPU driver's device node it is 0 without
    asking: torch's import (about 1.3 s of CPU, in a process that only waits for the session)
    would say no more."""
    if sys.platform.startswith("linux") and not any(os.path.exists(node) for node in GPU_DRIVER_NODES):
        return 0
    try:
        import torch
    except ImportError:
        return 0
    return torch.cuda.device_count()


def session_command(tree, session_args):
    """The command that runs the session from ``tree``."""
    args = [a.replace("{tree}", tree) for a in session_args]
    gpus = gpu_count()
    if gpus > 1:
        return [sys.executable, "-m", "torch.distributed.run", "--standalone", f"--nproc-per-node={gpus}",
                "-m", "wikiengine.training.session", *args]
    return [sys.executable, "-m", "wikiengine.training.session", *args]


def launch(pinned):
    """Export the pinned tree, run the session from it, and remove the tree (on Kaggle too:
    nothing of a session is left in the temporary directory)."""
    with tempfile.TemporaryDirectory(prefix="session-tree-") as tree:
        export_tree(pinned["repo"], pinned["rev"], tree)
        env = dict(os.environ)
        env["PYTHONPATH"] = tree + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
        env["WIKI_SESSION_REV"] = pinned["rev"]
        return subprocess.run(session_command(tree, pinned["session_args"]), env=env).returncode


if __name__ == "__main__":
    if "BOOTSTRAP" not in globals():
        print("launcher: run me through training/bootstrap.py (it pins and hashes me)", file=sys.stderr)
        raise SystemExit(2)
    raise SystemExit(launch(BOOTSTRAP))  # noqa: F821 - injected by the bootstrap
