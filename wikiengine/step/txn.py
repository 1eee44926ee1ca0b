"""The one write transaction of `wiki step` and the writers: a lock, a record, atomic
file writes, re-lint, one commit.

Every lane and kernel writer (``wiki exp``, ``wiki log add``, ``wiki backfill``, ``wiki
kernel``, a wake's acts) builds the whole new content of each file it changes in memory,
then :meth:`LaneTxn.commit`:

1. writes a redo record ``.git/wiki-lane/<key>.txn.json`` (the commit message and the
   full new text of every file), fsynced;
2. writes each file atomically (temp file, fsync, rename);
3. re-lints the written files and refuses (restoring the old texts) when the write
   introduced a finding;
4. commits exactly those paths (``core.git.commit_paths``) and deletes the record.

Before step 1 every new text and the message pass ``core.git.assert_no_secret`` (which
``commit_paths`` applies again to every commit, of any writer): a secret-shaped string
refuses the write with nothing written.

A writer killed anywhere leaves either no record (nothing happened, or the commit is done)
or one that the next holder of the key's lock finishes first (:func:`recover`): the texts
are whole, so replaying twice writes the same bytes and commits once. The temp files a
killed write left beside its files are removed by the next holder (RELIABILITY row 84). A relay wake, which
writes memory file by file between its commits, leaves an :class:`UndoRecord` instead: the
texts before, put back by the same :func:`recover`. The lock is the one lock of
:mod:`wikiengine.core.locks` (an ``flock`` of a file in the git directory), so concurrent
writers of one lane (one per track) take turns.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from wikiengine.core.atomic import atomic_write_text, fsync_dir, sweep_temp_files, temp_name
from wikiengine.core.errors import PageError, WikiError
from wikiengine.core.git import CommitProbe, assert_no_secret, git_dir
from wikiengine.core.locks import FileLock
from wikiengine.core.safe_read import confined, load_json, read_text, repo_text
from wikiengine.model.lanes import Lane

LOCK_TIMEOUT_S = 120
REDO, UNDO = "redo", "undo"  # a killed write is finished (lane and kernel writers) or undone (a relay wake)


class LaneWriteRefused(WikiError):
    """The write would leave a lint finding; nothing was committed."""


@dataclass
class LaneTxn:
    """The files one lane write changes, staged in memory until :meth:`commit`."""

    root: Path
    lane: Lane
    texts: dict[str, str | None] = field(default_factory=dict)  # rel -> new text (None: removed)
    old: dict[str, str | None] = field(default_factory=dict)  # rel -> text before (None: absent)
    carried: list[str] = field(default_factory=list)  # files another command wrote, committed as they are

    def carry(self, rel: str) -> None:
        """Commit ``rel`` as it is on disk (a file another command wrote, such as the watcher's
        cursor), beside this write's own files; it is neither rewritten nor re-linted."""
        self.carried.append(rel)

    def read(self, rel: str) -> str:
        """The text of ``rel`` as this write sees it (staged, else on disk, else "")."""
        if rel in self.texts:
            return self.texts[rel] or ""
        return self._disk(rel) or ""

    def exists(self, rel: str) -> bool:
        return self.texts[rel] is not None if rel in self.texts else self._disk(rel) is not None

    def write(self, rel: str, text: str | None) -> None:
        """Stage the new text of ``rel``; None removes the file (a page renamed is one removed
        and one written, in the same commit). Refused (PageError) when ``rel`` leaves the
        repository through a symbolic link, or holds something that is not a readable regular file."""
        confined(self.root / rel, self.root, rel)
        if rel not in self.old:
            self.old[rel] = self._disk(rel)
        self.texts[rel] = text

    def remove(self, rel: str) -> None:
        self.write(rel, None)

    def _disk(self, rel: str) -> str | None:
        return disk_text(self.root, rel)

    def changed(self) -> list[str]:
        return sorted(rel for rel, text in self.texts.items() if self.old.get(rel) != text)

    def commit(self, message: str, *, relint: bool = True) -> str | None:
        """Write, re-lint and commit; return the commit sha (None: nothing changed)."""
        paths = self.changed()
        if not paths:
            return None
        for rel in paths:  # refused before anything is written: the redo record would hold the secret too
            assert_no_secret(self.texts[rel] or "", rel)
        assert_no_secret(message, "commit message")
        record = redo_path(self.root, self.lane)
        _confine_all(self.root, paths)  # a link planted since the write was staged
        where = record
        try:
            record.parent.mkdir(parents=True, exist_ok=True)
            _write_record(record, message, {p: self.texts[p] for p in paths})
            for rel in paths:
                where = rel
                _apply(self.root, {rel: self.texts[rel]})
        except OSError as exc:  # a full disk, a read-only folder: the old texts back, one line (row 100)
            self._undo_write(paths, record)
            raise WikiError(f"cannot write: {exc.strerror or exc} (nothing written, nothing committed)", where) from None
        probe = CommitProbe(self.root, paths)  # git answers what the commit asks while the re-lint runs
        if relint:
            paths, probe = self._relint(paths, record, message, probe)
        self._refuse_ignored(paths, record, probe)
        if self.carried:
            paths = sorted(set(paths) | set(self.carried))
            if probe is not None:
                probe.close()
                probe = None
        try:
            sha = _commit(self.root, paths, message, probe)
        finally:
            if probe is not None:
                probe.close()
        record.unlink(missing_ok=True)
        return sha

    def _refuse_ignored(self, paths: list[str], record: Path, probe: CommitProbe | None) -> None:
        """Refuse (the old texts put back) a write whose new file git ignores: the commit would
        leave it out without a word, the journal claiming a page no clone gets. The re-lint
        takes the writer's files as tracked; git's status of them (``probe``) says which it
        ignores."""
        created = {p for p in paths if self.old.get(p) is None and self.texts.get(p) is not None}
        if not created:
            return
        if probe is None:
            from wikiengine.lint.gitview import ignored_paths

            ignored = ignored_paths(self.root, sorted(created))
        else:
            ignored = probe.ignored() & created
        if ignored:
            if probe is not None:
                probe.close()
            self._undo_write(paths, record)
            raise LaneWriteRefused(f"refused: git ignores {', '.join(sorted(ignored)[:3])} (a .gitignore pattern), "
                                   "so the commit would leave it out; nothing committed")

    def _undo_write(self, paths: list[str], record: Path) -> None:
        """Put back the old texts of the files a failed write may have replaced (each was
        replaced whole or not at all) and drop its record; a path that cannot be put back
        either is left to the record-less state, which is its old text or its new one."""
        for rel in paths:
            try:
                path = self.root / rel
                if (self.texts[rel] is None and not path.exists()) or (
                        path.is_file() and path.read_text(encoding="utf-8") == self.texts[rel]):
                    _restore(self.root, {rel: self.old.get(rel)})
            except OSError:
                pass
        record.unlink(missing_ok=True)

    def _relint(self, paths: list[str], record: Path, message: str, probe: CommitProbe):
        """``(paths, probe)`` to commit once the written files are judged: refused (the old
        texts put back) when the write added a finding; with the lint baseline when the
        write fixed findings it accepted (their entries pruned, in the same commit)."""
        live = [p for p in paths if self.texts.get(p) is not None]  # a removed file has nothing to lint
        try:
            # the pages: a journal or RESULTS.tsv is no markdown page (`wiki lint` skips them too);
            # the cross-file rules read them from disk, the old ones too when the old texts are linted
            after = lint_paths(self.root, [p for p in live if p.endswith(".md")], committing=frozenset(live))
        except BaseException:
            probe.close()
            raise
        if not after.findings:
            return paths, probe
        probe.settle()  # were they there before? Linting the old texts swaps files under the probe
        try:
            problems = introduced(self.root, live, self.old, after)
        except BaseException:
            probe.close()
            raise
        if problems:
            probe.close()
            _restore(self.root, {p: self.old.get(p) for p in paths})
            record.unlink(missing_ok=True)
            raise LaneWriteRefused(
                "refused: the write would leave lint findings (nothing committed): " + "; ".join(problems[:5])
            )
        baseline = pruned_baseline(self.root, after)
        if baseline is None:
            return paths, probe
        probe.close()  # the baseline joins the commit: its questions are asked again
        files = {p: self.texts[p] for p in paths} | baseline
        _write_record(record, message, files)
        _apply(self.root, baseline)
        return sorted(files), None


def disk_text(root: Path, rel: str) -> str | None:
    """The text of ``rel`` on disk (None: absent), read the one safe way: a regular file inside
    the repository, within its kind's size cap, valid UTF-8."""
    return repo_text(root, rel, "journal" if rel.endswith(".jsonl") else "page")


def lane_key(lane: Lane) -> str:
    """The name of a lane's records (a kernel family's pseudo-lane too)."""
    return f"{lane.model_dir}__{lane.name}"


def record_path(root: Path, key: str) -> Path:
    """The write record of ``key``: inside the git directory, never a stray file in the tree."""
    return git_dir(root) / "wiki-lane" / f"{key}.txn.json"


def redo_path(root: Path, lane: Lane) -> Path:
    return record_path(root, lane_key(lane))


def lock_path(root: Path, lane: Lane) -> Path:
    return git_dir(root) / "wiki-lane" / f"{lane_key(lane)}.lock"


class UndoRecord:
    """The record of a write whose effects are undone, not finished, when it dies: the texts
    ``paths`` had before it (a relay wake writes memory file by file, and every effect outside
    memory happens only after a commit that records its intent, so the last commit is always a
    consistent state to resume from). Closed when the write is committed."""

    def __init__(self, root: Path, key: str, paths: list[str], note: str):
        self.root, self.paths, self.note = root, paths, note
        self.path = record_path(root, key)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.checkpoint()

    def checkpoint(self) -> None:
        """Record the texts as they are now (at the start, and after each commit of the write)."""
        self.before = {rel: disk_text(self.root, rel) for rel in self.paths}
        atomic_write_text(self.path, json.dumps({"policy": UNDO, "note": self.note, "before": self.before}))

    def unchanged(self) -> bool:
        """Do ``paths`` hold the texts of the last checkpoint (nothing written since: nothing to commit)?"""
        return all(disk_text(self.root, rel) == text for rel, text in self.before.items())

    def close(self) -> None:
        self.path.unlink(missing_ok=True)


@dataclass(frozen=True)
class Recovered:
    """What :func:`recover` did: a redo record replayed as ``commit``, or an undo record's
    writes discarded (``note`` says which write died)."""

    policy: str
    commit: str | None = None
    note: str = ""


def _confine_all(root: Path, rels) -> None:
    """Refuse before anything is written when one of ``rels`` leaves the repository."""
    for rel in rels:
        confined(root / rel, root, rel)


def _apply(root: Path, texts: dict[str, str | None]) -> None:
    _confine_all(root, texts)
    for rel, text in texts.items():
        path = root / rel
        if text is None:
            path.unlink(missing_ok=True)
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(path, text)


def _restore(root: Path, texts: dict[str, str | None]) -> None:
    for rel, text in texts.items():
        if text is None:
            (root / rel).unlink(missing_ok=True)
        else:
            atomic_write_text(root / rel, text)


def _commit(root: Path, paths: list[str], message: str, probe=None) -> str | None:
    from wikiengine.core.git import commit_paths

    return commit_paths(root, paths, message, probe)


def recover(root: Path, key: str) -> Recovered | None:
    """Finish or undo the write a killed writer left under ``key`` (its lock held): a redo
    record is replayed and committed, an undo record's files get their old texts back."""
    record = record_path(root, key)
    if not record.is_file():
        return None
    try:
        data = load_json(read_text(record, kind="record"), record)
        policy = data.get("policy", REDO)
        if policy == UNDO:
            before, note = dict(data["before"]), str(data["note"])
        else:
            files, message = dict(data["files"]), str(data["message"])
    except (PageError, OSError, ValueError, KeyError, TypeError, AttributeError):
        record.unlink(missing_ok=True)  # torn before its fsync: nothing was written after it
        return None
    sweep_temp_files({(root / rel).parent for rel in (before if policy == UNDO else files)})  # the killed write's
    if policy == UNDO:
        _restore(root, before)
        record.unlink(missing_ok=True)
        return Recovered(UNDO, note=note)
    _apply(root, files)
    sha = _commit(root, sorted(files), message)
    record.unlink(missing_ok=True)
    return Recovered(REDO, commit=sha)


def lint_paths(root: Path, paths: list[str], codes: set[str] | None = None, facts: dict | None = None,
               walked: tuple | None = None, committing: frozenset[str] = frozenset()):
    """The lint of ``paths`` (cross-file rules see the whole wiki), its findings and the
    ones before the baseline only those on ``paths``; ``codes``: by those rules only;
    ``facts``, ``walked``: the other pages' facts and the wiki's files as another lint of this
    moment found them; ``committing``: what the writer commits once the lint passes."""
    from wikiengine.lint.runner import lint

    config = None
    if codes is not None:
        from dataclasses import replace

        from wikiengine.lint.config import load_config

        config = load_config(root)
        config = replace(config, select=sorted(code for code in codes if config.enabled(code)))
    result = lint(root, paths, config, base=None, use_baseline=True, jobs=1, facts=facts, walked=walked,
                  committing=committing)
    result.findings = [f for f in result.findings if f.path in paths]
    result.unfiltered = [f for f in result.unfiltered if f.path in paths]
    return result


def introduced(root: Path, paths: list[str], old: dict[str, str | None], after) -> list[str]:
    """Which of the findings of the lint ``after`` the write introduced (one the old texts had
    too is not the writer's: pre-existing problems are ``wiki lint``'s to report). A finding on
    a file the write created is; for the others the old texts of every written file are put in
    place and the files with findings linted, by the rules that found something after the
    write only (every rule when an unused suppression is among them: it is judged against the
    rules that ran), against the other pages and the files as ``after`` found them (a page edited
    between the two lints is no difference of the write's), then the new texts are put back."""
    from wikiengine.lint.baseline import STALE_CODE
    from wikiengine.lint.suppress import UNUSED_CODE

    existed = {p for p in paths if old.get(p) is not None}
    found = [f for f in after.findings if f.path in existed and f.code != STALE_CODE]
    if not found:
        return added([], after.findings)
    codes = {f.code for f in found}
    written = set(paths)  # their facts are the new texts': asked again of the old ones
    facts = {table: {rel: value for rel, value in values.items() if rel not in written}
             for table, values in after.page_facts.items()}
    with old_texts_in_place(root, paths, old):
        # only the files a finding is on: a finding elsewhere in the old texts has no finding after to match
        before = lint_paths(root, sorted({f.path for f in found}), None if UNUSED_CODE in codes else codes, facts,
                            _walked_before(after.walked, paths, old)).findings
    return added(before, after.findings)


def _walked_before(walked: tuple, paths: list[str], old: dict[str, str | None]) -> tuple | None:
    """The files the wiki had before the write of ``paths``, from ``walked`` (the lint's after
    it): the pages the write created left out; None (walk again) when it deleted a page."""
    if not walked:
        return None
    files, linked = walked
    if any(old.get(rel) is not None and rel.endswith(".md") and rel not in files for rel in paths):
        return None
    created = {rel for rel in paths if old.get(rel) is None}
    return [rel for rel in files if rel not in created], linked


@contextmanager
def old_texts_in_place(root: Path, paths: list[str], old: dict[str, str | None]):
    """The texts ``paths`` had before the write, on disk for the duration (a file the write
    created is absent). The written files are renamed aside and back, never rewritten: the
    files committed are the ones the write synced, and only their folders are synced again.
    The old texts are not synced: a writer killed meanwhile leaves its redo record, whose
    replay writes the new texts (the files set aside are temp files the next holder sweeps)."""
    _confine_all(root, paths)
    aside: dict[str, Path | None] = {}
    try:
        for rel in paths:
            path = root / rel
            moved = temp_name(path) if os.path.lexists(path) else None
            if moved is not None:
                os.rename(path, moved)
            aside[rel] = moved
            if old.get(rel) is not None:
                atomic_write_text(path, old[rel], durable=False)
        yield
    finally:
        for rel, moved in aside.items():
            if moved is not None:
                os.replace(moved, root / rel)
            else:
                (root / rel).unlink(missing_ok=True)
        for folder in {(root / rel).parent for rel in aside}:
            fsync_dir(folder)


def added(before: list, after: list) -> list[str]:
    """The findings of ``after`` that ``before`` does not have, compared by identity (code,
    path, subject: never a line number, which an entry prepended above shifts), each
    counted; a stale baseline entry (WK101) is never one: the write fixed what it accepted."""
    from wikiengine.lint.baseline import STALE_CODE

    left = Counter(f.identity() for f in before)
    found = []
    for finding in sorted(after):
        if finding.code == STALE_CODE:
            continue
        if left[finding.identity()] > 0:
            left[finding.identity()] -= 1
        else:
            found.append(finding.render())
    return found


def pruned_baseline(root: Path, after) -> dict[str, str] | None:
    """``{baseline file: new text}`` when the lint ``after`` found baseline entries the write
    fixed (WK101), cut down to what still matches; None when there are none."""
    from wikiengine.lint import baseline as baseline_mod

    stale = [f for f in after.findings if f.code == baseline_mod.STALE_CODE]
    if not stale:
        return None
    accepted = baseline_mod.load(root / baseline_mod.BASELINE_FILE)
    kept = baseline_mod.pruned(accepted, stale, after.unfiltered)
    if kept == accepted:
        return None
    return {baseline_mod.BASELINE_FILE: baseline_mod.render(kept)}


def _write_record(record: Path, message: str, files: dict[str, str | None]) -> None:
    atomic_write_text(record, json.dumps({"policy": REDO, "message": message, "files": files}))


class LaneLock:
    """The lane's write lock, held for a whole write (``with LaneLock(root, lane):``);
    on entry it replays a killed writer's redo record."""

    POLL_S = 0.01

    def __init__(self, root: Path, lane: Lane, timeout: float = LOCK_TIMEOUT_S):
        self.path = lock_path(root, lane)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.root, self.lane, self.recovered, self.timeout = root, lane, None, timeout
        self._lock: FileLock | None = None

    def __enter__(self) -> LaneLock:
        busy = f"lane {self.lane.model_dir}/{self.lane.name} is locked by another writer"
        self._lock = FileLock(self.path, timeout=self.timeout, poll=self.POLL_S, busy=busy).acquire()
        try:
            sweep_temp_files(self.root / rel for rel in (self.lane.dir, f"{self.lane.dir}/experiments", "memory", "wiki"))
            done = recover(self.root, lane_key(self.lane))
            self.recovered = done.commit if done else None
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        self._lock.release()  # closing the descriptor releases the flock
        self._lock = None
