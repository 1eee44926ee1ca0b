"""Verification receipts: the self-hashed JSON a kernel verifier writes (seed 003, K6).

A receipt holds what the verifier measured (parity against the float64 oracle, the
firing audit, the co-measured p50s) and its overall ``verdict`` (``PASS`` or ``FAIL``),
plus ``sha256``: the hex digest of the receipt's canonical JSON (sorted keys, no spaces)
without the ``sha256`` and ``signature`` keys. A receipt edited by hand or truncated no
longer validates.

A plain digest is testimony: anyone can recompute it after changing a figure. So a
receipt sealed with a key also carries ``signature``: ``hmac-sha256:<hex>`` of the same
canonical JSON under a per-user key that candidate code cannot read
(:mod:`wikiengine.step.kernel.sealing` holds the key and binds the receipt to the
family journal's verify record); :func:`signature_ok` checks it.
"""

from __future__ import annotations

import hashlib
import hmac
import json

SCHEMA = "wikiengine.kernel-receipt/1"
REQUIRED = {
    "schema": str, "family": str, "vid": str, "candidate": str, "commit": str, "mode": str, "variant": str,
    "verifier": str, "verdict": str, "parity": dict, "firing": dict, "timing": dict, "created": str,
}
VERDICTS = ("PASS", "FAIL")
MODES = ("quick", "full")
SIGNATURE_PREFIX = "hmac-sha256:"


def _canonical(data: dict) -> bytes:
    body = {k: v for k, v in data.items() if k not in ("sha256", "signature")}
    return json.dumps(body, sort_keys=True, separators=(",", ":")).encode()


def _digest(data: dict) -> str:
    return hashlib.sha256(_canonical(data)).hexdigest()


def _signature(data: dict, key: bytes) -> str:
    return SIGNATURE_PREFIX + hmac.new(key, _canonical(data), hashlib.sha256).hexdigest()


def seal(data: dict, key: bytes | None = None) -> str:
    """The receipt's text: ``data`` with its ``sha256`` (and, given ``key``, its
    ``signature``), pretty-printed."""
    sealed = {k: v for k, v in data.items() if k not in ("sha256", "signature")}
    sealed["schema"] = SCHEMA
    sealed["sha256"] = _digest(sealed)
    if key is not None:
        sealed["signature"] = _signature(sealed, key)
    return json.dumps(sealed, indent=2, sort_keys=True) + "\n"


def signature_ok(receipt: dict, key: bytes) -> bool:
    """Does the receipt's ``signature`` match its content under ``key``?"""
    signature = receipt.get("signature")
    return isinstance(signature, str) and hmac.compare_digest(signature, _signature(receipt, key))


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
