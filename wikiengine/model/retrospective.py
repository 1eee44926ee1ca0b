"""What a closing retrospective must hold before the stop gate opens.

A stop throws away what the session learned unless a retrospective of *this* lane says it.
The gate (the watcher's closing audit and ``wiki loop stop``) counts a retrospective only
when it is about this lane (frontmatter ``model``/``lane``, when given, agree), says
something (text beyond its frontmatter, headings and placeholders such as ``TBD``), and has
every section the lane program's ``retrospective_sections`` names, each with text. A
section's title may carry a suffix (``## What worked (v010-v012)``).
"""

from __future__ import annotations

from wikiengine.core.errors import WikiError
from wikiengine.core.identity import model_name
from wikiengine.core.page import parse_page
from wikiengine.model.experiment import is_placeholder


def retrospective_gaps(text: str, rel: str, *, model: str, lane: str, required: list[str] | tuple = ()) -> list[str]:
    """What keeps the retrospective ``text`` (at ``rel``) from closing ``model``/``lane``
    (MODEL_NAME form), each in a few words; empty when it may."""
    try:
        page = parse_page(text, rel)
    except WikiError as exc:
        return [f"it cannot be read: {exc}"]
    front = page.frontmatter
    gaps = []
    if isinstance(front.get("lane"), str) and front["lane"] != lane:
        gaps.append(f"its frontmatter says lane: {front['lane']}, not {lane}")
    if isinstance(front.get("model"), str) and model_name(front["model"]) != model:
        gaps.append(f"its frontmatter says model: {front['model']}, not {model}")
    said = [page.preamble] + [section.body for section in page.sections]
    if all(is_placeholder(_prose(part)) for part in said):
        gaps.append("it has no text beyond its frontmatter and headings")
    for title in required:
        found = page.sections_led_by(title)
        if not found:
            gaps.append(f"it has no '## {title}' section (the lane program's retrospective_sections)")
        elif all(is_placeholder(_prose(section.body)) for section in found):
            gaps.append(f"its '## {title}' section is empty")
    return gaps


def _prose(text: str) -> str:
    """``text`` without heading lines (an H1 title is not something said)."""
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
