"""Secrets: which values are secret, text with every one of them redacted, and text that
holds a secret-shaped string.

No secret (HF_TOKEN, KAGGLE_KEY, cloud credentials) may reach memory, the wiki, a log line
or a commit message: writers check with :func:`secret_values` (the values this process can
see) and :func:`secret_hits` (the shapes of the common credentials, whoever's they are:
gitleaks' rules, cut to what a wiki page can hold), messages pass through :func:`redact` /
:func:`safe_message`.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import urllib.parse
from dataclasses import dataclass
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


# ---------------------------------------------------------------- secret-shaped strings

# (rule, pattern): the token formats of gitleaks' default rules that a wiki page could hold.
# Each prefix is specific enough that a hex digest, a git sha, a UUID or base64 of prose
# never matches; the generic shapes (``sk-...``, ``password=...``, ``://user:pass@``) also
# pass :func:`_nontrivial` on the value. Each pattern starts with a literal (the regex engine
# then skips to it); a match must start a word (checked on the character before it).
_SHAPES = (
    ("aws-access-key", r"(?:AKIA|ASIA|ABIA|ACCA|A3T[A-Z0-9])[A-Z0-9]{16}\b"),
    ("github-token", r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b"),
    ("github-fine-grained-pat", r"github_pat_[A-Za-z0-9_]{40,}"),
    ("huggingface-token", r"hf_[A-Za-z0-9]{30,}\b"),
    ("slack-token", r"xox[abposr]-[A-Za-z0-9-]{10,}"),
    ("slack-webhook", r"hooks\.slack\.com/(?:services|workflows)/[A-Za-z0-9+/]{20,}"),
    ("google-api-key", r"AIza[0-9A-Za-z_-]{35}(?![0-9A-Za-z_-])"),
    ("private-key", r"-----BEGIN[ A-Z0-9_-]{0,40}PRIVATE KEY(?: BLOCK)?-----"),
    ("jwt", r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{10,}"),
    ("api-key", r"sk-(?:ant-|proj-|svcacct-|admin-|live_|test_)?(?P<value>[A-Za-z0-9_-]{20,})"),
    ("url-credentials", r"://[^/@\s:]+:(?P<value>[^/@\s]+)@[A-Za-z0-9.-]"),
)
# ``password = value`` and its kin: the keyword (any case, any prefix: DB_PASSWORD), an
# assignment, a value. Run only on the lines holding one of the stems (a case-insensitive
# alternation cannot skip ahead: it would cost 10x the rest of the scan).
_ASSIGNMENT_STEMS = ("pass", "pwd", "secret", "apikey", "api_key", "api-key", "access", "auth", "private")
_ASSIGNMENT = (
    r"(?i)(?:password|passwd|passphrase|pwd|secret|api[_-]?key|access[_-]?key"
    r"|secret[_-]?key|auth[_-]?token|access[_-]?token|client[_-]?secret|private[_-]?key)(?![A-Za-z0-9(])"
    r"[\"'`]?[ \t]*(?:[:=]|:=|=>)[ \t]*[\"'`]?(?P<value>[^\s\"'`,;|<>)\]}]+)")
# Values that name a secret rather than hold one: an environment variable, a template
# placeholder, a masked or example value, a type, a code reference (``args.password``) or a call.
_PLACEHOLDER = (
    r"^(?:\$\{?[A-Za-z_][A-Za-z0-9_]*\}?|\{\{.*\}\}|%\(?[a-z_]*\)?s?|[A-Z][A-Z0-9_]*|[*xX.#?-]+|<.*|\[.*"
    r"|(?i:true|false|none|null|nil|required|optional|redacted|changeme|example\w*|placeholder|dummy|secret|password"
    r"|str|string|bytes|int|env|file|prompt|stdin)|[A-Za-z_]\w*(?:\.[A-Za-z_]\w*)+(?:\[.*)?|[^(]*\(.*)$")


@dataclass(frozen=True)
class SecretHit:
    """A secret-shaped string: the 1-based line it is on and the rule that matched (never the value)."""

    line: int
    rule: str


@functools.cache
def _compiled() -> tuple[tuple[tuple[str, re.Pattern], ...], re.Pattern, re.Pattern]:
    """The shapes, the assignment and the placeholder compiled at the first scan: 13 patterns,
    about 3 ms, that a process which only redacts (a no-op wake) never needs."""
    return tuple((rule, re.compile(text)) for rule, text in _SHAPES), re.compile(_ASSIGNMENT), re.compile(_PLACEHOLDER)


def _nontrivial(value: str) -> bool:
    """A value that could be a credential: 8+ characters, not a placeholder, and mixing at
    least two of lower case, upper case, digits and symbols other than -_. (words do not)."""
    value = value.strip(".:")
    if len(value) < 8 or _compiled()[2].match(value):
        return False
    kinds = (any(c.islower() for c in value), any(c.isupper() for c in value), any(c.isdigit() for c in value),
             any(not c.isalnum() and c not in "-_." for c in value))
    return sum(kinds) >= 2 and len(set(value)) >= 5


def secret_hits(text: str) -> list[SecretHit]:
    """Every secret-shaped string in ``text`` (the env's own secret values included), one per
    line and rule, in line order."""
    found: set[tuple[int, str]] = set()
    shapes, assignment, _ = _compiled()

    def line_of(offset: int) -> int:
        return text.count("\n", 0, offset) + 1

    for form in secret_values():
        start = text.find(form)
        if start >= 0:
            found.add((line_of(start), "secret-value"))
    for rule, pattern in shapes:
        for match in pattern.finditer(text):
            before = text[match.start() - 1] if match.start() else " "
            if (before.isalnum() or before == "_") and text[match.start()].isalnum():
                continue  # inside a longer word: not the token's start
            if "value" not in pattern.groupindex or _nontrivial(match.group("value")):
                found.add((line_of(match.start()), rule))
    lowered = text.lower()
    if any(stem in lowered for stem in _ASSIGNMENT_STEMS):
        for number, line in enumerate(text.splitlines(), start=1):
            low = line.lower()
            if any(stem in low for stem in _ASSIGNMENT_STEMS) and any(
                    _nontrivial(m.group("value")) for m in assignment.finditer(line)):
                found.add((number, "password-assignment"))
    return [SecretHit(line, rule) for line, rule in sorted(found)]
