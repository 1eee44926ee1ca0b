"""The Hugging Face Hub checkpoint store (extra ``hub``), driven through ``huggingface_hub``.

:class:`HubStore` implements :class:`executors.store.CheckpointStore` on one branch of a
Hub repository (a dataset repo by default):

- reads are pinned: :meth:`HubStore.head` resolves the branch to a commit id once, and
  every later read names that id (``list_repo_commits``, ``list_repo_tree`` and
  ``hf_hub_download`` with ``revision=<sha>``); a download answered from another commit
  is refused, and every downloaded file is checked against the content hash the Hub
  gave for it (git blob sha1, or sha256 for LFS files), so a truncated or altered body
  never passes on its size;
- writes are one ``create_commit`` per logical commit with ``parent_commit`` set to the
  commit the writer last saw: the Hub answers 412 when the branch moved, which becomes
  :class:`StaleParentError` (a refusal, never a merge). ``upload_folder`` is not used
  because it may split a folder into several commits;
- after a commit error whose outcome is unknown (a 5xx, a dropped connection) the commit
  list is read again before any retry: a commit that landed but whose answer was lost is
  recognised by its parent, title and claim id and is not made twice;
- every call has a deadline and backs off on 408/429/5xx honouring ``Retry-After``
  (:mod:`wikiengine.executors.http_policy`); an exhausted call raises
  :class:`StoreUnavailableError`: unknown, never "gone".

The token is never configured here: ``huggingface_hub`` reads it from ``HF_TOKEN`` or
the usual token file at each request, and it never appears in a message of this module.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TypeVar

from wikiengine.core.secrets import safe_message
from wikiengine.executors.http_policy import (
    RETRY_STATUSES,
    DeadlineExceeded,
    RetriesExhausted,
    RetryPolicy,
    Transient,
    call_with_retries,
    current_deadline,
    remaining_time,
    retry_after_seconds,
)
from wikiengine.executors.store import (
    FINAL_PATH,
    POINTER_PATH,
    FileMissingError,
    Pointer,
    StaleParentError,
    StoreCommit,
    StoreError,
    StoreUnavailableError,
    checkpoint_message,
    checkpoint_path,
    final_message,
    pointer_message,
)

T = TypeVar("T")
CLAIM_PREFIX = "writer-claim: "
_REPO_TYPES = ("model", "dataset", "space")
_SECRET_KEYS = ("token", "hf_token", "password", "key")


def _hub():
    """Import huggingface_hub lazily, configured to talk only to our endpoint.

    Xet is off (its CAS transfers bypass our deadlines) and so is telemetry: with it on,
    building the user-agent header fetches an "agent harnesses" list from the default
    endpoint, a call to a host we were not asked to reach.
    """
    try:
        import huggingface_hub
        from huggingface_hub import constants
    except ImportError:
        raise StoreError("the Hub store needs the 'hub' extra: pip install 'wikiengine[hub]'") from None
    constants.HF_HUB_DISABLE_XET = True
    constants.HF_HUB_DISABLE_TELEMETRY = True
    return huggingface_hub


def _install_client_factory(request_timeout_s: float) -> None:
    """Give huggingface_hub's shared client a per-request timeout and our deadline.

    The default client has no timeout at all. Ours bounds every exchange by
    ``request_timeout_s`` and by what is left of the enclosing call's deadline, and stops
    the library's own retry loops (which may sleep for a server's ``Retry-After``) once the
    deadline has passed.
    """
    import httpx2
    import huggingface_hub
    from huggingface_hub.utils._http import hf_request_event_hook

    def deadline_hook(request) -> None:
        left = remaining_time(request_timeout_s)  # raises DeadlineExceeded when none is left
        request.extensions["timeout"] = {"connect": left, "read": left, "write": left, "pool": left}

    def retry_after_hook(response) -> None:
        deadline = current_deadline()
        if deadline is None or response.status_code not in RETRY_STATUSES:
            return
        wait = _server_wait(response.status_code, response.headers)
        if wait is not None and time.monotonic() + wait >= deadline:
            raise DeadlineExceeded(f"server asked to wait {wait:g} s, past the deadline")

    def factory():
        return httpx2.Client(
            event_hooks={"request": [hf_request_event_hook, deadline_hook], "response": [retry_after_hook]},
            follow_redirects=True,
            timeout=httpx2.Timeout(request_timeout_s),
        )

    huggingface_hub.set_client_factory(factory)


class HubStore:
    """A checkpoint store on one branch of a Hugging Face Hub repository."""

    def __init__(
        self,
        repo_id: str,
        *,
        repo_type: str = "dataset",
        branch: str = "main",
        endpoint: str | None = None,
        cache_dir: Path | None = None,
        policy: RetryPolicy | None = None,
    ):
        if repo_type not in _REPO_TYPES:
            raise StoreError(f"hub store: repo_type must be one of {', '.join(_REPO_TYPES)}, not {repo_type!r}")
        if repo_id.count("/") != 1 or not all(repo_id.split("/")):
            raise StoreError(f"hub store: repo_id must be 'owner/name', not {repo_id!r}")
        hub = _hub()
        self.repo_id = repo_id
        self.repo_type = repo_type
        self.branch = branch
        self.cache_dir = Path(cache_dir) if cache_dir is not None else None
        self.policy = policy or RetryPolicy()
        _install_client_factory(self.policy.request_timeout_s)
        # token=None: the library reads HF_TOKEN or the token file per request; we never hold it.
        self._api = hub.HfApi(endpoint=endpoint, token=None)

    @classmethod
    def from_config(cls, config: Mapping, root: Path) -> HubStore:
        """Build from the run config's store mapping (``repo_id``, ``repo_type``, ``branch``
        or ``revision``, ``endpoint``, ``cache_dir`` relative to ``root``, ``deadline_s``,
        ``request_timeout_s``, ``max_attempts``, ``base_wait_s``). A token in the config is refused."""
        for key in _SECRET_KEYS:
            if key in config:
                raise StoreError(
                    f"hub store: '{key}' must not be in the config; set HF_TOKEN or run `hf auth login`"
                )
        if not isinstance(config.get("repo_id"), str):
            raise StoreError("hub store: 'repo_id' (owner/name) is required")
        cache = config.get("cache_dir")
        defaults = RetryPolicy()
        policy = RetryPolicy(
            deadline_s=float(config.get("deadline_s", defaults.deadline_s)),
            request_timeout_s=float(config.get("request_timeout_s", defaults.request_timeout_s)),
            max_attempts=int(config.get("max_attempts", defaults.max_attempts)),
            base_wait_s=float(config.get("base_wait_s", defaults.base_wait_s)),
        )
        return cls(
            config["repo_id"],
            repo_type=config.get("repo_type", "dataset"),
            branch=config.get("branch", config.get("revision", "main")),
            endpoint=config.get("endpoint"),
            cache_dir=(Path(root) / cache) if cache else None,
            policy=policy,
        )

    # ------------------------------------------------------------------ plumbing
    def _call(self, what: str, fn: Callable[[], T]) -> T:
        """Run one Hub call under the retry policy, mapping failures to store errors."""
        from huggingface_hub.errors import (
            EntryNotFoundError,
            HfHubHTTPError,
            RepositoryNotFoundError,
            RevisionNotFoundError,
        )

        try:
            return call_with_retries(fn, what=what, policy=self.policy, classify=_classify)
        except (DeadlineExceeded, RetriesExhausted) as exc:
            raise StoreUnavailableError(f"hub {self.repo_id}: {exc}") from None
        except RepositoryNotFoundError:
            raise StoreError(
                f"hub {self.repo_id}: {what}: repository not found or not accessible with this token"
            ) from None
        except RevisionNotFoundError:
            raise StoreError(f"hub {self.repo_id}: {what}: revision not found") from None
        except EntryNotFoundError:  # the remote one: a local miss is classified transient above
            raise FileMissingError(f"hub {self.repo_id}: {what}: no such file") from None
        except StoreError:
            raise
        except HfHubHTTPError as exc:
            status = exc.response.status_code if exc.response is not None else None
            if status in (401, 403):
                raise StoreError(f"hub {self.repo_id}: {what}: not authorized ({status}); check HF_TOKEN") from None
            raise StoreUnavailableError(f"hub {self.repo_id}: {what}: {safe_message(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - anything else is an unknown answer, reported safely
            raise StoreUnavailableError(f"hub {self.repo_id}: {what}: {safe_message(exc)}") from None

    # ------------------------------------------------------------------ reads
    def head(self) -> str:
        """The commit id ``branch`` points at now (read from the repo's refs)."""

        def read() -> str:
            refs = self._api.list_repo_refs(self.repo_id, repo_type=self.repo_type)
            for ref in refs.branches:
                if ref.name == self.branch:
                    return ref.target_commit
            raise StoreError(f"hub {self.repo_id}: branch {self.branch!r} does not exist")

        return self._call(f"read refs of {self.branch}", read)

    def list_commits(self, revision: str) -> list[StoreCommit]:
        """History reachable from ``revision`` (every page), newest first."""
        items = self._call(
            f"list commits at {revision[:12]}",
            lambda: self._api.list_repo_commits(self.repo_id, repo_type=self.repo_type, revision=revision),
        )
        return [StoreCommit(item.commit_id, item.title, item.created_at) for item in items]

    def read_file(self, path: str, revision: str) -> bytes:
        """The bytes of ``path`` at ``revision``, checked against the Hub's content hash."""

        def download() -> bytes:
            local = self._api.hf_hub_download(
                self.repo_id,
                path,
                repo_type=self.repo_type,
                revision=revision,
                cache_dir=self.cache_dir,
                etag_timeout=remaining_time(self.policy.request_timeout_s),
            )
            return _checked_bytes(Path(local), path, revision)

        try:
            return self._call(f"download {path} at {revision[:12]}", download)
        except FileMissingError:
            raise FileMissingError(f"{path} does not exist at {revision[:12]}") from None

    def read_files(self, paths: list[str], revision: str) -> dict[str, bytes]:
        """The bytes of each of ``paths`` that exists at ``revision``: one download each."""
        found = {}
        for path in paths:
            try:
                found[path] = self.read_file(path, revision)
            except FileMissingError:
                continue
        return found

    def list_files(self, prefix: str, revision: str) -> list[str]:
        """Paths of the files under ``prefix`` at ``revision``, sorted; [] when there are none."""
        from huggingface_hub.hf_api import RepoFile

        folder = prefix.rstrip("/")

        def listing() -> list[str]:
            entries = self._api.list_repo_tree(
                self.repo_id, path_in_repo=folder or None, recursive=True, repo_type=self.repo_type, revision=revision
            )
            return sorted(e.path for e in entries if isinstance(e, RepoFile) and e.path.startswith(prefix))

        try:
            return self._call(f"list {folder or '/'} at {revision[:12]}", listing)
        except FileMissingError:
            return []

    def read_pointer(self, revision: str) -> Pointer | None:
        """The parsed ``latest.json`` at ``revision``; None when there is none yet."""
        try:
            return Pointer.from_bytes(self.read_file(POINTER_PATH, revision))
        except FileMissingError:
            return None

    def is_ancestor(self, ancestor: str, descendant: str) -> bool:
        """True when ``ancestor`` is in the history of ``descendant``."""
        return any(commit.id == ancestor for commit in self.list_commits(descendant))

    # ------------------------------------------------------------------ writes
    def commit_checkpoint(self, step: int, local_dir: Path, parent: str) -> str:
        """One commit of every file under ``local_dir`` as ``ckpt/checkpoint-<step>/``."""
        return self._commit_folder(checkpoint_path(step), local_dir, parent, checkpoint_message(step))

    def commit_final(self, step: int, local_dir: Path, parent: str) -> str:
        """One commit of every file under ``local_dir`` as ``final/`` (message ``final N``)."""
        return self._commit_folder(FINAL_PATH, local_dir, parent, final_message(step))

    def _commit_folder(self, base: str, local_dir: Path, parent: str, message: str) -> str:
        local_dir = Path(local_dir)
        files = sorted(p for p in local_dir.rglob("*") if p.is_file())
        if not files:
            raise StoreError(f"{local_dir}: no files to commit ({message})")
        items = [(f"{base}/{p.relative_to(local_dir).as_posix()}", p) for p in files]
        return self._commit(message, items, parent)

    def commit_pointer(self, step: int, parent: str) -> str:
        """One commit of ``latest.json`` naming ``ckpt/checkpoint-<step>``."""
        pointer = Pointer(step, checkpoint_path(step)).to_bytes()
        return self._commit(pointer_message(step), [(POINTER_PATH, pointer)], parent)

    def _commit(self, message: str, items: list[tuple[str, Path | bytes]], parent: str) -> str:
        """Compare-and-swap commit of ``items`` on ``parent``; never lands twice.

        Each attempt sends a fresh ``create_commit`` naming ``parent``. After any failure
        other than 412 the commit list is read again: if the head is a commit on
        ``parent`` with our title and claim id, it is ours (the answer was lost) and is
        returned; if the head is still ``parent`` the attempt is retried when the error
        was transient; any other head means another writer moved the branch.

        When every file is already on the Hub with the same content, the client sends no
        commit at all and answers with the branch's current head, without checking
        ``parent``: that answer is accepted only when it is ``parent`` itself (nothing to
        do) or a commit whose parent is ``parent``; otherwise the branch moved and the
        write is refused like a 412.
        """
        from huggingface_hub import CommitOperationAdd
        from huggingface_hub.errors import HfHubHTTPError

        claim = f"{CLAIM_PREFIX}{uuid.uuid4().hex}"
        state = {"error": None}

        def attempt() -> str:
            if state["error"] is not None:
                landed = self._find_landed(message, claim, parent)
                if landed is not None:
                    return landed
            try:
                operations = [CommitOperationAdd(path_in_repo=path, path_or_fileobj=src) for path, src in items]
                info = self._api.create_commit(
                    self.repo_id,
                    operations,
                    commit_message=message,
                    commit_description=claim,
                    repo_type=self.repo_type,
                    revision=self.branch,
                    parent_commit=parent,
                )
            except HfHubHTTPError as exc:
                if exc.response is not None and exc.response.status_code == 412:
                    raise StaleParentError(
                        f"hub {self.repo_id}: {self.branch} moved past {parent[:12]}; '{message}' refused (412)"
                    ) from None
                state["error"] = exc
                raise
            except Exception as exc:
                state["error"] = exc
                raise
            return info.oid if info.oid == parent else self._check_on_parent(info.oid, parent, message)

        def classify(exc: BaseException) -> Transient | None:
            if isinstance(exc, StoreError):
                return None
            return _classify(exc)

        try:
            return call_with_retries(attempt, what=f"commit '{message}'", policy=self.policy, classify=classify)
        except (DeadlineExceeded, RetriesExhausted) as exc:
            raise StoreUnavailableError(
                f"hub {self.repo_id}: {exc}; the commit list decides on the next wake"
            ) from None
        except StoreError:
            raise
        except Exception as exc:  # noqa: BLE001 - a refusal we cannot classify further
            landed = self._find_landed(message, claim, parent)
            if landed is not None:
                return landed
            raise StoreError(f"hub {self.repo_id}: commit '{message}' refused: {safe_message(exc)}") from None

    def _check_on_parent(self, oid: str, parent: str, message: str) -> str:
        """``oid`` when it is a commit made directly on ``parent``; StaleParentError otherwise."""
        commits = self._call(
            f"check commit {oid[:12]}",
            lambda: self._api.list_repo_commits(self.repo_id, repo_type=self.repo_type, revision=oid),
        )
        if len(commits) > 1 and commits[0].commit_id == oid and commits[1].commit_id == parent:
            return oid
        raise StaleParentError(
            f"hub {self.repo_id}: {self.branch} moved past {parent[:12]}; '{message}' was not committed on it"
        )

    def _find_landed(self, message: str, claim: str, parent: str) -> str | None:
        """The id of our commit if it landed on ``parent``; raise StaleParentError if another did."""
        commits = self._call(
            f"re-read commits of {self.branch}",
            lambda: self._api.list_repo_commits(self.repo_id, repo_type=self.repo_type, revision=self.branch),
        )
        if not commits or commits[0].commit_id == parent:
            return None
        for newer, older in zip(commits, commits[1:]):
            if older.commit_id == parent:
                if newer.title == message and claim in (newer.message or ""):
                    return newer.commit_id
                break
        raise StaleParentError(
            f"hub {self.repo_id}: {self.branch} moved past {parent[:12]} while committing '{message}'"
        )


def _classify(exc: BaseException) -> Transient | None:
    """Transient failures of a Hub call: 408/429/5xx answers and transport errors."""
    import httpx2
    from huggingface_hub.errors import HfHubHTTPError, LocalEntryNotFoundError

    if isinstance(exc, HfHubHTTPError) and exc.response is not None:
        if exc.response.status_code not in RETRY_STATUSES:
            return None
        return Transient(_server_wait(exc.response.status_code, exc.response.headers))
    if isinstance(exc, httpx2.TransportError | LocalEntryNotFoundError | _ContentMismatch):
        return Transient()
    if isinstance(exc, OSError) and "Consistency check failed" in str(exc):
        return Transient()
    return None


def _server_wait(status: int, headers) -> float | None:
    """Seconds the server asked us to wait: the 429 ratelimit reset, else ``Retry-After``."""
    from huggingface_hub.utils import parse_ratelimit_headers

    limit = parse_ratelimit_headers(headers)
    if status == 429 and limit is not None and limit.remaining == 0:
        return float(limit.reset_in_seconds)
    return retry_after_seconds(headers)


class _ContentMismatch(StoreUnavailableError):
    """A downloaded file does not hash to the Hub's recorded content hash."""


def git_blob_sha1(data: bytes) -> str:
    """The git object id of ``data`` as a blob (what the Hub's ETag names for a regular file)."""
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def _checked_bytes(local: Path, path: str, revision: str) -> bytes:
    """Read a downloaded file, checking the commit it came from and its content hash.

    The cache keeps ``snapshots/<commit>/<path>`` linking to ``blobs/<etag>``; the etag
    is the git blob sha1 (regular files) or the sha256 (LFS files) the Hub recorded. A
    mismatch removes the cached copy so that no later read can use it.
    """
    snapshot = local
    for _ in path.split("/"):
        snapshot = snapshot.parent
    if len(revision) == 40 and snapshot.name != revision:
        raise StoreUnavailableError(f"{path}: asked for commit {revision[:12]}, answered from {snapshot.name[:12]}")
    blob = local.resolve()
    data = blob.read_bytes()
    etag = blob.name
    if len(etag) == 64:
        actual = hashlib.sha256(data).hexdigest()
    elif len(etag) == 40:
        actual = git_blob_sha1(data)
    else:
        actual = etag  # an etag that is not a content hash: the manifest's sha256 is the check
    if actual != etag:
        for stale in (local, blob):
            stale.unlink(missing_ok=True)
        raise _ContentMismatch(f"{path} at {revision[:12]}: content hash {actual[:12]} != recorded {etag[:12]}")
    return data
