"""What a session recorded about itself: its checkpoint digests and its exit record.

A training session prints one JSON event per line (``training.session``): ``checkpoint``
(step, and the sha256 of the ``manifest.json`` it wrote), ``final`` (the same for
``final/``) and last ``session_end`` (start and end step, the reason it stopped, one line
of detail). The wake reads them from the backend's log of an ended session: they are the
run's own record, independent of the store, so a store whose files *and* manifest were
rewritten still disagrees with them (seed section 4: "compare oids against the local
manifest the run wrote"), and a pointer below a session's recorded end is a regression
even when no wake saw the higher pointer (seed section 5).

The log is outside text: only lines that parse as a JSON object with exactly typed
fields count; anything else is ignored, and nothing here is ever written to memory
except the typed values.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field

from wikiengine.core.secrets import REDACTED  # what redact() puts in place of a secret

SHA256 = re.compile(r"^[0-9a-f]{64}$")
FINAL_KEY = "final"  # the digest key of final/ (checkpoints are keyed by their step, as text)
CORRUPT_REASON = "checkpoint_corrupt"  # training.session.CORRUPT: a refusal no retry can fix


@dataclass(frozen=True)
class SessionRecord:
    """The typed events of one session's log."""

    digests: dict[str, str] = field(default_factory=dict)  # "8" / "final" -> manifest sha256
    start_step: int | None = None
    end_step: int | None = None  # session_end's end_step, else the last checkpoint it logged
    reason: str | None = None  # session_end's reason (boundary, time, refused, checkpoint_corrupt, ...)
    detail: str | None = None  # session_end's one line of detail

    @property
    def progressed(self) -> bool:
        """It committed at least one checkpoint past where it started: it really ran."""
        steps = [int(k) for k in self.digests if k.isdigit()]
        return bool(steps) and max(steps) > (self.start_step or 0)

    def describe(self) -> str | None:
        """The exit record as one line for people (never the raw JSON)."""
        if self.reason is None:
            return None
        text = self.reason.replace("_", " ")
        return f"{text}: {self.detail}" if self.detail else text


_UNSAFE = re.compile(r"[^A-Za-z0-9 .,:;=/_+()'\"%@!?*~-]")


def plain_text(text: str, limit: int = 300) -> str:
    """Outside text (a session's failure line) made safe for a table cell or a summary line: one line,
    and no character that could open markdown or HTML structure (``<``, ``|``, backticks, brackets,
    braces): each becomes ``?`` (RELIABILITY row 45); the redaction marker ``<redacted>`` is kept."""
    parts = " ".join(str(text).split()).split(REDACTED)
    return REDACTED.join(_UNSAFE.sub("?", part) for part in parts)[:limit]


def _exact_int(value) -> bool:
    return type(value) is int and value >= 0


def parse_session_log(text: str) -> SessionRecord:
    """The :class:`SessionRecord` of a session's log text (the last ``session_end`` wins)."""
    digests: dict[str, str] = {}
    start = end = None
    reason = detail = None
    last_checkpoint = None
    for line in (text or "").splitlines():
        line = line.strip()
        if not (line.startswith("{") and line.endswith("}")):
            continue
        try:
            event = json.loads(line)
        except ValueError:
            continue
        if not isinstance(event, dict):
            continue
        kind = event.get("event")
        sha = event.get("manifest_sha256")
        if kind == "checkpoint" and _exact_int(event.get("step")) and isinstance(sha, str) and SHA256.match(sha):
            digests[str(event["step"])] = sha
            last_checkpoint = max(last_checkpoint or 0, event["step"])
        elif kind == "final" and _exact_int(event.get("step")) and isinstance(sha, str) and SHA256.match(sha):
            digests[FINAL_KEY] = sha
        elif kind == "session_end" and isinstance(event.get("reason"), str):
            start = event.get("start_step") if _exact_int(event.get("start_step")) else None
            end = event.get("end_step") if _exact_int(event.get("end_step")) else None
            reason = event["reason"][:60]
            detail = " ".join(str(event.get("detail") or "").split())[:300] or None
    if end is None:
        end = last_checkpoint
    return SessionRecord(digests, start, end, reason, detail)
