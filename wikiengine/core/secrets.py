"""Secrets: which values are secret, and text with every one of them redacted.

No secret (HF_TOKEN, KAGGLE_KEY, cloud credentials) may reach memory, the wiki, a log line
or a commit message: writers check with :func:`secret_values`, messages pass through
:func:`redact` / :func:`safe_message`.
"""

from __future__ import annotations

import base64
import json
import os
import re
import urllib.parse
from pathlib import Path

# Environment variables whose values are secrets; their values never leave in a message.
SECRET_ENV_VARS = (
    "HF_TOKEN",
    "HUGGING_FACE_HUB_TOKEN",
    "KAGGLE_KEY",
    "KAGGLE_API_TOKEN",
    "ACTIONS_ID_TOKEN_REQUEST_TOKEN",
)
REDACTED = "<redacted>"
# (pattern, replacement): credential shapes redacted even when their value is unknown.
_SECRET_PATTERNS = (
    (re.compile(r"(?i)(authorization\s*[:=]\s*)(?:(?:bearer|basic)\s+)?[^\s,;'\"]+"), r"\1" + REDACTED),
    (re.compile(r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}"), r"\1 " + REDACTED),
    (re.compile(r"\bhf_[A-Za-z0-9]{8,}\b"), REDACTED),
    (re.compile(r"(://)[^/@\s:]+:[^/@\s]+@"), r"\1" + REDACTED + "@"),
)


def _token_file_values() -> list[str]:
    """Secrets stored in the usual token files (Hub token, Kaggle key), read only to redact them."""
    values: list[str] = []
    hf_home = os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface")
    for path in (os.environ.get("HF_TOKEN_PATH"), os.path.join(hf_home, "token")):
        if path:
            try:
                values.append(Path(path).read_text().strip())
            except OSError:
                pass
    kaggle_dir = os.environ.get("KAGGLE_CONFIG_DIR") or os.path.join(os.path.expanduser("~"), ".kaggle")
    try:
        values.append(str(json.loads(Path(kaggle_dir, "kaggle.json").read_text()).get("key", "")))
    except (OSError, ValueError, AttributeError):
        pass
    return values


def secret_values() -> list[str]:
    """Every secret value visible to this process, with its URL-encoded and base64 forms."""
    raw = [os.environ.get(name, "") for name in SECRET_ENV_VARS] + _token_file_values()
    forms: set[str] = set()
    for value in raw:
        if len(value) < 6:  # too short to be a credential; redacting it would garble text
            continue
        forms.update({value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)})
        forms.add(base64.b64encode(value.encode()).decode().rstrip("="))
    return sorted(forms, key=len, reverse=True)


def redact(text: str) -> str:
    """``text`` with every known secret value and credential-looking token replaced."""
    for value in secret_values():
        text = text.replace(value, REDACTED)
    for pattern, replacement in _SECRET_PATTERNS:
        text = pattern.sub(replacement, text)
    return text


def safe_message(exc: BaseException, limit: int = 300) -> str:
    """One redacted line describing ``exc``: its type and the first line of its message."""
    text = str(exc).strip()
    first = next((line.strip() for line in text.splitlines() if line.strip()), "")
    line = f"{type(exc).__name__}: {first}" if first else type(exc).__name__
    line = redact(line)
    return line if len(line) <= limit else line[: limit - 3] + "..."
