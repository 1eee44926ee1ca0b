"""Claude Code hooks for a wiki: ``lint`` (PostToolUse on Edit/Write) and ``stop`` (Stop).

Each reads the hook's JSON on stdin and answers the way Claude Code reads hooks: nothing
(exit 0) to let the agent go on, or ``{"decision": "block", "reason": ...}`` to show the
agent what it must do first. Only the standard library; ``wiki`` must be on PATH.
"""
from __future__ import annotations  # runs on an older python3 too

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

WIKI_DIRS = ("wiki", "memory", ".env")  # what `wiki lint` lints


def wiki(root: Path, *args: str) -> subprocess.CompletedProcess | None:
    exe = shutil.which("wiki")
    if exe is None:
        print("wiki hooks: no `wiki` on PATH; nothing checked", file=sys.stderr)
        return None
    return subprocess.run([exe, *args, "--root", str(root)], cwd=root, capture_output=True, text=True, timeout=50)


def lint(event: dict, root: Path) -> dict | None:
    """Block (show the findings) when the edited file is a wiki page that `wiki lint` finds fault with."""
    given = (event.get("tool_input") or {}).get("file_path")
    if not given:
        return None
    path = (root / given).resolve()
    rel = path.relative_to(root) if root in path.parents else None
    if rel is None or path.suffix != ".md" or rel.parts[0] not in WIKI_DIRS:
        return None
    done = wiki(root, "lint", str(rel))
    if done is None or done.returncode == 0:
        return None
    return {"decision": "block", "reason": f"`wiki lint {rel}` (exit {done.returncode}):\n"
            f"{(done.stdout + done.stderr).strip()[-3000:]}\nFix the page (or run the writer command that owns it)."}


def stop(event: dict, root: Path) -> dict | None:
    """Block the end of the turn while `wiki loop status --json` says the lane session is running."""
    done = wiki(root, "loop", "status", "--json")
    if done is None or done.returncode != 0:
        return None  # no lane session here (a relay run, a kernel family or nothing): nothing to keep alive
    status = json.loads(done.stdout)
    if status.get("state") != "running":
        return None
    owed = "; ".join(f"{n['kind']}: {n['command']}" for n in status.get("needs", [])) or "nothing owed now"
    return {"decision": "block", "reason": (
        f"The lane session on {status.get('lane')} is running. Run `wiki step --json`, give what its `needs` ask "
        f"({owed}), then wait next_wake_s ({status.get('next_wake_s')} s) and wake again. To end: write the closing "
        "retrospective, `wiki watch --closing --once`, `wiki loop stop --yes`; or `wiki loop stop --pause`.")}


def main() -> int:
    event = json.loads(sys.stdin.read() or "{}")
    root = Path(os.environ.get("CLAUDE_PROJECT_DIR") or event.get("cwd") or ".").resolve()
    reply = {"lint": lint, "stop": stop}[sys.argv[1]](event, root)
    if reply:
        print(json.dumps(reply))
    return 0


if __name__ == "__main__":
    sys.exit(main())
