"""An agent's wake loop in a page: `wiki step --json`, each need to an LLM, the command it returns run.

Replace `ask_llm` with your model call, then, from the wiki's root: `python harness.py [--once]`.
The engine does everything deterministic; the LLM gives only what a need asks (a hypothesis, a verdict)."""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
import time
from pathlib import Path


def ask_llm(need: dict) -> dict | None:
    """Your LLM call. ``need``: one entry of ``needs`` (``kind``, ``inputs``: the evidence, ``command``:
    the command that gives it, with SLUG/KEY/FILE/V/TEXT to fill). Return ``{"command": "wiki ...",
    "files": {"proposal.md": "..."}}`` (files are written first), or None to leave it owed."""
    raise NotImplementedError("replace ask_llm with your model call (see its docstring)")


def run(argv: list[str], root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(argv, cwd=root, capture_output=True, text=True, timeout=3600)


def answer(need: dict, reply: dict, root: Path) -> str:
    """Write the reply's files (inside the wiki only) and run its command (a `wiki` command only)."""
    argv = shlex.split(reply["command"])
    files = {root / rel: text for rel, text in (reply.get("files") or {}).items()}
    if argv[:1] != ["wiki"] or any(root.resolve() not in p.resolve().parents for p in files):
        return f"refused {reply!r}: only `wiki` commands and files inside {root}"
    for path, text in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    done = run(argv, root)
    return f"{need['kind']}: {reply['command']} -> exit {done.returncode}: {(done.stdout + done.stderr).strip()[-300:]}"


def wake(root: Path, llm=ask_llm) -> dict:
    """One wake: what the engine did, then each need handed to the LLM and its command run."""
    done = run(["wiki", "step", "--json"], root)
    result = json.loads(done.stdout) if done.stdout.strip() else {"exit_code": done.returncode, "needs": []}
    print(f"wake: {result.get('decision')} {result.get('actions', [])} {done.stderr.strip()}", flush=True)
    for need in result.get("needs", []):
        reply = llm(need)
        print(answer(need, reply, root) if reply else f"{need['kind']}: left owed", flush=True)
    return result


def main(root: Path = Path("."), llm=ask_llm, once: bool = False) -> int:
    while True:
        result = wake(root, llm)
        if once or result.get("state") not in ("running", "parked"):  # paused, stopped, blocked, complete, an error
            return result.get("exit_code", 0)
        time.sleep(result.get("next_wake_s") or 600)


if __name__ == "__main__":
    sys.exit(main(once="--once" in sys.argv[1:]))
