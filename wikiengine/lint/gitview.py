"""The base revision that git-aware rules compare with (EXP007, MEM002, age rules).

Everything comes from a few whole-repository git calls (``git diff --name-status``
against the base, one ``git log --name-only`` pass for commit times, ``git show`` for
old file contents), never a per-file ``git log --follow`` (``reference/performance.md``:
about 10^4 times slower over a large wiki).
"""

from __future__ import annotations

import bisect
import datetime as dt
import hashlib
import posixpath
from collections.abc import Callable
from dataclasses import dataclass, field
from itertools import repeat
from operator import itemgetter
from pathlib import Path

from wikiengine.core import git
from wikiengine.core.clock import from_epoch
from wikiengine.core.errors import GitError, WikiError


def _git(root: Path, *args: str) -> str:
    return git.run(root, *args).stdout


def _checked(result: git.Result) -> str:
    """The output of a git command; GitError (its last stderr line) when it failed."""
    if not result.ok:
        raise GitError(f"git {' '.join(result.args[:2])} failed: {result.error_line}")
    return result.stdout


def check_revision(rev: str) -> str:
    """``rev`` if it can only be read as a revision; WikiError for one that git could take
    as an option (``--output=/tmp/x`` writes a file) or that holds a NUL or a line break."""
    if not rev or rev.startswith("-") or any(c in rev for c in "\0\n\r"):
        raise WikiError(f"not a git revision: {rev!r}")
    return rev


def in_git_repo(root: Path) -> bool:
    """Is ``root`` inside a git work tree with at least one commit?"""
    return git.ok(root, "rev-parse", "--verify", "-q", "HEAD", timeout=30)


@dataclass
class GitView:
    """The working tree compared with ``base`` (a commit-ish, ``HEAD`` by default)."""

    root: Path
    base: str
    changes: dict[str, str] = field(default_factory=dict)  # rel -> status letter (A, M, D, R)
    renamed_from: dict[str, str] = field(default_factory=dict)  # new rel -> old rel
    # folder walked ("." the whole tree) -> rel -> (first, last) commit time
    _times: dict[str, dict[str, tuple[dt.datetime, dt.datetime]]] = field(default_factory=dict)

    @classmethod
    def open(cls, root: Path, base: str = "HEAD", *, untracked: bool = True) -> GitView:
        """Compare the working tree (staged and unstaged) with ``base``; WikiError on a bad revision.

        ``untracked=False``: untracked files are left out of :attr:`changes` (one git process
        less, walking the whole work tree), for a caller that never asks about added files:
        lint's rules read only what was modified, renamed or deleted, and judge an untracked
        page by its bytes (:func:`pages_fingerprint`: it is not in git's index).
        """
        return OpeningView(root, base, untracked=untracked).view()

    def changed(self, rel: str) -> bool:
        return rel in self.changes

    def changed_pages(self) -> list[str]:
        """Pages added, modified or renamed since the base (working tree and index included)."""
        from wikiengine.lint.context import LINTED_DIRS

        return sorted(
            rel for rel, status in self.changes.items()
            if status != "D" and rel.endswith(".md") and rel.split("/", 1)[0] in LINTED_DIRS
            and (self.root / rel).is_file()
        )

    def deleted(self) -> list[str]:
        return sorted(rel for rel, status in self.changes.items() if status == "D")

    def index_changes_since(self, commit: str) -> list[str] | None:
        """The paths (from the root) whose entry in git's index is not the one of ``commit``'s
        tree; None when git cannot say (``commit`` is gone: a rewritten history, collected)."""
        try:
            result = git.run(self.root, "diff-index", "--cached", "--name-only", "-z", "--relative", "--no-renames",
                             "--ignore-submodules=all", "--end-of-options", f"{commit}^{{commit}}", "--", ".",
                             check=False, stderr=False)
        except WikiError:  # git did not start, or ran past its deadline
            return None
        return [rel for rel in result.stdout.split("\0") if rel] if result.ok else None

    def base_text(self, rel: str) -> str | None:
        """The file's text at the base revision (following a rename), or None when absent."""
        return self.base_texts([rel])[rel]

    def base_texts(self, rels: list[str]) -> dict[str, str | None]:
        """:meth:`base_text` of several files from one ``git cat-file --batch`` process."""
        if not rels:
            return {}
        names = [f"{self.base}:./{self.renamed_from.get(rel, rel)}" for rel in rels]
        blobs = git.cat_file_batch(self.root, names)
        return {rel: blob.decode("utf-8", errors="replace") if blob is not None else None
                for rel, blob in zip(rels, blobs)}

    def commit_times(self, rel: str) -> tuple[dt.datetime, dt.datetime] | None:
        """(first, last) commit time of ``rel`` up to the base, from one ``git log`` pass over the whole tree."""
        return self._times_under(".").get(rel)

    def commit_times_of(self, rels: list[str]) -> dict[str, tuple[dt.datetime, dt.datetime] | None]:
        """:meth:`commit_times` of each of ``rels``, from the same pass over the history but
        listing only the files of the deepest folder that holds them all: after an edit in one
        lane, a rule that asks of that lane's pages reads the lane's names, not the wiki's
        (50,000 at 50,000 pages, 13% of such a run). A folder already listed, or the whole tree,
        serves; a second folder is asked of the whole tree, which then serves every later one
        (one pass more at most, where a run asks of several lanes)."""
        if not rels:
            return {}
        folder = posixpath.commonpath([posixpath.dirname(rel) for rel in rels]) or "."
        served = next((done for done in self._times if done == "." or f"{folder}/".startswith(f"{done}/")), None)
        times = self._times_under(served or (folder if not self._times else "."))
        return {rel: times.get(rel) for rel in rels}

    def _times_under(self, folder: str) -> dict[str, tuple[dt.datetime, dt.datetime]]:
        """rel -> (first, last) commit time of every file under ``folder`` (``.``: every file) up
        to the base. The commits are those of the whole tree's history, whatever the folder:
        ``--relative=`` narrows what each lists, never which commits are walked (a pathspec
        would also simplify the history by that folder alone). ``-z``: names as they are
        (git quotes a name with bytes outside ASCII, and whether it did would hang on the folder)."""
        if folder not in self._times:
            times = self._times[folder] = {}
            listed = "--relative"  # names relative to the root, which may lie below the repository's top
            if folder != ".":
                prefix = _git(self.root, "rev-parse", "--show-prefix").rstrip("\n")  # the root, from the top
                listed = f"--relative={prefix}{folder}/"
            out = _git(self.root, "log", "-z", "--format=%x00%ct", "--name-only", "--no-renames", listed,
                       "--end-of-options", self.base, "--", ".")
            _read_times(out, "" if folder == "." else folder + "/", times)
        return self._times[folder]

    def times_since(self, commit: str) -> dict[str, tuple[dt.datetime, dt.datetime]] | None:
        """rel -> (first, last) commit time of every file among the commits after ``commit`` up to
        the base, where the base descends from ``commit`` by commits of one parent each: the
        whole walk up to the base then lists those commits and what it listed up to ``commit``
        (a merge may prune a side of the history: :meth:`_times_under`). None otherwise: the
        base is ``commit`` or behind it, another branch, a merge away, or git cannot say."""
        try:
            chain = _git(self.root, "rev-list", "--parents", "--end-of-options", f"{commit}..{self.base}").split("\n")
            commits = [line.split(" ") for line in chain if line]
            ours = {ids[0] for ids in commits}
            if not commits or any(len(ids) != 2 for ids in commits) or {ids[1] for ids in commits} - ours != {commit}:
                return None
            out = _git(self.root, "log", "-z", "--format=%x00%ct", "--name-only", "--no-renames", "--relative",
                       "--end-of-options", f"{commit}..{self.base}", "--", ".")
        except WikiError:  # a commit gone, git unavailable
            return None
        return _read_times(out, "", {})


def _read_times(out: str, within: str, times: dict[str, tuple[dt.datetime, dt.datetime]]) -> dict:
    """Add to ``times`` (rel -> (first, last)) the commit times of ``git log -z --format=%x00%ct
    --name-only``'s output ``out``, its names below ``within``."""
    when, first_name = None, False
    for token in out.split("\0"):  # "\0<ct>\0\n<name>\0<name>\0" per commit
        if not token:
            when = None  # the next token is a commit's time
        elif when is None:
            when, first_name = from_epoch(int(token)), True
        else:
            name = within + (token[1:] if first_name else token)  # the first name follows a newline
            first_name = False
            first, last = times.get(name, (when, when))
            times[name] = (min(first, when), max(last, when))
    return times


def diff_args(commit: str) -> list[str]:
    """The arguments of the ``git diff`` that compares the work tree with ``commit`` for a run.

    -z: paths are NUL-separated and never quoted. Untracked files count as added.
    --relative: paths relative to the wiki root, which may be a subdirectory of the repository.
    --ignore-submodules=dirty: a checked-out submodule is not asked for its own status (a
    `git status` process walking its work tree: a fifth of this diff's CPU and a third of
    its wall time on the real shape); one moved to another commit is still "M". No page
    lives in a submodule."""
    return ["diff", "--name-status", "-z", "-M", "--relative", "--ignore-submodules=dirty", "--end-of-options", commit,
            "--", "."]


class OpeningView:
    """:meth:`GitView.open` started now and read later (:meth:`view`): its git processes (the
    diff ``lstat``s every tracked file: 85 ms of CPU at 50,000 pages) run beside the caller's work."""

    def __init__(self, root: Path, base: str = "HEAD", *, untracked: bool = True):
        self.root, self.base = root, base
        commit = f"{check_revision(base)}^{{commit}}"
        # HEAD, or HEAD's own sha (a watcher's cursor on an unchanged lane), read from its loose
        # ref file: git is not asked to resolve it
        head = git.loose_head(root) if base == "HEAD" or len(base) in (40, 64) else None
        self.known = head if base in ("HEAD", head) else None
        commands = [
            diff_args(commit),
            *([["ls-files", "-z", "--others", "--exclude-standard"]] if untracked else []),
            *([] if self.known else [["rev-parse", "--verify", "-q", "--end-of-options", commit]]),
        ]
        self._running = git.start_all(root, commands)

    def view(self) -> GitView:
        """The :class:`GitView`, once its git processes are done; WikiError on a bad revision."""
        diffed, *listed = git.results(self._running)
        if self.known:
            sha = self.known
        else:
            parsed = listed.pop()
            sha = parsed.stdout.strip() if parsed.ok else ""
        if not sha:
            raise WikiError(f"unknown git revision {self.base!r}")
        out, added = _checked(diffed), "".join(_checked(result) for result in listed)
        view = GitView(self.root, sha)
        parts = out.split("\0")
        index = 0
        while index < len(parts) - 1:
            status = parts[index]
            if status.startswith("R"):
                old, new = parts[index + 1], parts[index + 2]
                view.changes[new] = "R"
                view.changes[old] = "D"
                view.renamed_from[new] = old
                index += 3
            else:
                view.changes[parts[index + 1]] = status[:1]
                index += 2
        for rel in added.split("\0"):
            if rel:
                view.changes.setdefault(rel, "A")
        return view

    def close(self) -> None:
        """Stop its git processes, when the view is not wanted after all."""
        git.stop_all(self._running)


class TrackedTree:
    """What git will publish of the work tree: the tracked files (the index, so staged
    additions count) and the submodules (gitlinks, mode 160000) with their pinned commits.

    Built from one ``git ls-files --stage -v`` process, whose listing is parsed on first need:
    a warm run at 50,000 pages that knows the answers it asks of it (:meth:`know`: whether it
    is plain, its gitlinks, whether it tracks a link's target) spares the 40 ms of cutting
    50,000 entries. Outside git it is None and callers fall back to the file system (and to
    ``.gitmodules`` for submodule paths).
    """

    def __init__(self, raw: bytes | None, digest: str = "", root: Path | None = None):
        self._raw = raw  # the listing as git wrote it, until hashed and parsed
        self._digest = digest
        self._root = root  # where to list the index on first need, when only its hash is known
        self.listed = raw is not None  # git listed the index for this tree when it was made
        self.moved = False  # listed on need, the listing did not hash to the known digest
        self._parsed = False
        self._known: tuple[bool, dict[str, str]] | None = None  # (plain, gitlinks) without a parse
        # path -> does the index track it / some file under it, as asked of this listing
        self._tracks: dict[str, bool] = {}
        self._holds_dir: dict[str, bool] = {}
        self.asked_anew = False  # some answer came from the listing itself (:meth:`facts` grew)
        self._files: frozenset[str] = frozenset()
        self._gitlinks: dict[str, str] = {}
        self._sorted_files: list[str] = []
        # the entries of ``ls-files``, their paths and where a path starts: read by blobs() alone
        self._listing: tuple[list[str], list[str], int] | None = None
        self._plain = True
        self._blobs: dict[str, str] | None = None
        self._unvouchable: frozenset[str] | None = None

    @property
    def digest(self) -> str:
        """SHA-256 of the whole listing: every entry's path, tag, mode, blob and stage (hashed on
        first need: the change feed asks, a PATH run reading what git tracks does not)."""
        if not self._digest and self._raw is not None:
            self._digest = hashlib.sha256(self._raw).hexdigest()
            self._let_go()
        return self._digest

    @property
    def files(self) -> frozenset[str]:
        return self._parse()._files

    @property
    def sorted_files(self) -> list[str]:
        return self._parse()._sorted_files

    @property
    def gitlinks(self) -> dict[str, str]:
        """Submodule path -> pinned commit sha."""
        return self._known[1] if self._known is not None else self._parse()._gitlinks

    @property
    def plain(self) -> bool:
        """Is every entry a regular file (``H 100...``) at stage 0, git's usual case?"""
        return self._known[0] if self._known is not None else self._parse()._plain

    def tracks(self, rel: str) -> bool:
        """Does the index track the file ``rel``?"""
        answer = self._tracks.get(rel)
        if answer is None:
            answer = self._tracks[rel] = rel in self.files
            self.asked_anew = True
        return answer

    def has_directory(self, rel: str) -> bool:
        """Is some tracked file under the directory ``rel``?"""
        answer = self._holds_dir.get(rel)
        if answer is None:
            files, prefix = self.sorted_files, rel.rstrip("/") + "/"
            index = bisect.bisect_left(files, prefix)
            answer = self._holds_dir[rel] = index < len(files) and files[index].startswith(prefix)
            self.asked_anew = True
        return answer

    def facts(self) -> list:
        """``[plain, gitlinks, tracks, has_directory]`` (the answers asked so far): what
        :meth:`know` takes back for a listing of the same :attr:`digest`."""
        return [self.plain, self.gitlinks, self._tracks, self._holds_dir]

    def know(self, facts: list) -> None:
        """Take :meth:`facts` as made from a listing of the same :attr:`digest`: :attr:`plain`,
        :attr:`gitlinks` and the answers asked then are given without a parse."""
        self._known = (facts[0], facts[1])
        self._tracks, self._holds_dir = dict(facts[2]), dict(facts[3])

    def blobs(self) -> dict[str, str]:
        """Path -> blob id of the regular files of the index that git checks against the work
        tree as it should (all but :meth:`unvouchable`); what :mod:`~wikiengine.lint.changefeed`
        may vouch for. Made on first use (a run that takes the run snapshot never asks)."""
        if self._blobs is None:
            entries, paths, cut = self._parse()._listing or ([], [], 0)
            unvouchable = self.unvouchable()
            blobs = dict(zip(paths, [entry[9 : cut - 3] for entry in entries]))  # the paths reused, not cut again
            for path in unvouchable:
                blobs.pop(path, None)
            self._blobs, self._listing = blobs, None
        return self._blobs

    def unvouchable(self) -> frozenset[str]:
        """The paths of the index entries git does not check against the work tree as it should:
        not merged (stage 1-3), marked assume-unchanged or skip-worktree (any tag but ``H`` of
        ``ls-files -v``), or not a regular file (a symlink, a gitlink)."""
        if self._unvouchable is None:
            if self.plain:
                self._unvouchable = frozenset()
            else:
                entries, paths, cut = self._parse()._listing or ([], [], 0)
                stage = cut - 2
                self._unvouchable = frozenset(paths[number] for number, entry in enumerate(entries)
                                              if not (entry.startswith("H 100") and entry[stage] == "0"))
        return self._unvouchable

    @classmethod
    def read(cls, root: Path) -> TrackedTree | None:
        return cls.finish(cls.start(root))

    @classmethod
    def listed_as(cls, root: Path, digest: str) -> TrackedTree:
        """The tree of an index whose listing is known to hash to ``digest`` (the very index file
        a past run listed): git lists it only if a question needs the listing itself."""
        return cls(None, digest, root)

    @staticmethod
    def start(root: Path) -> git.Running | None:
        """Start the ``git ls-files`` that :meth:`finish` reads (it runs while lint works)."""
        try:
            return git.start(root, "ls-files", "--stage", "-v", "-z", binary=True, stderr=False, large=True)
        except GitError:
            return None

    @classmethod
    def finish(cls, running: git.Running | None) -> TrackedTree | None:
        if running is None:
            return None
        try:
            done = running.result(check=False)
        except GitError:  # past its deadline
            return None
        if not done.ok:
            return None  # not a git work tree
        return cls(done.stdout)

    def _parse(self) -> TrackedTree:
        if self._parsed:
            return self
        if self._raw is None and self._root is not None:
            done = self.finish(self.start(self._root))
            if done is None:
                raise GitError("git ls-files failed: cannot list what git tracks")
            self._raw = done._raw
            self.moved = done.digest != self._digest  # the index changed since the run began
        self._parsed = True
        # "<tag> <mode> <object id> <stage>\t<path>": the fields before the path have fixed widths
        text = (self._raw or b"").decode("utf-8", errors="surrogateescape")
        self._let_go()
        entries = text.split("\0")
        entries.pop()  # after the last NUL
        if not entries:
            return self
        cut = entries[0].index("\t") + 1  # the path starts here (object ids are 40 or 64 digits)
        listed = paths = list(map(itemgetter(slice(cut, None)), entries))
        # every entry a regular file, "H 100...", at stage 0: no gitlink, no conflict, nothing left out
        plain = all(map(str.startswith, entries, repeat("H 100"))) and set(map(itemgetter(cut - 2), entries)) == {"0"}
        gitlinks = {} if plain else {entry[cut:]: entry[9 : cut - 3] for entry in entries if entry.startswith("160000", 2)}
        if gitlinks:
            paths = [path for path in paths if path not in gitlinks]
        unique = paths if plain else list(dict.fromkeys(paths))  # a conflicted path is listed once per stage
        self._files, self._gitlinks, self._sorted_files = frozenset(unique), gitlinks, sorted(unique)  # sorted already: a linear pass
        self._listing, self._plain = (entries, listed, cut), plain
        return self

    def _let_go(self) -> None:
        """Drop the listing's bytes once they are hashed and parsed."""
        if self._parsed and self._digest:
            self._raw = None


def pages_fingerprint(view: GitView, tracked: frozenset[str] | None, files: list[str],
                      sha: Callable[[str], str | None]) -> str:
    """A hash naming the bytes of every page of ``files`` from git's view of the work tree: the
    base commit, and the content hash (``sha``) of each page git does not vouch for (changed
    since the base, untracked, ignored, inside a submodule). The pages git tracks and finds
    unchanged are the base's, as ``wiki lint --changed`` and the watchers' delta audits already
    take them to be; no page is read or even looked at for them. ``tracked``: the files git
    tracks (:attr:`TrackedTree.files`); None where it is known to track every one of ``files``."""
    changes = view.changes
    digest = hashlib.blake2b(digest_size=16)
    digest.update(view.base.encode() + b"\0" + "\0".join(files).encode())
    for rel in files:
        if rel in changes or (tracked is not None and rel not in tracked):
            digest.update(f"\0{rel}\0{sha(rel) or '-'}".encode())
    return digest.hexdigest()


def ignored_paths(root: Path, rels: list[str]) -> set[str]:
    """The paths among ``rels`` that git ignores (one ``git check-ignore --stdin``)."""
    if not rels:
        return set()
    try:
        done = git.run(root, "check-ignore", "--stdin", "-z", input="\0".join(rels).encode() + b"\0", binary=True,
                       check=False)
    except GitError:
        return set()
    return {p for p in done.stdout.decode("utf-8", errors="surrogateescape").split("\0") if p}


def declared_submodules(root: Path) -> list[str]:
    """Submodule paths named in ``.gitmodules`` (for a wiki outside git)."""
    import re

    try:
        text = (root / ".gitmodules").read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return []
    return [m.group(1).strip().strip("/") for m in re.finditer(r"^\s*path\s*=\s*(.+)$", text, re.M)]


def changed_view(root: Path, base: str) -> GitView:
    """The working tree compared with ``base`` for a run over what changed since it (``wiki lint
    --changed``, the watchers): its :meth:`GitView.changed_pages` are the targets, and the run
    compares with the same view (``lint(..., view=)``) instead of asking git again."""
    try:
        return GitView.open(root, base)
    except WikiError:
        if not in_git_repo(root):  # asked only on failure: one git process less per run
            raise WikiError("--changed needs a git repository", root) from None
        raise
