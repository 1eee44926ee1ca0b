"""Kaggle compute (extra ``kaggle``), driven through the Kaggle client's ``kagglesdk`` API.

:class:`KaggleCompute` implements :class:`executors.compute.ComputeBackend`:

- a launch is one ``SaveKernel`` with the whole envelope every time: the slug, the
  rendered bootstrap as text, language ``python``, kernel type ``script``, the T4 x2
  machine shape plus ``enableGpu``, private, internet on, the session timeout and
  ``SAVE_AND_RUN_ALL``. ``newTitle`` is sent only for a kernel that does not exist yet,
  and equals the slug's suffix (a title on an existing kernel would rename its slug);
- the returned ref is what is polled and recorded, with the version, the kernel id and
  the server's submission time;
- before the push a claim is written (a small JSON record whose path the caller
  chooses). Until its kernel version has been seen in status, or a TTL has passed, the
  claim blocks every new launch (Kaggle shows a new session late); so does any session
  of the account seen alive or whose status is unknown;
- a failed status call is ``UNKNOWN``; only a 404 after the TTL is ``GONE``; a capacity
  refusal ("Maximum batch GPU session count ... reached") raises
  :class:`CapacityError` once, never retried here; a message-less API error becomes a
  message naming the request;
- reads (status, log, quota, listing) retry with backoff under a deadline
  (:mod:`wikiengine.executors.http_policy`); the push never retries (a lost answer may have
  launched: the claim decides on the next wake).

Credentials are the client's usual ones (``KAGGLE_USERNAME``/``KAGGLE_KEY``, a
``kaggle.json`` in ``KAGGLE_CONFIG_DIR`` or ``~/.kaggle``, or ``KAGGLE_API_TOKEN``); they
are never configured here, and never appear in a record or a message.
"""

from __future__ import annotations

import datetime as dt
import email.utils
import json
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import TypeVar

from wikiengine.core.atomic import atomic_write_json
from wikiengine.core.clock import parse_utc, utc_iso, utcnow
from wikiengine.core.secrets import redact, safe_message
from wikiengine.executors.compute import (
    CapacityError,
    ComputeError,
    ComputeUnavailableError,
    LaunchRecord,
    LaunchRequest,
    Quota,
    SessionState,
    SessionStatus,
)
from wikiengine.executors.http_policy import (
    RETRY_STATUSES,
    DeadlineExceeded,
    RetriesExhausted,
    RetryPolicy,
    Transient,
    call_with_retries,
    remaining_time,
    retry_after_seconds,
)

T = TypeVar("T")
T4_X2 = "NvidiaTeslaT4"  # the client's accelerator name for "GPU T4 x2"
REFUSE_WINDOW_S = 120.0
MAX_SESSION_S = 12 * 3600  # Kaggle stops a session at 12 h
CAPACITY_MARKERS = re.compile(
    r"(?i)maximum (batch )?(gpu|tpu)? ?session count|too many (gpu|tpu|concurrent)? ?sessions"
)
_SLUG = re.compile(r"^[a-z0-9][a-z0-9-]{2,49}$")
_SECRET_KEYS = ("key", "kaggle_key", "token", "api_token", "password")
_STATES = {
    "QUEUED": SessionState.QUEUED,
    "NEW_SCRIPT": SessionState.QUEUED,
    "RUNNING": SessionState.RUNNING,
    "CANCEL_REQUESTED": SessionState.RUNNING,  # still holds the GPU until acknowledged
    "COMPLETE": SessionState.COMPLETE,
    "ERROR": SessionState.ERROR,
    "CANCEL_ACKNOWLEDGED": SessionState.CANCELLED,
}


class LaunchBlockedError(ComputeError):
    """A launch was refused before any push: a session is alive, unknown, or not yet visible."""


@dataclass(frozen=True)
class SessionExit:
    """How an ended session ended, from its status and its log's server-side timestamps."""

    state: SessionState
    runtime_s: float | None  # the last log entry's time: seconds since the session started
    refused_to_start: bool  # ended inside the refuse window: it never really ran
    reason: str  # outside text: quote it, never parse it as memory


def classify_exit(status: SessionStatus, log_text: str, *, refuse_window_s: float = REFUSE_WINDOW_S) -> SessionExit:
    """Classify an ended session: REFUSED_TO_START when it exited within ``refuse_window_s``.

    The runtime comes from the log's own ``time`` stamps (seconds since the container
    started, stamped by the server), so the agent's clock plays no part. An error with
    no log at all never started either. The reason is the log's last lines, or the
    platform's failure message.
    """
    entries = parse_log(log_text)
    times = [entry["time"] for entry in entries if isinstance(entry.get("time"), int | float)]
    runtime = max(times) if times else None
    if runtime is None:
        refused = status.state == SessionState.ERROR
    else:
        refused = runtime <= refuse_window_s
    lines = [line for entry in entries for line in str(entry.get("data", "")).splitlines() if line.strip()]
    reason = "\n".join(lines[-5:]) or (status.failure_message or "") or "no log and no failure message"
    return SessionExit(status.state, runtime, refused and status.state.ended, reason)


def parse_log(log_text: str) -> list[dict]:
    """Kaggle's session log (a JSON list of ``{stream_name, time, data}``); plain text becomes one entry."""
    text = (log_text or "").strip()
    if not text:
        return []
    try:
        entries = json.loads(text)
    except ValueError:
        return [{"stream_name": "stdout", "data": log_text}]
    if not isinstance(entries, list):
        return [{"stream_name": "stdout", "data": log_text}]
    return [e for e in entries if isinstance(e, dict)]


@dataclass
class Claim:
    """One launch, written before the push and updated with what the push returned."""

    slug: str
    requested_at: str
    state: str = "pending"  # pending -> seen -> closed
    ref: str | None = None
    version: int | None = None
    kernel_id: str | None = None
    submitted_at: str | None = None
    closed_reason: str | None = None


class LaunchClaims:
    """The claim record: a JSON list of :class:`Claim`, replaced atomically on each change."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> list[Claim]:
        try:
            raw = json.loads(self.path.read_text())
        except FileNotFoundError:
            return []
        except ValueError:
            raise ComputeError(f"{self.path}: launch claims are not valid JSON; inspect it before launching") from None
        try:
            return [Claim(**item) for item in raw]
        except TypeError:
            raise ComputeError(
                f"{self.path}: launch claims have an unexpected shape; inspect it before launching"
            ) from None

    def save(self, claims: list[Claim]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(self.path, [asdict(c) for c in claims], indent=1)

    def open_claims(self) -> list[Claim]:
        return [c for c in self.load() if c.state != "closed"]

    def update(self, slug: str, requested_at: str, **changes) -> None:
        claims = self.load()
        for claim in claims:
            if claim.slug == slug and claim.requested_at == requested_at:
                for key, value in changes.items():
                    setattr(claim, key, value)
        self.save(claims)


def split_ref(ref: str) -> tuple[str, str, int | None]:
    """``owner/slug[/version]`` (also ``/code/owner/slug`` or a kernel URL) -> parts."""
    path = re.sub(r"^[a-z]+://[^/]+", "", ref.strip()).strip("/")
    if path.startswith("code/"):
        path = path[len("code/"):]
    parts = path.split("/")
    if len(parts) not in (2, 3) or not all(parts):
        raise ComputeError(f"not a kernel reference (owner/slug): {ref!r}")
    version = int(parts[2].lstrip("v")) if len(parts) == 3 and parts[2].lstrip("v").isdigit() else None
    return parts[0], parts[1], version


def _credentials() -> tuple[str | None, str | None]:
    """(username, key) the way the Kaggle client finds them: environment first, then kaggle.json."""
    username, key = os.environ.get("KAGGLE_USERNAME"), os.environ.get("KAGGLE_KEY")
    if username and key:
        return username, key
    candidates = []
    if os.environ.get("KAGGLE_CONFIG_DIR"):
        candidates.append(Path(os.environ["KAGGLE_CONFIG_DIR"]))
    candidates.append(Path.home() / ".kaggle")
    candidates.append(Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "kaggle")
    for folder in candidates:
        try:
            data = json.loads((folder / "kaggle.json").read_text())
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            return username or data.get("username"), key or data.get("key")
    return username, key


class KaggleCompute:
    """Kaggle kernels as the compute backend (see the module docstring)."""

    def __init__(
        self,
        owner: str,
        *,
        claims_path: Path,
        machine_shape: str = T4_X2,
        slug_prefix: str | None = None,
        max_session_s: int = MAX_SESSION_S,
        claim_ttl_s: float = 900.0,
        refuse_window_s: float = REFUSE_WINDOW_S,
        list_limit: int = 20,
        policy: RetryPolicy | None = None,
        clock: Callable[[], dt.datetime] = utcnow,
    ):
        if not owner:
            raise ComputeError("kaggle: no owner: set 'owner' in the config or KAGGLE_USERNAME")
        self.owner = owner
        self.machine_shape = machine_shape
        self.slug_prefix = slug_prefix
        self.max_session_s = max_session_s
        self.claims = LaunchClaims(claims_path)
        self.claim_ttl_s = claim_ttl_s
        self.refuse_window_s = refuse_window_s
        self.list_limit = list_limit
        self.policy = policy or RetryPolicy()
        self.clock = clock
        self._server_date: dt.datetime | None = None

    @classmethod
    def from_config(cls, config: Mapping, root: Path) -> KaggleCompute:
        """Build from the run config's compute mapping: ``owner`` (or ``username``; default the
        client's username), ``machine_shape``, ``claims_file`` (relative to ``root``),
        ``slug_prefix`` (launches only ``owner/<prefix><N>``), ``max_session_s``, ``claim_ttl_s``,
        ``deadline_s``, ``request_timeout_s``, ``max_attempts``, ``base_wait_s``. A key in the config is
        refused."""
        for name in _SECRET_KEYS:
            if name in config:
                raise ComputeError(f"kaggle: '{name}' must not be in the config; set KAGGLE_KEY or use kaggle.json")
        defaults = RetryPolicy()
        policy = RetryPolicy(
            deadline_s=float(config.get("deadline_s", defaults.deadline_s)),
            request_timeout_s=float(config.get("request_timeout_s", defaults.request_timeout_s)),
            max_attempts=int(config.get("max_attempts", defaults.max_attempts)),
            base_wait_s=float(config.get("base_wait_s", defaults.base_wait_s)),
        )
        owner = config.get("owner") or config.get("username") or _credentials()[0]
        return cls(
            owner,
            claims_path=Path(root) / config.get("claims_file", ".wiki/kaggle-claims.json"),
            machine_shape=config.get("machine_shape", T4_X2),
            slug_prefix=config.get("slug_prefix"),
            max_session_s=int(config.get("max_session_s", MAX_SESSION_S)),
            claim_ttl_s=float(config.get("claim_ttl_s", 900)),
            policy=policy,
        )

    # ------------------------------------------------------------------ transport
    def _client(self):
        """A kagglesdk client for this call, every request bounded by our deadline."""
        try:
            import requests.adapters
            from kagglesdk import KaggleClient
            from kagglesdk.kaggle_env import get_env
        except ImportError:
            raise ComputeError(
                "the Kaggle backend needs the 'kaggle' extra: pip install 'wikiengine[kaggle]'"
            ) from None
        username, key = _credentials()
        if not key and not os.environ.get("KAGGLE_API_TOKEN"):
            raise ComputeError("kaggle: no credentials: set KAGGLE_USERNAME and KAGGLE_KEY, or write kaggle.json")
        timeout = self.policy.request_timeout_s

        class DeadlineAdapter(requests.adapters.HTTPAdapter):
            def send(self, request, **kwargs):
                kwargs["timeout"] = remaining_time(timeout)
                return super().send(request, **kwargs)

        client = KaggleClient(
            env=get_env(), verbose=False, username=username, password=key, response_processor=self._note_date
        )
        http = client.http_client()
        http._init_session()  # the SDK builds its requests session lazily; ours adds the deadline adapter
        session = http._session
        for prefix in ("http://", "https://"):
            session.mount(prefix, DeadlineAdapter())
        return client

    def _note_date(self, response) -> None:
        """Keep the server's Date header: submission times come from the server clock."""
        try:
            when = email.utils.parsedate_to_datetime(response.headers["Date"])
        except (KeyError, TypeError, ValueError):
            self._server_date = None
            return
        self._server_date = when if when.tzinfo else when.replace(tzinfo=dt.UTC)  # HTTP dates are GMT

    def _read(self, what: str, call: Callable) -> T:
        """A read-only API call with retries under the deadline; raises ComputeUnavailableError."""

        def once():
            client = self._client()
            with client:
                return call(client.kernels.kernels_api_client)

        try:
            return call_with_retries(once, what=what, policy=self.policy, classify=_classify)
        except (DeadlineExceeded, RetriesExhausted) as exc:
            raise ComputeUnavailableError(f"kaggle: {exc}") from None

    # ------------------------------------------------------------------ launch
    def launch(self, request: LaunchRequest) -> LaunchRecord:
        """Push one version with the full envelope, after checking that nothing blocks it."""
        from kagglesdk.kernels.types.kernels_api_service import ApiSaveKernelRequest
        from kagglesdk.kernels.types.kernels_enums import KernelExecutionType

        owner, name, _ = split_ref(request.slug)
        if owner != self.owner or not _SLUG.match(name):
            raise ComputeError(f"kaggle: slug must be '{self.owner}/<lowercase-name>', not {request.slug!r}")
        if self.slug_prefix and not re.fullmatch(re.escape(self.slug_prefix) + r"\d+", name):
            raise ComputeError(f"kaggle: {request.slug} is not one of this run's slugs ({self.slug_prefix}<N>)")
        if not 0 < request.session_timeout_s <= self.max_session_s:
            raise ComputeError(
                f"kaggle: session timeout {request.session_timeout_s} s is outside 1..{self.max_session_s} s"
            )
        if not request.script_text.strip():
            raise ComputeError(f"kaggle: launch of {request.slug}: the bootstrap text is empty")
        if request.title is not None and _slugify(request.title) != name:
            raise ComputeError(f"kaggle: title {request.title!r} would rename {request.slug}; it must equal {name!r}")
        client = self._client()  # first: a missing credential is a refusal, never an unknown launch
        exists = self._check_nothing_blocks(request.slug)

        requested_at = utc_iso(self.clock(), "auto")
        claims = self.claims.load()
        claims.append(Claim(slug=request.slug, requested_at=requested_at))
        self.claims.save(claims)  # write-ahead: a crash after the push still finds this claim

        save = ApiSaveKernelRequest()
        save.slug = request.slug
        save.new_title = None if exists else name
        save.text = request.script_text
        save.language = "python"
        save.kernel_type = "script"
        save.is_private = True
        save.enable_gpu = True
        save.enable_tpu = False
        save.enable_internet = True
        save.session_timeout_seconds = int(request.session_timeout_s)
        save.machine_shape = self.machine_shape
        save.kernel_execution_type = KernelExecutionType.SAVE_AND_RUN_ALL
        what = f"SaveKernel {request.slug}"
        try:
            with client:
                response = call_with_retries(
                    lambda: client.kernels.kernels_api_client.save_kernel(save),
                    what=what,
                    policy=self.policy,
                    classify=lambda exc: None,  # never re-push: a lost answer may have launched
                )
        except Exception as exc:  # noqa: BLE001 - mapped to one clear, secret-free error below
            raise self._launch_error(request.slug, requested_at, what, exc) from None
        if response.error:
            message = redact(str(response.error))
            if CAPACITY_MARKERS.search(message):
                self.claims.update(request.slug, requested_at, state="closed", closed_reason="capacity")
                raise CapacityError(f"kaggle: {what} refused for capacity: {message}")
            self.claims.update(request.slug, requested_at, state="closed", closed_reason="refused")
            raise ComputeError(f"kaggle: {what} refused: {message}")
        if not response.ref:
            raise ComputeUnavailableError(f"kaggle: {what} answered without a ref; the claim blocks until it is seen")
        r_owner, r_name, _ = split_ref(response.ref)
        ref = f"{r_owner}/{r_name}"
        submitted = self._server_date or self.clock()
        record = LaunchRecord(
            ref=ref,
            version=response.version_number,
            kernel_id=str(response.kernel_id) if response.kernel_id else None,
            submitted_at=submitted,
        )
        self.claims.update(
            request.slug, requested_at,
            ref=ref, version=record.version, kernel_id=record.kernel_id, submitted_at=utc_iso(submitted, "auto"),
        )
        return record

    def _launch_error(self, slug: str, requested_at: str, what: str, exc: BaseException) -> ComputeError:
        """The error for a failed push: a refusal closes the claim, an unknown outcome keeps it blocking."""
        import requests

        response = getattr(exc, "response", None)
        status = getattr(response, "status_code", None)
        message = redact(str(exc)).strip()
        if isinstance(exc, requests.HTTPError) and CAPACITY_MARKERS.search(message):
            self.claims.update(slug, requested_at, state="closed", closed_reason="capacity")
            return CapacityError(f"kaggle: {what} refused for capacity: {message.splitlines()[0]}")
        if isinstance(exc, requests.HTTPError) and status is not None and status < 500 and status not in (408, 429):
            self.claims.update(slug, requested_at, state="closed", closed_reason="refused")
            if not message:
                return ComputeError(
                    f"kaggle: {what} refused with HTTP {status} and no message "
                    "(check language, kernel type and, for a new kernel, the title)"
                )
            return ComputeError(f"kaggle: {what} refused (HTTP {status}): {message.splitlines()[0]}")
        return ComputeUnavailableError(
            f"kaggle: {what}: outcome unknown ({api_error(exc)}); the claim blocks relaunch until it is seen"
        )

    def _check_nothing_blocks(self, slug: str) -> bool:
        """Raise LaunchBlockedError if anything may be alive; return whether ``slug`` exists."""
        for claim in self.claims.open_claims():
            ref = claim.ref or claim.slug
            state = self.status(ref if claim.version is None else f"{ref}/{claim.version}").state
            if state.alive or state == SessionState.UNKNOWN:
                raise LaunchBlockedError(f"kaggle: launch blocked: earlier launch {ref} is {state.value}")
        try:
            sessions = self.list_sessions()
        except ComputeUnavailableError as exc:
            raise LaunchBlockedError(f"kaggle: launch blocked: the account's sessions cannot be listed ({exc})") \
                from None
        for ref, state in sessions:
            if state.alive or state == SessionState.UNKNOWN:
                raise LaunchBlockedError(f"kaggle: launch blocked: {ref} is {state.value}")
        own = self._raw_status(slug, None)
        if own.alive or own == SessionState.UNKNOWN:
            raise LaunchBlockedError(f"kaggle: launch blocked: {slug} is {own.value}")
        return own != SessionState.GONE

    # ------------------------------------------------------------------ status
    def status(self, ref: str) -> SessionStatus:
        """The state of the launch ``ref`` (see :meth:`_status`), with the version and kernel id our
        claim recorded from the push (so a launch adopted by a later wake records them too)."""
        found = self._status(ref)
        owner, name, version = split_ref(ref)
        claim = self._claim_for(f"{owner}/{name}", version)
        if claim is None or (claim.version is None and claim.kernel_id is None):
            return found
        return replace(found, version=claim.version, kernel_id=claim.kernel_id)

    def _status(self, ref: str) -> SessionStatus:
        """The state of the launch ``ref`` (``owner/slug`` or ``owner/slug/version``).

        A version we launched that is not visible yet counts as QUEUED until the claim's
        TTL passes; only then is a 404 GONE. A failed call is UNKNOWN, never GONE. For an
        ended session the log is read too: ``started_at``/``ended_at`` span the runtime its
        server-side timestamps show, and ``failure_message`` is the log's last line (the
        platform's message when there is no log).
        """
        owner, name, version = split_ref(ref)
        slug = f"{owner}/{name}"
        claim = self._claim_for(slug, version)
        if version is None and claim is not None:
            version = claim.version
        try:
            answer = self._read(
                f"GetKernelSessionStatus {slug}" + (f" v{version}" if version else ""),
                lambda api: api.get_kernel_session_status(_status_request(owner, name, version)),
            )
        except ComputeUnavailableError:
            return SessionStatus(SessionState.UNKNOWN)
        except Exception as exc:  # noqa: BLE001
            if getattr(getattr(exc, "response", None), "status_code", None) != 404:
                message = f"GetKernelSessionStatus {slug}: {api_error(exc)}"
                return SessionStatus(SessionState.UNKNOWN, failure_message=message)
            if claim is not None and claim.state == "pending" and not self._claim_expired(claim):
                return SessionStatus(SessionState.QUEUED, failure_message="launched, not yet visible in status")
            self._close(claim, "not visible before the claim's TTL")
            return SessionStatus(SessionState.GONE)
        answered_at = self._server_date
        state = _STATES.get(answer.status.name, SessionState.UNKNOWN)
        platform_message = answer.failure_message or None
        if claim is not None and state.alive and claim.state == "pending":
            self.claims.update(claim.slug, claim.requested_at, state="seen")
        if not state.ended:
            return SessionStatus(state, failure_message=platform_message)
        if claim is not None and claim.state == "pending" and version is None and not self._claim_expired(claim):
            # a push whose answer was lost: this ended session may be the kernel's previous version
            return SessionStatus(SessionState.QUEUED, failure_message="launched, outcome unknown, not yet seen")
        self._close(claim, state.value)
        return self._ended_status(f"{slug}/{version}" if version else slug, state, platform_message, claim,
                                  answered_at)

    def _ended_status(self, ref: str, state: SessionState, platform_message: str | None, claim: Claim | None,
                      answered_at: dt.datetime | None) -> SessionStatus:
        """An ended session with its runtime placed on the server's clock and its exit reason."""
        plain = SessionStatus(state, exit_code=0 if state == SessionState.COMPLETE else 1,
                              failure_message=platform_message)
        try:
            log = self._log(ref)
        except ComputeUnavailableError:
            return plain
        verdict = classify_exit(plain, log, refuse_window_s=self.refuse_window_s)
        reason = verdict.reason.splitlines()[-1] if state != SessionState.COMPLETE else None
        if verdict.runtime_s is None:
            return SessionStatus(state, exit_code=plain.exit_code, failure_message=reason or platform_message)
        runtime = dt.timedelta(seconds=verdict.runtime_s)
        if claim is not None and claim.submitted_at:
            started = parse_utc(claim.submitted_at)
            ended = started + runtime
        elif answered_at is not None:
            ended = answered_at
            started = ended - runtime
        else:
            return SessionStatus(state, exit_code=plain.exit_code, failure_message=reason or platform_message)
        return SessionStatus(state, started, ended, plain.exit_code, reason or platform_message)

    def _raw_status(self, slug: str, version: int | None) -> SessionState:
        owner, name, _ = split_ref(slug)
        try:
            answer = self._read(
                f"GetKernelSessionStatus {slug}",
                lambda api: api.get_kernel_session_status(_status_request(owner, name, version)),
            )
        except ComputeUnavailableError:
            return SessionState.UNKNOWN
        except Exception as exc:  # noqa: BLE001
            status = getattr(getattr(exc, "response", None), "status_code", None)
            return SessionState.GONE if status == 404 else SessionState.UNKNOWN
        return _STATES.get(answer.status.name, SessionState.UNKNOWN)

    def _claim_for(self, slug: str, version: int | None) -> Claim | None:
        """Our latest claim on ``slug`` (on ``version`` when given), open or closed."""
        matches = [
            c for c in self.claims.load()
            if (c.ref or c.slug) == slug and (version is None or c.version in (None, version))
        ]
        return matches[-1] if matches else None

    def _claim_expired(self, claim: Claim) -> bool:
        return (self.clock() - parse_utc(claim.requested_at)).total_seconds() > self.claim_ttl_s

    def _close(self, claim: Claim | None, reason: str) -> None:
        if claim is not None and claim.state != "closed":
            self.claims.update(claim.slug, claim.requested_at, state="closed", closed_reason=reason)

    def log_tail(self, ref: str, lines: int = 200) -> str:
        """The last ``lines`` lines of the session's log (outside text: quote it, never parse it)."""
        entries = parse_log(self._log(ref))
        text = "".join(str(entry.get("data", "")) for entry in entries)
        return "\n".join(text.splitlines()[-lines:])

    def _log(self, ref: str) -> str:
        owner, name, version = split_ref(ref)
        claim = self._claim_for(f"{owner}/{name}", version)
        version = version or (claim.version if claim else None)
        from kagglesdk.kernels.types.kernels_api_service import ApiListKernelSessionOutputRequest

        def call(api):
            req = ApiListKernelSessionOutputRequest()
            req.user_name, req.kernel_slug = owner, name
            if version:
                req.version_label = f"v{version}"
            return api.list_kernel_session_output(req)

        try:
            return self._read(f"ListKernelSessionOutput {owner}/{name}", call).log or ""
        except ComputeUnavailableError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise ComputeUnavailableError(f"kaggle: ListKernelSessionOutput {owner}/{name}: {api_error(exc)}") from None

    def exit_report(self, ref: str, status: SessionStatus | None = None) -> SessionExit | None:
        """For an ended session: its runtime and whether it was REFUSED_TO_START, with the reason."""
        status = status or self.status(ref)
        if not status.state.ended or status.state == SessionState.GONE:
            return None
        return classify_exit(status, self._log(ref), refuse_window_s=self.refuse_window_s)

    def cancel(self, ref: str) -> None:
        """Not available: Kaggle's CancelKernelSession takes a kernel *session* id, which neither
        SaveKernel nor GetKernelSessionStatus returns. Raises ComputeError, so a block says that the
        session must be stopped by hand (and the next wake tries again)."""
        raise ComputeError(f"kaggle: {ref} cannot be cancelled through the API (no kernel session id): "
                           "stop it from the kernel's page")

    # ------------------------------------------------------------------ quota and listing
    def quota(self) -> Quota:
        """GPU quota (hours used, hours allowed, refresh time). Raises ComputeUnavailableError."""
        from kagglesdk.kernels.types.kernels_api_service import ApiGetAcceleratorQuotaStatisticsRequest

        try:
            answer = self._read(
                "GetAcceleratorQuotaStatistics",
                lambda api: api.get_accelerator_quota_statistics(ApiGetAcceleratorQuotaStatisticsRequest()),
            )
        except ComputeUnavailableError:
            raise
        except Exception as exc:  # noqa: BLE001
            raise ComputeUnavailableError(f"kaggle: GetAcceleratorQuotaStatistics: {api_error(exc)}") from None
        gpu = answer.gpu_quota
        if gpu is None or gpu.time_used is None or gpu.total_time_allowed is None:
            raise ComputeUnavailableError("kaggle: quota answer has no GPU time used / allowed")
        refresh = answer.quota_refresh_time
        if refresh is not None and refresh.tzinfo is None:
            refresh = refresh.replace(tzinfo=dt.UTC)  # the SDK drops the Z
        return Quota(gpu.time_used.total_seconds() / 3600, gpu.total_time_allowed.total_seconds() / 3600, refresh)

    def list_sessions(self) -> list[tuple[str, SessionState]]:
        """The account's most recently run kernels with their states (a kernel whose status cannot be
        read is UNKNOWN). Raises ComputeUnavailableError when the listing itself cannot be read."""
        from kagglesdk.kernels.types.kernels_api_service import ApiListKernelsRequest
        from kagglesdk.kernels.types.kernels_enums import KernelsListSortType, KernelsListViewType

        def call(api):
            req = ApiListKernelsRequest()
            req.group = KernelsListViewType.PROFILE
            req.user = self.owner
            req.sort_by = KernelsListSortType.DATE_RUN
            req.page_size = self.list_limit
            return api.list_kernels(req)

        try:
            kernels = self._read(f"ListKernels {self.owner}", call).kernels
        except ComputeUnavailableError:
            raise  # the protocol's "unknown": never a stand-in row that a caller could read as "not listed"
        except Exception as exc:  # noqa: BLE001
            raise ComputeUnavailableError(f"kaggle: ListKernels {self.owner}: {api_error(exc)}") from None
        out = []
        for kernel in kernels[: self.list_limit]:
            ref = kernel.ref if "/" in (kernel.ref or "") else f"{self.owner}/{kernel.slug}"
            out.append((ref, self._raw_status(ref, None)))
        return out


def _status_request(owner: str, name: str, version: int | None):
    from kagglesdk.kernels.types.kernels_api_service import ApiGetKernelSessionStatusRequest

    req = ApiGetKernelSessionStatusRequest()
    req.user_name, req.kernel_slug = owner, name
    if version:
        req.version_label = f"v{version}"
    return req


def api_error(exc: BaseException) -> str:
    """One redacted line for a failed API call; an error without a message says so, with its status."""
    status = getattr(getattr(exc, "response", None), "status_code", None)
    message = redact(str(exc)).strip()
    if not message:
        return f"HTTP {status} with no message" if status else f"{type(exc).__name__} with no message"
    line = safe_message(exc)
    return f"HTTP {status}: {line}" if status else line


def _slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


def _classify(exc: BaseException) -> Transient | None:
    """Transient failures of a Kaggle read: 408/429/5xx and connection trouble."""
    import requests

    if isinstance(exc, requests.HTTPError):
        response = exc.response
        if response is not None and response.status_code in RETRY_STATUSES:
            return Transient(retry_after_seconds(response.headers))
        return None
    if isinstance(exc, requests.ConnectionError | requests.Timeout | requests.exceptions.ChunkedEncodingError):
        return Transient()
    return None

