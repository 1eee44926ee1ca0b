"""Journal what the lane wake records of a run, for tests of `wiki exp file`.

`wiki exp file` files from the engine's record of a run (the lane journal's ``dispatch``
and ``complete`` records, and the session's measured A/A ``band``), never from figures an
agent passes. Tests of the writers that do not drive a whole wake write those records the
way the wake writes them, and commit them, so the writer reads exactly what a wake left.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

from wikiengine.model.journal import append_record, parse_journal

AT = "2026-06-13T10:00:00Z"


def record_run(root: Path, lane_dir: str, vid: str, *, variant: str, metrics: dict | None = None, exit_code: int | None = 0,
               parity: str | None = None, killed: str | None = None, frontier: str | None = None,
               band: float | None = 0.3, band_n: int = 3, artifacts: dict | None = None, complete: bool = True,
               commit: bool = True) -> None:
    """Append (and commit) a session start when there is none, the session's A/A band for
    ``variant``/``frontier`` (``band=None``: none measured), the run's dispatch, a kill
    when ``killed``, and its completion (unless ``complete`` is false: in flight)."""
    path = root / lane_dir / ".journal.jsonl"
    text = path.read_text(encoding="utf-8") if path.is_file() else ""
    records = parse_journal(text)
    sessions = [r["session"] for r in records if r.get("op") == "start"]
    if not sessions:
        text = append_record(text, {"op": "start", "session": 1, "tracks": [], "backend": "local", "at": AT})
    session = sessions[-1] if sessions else 1
    has_band = any(r.get("op") == "band" and r.get("session") == session and r.get("variant") == variant
                   and (r.get("frontier") or None) == frontier for r in records)
    if band is not None and not has_band:
        text = append_record(text, {"op": "band", "session": session, "variant": variant, "frontier": frontier,
                                    "round": 1, "band": band, "mad": band / 2, "n": band_n,
                                    "samples": [band / 2] * band_n, "co_measured": False, "at": AT})
    workload = f"demo-run-{vid}"
    text = append_record(text, {"op": "dispatch", "vid": vid, "track": 1, "workload": workload, "argv": ["true"],
                                "frontier": frontier, "at": AT})
    if killed:
        text = append_record(text, {"op": "kill", "vid": vid, "workload": workload, "reason": killed, "at": AT})
    if complete:
        state = "succeeded" if exit_code == 0 and not killed else "failed"
        text = append_record(text, {"op": "complete", "vid": vid, "workload": workload, "state": state,
                                    "exit_code": exit_code, "metrics": metrics or {}, "parity": parity,
                                    "artifacts": artifacts or {}, "at": AT})
    path.write_text(text, encoding="utf-8")
    if commit:
        subprocess.run(["git", "add", str(path)], cwd=root, check=True, capture_output=True)
        subprocess.run(["git", "commit", "-qm", f"exp({vid}): the wake's records of its run"], cwd=root, check=True,
                       capture_output=True)


def seed_band(root: Path, lane_dir: str, *, variant: str, frontier: str | None, band: float = 0.3, n: int = 3) -> None:
    """Journal (and commit) a measured A/A band for the newest session, as if its A/A runs
    had run: for tests of the dispatch protocol, which start right at the dispatch."""
    path = root / lane_dir / ".journal.jsonl"
    text = path.read_text(encoding="utf-8")
    session = [r["session"] for r in parse_journal(text) if r.get("op") == "start"][-1]
    text = append_record(text, {"op": "band", "session": session, "variant": variant, "frontier": frontier,
                                "round": 1, "band": band, "mad": band / 2, "n": n, "samples": [band / 2] * n,
                                "co_measured": False, "at": AT})
    path.write_text(text, encoding="utf-8")
    subprocess.run(["git", "add", str(path)], cwd=root, check=True, capture_output=True)
    subprocess.run(["git", "commit", "-qm", "band: seeded A/A band"], cwd=root, check=True, capture_output=True)
