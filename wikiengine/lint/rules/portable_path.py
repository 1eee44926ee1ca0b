"""WK003."""

from __future__ import annotations

import os
import re
import unicodedata

from wikiengine.lint.rule import Rule

_RESERVED = re.compile(r"(?i)(con|prn|aux|nul|com[1-9]|lpt[1-9])(\..*)?")
_BAD_CHARS = re.compile(r'[<>:"\\|?*\x00-\x1f]')
_FORBIDDEN = b'<>:"\\|?*' + bytes(range(32))  # what _BAD_CHARS finds, as bytes
_DEVICES = ("con", "prn", "aux", "nul", "com", "lpt")  # _RESERVED's names (com and lpt numbered)


def _problem(part: str) -> str | None:
    if _RESERVED.fullmatch(part):
        return f"'{part}' is a reserved device name on Windows"
    if _BAD_CHARS.search(part):
        return f"'{part}' holds a character that Windows forbids"
    if part.endswith((".", " ")):
        return f"'{part}' ends with a dot or a space"
    if unicodedata.normalize("NFC", part) != part:
        return f"'{part}' is not in Unicode NFC form"
    return None


class PortablePath(Rule):
    """## What it does
    Reports a page path that is not portable: two paths that differ only in letter case
    or Unicode normalisation (NFC/NFD), a path component that is not NFC, a Windows
    device name such as `CON` or `aux.md`, a character Windows forbids, or a component
    ending in a dot or a space, or a symbolic link that leads outside the repository.

    ## Why is this bad?
    The wiki is a git repository checked out on many machines. On a case-insensitive or
    normalising file system (macOS, Windows) two such pages become one file, and one
    agent's edits silently overwrite the other's; a reserved name cannot be checked out
    at all.

    ## Example
    `wiki/hypotheses/Remat.md` beside `wiki/hypotheses/remat.md`. Merge them into one
    page, or give them names that differ in more than case.

    ## Options
    None.
    """

    code = "WK003"
    name = "portable-path"
    summary = "a page path collides with another under case or Unicode folding, or is not portable"
    reads_pages = False

    def wiki_inputs(self, ctx):
        """Where each page that is a symbolic link leads (the paths are in the key already)."""
        root = str(ctx.root).rstrip("/") + "/"
        return repr([(rel, os.path.realpath(root + rel)) for rel in _links(ctx, ctx.files, root)])

    def check_wiki(self, ctx):
        root = str(ctx.root).rstrip("/") + "/"
        if _portable(ctx.files):  # no path to judge one by one: only the links remain
            real_root = os.path.realpath(ctx.root)
            for rel in _links(ctx, ctx.targets, root):
                if os.path.commonpath([os.path.realpath(root + rel), real_root]) != real_root:
                    yield self.finding(rel, 1, "path is a symbolic link to a file outside the repository")
            return
        folded: dict[str, str] = {}
        judged: dict[str, str | None] = {}  # component -> its problem: folders recur in every path under them
        targets = set(ctx.targets)
        links = set(_links(ctx, ctx.targets, root))
        real_root = os.path.realpath(ctx.root)
        for rel in ctx.files:
            key = (rel if rel.isascii() else unicodedata.normalize("NFC", rel)).casefold()  # NFC keeps ASCII as is
            other = folded.setdefault(key, rel)
            if other != rel:
                for mine, theirs in ((rel, other), (other, rel)):
                    if mine in targets:
                        yield self.finding(mine, 1, f"path collides with {theirs} on a case-insensitive or normalising file system")
            if rel not in targets:
                continue
            if rel in links and os.path.commonpath([os.path.realpath(root + rel), real_root]) != real_root:
                yield self.finding(rel, 1, "path is a symbolic link to a file outside the repository")
            for part in rel.split("/"):
                problem = judged[part] if part in judged else judged.setdefault(part, _problem(part))
                if problem:
                    yield self.finding(rel, 1, f"path is not portable: {problem}")
                    break


def _portable(files: list[str]) -> bool:
    """Are ``files`` free of what the rule reports of paths, told from all of them at once? No
    two fold together, none is outside NFC, and no component is one :func:`_problem` names. A
    list that is not (or may not be) is judged path by path. The path-by-path loop took 0.3 s
    of CPU at 50,000 pages whenever a page was added or gone; this, 70 ms (``re`` scans the
    5 MB of paths no faster than that loop: these are ``str`` searches)."""
    joined = "\0".join(files)
    if joined.isascii():
        folded = joined.lower()  # casefold() of ASCII, as the loop folds them
    elif unicodedata.is_normalized("NFC", joined):
        folded = joined.casefold()
    else:
        return False
    paths = folded.split("\0")
    if not len(set(paths)) == len(paths) == len(files):  # two fold together, or a path holds "\0"
        return False
    flat = "/" + folded.replace("\0", "/") + "/"  # every component between two slashes
    raw = flat.encode("utf-8", "surrogatepass")
    if len(raw.translate(None, _FORBIDDEN)) != len(raw) or "./" in flat or " /" in flat:
        return False
    return not any(_device_at(flat, name) for name in _DEVICES)


def _device_at(flat: str, name: str) -> bool:
    """Is some component of ``flat`` (components between slashes, case folded) the device ``name``,
    with an extension or none?"""
    needle, numbered = "/" + name, name in ("com", "lpt")
    at = flat.find(needle)
    while at >= 0:
        after = at + len(needle)
        if numbered:
            after = after + 1 if flat[after] in "123456789" else -1
        if after >= 0 and flat[after] in "./":
            return True
        at = flat.find(needle, at + 1)
    return False


def _links(ctx, paths: list[str], root: str) -> list[str]:
    """The paths among ``paths`` that are symbolic links: looked for only in the folders where the
    walk saw a link (``ctx.linked_folders``, each found by bisection: a warm run asks this of
    every file), or everywhere when that is not known."""
    if ctx.linked_folders is None:
        candidates = paths
    else:
        in_linked = [rel for folder in sorted(ctx.linked_folders) for rel in ctx.files_under(folder + "/")
                     if "/" not in rel[len(folder) + 1:]]  # the folder's own files, not its subfolders'
        candidates = in_linked if paths is ctx.files else sorted(set(in_linked).intersection(paths))
    return [rel for rel in candidates if os.path.islink(root + rel)]
