"""Verification receipts: the self-hashed JSON a kernel verifier writes (seed 003, K6).

A receipt holds what the verifier measured (parity against the float64 oracle, the
firing audit, the co-measured p50s) and its overall ``verdict`` (``PASS`` or ``FAIL``),
plus ``sha256``: the hex digest of the receipt's canonical JSON (sorted keys, no spaces)
without the ``sha256`` key. A receipt edited by hand, truncated or copied from another
experiment no longer validates.
"""

from __future__ import annotations

import hashlib
import json

SCHEMA = "wikiengine.kernel-receipt/1"
REQUIRED = {
    "schema": str, "family": str, "vid": str, "candidate": str, "commit": str, "mode": str, "variant": str,
    "verifier": str, "verdict": str, "parity": dict, "firing": dict, "timing": dict, "created": str,
}
VERDICTS = ("PASS", "FAIL")
MODES = ("quick", "full")


def _digest(data: dict) -> str:
    body = {k: v for k, v in data.items() if k != "sha256"}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def seal(data: dict) -> str:
    """The receipt's text: ``data`` with its ``sha256``, pretty-printed."""
    sealed = {**data, "schema": SCHEMA}
    sealed["sha256"] = _digest(sealed)
    return json.dumps(sealed, indent=2, sort_keys=True) + "\n"


def validate(text: str) -> tuple[dict | None, str | None]:
    """``(receipt, None)`` when ``text`` is a sealed receipt, else ``(None, why not)``."""
    try:
        data = json.loads(text)
    except ValueError as exc:
        return None, f"not JSON ({exc})"
    if not isinstance(data, dict):
        return None, "not a JSON object"
    if data.get("schema") != SCHEMA:
        return None, f"schema is {data.get('schema')!r}, not {SCHEMA!r}"
    for key, kind in REQUIRED.items():
        if not isinstance(data.get(key), kind):
            return None, f"{key!r} is missing or not a {kind.__name__}"
    if data["verdict"] not in VERDICTS:
        return None, f"verdict {data['verdict']!r} is not PASS or FAIL"
    if data["mode"] not in MODES:
        return None, f"mode {data['mode']!r} is not quick or full"
    if not isinstance(data.get("sha256"), str) or data["sha256"] != _digest(data):
        return None, "its sha256 does not match its content (edited, truncated or hand-written)"
    return data, None


def speedup(receipt: dict) -> float | None:
    value = receipt.get("timing", {}).get("speedup")
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None
