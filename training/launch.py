"""Render the pinned bootstrap for one launch, and check a rendered one.

The bootstrap (:mod:`wikiengine.training.bootstrap`) is a template with four pins (``REPO``,
``REV``, ``LAUNCHER_SHA``, ``SESSION_ARGS``) and one line that changes per launch, line
13: ``os.environ["QUOTA_LEFT_HOURS"] = "<hours>"``.

- :func:`pin_bootstrap` fixes the pins once per run (from the repository at a commit);
- :func:`render_bootstrap` changes line 13 only, for one launch;
- :func:`check_rendered` refuses a text that differs from the pinned template anywhere
  else (what a wake checks before it submits).
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

from wikiengine.core import git
from wikiengine.core.errors import WikiError

BOOTSTRAP_PATH = Path(__file__).resolve().parent / "bootstrap.py"
LAUNCHER_PATH = "training/launcher.py"
QUOTA_LINE_NUMBER = 13
QUOTA_LINE = re.compile(r'^os\.environ\["QUOTA_LEFT_HOURS"\] = "([0-9]+(?:\.[0-9]+)?)"$')
HOURS = re.compile(r"^[0-9]+(?:\.[0-9]+)?$")
_PIN_LINES = {
    "REPO": re.compile(r"^REPO = .*$", re.M),
    "REV": re.compile(r"^REV = .*$", re.M),
    "LAUNCHER_SHA": re.compile(r"^LAUNCHER_SHA = .*$", re.M),
    "SESSION_ARGS": re.compile(r"^SESSION_ARGS = .*$", re.M),
}


class BootstrapError(WikiError, ValueError):
    """A bootstrap cannot be pinned, rendered, or differs from its template."""


def bootstrap_template() -> str:
    """The unpinned bootstrap text shipped with the package."""
    return BOOTSTRAP_PATH.read_text()


def launcher_sha(repo: str | Path, rev: str) -> str:
    """The sha256 of ``training/launcher.py`` at commit ``rev`` of the local repository ``repo``."""
    done = git.run(repo, "cat-file", "blob", f"{rev}:{LAUNCHER_PATH}", binary=True, check=False, error=BootstrapError)
    if not done.ok:
        raise BootstrapError(f"{LAUNCHER_PATH} is not in {repo} at {rev[:12]}")
    return hashlib.sha256(done.stdout).hexdigest()


def pin_bootstrap(template: str, repo: str, rev: str, launcher_sha256: str, session_args: list[str]) -> str:
    """The template with its pins set; refuses a REV that is not 40 hex or a sha that is not 64 hex."""
    if not re.fullmatch(r"[0-9a-f]{40}", rev):
        raise BootstrapError(f"REV must be a full 40-hex commit id, got {rev!r}")
    if not re.fullmatch(r"[0-9a-f]{64}", launcher_sha256):
        raise BootstrapError(f"LAUNCHER_SHA must be 64 hex digits, got {launcher_sha256!r}")
    if not all(isinstance(a, str) for a in session_args):
        raise BootstrapError("SESSION_ARGS must be strings")
    values = {"REPO": json.dumps(str(repo)), "REV": json.dumps(rev), "LAUNCHER_SHA": json.dumps(launcher_sha256),
              "SESSION_ARGS": json.dumps(list(session_args))}
    text = template
    for name, pattern in _PIN_LINES.items():
        text, count = pattern.subn(lambda _m, n=name: f"{n} = {values[n]}", text, count=1)
        if count != 1:
            raise BootstrapError(f"the template has no {name} line")
    _quota_line(text)
    return text


def render_bootstrap(template: str, quota_left_hours: str | float) -> str:
    """The pinned template with line 13 set to ``quota_left_hours`` (a decimal number)."""
    hours = _format_hours(quota_left_hours)
    lines = template.split("\n")
    _quota_line(template)
    lines[QUOTA_LINE_NUMBER - 1] = f'os.environ["QUOTA_LEFT_HOURS"] = "{hours}"'
    return "\n".join(lines)


def check_rendered(template: str, text: str) -> str:
    """Check that ``text`` is ``template`` with only line 13 changed; return its hours.

    Raises BootstrapError naming the first other line that differs.
    """
    template_lines, text_lines = template.split("\n"), text.split("\n")
    if len(template_lines) != len(text_lines):
        raise BootstrapError(f"the rendered bootstrap has {len(text_lines)} lines, the template {len(template_lines)}")
    for number, (want, got) in enumerate(zip(template_lines, text_lines), start=1):
        if number != QUOTA_LINE_NUMBER and want != got:
            raise BootstrapError(f"line {number} differs from the template: {got[:80]!r}")
    return _quota_line(text)


def _quota_line(text: str) -> str:
    lines = text.split("\n")
    line = lines[QUOTA_LINE_NUMBER - 1] if len(lines) >= QUOTA_LINE_NUMBER else ""
    match = QUOTA_LINE.match(line)
    if not match:
        raise BootstrapError(
            f'line {QUOTA_LINE_NUMBER} is not os.environ["QUOTA_LEFT_HOURS"] = "<hours>": {line[:80]!r}')
    return match.group(1)


def _format_hours(value: str | float) -> str:
    text = value if isinstance(value, str) else repr(float(value))
    if isinstance(value, bool) or not HOURS.match(text):
        raise BootstrapError(f"QUOTA_LEFT_HOURS must be a non-negative decimal number, got {value!r}")
    return text
