"""Targets: which directory's program to resolve, and the levels of its cascade.

Three areas follow the seeds' conventions, each a chain of directories from the area
root down to the target; every level may hold a ``program.md``:

=============  ==============================  ===========================================
area           area root                       levels below it
=============  ==============================  ===========================================
experiments    ``wiki/experiments``            ``<model>_autoresearch_optimization/<lane>``
kernels        ``wiki/kernel_experiments``     ``<family>/pallas``
runs           ``wiki/runs``                   ``<run>``
=============  ==============================  ===========================================
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.errors import WikiError
from wikiengine.core.identity import MODEL_DIR_SUFFIX

PROGRAM = "program.md"


@dataclass(frozen=True)
class Area:
    """A part of the wiki that holds programs (experiments, kernels, ...): its folder, levels and schema."""

    name: str
    path: str  # relative to the repository root
    level_names: tuple[str, ...]  # root first
    config_schema: str


AREAS = (
    Area("experiments", "wiki/experiments", ("root", "model", "lane"), "program-config"),
    Area("kernels", "wiki/kernel_experiments", ("root", "family", "pallas"), "program-config"),
    Area("runs", "wiki/runs", ("root", "run"), "run-config"),
)


@dataclass(frozen=True)
class Level:
    """One level of a target's program cascade: its name and folder."""

    name: str  # "root", "model", "lane", ...
    directory: Path

    @property
    def program(self) -> Path:
        return self.directory / PROGRAM


@dataclass(frozen=True)
class Target:
    """A resolved target: its area, its directory and the chain of levels above it."""

    root: Path  # the repository root (holds wiki/)
    area: Area
    levels: tuple[Level, ...]  # area root first, target last

    @property
    def directory(self) -> Path:
        return self.levels[-1].directory

    def part(self, level_name: str) -> str | None:
        """The directory name at a level (``model`` -> ``gemma4_autoresearch_optimization``)."""
        return next((lv.directory.name for lv in self.levels[1:] if lv.name == level_name), None)

    @property
    def model_dir(self) -> str | None:
        return self.part("model") if self.area.name == "experiments" else None

    @property
    def lane(self) -> str | None:
        return self.part("lane") if self.area.name == "experiments" else None

    def describe(self) -> str:
        names = [lv.directory.name for lv in self.levels[1:]]
        if self.area.name == "experiments" and names:
            names[0] = names[0].removesuffix(MODEL_DIR_SUFFIX)
        return f"{self.area.name}: " + (" / ".join(names) if names else "(area root)")

    def relative(self, path: Path) -> str:
        try:
            return path.relative_to(self.root).as_posix()
        except ValueError:
            return str(path)


def find_root(start: Path | None = None) -> Path:
    """The nearest directory at or above ``start`` that holds ``wiki/`` (``$WIKI_ROOT`` wins)."""
    env_root = os.environ.get("WIKI_ROOT")
    if env_root:
        root = Path(env_root).resolve()
        if not (root / "wiki").is_dir():
            raise WikiError("WIKI_ROOT has no wiki/ directory", root)
        return root
    if start is not None and not Path(start).is_dir():
        # An explicit --root that does not exist must not silently become one of its parents.
        raise WikiError("no such directory", start)
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / "wiki").is_dir():
            return candidate
    raise WikiError(f"no wiki/ directory at or above {here}; run inside a wiki repository or pass --root")


ROOT_HELP = ("the wiki repository root, exactly: it must hold wiki/ (default: $WIKI_ROOT, else the nearest "
             "directory at or above the current one that holds wiki/)")


def repository_root(option: Path | None) -> Path:
    """The root a command works on: ``--root`` exactly as given, else :func:`find_root` from the current directory.

    An explicit root is never searched upward from: ``--root wiki/experiments`` is a
    mistake to report, not a hint to guess from (the same for every command).
    """
    if option is None:
        return find_root()
    if not Path(option).is_dir():
        raise WikiError("no such directory", option)
    root = Path(option).resolve()
    if not (root / "wiki").is_dir():
        raise WikiError("--root must be the repository root itself (the directory holding wiki/); "
                        "leave --root out to search upward from the current directory", root)
    return root


def safe_join(base: Path, *parts: str) -> Path:
    """``base/parts`` refusing NUL, absolute parts, ``..`` and symlinks that escape ``base``."""
    for part in parts:
        if not part or "\0" in part:
            raise WikiError(f"invalid path component {part!r}")
        if Path(part).is_absolute() or any(p in ("..",) for p in Path(part).parts):
            raise WikiError(f"path component {part!r} leaves the wiki")
    joined = base.joinpath(*parts)
    inside(base, joined)
    return joined


def inside(base: Path, path: Path) -> Path:
    """Return ``path`` resolved, or raise when it resolves outside ``base``."""
    try:
        resolved = path.resolve()
        base_resolved = base.resolve()
    except (OSError, RuntimeError) as exc:  # a symlink loop (RuntimeError before Python 3.13)
        raise WikiError(f"cannot resolve: {exc}", path) from None
    if resolved != base_resolved and base_resolved not in resolved.parents:
        raise WikiError(f"{path} resolves outside {base_resolved}")
    return resolved


# Device names that Windows reserves in every directory, with or without an extension.
_RESERVED_NAME_RE = re.compile(r"(?i)(?:con|prn|aux|nul|com[0-9]|lpt[0-9])(?:\..*)?")


def check_name(name: str, what: str) -> str:
    """Return ``name`` if it is one plain directory name; else raise :class:`WikiError`.

    Refuses ``/``, ``\\``, ``.``, ``..``, NUL and other control characters, and the device
    names Windows reserves (``CON``, ``NUL``, ``COM1``...).
    """
    if not name or name in (".", "..") or "/" in name or "\\" in name or any(ord(c) < 32 for c in name):
        raise WikiError(f"invalid {what} name {name!r}: give one directory name (no '/', '..' or control characters)")
    if _RESERVED_NAME_RE.fullmatch(name):
        raise WikiError(f"invalid {what} name {name!r}: a device name reserved on Windows")
    return name


NAME_MAX = 64  # characters of a name a writer creates (a model, lane, kernel family, run)
_NEW_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


def check_new_name(name: str, what: str) -> str:
    """:func:`check_name`, and more for a name a writer is about to create (row 98): at most
    :data:`NAME_MAX` characters, and plain ASCII letters, digits, ``.``, ``_``, ``-``, so no
    look-alike (a Cyrillic ``а`` for ``a``), no compatibility form NFKC would fold (``ｇ``, ``ﬁ``),
    no invisible or bidirectional control character (U+202E) and no combining mark can make
    two names that read the same, or one that reads backwards."""
    import unicodedata

    check_name(name, what)
    if len(name) > NAME_MAX:
        raise WikiError(f"invalid {what} name: {len(name)} characters, over the {NAME_MAX} a name may have")
    if _NEW_NAME_RE.fullmatch(name):
        return name
    odd = next(c for c in name if not (c.isascii() and (c.isalnum() or c in "._-")))
    label = unicodedata.name(odd, "unnamed")
    if unicodedata.category(odd) in ("Cf", "Cc", "Zl", "Zp") or unicodedata.bidirectional(odd) in (
            "LRE", "RLE", "LRO", "RLO", "PDF", "LRI", "RLI", "FSI", "PDI"):
        why = "an invisible or bidirectional control character"
    elif unicodedata.normalize("NFKC", odd) != odd:
        why = f"a compatibility form of {unicodedata.normalize('NFKC', odd)!r}"
    elif not odd.isascii() and odd.isalnum():
        why = "a non-ASCII letter that can pass for another (a look-alike)"
    else:
        why = "not a letter, digit, '.', '_' or '-'"
    raise WikiError(f"invalid {what} name '{name.encode('unicode_escape').decode('ascii')}': U+{ord(odd):04X} {label} is {why}; "
                    "use ASCII letters, digits, '.', '_' and '-' (e.g. gemma4, llama3.1-8b)")


def _is_child_dir(parent: Path, name: str) -> bool:
    """True when ``parent`` has a directory entry spelt exactly ``name``.

    A case-insensitive or normalising file system would also open ``GEMMA4`` or an NFD
    spelling; comparing with the listing keeps one spelling per target.
    """
    try:
        return name in os.listdir(parent) and (parent / name).is_dir()
    except OSError:
        return False


def area_named(name: str) -> Area:
    return next(a for a in AREAS if a.name == name)


def _build(root: Path, area: Area, parts: list[str]) -> Target:
    if len(parts) > len(area.level_names) - 1:
        parts = parts[: len(area.level_names) - 1]
    area_dir = root / area.path
    levels = [Level(area.level_names[0], area_dir)]
    directory = area_dir
    for name, part in zip(area.level_names[1:], parts):
        directory = directory / part
        levels.append(Level(name, directory))
    return Target(root, area, tuple(levels))


def target_for_path(root: Path, path: Path) -> Target:
    """The target of a directory (or a ``program.md`` in it) inside an area."""
    if "\0" in str(path):
        raise WikiError("path contains a NUL byte")
    path = path if path.is_absolute() else Path.cwd() / path
    if path.name == PROGRAM:
        path = path.parent
    if not path.exists():
        raise WikiError("no such directory", path)
    resolved = inside(root, path)
    for area in AREAS:
        area_dir = (root / area.path).resolve()
        if resolved == area_dir or area_dir in resolved.parents:
            parts = list(resolved.relative_to(area_dir).parts)
            return _build(root, area, parts)
    raise WikiError(
        "not inside a program area (" + ", ".join(a.path for a in AREAS) + ")", path
    )


def infer_target(root: Path, cwd: Path | None = None) -> Target | None:
    """The target that the current directory lies in, or None when it lies in none."""
    cwd = (cwd or Path.cwd()).resolve()
    for area in AREAS:
        area_dir = (root / area.path).resolve()
        if cwd == area_dir or area_dir in cwd.parents:
            return _build(root, area, list(cwd.relative_to(area_dir).parts))
    return None


def model_folder(root: Path, model: str) -> str:
    """Accept ``gemma4`` or ``gemma4_autoresearch_optimization``; refuse unknown models."""
    area_dir = root / area_named("experiments").path
    check_name(model, "model")
    name = model if model.endswith(MODEL_DIR_SUFFIX) else model + MODEL_DIR_SUFFIX
    if not _is_child_dir(area_dir, name) or not safe_join(area_dir, name).is_dir():
        known = ", ".join(m.removesuffix(MODEL_DIR_SUFFIX) for m in list_models(root)) or "none"
        ignored = [n for n in ignored_model_folders(root) if suggested_model_folder(n) == name]
        why = (f"; {area_dir.relative_to(root).as_posix()}/{ignored[0]} is ignored: a model folder is named "
               f"<model>{MODEL_DIR_SUFFIX} (rename it {name})") if ignored else ""
        raise WikiError(f"no model {model!r} under {area_dir.relative_to(root)} (models: {known}){why}")
    return name


def target_for_model(root: Path, model: str, lane: str | None) -> Target:
    """The target ``wiki resolve MODEL [LANE]`` names."""
    folder = model_folder(root, model)
    parts = [folder]
    if lane is not None:
        check_name(lane, "lane")
        lane_dir = safe_join(root / area_named("experiments").path, folder, lane)
        if not _is_child_dir(lane_dir.parent, lane) or not lane_dir.is_dir():
            known = ", ".join(list_lanes(root, folder, with_program=False)) or "none"
            raise WikiError(f"no lane {lane!r} under model {model!r} (lanes: {known})")
        parts.append(lane)
    return _build(root, area_named("experiments"), parts)


def target_for_kernel(root: Path, family: str) -> Target:
    area = area_named("kernels")
    check_name(family, "kernel family")
    family_dir = safe_join(root / area.path, family)
    if not _is_child_dir(root / area.path, family) or not family_dir.is_dir():
        known = ", ".join(list_children(root / area.path)) or "none"
        raise WikiError(f"no kernel family {family!r} under {area.path} (families: {known})")
    return _build(root, area, [family, "pallas"])


def target_for_run(root: Path, run: str) -> Target:
    area = area_named("runs")
    check_name(run, "run")
    if not _is_child_dir(root / area.path, run) or not safe_join(root / area.path, run).is_dir():
        known = ", ".join(list_children(root / area.path)) or "none"
        raise WikiError(f"no run {run!r} under {area.path} (runs: {known})")
    return _build(root, area, [run])


def list_children(directory: Path) -> list[str]:
    if not directory.is_dir():
        return []
    return sorted(p.name for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))


def is_model_folder(name: str) -> bool:
    """Does a folder under ``wiki/experiments`` follow the ``<model>_autoresearch_optimization`` naming rule?"""
    return name.endswith(MODEL_DIR_SUFFIX) and len(name) > len(MODEL_DIR_SUFFIX)


def suggested_model_folder(name: str) -> str:
    """The name a misnamed model folder most likely meant (``gemma4`` -> ``gemma4_autoresearch_optimization``)."""
    model = re.split(r"_autoresearch", name, maxsplit=1)[0] or name
    return model + MODEL_DIR_SUFFIX


def list_models(root: Path) -> list[str]:
    """Model folders (``*_autoresearch_optimization``) under ``wiki/experiments``."""
    return [n for n in list_children(root / area_named("experiments").path) if is_model_folder(n)]


def ignored_model_folders(root: Path) -> list[str]:
    """Folders under ``wiki/experiments`` that resolve and lint ignore: not named by the naming rule."""
    return [n for n in list_children(root / area_named("experiments").path) if not is_model_folder(n)]


def list_lanes(root: Path, model_dir: str, *, with_program: bool = True) -> list[str]:
    """Lanes of a model; by default only those that have their own ``program.md``."""
    base = root / area_named("experiments").path / model_dir
    return [n for n in list_children(base) if not with_program or (base / n / PROGRAM).is_file()]
