"""USER_PREFIX, MODEL_NAME and workload names, exactly as the seeds derive them (Step 2b).

USER_PREFIX, first hit wins:
1. an explicit ``USER_PREFIX = <value>`` line in the model-level program.md;
2. ``$USER`` before its first underscore, lowercased (``alekseyv_google_com`` -> ``alekseyv``);
3. the first word of ``git config user.name``, lowercased (``Aleksey Vlasenko`` -> ``aleksey``);
4. else refuse: the user must set it explicitly.

MODEL_NAME comes from the model folder: ``llama3_8B_autoresearch_optimization`` -> ``llama3-8b``.

Workload names are ``<USER_PREFIX>-<MODEL_NAME>-<LANE>-v<NNN>-<slug>[-<retry>]``, under
40 characters, matching ``[a-z]([-a-z0-9]*[a-z0-9])?`` (xpk's rule, one stricter).
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path

from wikiengine.core.errors import WikiError

MODEL_DIR_SUFFIX = "_autoresearch_optimization"
_PREFIX_LINE_RE = re.compile(r"^[ \t>*-]*`?USER_PREFIX\s*=\s*[\"'`]?([^\s\"'`]*)", re.M)
NAME_RE = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
MAX_WORKLOAD_LEN = 40  # names must be strictly shorter
# The seed's standard slug abbreviations, applied in this order before anything else is cut.
ABBREVIATIONS = (
    ("deepseek", "ds"),
    ("sparsecore", "sc"),
    ("attention", "attn"),
    ("fusion", "fus"),
    ("tensor-parallel", "tp"),
    ("expert-parallel", "ep"),
    ("track-parallel", "pt"),
    ("host-offload", "ho"),
    ("megablox", "mblx"),
    ("selective", "sel"),
)


@dataclass(frozen=True)
class UserPrefix:
    """The USER_PREFIX a workload name starts with, and where the chain found it."""

    value: str
    source: str  # "program", "$USER" or "git user.name"


def model_name(model_dir: str) -> str:
    """``llama3_8B_autoresearch_optimization`` (or ``llama3_8B``) -> ``llama3-8b``."""
    base = model_dir[: -len(MODEL_DIR_SUFFIX)] if model_dir.endswith(MODEL_DIR_SUFFIX) else model_dir
    return base.replace("_", "-").lower()


def explicit_user_prefix(program_text: str) -> str | None:
    """The value of a ``USER_PREFIX = <value>`` line in a program, if any."""
    match = _PREFIX_LINE_RE.search(program_text)
    if not match:
        return None
    return match.group(1).lower() or None


def _git_user_name(cwd: Path | None) -> str:
    from wikiengine.core import git

    try:
        return git.out(cwd, "config", "user.name", timeout=10).strip()
    except WikiError:  # git missing or hung
        return ""


def resolve_user_prefix(model_program_text: str | None, *, env=None, cwd: Path | None = None, program_path=None) -> UserPrefix:
    """Apply the seed's chain; raise :class:`WikiError` when nothing yields a prefix."""
    env = os.environ if env is None else env
    if model_program_text:
        value = explicit_user_prefix(model_program_text)
        if value:
            if not NAME_RE.fullmatch(value):
                raise WikiError(f"USER_PREFIX {value!r} is not a valid name part ([a-z][-a-z0-9]*)", program_path)
            return UserPrefix(value, "program")
    user = env.get("USER", "").split("_", 1)[0].lower()
    if user and NAME_RE.fullmatch(user):
        return UserPrefix(user, "$USER")
    words = _git_user_name(cwd).split()
    if words:
        first = words[0].lower()
        if NAME_RE.fullmatch(first):
            return UserPrefix(first, "git user.name")
    raise WikiError(
        "cannot derive USER_PREFIX: add a 'USER_PREFIX = <name>' line to the model-level program.md, "
        "or set $USER or git config user.name"
    )


def shorten_slug(slug: str) -> str:
    """Apply the seed's standard abbreviations to a slug."""
    for long, short in ABBREVIATIONS:
        slug = slug.replace(long, short)
    return slug


def workload_name(user_prefix: str, model: str, lane: str, vid: int, slug: str, retry: str = "") -> str:
    """Build a workload name under 40 characters, shortening only the slug.

    Abbreviations come first, then the slug is truncated at a ``-`` boundary where
    possible; the required parts are never touched. Raises :class:`WikiError` when
    even an empty slug cannot fit.
    """
    head = f"{user_prefix}-{model}-{lane}-v{vid:03d}-"
    tail = f"-{retry}" if retry else ""
    room = MAX_WORKLOAD_LEN - 1 - len(head) - len(tail)
    if room < 1:
        raise WikiError(f"workload name prefix {head!r} leaves no room for a slug under {MAX_WORKLOAD_LEN} characters")
    slug = re.sub(r"[^a-z0-9-]+", "-", shorten_slug(slug.lower())).strip("-") or "x"
    if len(slug) > room:
        cut = slug[:room]
        if "-" in cut and slug[room : room + 1] not in ("", "-"):
            cut = cut.rsplit("-", 1)[0]
        slug = cut.strip("-") or slug[:room]
    # a last word of one letter would read back as a retry letter (v048-splash-q is v048q)
    while re.search(r"-[a-z]$", slug):
        slug = slug[:-2]
    name = head + slug + tail
    if not NAME_RE.fullmatch(name):
        raise WikiError(f"workload name {name!r} does not match [a-z]([-a-z0-9]*[a-z0-9])?")
    return name


_WORKLOAD_RE = re.compile(r"(?P<prefix>[a-z][a-z0-9]*)-(?P<rest>.+)-v(?P<vid>\d{3,})-(?P<slug>[a-z0-9][-a-z0-9]*?)(?:-(?P<retry>[b-z]))?$")


def check_workload_name(name: str, user_prefix: str, model: str, lane: str, vid: int | None = None) -> str | None:
    """Why ``name`` breaks the convention for this lane (and v-id), or None when it is fine."""
    if len(name) >= MAX_WORKLOAD_LEN:
        return f"{len(name)} characters (must be under {MAX_WORKLOAD_LEN})"
    if not NAME_RE.fullmatch(name):
        return "does not match [a-z]([-a-z0-9]*[a-z0-9])?"
    head = f"{user_prefix}-{model}-{lane}-v"
    if not name.startswith(head):
        return f"does not start with {head}<NNN>-"
    match = re.fullmatch(r"(\d{3,})-([a-z0-9][-a-z0-9]*)", name[len(head) :])
    if not match:
        return "has no v<NNN>-<slug> after the lane"
    if vid is not None and int(match.group(1)) != vid:
        return f"names v{match.group(1)} but the page is v{vid:03d}"
    return None
