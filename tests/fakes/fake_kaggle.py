"""A loopback Kaggle API for tests: the kernels calls ``kagglesdk`` makes, with faults.

Every call is ``POST /api/v1/kernels.KernelsApiService/<Method>`` with a camelCase JSON
body and HTTP Basic credentials (the legacy username + key), as ``kagglesdk`` sends in
the ``LOCALHOST`` environment. Served methods:

- ``SaveKernel``: creates a kernel (only with ``newTitle``: "New kernels must have a
  title specified"), or a new version of one; a ``newTitle`` whose slug differs renames
  the kernel, as Kaggle does; a missing ``language`` fails with a message-less error;
- ``GetKernelSessionStatus`` (optionally for ``versionLabel`` ``vN``): each poll moves a
  version one step along its scripted life (queued -> running -> complete/error); a
  version can stay invisible (404) for its first polls;
- ``ListKernelSessionOutput``: the version's log as Kaggle's JSON list of
  ``{"stream_name", "time", "data"}`` (``time`` in seconds since the session started);
- ``GetAcceleratorQuotaStatistics``: the GPU quota;
- ``ListKernels``: the account's kernels.

Faults are queued per method with :meth:`FakeKaggle.inject`: an HTTP status (with
``Retry-After``), a dropped connection, a stall, a capacity refusal, or a save that
lands and then drops the answer. Request headers are never stored.
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
import threading
import time
from collections import defaultdict, deque
from dataclasses import dataclass, field
from email.utils import format_datetime
from http.server import ThreadingHTTPServer

from tests.fakes.loopback import Dropped, LoopbackHandler, LoopbackServer

METHODS = (
    "SaveKernel",
    "GetKernelSessionStatus",
    "ListKernelSessionOutput",
    "GetAcceleratorQuotaStatistics",
    "ListKernels",
)
CAPACITY_MESSAGE = "Maximum batch GPU session count of 2 reached."


@dataclass(frozen=True)
class Fault:
    """``kind``: ``status`` (answer ``status`` + ``headers``, nothing done), ``drop`` (close the
    socket, nothing done), ``stall`` (sleep ``seconds`` first), ``capacity`` (refuse a save for
    capacity in the response's ``error``), ``capacity_http`` (the same refusal as an HTTP
    429 error), ``land_then_drop`` (save, then no answer),
    ``empty_error`` (HTTP 400 whose JSON has an empty ``message``)."""

    kind: str
    status: int = 500
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0


def status_fault(status: int, retry_after: int | None = None) -> Fault:
    headers = (("Retry-After", str(retry_after)),) if retry_after is not None else ()
    return Fault("status", status=status, headers=headers)


@dataclass
class Run:
    """The scripted life of one kernel version."""

    statuses: list[str] = field(default_factory=lambda: ["QUEUED", "RUNNING", "COMPLETE"])
    log: list[dict] = field(default_factory=lambda: [
        {"stream_name": "stdout", "time": 1.5, "data": "bootstrap: pointer at step 762\n"},
        {"stream_name": "stdout", "time": 9000.0, "data": "saved checkpoint 1524\n"},
    ])
    failure_message: str | None = None
    hidden_polls: int = 0  # status answers 404 for this many polls after the push


@dataclass
class Version:
    number: int
    request: dict
    run: Run
    submitted: dt.datetime
    polls: int = 0


@dataclass
class Kernel:
    id: int
    slug: str  # owner/name
    title: str
    versions: list[Version] = field(default_factory=list)


def slugify(title: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", title.lower()).strip("-")


class FakeKaggle(LoopbackServer):
    """In-memory Kaggle kernels plus the HTTP server (start with :meth:`start`)."""

    fake_attr = "fake"
    thread_name = "fake-kaggle"
    fault_points = METHODS

    def __init__(self, *, username: str, key: str):
        self.username = username
        self._basic = "Basic " + base64.b64encode(f"{username}:{key}".encode()).decode()
        self.kernels: dict[str, Kernel] = {}
        self.next_runs: deque[Run] = deque()
        self.faults: dict[str, deque[Fault]] = defaultdict(deque)
        self.saves: list[dict] = []  # every SaveKernel body that reached the handler
        self.calls: list[str] = []
        self.quota = {"used_s": 3600 * 7.5, "total_s": 3600 * 30, "refresh": "2026-12-05T00:00:00Z"}
        self.lock = threading.RLock()
        self.clock = lambda: dt.datetime.now(dt.UTC)
        self._ids = 1000
        self.server: ThreadingHTTPServer | None = None

    def add_kernel(self, slug: str, title: str | None = None, run: Run | None = None) -> Kernel:
        """An existing kernel (e.g. a human's) with one version already run."""
        with self.lock:
            self._ids += 1
            kernel = Kernel(self._ids, slug, title or slug.split("/", 1)[1])
            kernel.versions.append(Version(1, {}, run or Run(), self.clock()))
            self.kernels[slug] = kernel
            return kernel


class _KaggleHandler(LoopbackHandler):
    fake: FakeKaggle

    def _json(self, status: int, obj, headers: dict[str, str] | None = None):
        body = json.dumps(obj).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Date", format_datetime(self.fake.clock(), usegmt=True))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        self.wfile.write(body)

    def _error(self, status: int, message: str):
        self._json(status, {"code": status, "message": message})

    def do_POST(self):
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        match = re.fullmatch(r"/api/v1/kernels\.KernelsApiService/(\w+)", self.path)
        try:
            if not match or match.group(1) not in METHODS:
                self._error(404, f"no route {self.path}")
                return
            method = match.group(1)
            self.fake.calls.append(method)
            if self.headers.get("Authorization") != self.fake._basic:
                self._error(401, "Unauthenticated")
                return
            fault = self.fake.take_fault(method)
            if fault is not None:
                if fault.kind == "status":
                    self._json(fault.status, {"code": fault.status, "message": f"injected {fault.status}"},
                               dict(fault.headers))
                    return
                if fault.kind == "empty_error":
                    self._error(400, "")
                    return
                if fault.kind == "capacity_http":
                    self._error(429, CAPACITY_MESSAGE)
                    return
                if fault.kind == "drop":
                    self._drop()
                if fault.kind == "stall":
                    time.sleep(fault.seconds)
            body = json.loads(raw or b"{}")
            getattr(self, "_" + method)(body, fault)
        except Dropped:
            return
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    # -- methods ------------------------------------------------------------------------
    def _SaveKernel(self, body: dict, fault):
        fake = self.fake
        with fake.lock:
            fake.saves.append(body)
            if fault is not None and fault.kind == "capacity":
                self._json(200, {"ref": "", "url": "", "error": CAPACITY_MESSAGE})
                return
            if body.get("language") not in ("python", "r", "rmarkdown") or not body.get("kernelType"):
                self._error(400, "")  # Kaggle's message-less refusal (seed E-020)
                return
            slug = body.get("slug", "")
            if slug.count("/") != 1 or slug.split("/")[0] != fake.username:
                self._json(200, {"ref": "", "error": f"Kernel slug {slug} is not owned by {fake.username}"})
                return
            kernel = fake.kernels.get(slug)
            title = body.get("newTitle")
            if kernel is None:
                if not title:
                    self._json(200, {"ref": "", "error": "New kernels must have a title specified"})
                    return
                fake._ids += 1
                slug = f"{fake.username}/{slugify(title)}"  # the slug follows the title
                kernel = Kernel(fake._ids, slug, title)
                fake.kernels[slug] = kernel
            elif title and slugify(title) != slug.split("/", 1)[1]:
                del fake.kernels[slug]  # newTitle renames an existing kernel's slug
                kernel.slug, kernel.title = f"{fake.username}/{slugify(title)}", title
                fake.kernels[kernel.slug] = kernel
            run = fake.next_runs.popleft() if fake.next_runs else Run()
            version = Version(len(kernel.versions) + 1, body, run, fake.clock())
            kernel.versions.append(version)
        if fault is not None and fault.kind == "land_then_drop":
            self._drop()
        self._json(200, {
            "ref": f"/code/{kernel.slug}",
            "url": f"{fake.url}/code/{kernel.slug}",
            "versionNumber": version.number,
            "kernelId": kernel.id,
        })

    def _version(self, body: dict) -> tuple[Kernel | None, Version | None]:
        kernel = self.fake.kernels.get(f"{body.get('userName', '')}/{body.get('kernelSlug', '')}")
        if kernel is None or not kernel.versions:
            return kernel, None
        label = body.get("versionLabel")
        if label:
            number = int(label.lstrip("v"))
            return kernel, next((v for v in kernel.versions if v.number == number), None)
        return kernel, kernel.versions[-1]

    def _GetKernelSessionStatus(self, body: dict, fault):
        with self.fake.lock:
            kernel, version = self._version(body)
            if version is None:
                self._error(404, "Not found")
                return
            version.polls += 1
            if version.polls <= version.run.hidden_polls:
                earlier = kernel.versions[-2] if len(kernel.versions) > 1 else None
                if body.get("versionLabel") or earlier is None:
                    self._error(404, "Not found")
                else:  # unversioned polls see the previous session until the new one shows
                    self._json(200, {"status": earlier.run.statuses[-1]})
                return
            index = min(version.polls - version.run.hidden_polls - 1, len(version.run.statuses) - 1)
            status = version.run.statuses[index]
            answer = {"status": status}
            if status == "ERROR" and version.run.failure_message:
                answer["failureMessage"] = version.run.failure_message
        self._json(200, answer)

    def _ListKernelSessionOutput(self, body: dict, fault):
        with self.fake.lock:
            kernel, version = self._version(body)
            if version is None or version.polls <= version.run.hidden_polls:
                self._error(404, "Not found")
                return
            log = json.dumps(version.run.log)
        self._json(200, {"files": [], "log": log})

    def _GetAcceleratorQuotaStatistics(self, body: dict, fault):
        q = self.fake.quota
        self._json(200, {
            "quotaRefreshTime": q["refresh"],
            "gpuQuota": {"timeUsed": f"{int(q['used_s'])}s", "timeReserved": "0s",
                         "totalTimeAllowed": f"{int(q['total_s'])}s", "hasEverRun": True},
            "tpuQuota": {"timeUsed": "0s", "totalTimeAllowed": "72000s"},
        })

    def _ListKernels(self, body: dict, fault):
        user = body.get("user") or self.fake.username
        with self.fake.lock:
            kernels = [k for slug, k in sorted(self.fake.kernels.items()) if slug.startswith(user + "/")]
            items = [{"id": k.id, "ref": k.slug, "title": k.title, "author": user, "slug": k.slug.split("/")[1],
                      "currentVersionNumber": len(k.versions)} for k in kernels]
        self._json(200, {"kernels": items})


FakeKaggle.handler_class = _KaggleHandler  # defined after the fake it serves
