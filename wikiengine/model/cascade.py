"""The program cascade: H2 replace-per-section inheritance from the area root down.

The effective program of a target is the fold, root first, of every ``program.md`` on
the path to it (missing levels are skipped):

- a later section replaces the earlier section with the same title, in the earlier
  one's position; titles are compared trimmed, with inner whitespace collapsed and
  **case-insensitively** (``## Setup`` and ``## setup`` are one section);
- a section with a new title is appended, in the order it appears;
- an *additive* section (title matching the additive marker, by default the seeds'
  ``<Model>-specific CAN additions``) concatenates instead of replacing;
- the preamble (text before the first H2) of the deepest file that has one wins;
- two sections with the same title in one ``program.md`` are an error.

Every effective section records where it came from and which levels it overrode. A
fenced ``yaml`` block in the ``## Config`` section holds machine-readable settings; it
follows the same rule and is validated against the area's schema after resolution.
"""

from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field, replace
from pathlib import Path

from wikiengine.core.errors import CascadeError, WikiError
from wikiengine.core.page import Page, Section, fenced_block, load_page, split_lines, title_key
from wikiengine.model.targets import Target, inside

DEFAULT_ADDITIVE_MARKER = r"(?i)-specific\s+CAN\s+additions$"
CONFIG_SECTION = "Config"


class _DefaultMarker:
    r""":data:`DEFAULT_ADDITIVE_MARKER` as RE2 reads it, without loading RE2 for an ASCII title:
    there RE2's ``\s`` is ``[\t\n\f\r ]``, its ``(?i)`` folds only ASCII letters and its ``$``
    ends the text, as this ``re`` pattern says; any other title goes to RE2 itself."""

    _ASCII = re.compile(r"-specific[\t\n\f\r ]+CAN[\t\n\f\r ]+additions\Z", re.IGNORECASE | re.ASCII)

    def search(self, text: str):
        if text.isascii():
            return self._ASCII.search(text)
        from wikiengine.core.patterns import user_regex

        return user_regex(DEFAULT_ADDITIVE_MARKER, "additive-marker").search(text)


def additive_marker_regex(pattern: str, path=None):
    """``pattern`` compiled to tell additive titles (``.search``): a user's by RE2, in linear time
    (:mod:`wikiengine.core.patterns`); the default one without RE2's import where it is not
    needed (a run that never names another marker: every wake, writer and pre-commit lint)."""
    if pattern == DEFAULT_ADDITIVE_MARKER:
        return _DefaultMarker()
    from wikiengine.core.patterns import user_regex

    return user_regex(pattern, "additive-marker", path)


@dataclass(frozen=True)
class Origin:
    """Where one contribution to an effective section came from."""

    level: str
    path: Path
    line: int


@dataclass(frozen=True)
class EffectiveSection:
    """A section of the effective program with its provenance."""

    title: str
    text: str  # heading + body, as written (additive sections: concatenated)
    origin: Origin  # the file whose text is shown first (for additive: the first contributor)
    overrides: tuple[str, ...] = ()  # levels whose definition this one replaced, root first
    additive: bool = False
    contributors: tuple[Origin, ...] = ()  # every file that added to an additive section

    @property
    def key(self) -> str:
        return title_key(self.title)

    @property
    def level(self) -> str:
        return self.origin.level

    @property
    def body(self) -> str:
        lines = split_lines(self.text)
        return "".join(lines[1:])


@dataclass(frozen=True)
class Layer:
    """A preamble and ordered sections: one program file, or the fold of several."""

    preamble: str = ""
    preamble_origin: Origin | None = None
    sections: tuple[EffectiveSection, ...] = ()


def _joined(text: str, more: str) -> str:
    if text and not text.endswith(("\n", "\r")):
        text += "\n"
    return text + more


def fold(base: Layer, override: Layer) -> Layer:
    """Apply ``override`` on top of ``base`` (associative; the empty layer is neutral)."""
    sections = list(base.sections)
    index = {s.key: i for i, s in enumerate(sections)}
    for new in override.sections:
        at = index.get(new.key)
        if at is None:
            index[new.key] = len(sections)
            sections.append(new)
            continue
        old = sections[at]
        if old.additive and new.additive:
            sections[at] = replace(
                old,
                text=_joined(old.text, new.body),
                contributors=old.contributors + new.contributors,
                overrides=old.overrides + new.overrides,
            )
        else:
            sections[at] = replace(new, overrides=old.overrides + (old.level,) + new.overrides)
    if override.preamble.strip():
        preamble, origin = override.preamble, override.preamble_origin
    elif base.preamble.strip():
        preamble, origin = base.preamble, base.preamble_origin
    else:  # neither has text: keep blank lines as written, so the empty layer stays neutral
        preamble, origin = base.preamble or override.preamble, None
    return Layer(preamble, origin, tuple(sections))


def layer_of(page: Page, level: str, additive_marker: str = DEFAULT_ADDITIVE_MARKER) -> Layer:
    """One program file as a layer; duplicate titles are a :class:`CascadeError`.

    ``additive_marker`` is user-supplied: it is matched in linear time (:func:`additive_marker_regex`).
    """
    marker = additive_marker_regex(additive_marker)
    seen: dict[str, Section] = {}
    sections = []
    path = page.path or Path("<text>")
    for section in page.sections:
        if section.key in seen:
            raise CascadeError(
                f"duplicate section '## {section.title}' (first on line {seen[section.key].line}): "
                "which one would inherit?",
                path,
                section.line,
            )
        seen[section.key] = section
        origin = Origin(level, path, section.line)
        additive = bool(marker.search(section.title.strip()))
        sections.append(
            EffectiveSection(section.title, section.text, origin, (), additive, (origin,) if additive else ())
        )
    preamble_origin = Origin(level, path, page.body_line) if page.preamble.strip() else None
    return Layer(page.preamble, preamble_origin, tuple(sections))


@dataclass
class Program:
    """The effective program of a target."""

    target: Target
    files: list[tuple[str, Path]]  # (level, path) of every program.md read, root first
    layer: Layer
    config: dict = field(default_factory=dict)
    config_origin: Origin | None = None

    @property
    def sections(self) -> tuple[EffectiveSection, ...]:
        return self.layer.sections

    def section(self, title: str) -> EffectiveSection | None:
        key = title_key(title)
        return next((s for s in self.layer.sections if s.key == key), None)

    def text(self) -> str:
        """The effective program as markdown."""
        out = self.layer.preamble
        previous: Path | None = self.layer.preamble_origin.path if self.layer.preamble_origin else None
        for section in self.layer.sections:
            # Sections from different files are set apart by a blank line; text from one
            # file is joined exactly as written.
            if previous is not None and section.origin.path != previous and out.strip() and not out.endswith("\n\n"):
                out = _joined(out, "\n")
            out = _joined(out, section.text)
            previous = section.origin.path
        return out

    def config_lines(self) -> dict[tuple, int]:
        """The file line of each key path of the config block (empty: no config)."""
        from wikiengine.core.yamlio import key_lines

        section = self.section(CONFIG_SECTION)
        return key_lines(*_yaml_block(section)) if section is not None else {}

    def audit_lines(self) -> list[str]:
        """The seed's audit: ``Setup  <- lane (overrides model + root)``."""
        width = max((len(s.title) for s in self.sections), default=0)
        lines = []
        for section in self.sections:
            if section.additive:
                levels = [c.level for c in section.contributors]
                note = " + ".join(levels) + " (additive)"
            else:
                note = section.level
                if section.overrides:
                    note += " (overrides " + " + ".join(reversed(section.overrides)) + ")"
                elif section.level == "root" and len(self.files) > 1:
                    deeper = [lv for lv, _ in self.files if lv != "root"]
                    note += " (no " + "/".join(deeper) + " override)"
            lines.append(f"  {section.title.ljust(width)}  <- {note}")
        return lines


def resolve(target: Target, *, additive_marker: str = DEFAULT_ADDITIVE_MARKER, validate: bool | frozenset = True) -> Program:
    """Resolve the effective program of ``target``.

    Raises :class:`CascadeError` when the area root has no ``program.md``, when a file
    repeats a section title, or when the resolved config breaks its schema (``validate``: a
    frozenset of top-level keys checks only those, the ones a caller is about to use).
    """
    root_program = target.levels[0].program
    if not _present(root_program):
        raise CascadeError(
            f"no root program: {target.relative(root_program)} does not exist; "
            "write it first (every program in this area inherits from it)",
        )
    layer = Layer()
    files = []
    for level in target.levels:
        if not _present(level.program):
            continue
        inside(target.root, level.program)  # a program.md symlinked out of the repository is refused
        page = load_page(level.program)
        layer = fold(layer, layer_of(page, level.name, additive_marker))
        files.append((level.name, level.program))
    program = Program(target, files, layer)
    config_section = program.section(CONFIG_SECTION)
    if config_section is not None:
        program.config, program.config_origin = _config_of(config_section)
        if validate:
            from wikiengine.core import schemas

            schemas.check(program.config, target.area.config_schema, target.relative(config_section.origin.path),
                          program.config_lines, keys=validate if isinstance(validate, frozenset) else None)
    return program


def _present(path: Path) -> bool:
    """Is there anything at ``path``? (A FIFO or a dangling symlink is there, and refused
    when read, rather than skipped as a missing level.)"""
    return os.path.lexists(path)


def _yaml_block(section: EffectiveSection) -> tuple[str, int]:
    """The first fenced yaml block of a section: its text and the file line it starts on."""
    found = fenced_block(section.text)
    if found is None:
        raise CascadeError(f"section '## {section.title}' has no fenced yaml block", section.origin.path,
                           section.origin.line)
    body, index, closed = found
    if not closed:
        raise CascadeError("unterminated yaml block", section.origin.path, section.origin.line + index - 1)
    return body, section.origin.line + index


def _non_finite(value, key_path: tuple = ()):
    """Key paths of NaN and infinite numbers: JSON cannot carry them and schema bounds let NaN pass."""
    if isinstance(value, float) and not math.isfinite(value):
        yield key_path
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, key_path + (key,))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite(item, key_path + (index,))


def _config_of(section: EffectiveSection) -> tuple[dict, Origin]:
    from wikiengine.core.yamlio import key_lines, line_of, safe_load

    text, first_line = _yaml_block(section)
    data = safe_load(text, section.origin.path, first_line) or {}
    if not isinstance(data, dict):
        raise WikiError("the config block is not a mapping", section.origin.path, first_line)
    bad = next(_non_finite(data), None)
    if bad is not None:
        raise CascadeError(
            f"{'/'.join(map(str, bad))}: {_value_at(data, bad)} is not a finite number",
            section.origin.path,
            line_of(key_lines(text, first_line), bad),
        )
    return data, section.origin


def _value_at(data, key_path: tuple):
    """The value at ``key_path`` inside nested mappings and lists."""
    for key in key_path:
        data = data[key]
    return data
