"""A loopback Hugging Face Hub for tests: the routes ``huggingface_hub`` uses, with faults.

Serves, for model/dataset/space repos held in memory with a linear history:

- ``GET /api/{t}s/{repo}/refs`` (branches with ``targetCommit``);
- ``GET /api/{t}s/{repo}/commits/{rev}`` with ``Link: <...>; rel="next"`` pagination;
- ``GET /api/{t}s/{repo}/tree/{rev}[/{path}]`` (``recursive``, paginated);
- ``GET /api/{t}s/{repo}[/revision/{rev}]`` (repo info with ``sha``);
- ``HEAD|GET /{prefix}{repo}/resolve/{rev}/{path}`` with ``ETag``, ``X-Repo-Commit``,
  ``Content-Length``, ``Range`` and ``X-Error-Code`` on 404;
- ``POST /api/{t}s/{repo}/preupload/{rev}``: ``lfs`` for weights-like files (``*.safetensors``,
  ``*.pt``, ``*.pth``, ``*.bin``) and files of 10 MB or more, ``regular`` otherwise, with the
  ``oid`` of a file that already exists (the client then skips it, and sends no commit at
  all when nothing changed);
- the LFS basic transfer: ``POST /{prefix}{repo}.git/info/lfs/objects/batch`` answering
  upload and verify actions on this server, ``PUT /lfs-upload/{oid}`` (refused unless the
  body hashes to ``oid``) and ``POST /lfs-verify``; an LFS file is served with its sha256
  as ``ETag``/``X-Linked-Etag`` and listed in the tree with its ``lfs`` block;
- ``POST /api/{t}s/{repo}/commit/{rev}``: the NDJSON commit, refusing with 412 when
  ``parentCommit`` is not the branch head;
- ``POST /api/repos/create`` and ``POST /api/validate-yaml`` (a README's metadata).

Faults are queued per route with :meth:`FakeHub.inject` and consumed one per request:
an HTTP status (429 with ``Retry-After``, 500, ...), a dropped connection, a stall, a
truncated body, or a commit that lands and then answers 500 or drops the socket.
A ``required_token`` makes every route answer 401 unless that bearer token is sent;
the server never logs or stores request headers.
"""

from __future__ import annotations

import base64
import datetime as dt
import hashlib
import json
import re
import threading
import time
import urllib.parse
from collections import defaultdict, deque
from dataclasses import dataclass, field
from http.server import ThreadingHTTPServer

from tests.fakes.loopback import Dropped, LoopbackHandler, LoopbackServer

ROUTES = ("refs", "commits", "tree", "info", "resolve_head", "resolve_get", "preupload", "commit", "create",
          "validate_yaml", "lfs_batch", "lfs_upload", "lfs_verify")
LFS_SUFFIXES = (".safetensors", ".pt", ".pth", ".bin")
LFS_MIN_SIZE = 10 * 1024 * 1024
_TYPES = {"models": "model", "datasets": "dataset", "spaces": "space"}
_PREFIX = {"model": "", "dataset": "datasets/", "space": "spaces/"}


@dataclass(frozen=True)
class Fault:
    """One injected misbehaviour.

    ``kind`` is one of ``status`` (answer ``status`` with ``headers`` and no work done),
    ``drop`` (close the socket without an answer, no work done), ``stall`` (sleep
    ``seconds`` then serve normally), ``truncate`` (send half the body of a download),
    ``corrupt`` (flip one bit of a download, same length),
    ``land_then_status`` / ``land_then_drop`` (a commit that is applied, then answered
    with ``status`` or not at all), ``call`` (run ``action`` first, then serve normally).
    """

    kind: str
    status: int = 500
    headers: tuple[tuple[str, str], ...] = ()
    seconds: float = 0.0
    action: object = None


def status_fault(status: int, retry_after: int | None = None) -> Fault:
    headers = (("Retry-After", str(retry_after)),) if retry_after is not None else ()
    return Fault("status", status=status, headers=headers)


@dataclass
class Commit:
    id: str
    parent: str | None
    title: str
    message: str
    date: dt.datetime
    files: dict[str, bytes]


@dataclass
class Repo:
    repo_id: str
    repo_type: str
    commits: list[Commit] = field(default_factory=list)  # oldest first
    branches: dict[str, str] = field(default_factory=dict)

    def commit(self, oid: str) -> Commit | None:
        return next((c for c in self.commits if c.id == oid), None)

    def resolve(self, rev: str) -> Commit | None:
        if rev in self.branches:
            return self.commit(self.branches[rev])
        return self.commit(rev) if re.fullmatch(r"[0-9a-f]{40}", rev) else None

    def history(self, head: Commit) -> list[Commit]:
        out, cur = [], head
        while cur is not None:
            out.append(cur)
            cur = self.commit(cur.parent) if cur.parent else None
        return out


def git_blob_sha1(data: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def is_lfs(path: str, size: int) -> bool:
    """Whether the fake stores ``path`` in LFS (as the Hub does for weights and large files)."""
    return size > 0 and (path.endswith(LFS_SUFFIXES) or size >= LFS_MIN_SIZE)


def lfs_pointer(data: bytes) -> bytes:
    oid = hashlib.sha256(data).hexdigest()
    return f"version https://git-lfs.github.com/spec/v1\noid sha256:{oid}\nsize {len(data)}\n".encode()


class FakeHub(LoopbackServer):
    """The in-memory Hub state plus its HTTP server (start with :meth:`start`)."""

    fake_attr = "hub"
    thread_name = "fake-hub"
    fault_points = ROUTES

    def __init__(self, *, page_size: int = 2, required_token: str | None = None):
        self.repos: dict[tuple[str, str], Repo] = {}
        self.page_size = page_size
        self.required_token = required_token
        self.faults: dict[str, deque[Fault]] = defaultdict(deque)
        self.requests: list[tuple[str, str]] = []  # (route, path) of every request served
        self.authenticated_requests = 0  # requests that carried an Authorization header (never its value)
        self.commit_posts = 0
        self.lfs_blobs: dict[str, bytes] = {}  # sha256 -> bytes uploaded through the LFS transfer
        self.lock = threading.RLock()
        self.clock = lambda: dt.datetime.now(dt.UTC)
        self._counter = 0
        self.server: ThreadingHTTPServer | None = None

    # -- state --------------------------------------------------------------------
    def create_repo(self, repo_id: str, repo_type: str = "dataset") -> Repo:
        """Create a repo with the Hub's initial commit (``.gitattributes``)."""
        with self.lock:
            repo = Repo(repo_id, repo_type)
            self.repos[(repo_type, repo_id)] = repo
            self.apply_commit(repo, "main", "initial commit", {".gitattributes": b"*.safetensors filter=lfs\n"}, [])
            return repo

    def repo(self, repo_id: str, repo_type: str = "dataset") -> Repo:
        return self.repos[(repo_type, repo_id)]

    def apply_commit(
        self, repo: Repo, branch: str, title: str, adds: dict[str, bytes], deletes: list[str], message: str = ""
    ) -> Commit:
        """Append a commit on ``branch`` (what a landed commit does; also used to move ``main`` in tests)."""
        with self.lock:
            head = repo.resolve(branch)
            files = dict(head.files) if head else {}
            for path in deletes:
                files = {p: b for p, b in files.items() if p != path and not p.startswith(path.rstrip("/") + "/")}
            files.update(adds)
            self._counter += 1
            seed = f"{repo.repo_id}|{head.id if head else ''}|{title}|{self._counter}|{time.time_ns()}"
            commit = Commit(
                id=hashlib.sha1(seed.encode()).hexdigest(),
                parent=head.id if head else None,
                title=title,
                message=message,
                date=self.clock(),
                files=files,
            )
            repo.commits.append(commit)
            repo.branches[branch] = commit.id
            return commit



class _HubHandler(LoopbackHandler):
    hub: FakeHub

    # -- plumbing -------------------------------------------------------------------
    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        if "Content-Length" not in (headers or {}):
            self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, status: int, obj, headers: dict[str, str] | None = None):
        self._send(status, json.dumps(obj).encode(), headers)

    def _error(self, status: int, code: str | None, message: str, extra: dict[str, str] | None = None):
        headers = {"X-Error-Message": message, **(extra or {})}
        if code:
            headers["X-Error-Code"] = code
        self._json(status, {"error": message}, headers)

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def do_GET(self):
        self._dispatch()

    def do_HEAD(self):
        self._dispatch()

    def do_POST(self):
        self._dispatch()

    def do_PUT(self):
        self._dispatch()

    # -- routing ----------------------------------------------------------------------
    def _dispatch(self):
        parsed = urllib.parse.urlsplit(self.path)
        self.query = urllib.parse.parse_qs(parsed.query)
        path = parsed.path
        try:
            route, handler, args = self._route(self.command, path)
            if route is None:
                body = self._body()
                self._error(404, None, f"no route for {self.command} {path}")
                return
            self.hub.requests.append((route, path))
            if self.headers.get("Authorization") is not None:
                self.hub.authenticated_requests += 1
            body = self._body() if self.command in ("POST", "PUT") else b""
            if self.hub.required_token is not None and route != "lfs_upload":  # upload hrefs are presigned
                expected = f"Bearer {self.hub.required_token}"
                if self.headers.get("Authorization") != expected:
                    self._error(401, None, "Invalid credentials in Authorization header")
                    return
            fault = self.hub.take_fault(route)
            if fault is not None:
                if fault.kind == "status":
                    self._json(fault.status, {"error": f"injected {fault.status}"}, dict(fault.headers))
                    return
                if fault.kind == "drop":
                    self._drop()
                if fault.kind == "stall":
                    time.sleep(fault.seconds)
                if fault.kind == "call":
                    fault.action()
            handler(*args, body=body, fault=fault)
        except Dropped:
            return
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True

    def _route(self, method: str, path: str):
        api = re.fullmatch(r"/api/(models|datasets|spaces)/([^/]+/[^/]+)(?:/(.*))?", path)
        if method == "POST" and path == "/api/repos/create":
            return "create", self._create, ()
        if method == "POST" and path == "/api/validate-yaml":
            return "validate_yaml", self._validate_yaml, ()
        if method == "PUT" and path.startswith("/lfs-upload/"):
            return "lfs_upload", self._lfs_upload, (path.rsplit("/", 1)[1],)
        if method == "POST" and path == "/lfs-verify":
            return "lfs_verify", self._lfs_verify, ()
        batch = re.fullmatch(r"/(?:(datasets|spaces)/)?([^/]+/[^/]+)\.git/info/lfs/objects/batch", path)
        if batch and method == "POST":
            return "lfs_batch", self._lfs_batch, ()
        if api:
            rtype, repo_id, rest = _TYPES[api.group(1)], api.group(2), api.group(3) or ""
            verb, _, tail = rest.partition("/")
            table = {
                ("GET", "refs"): ("refs", self._refs),
                ("GET", "commits"): ("commits", self._commits),
                ("GET", "tree"): ("tree", self._tree),
                ("GET", "revision"): ("info", self._info),
                ("GET", ""): ("info", self._info),
                ("POST", "preupload"): ("preupload", self._preupload),
                ("POST", "commit"): ("commit", self._commit),
            }
            if (method, verb) in table:
                route, fn = table[(method, verb)]
                return route, fn, (rtype, repo_id, tail)
            return None, None, ()
        res = re.fullmatch(r"/(?:(datasets|spaces)/)?([^/]+/[^/]+)/resolve/([^/]+)/(.+)", path)
        if res and method in ("GET", "HEAD"):
            rtype = _TYPES[res.group(1)] if res.group(1) else "model"
            route = "resolve_head" if method == "HEAD" else "resolve_get"
            return route, self._resolve, (rtype, res.group(2), f"{res.group(3)}/{res.group(4)}")
        return None, None, ()

    def _repo(self, rtype: str, repo_id: str) -> Repo | None:
        repo = self.hub.repos.get((rtype, repo_id))
        if repo is None:
            self._error(404, "RepoNotFound", "Repository not found")
        return repo

    def _revision(self, repo: Repo, quoted_rev: str) -> Commit | None:
        commit = repo.resolve(urllib.parse.unquote(quoted_rev))
        if commit is None:
            self._error(404, "RevisionNotFound", f"Invalid rev id: {urllib.parse.unquote(quoted_rev)}")
        return commit

    def _commit_at(self, rtype: str, repo_id: str, quoted_rev: str) -> Commit | None:
        """The commit a revision names in a repository (None: the 404 is answered). Commits are
        never changed once made, so their files are read outside the lock."""
        repo = self._repo(rtype, repo_id)
        if repo is None:
            return None
        with self.hub.lock:
            return self._revision(repo, quoted_rev)

    def _page(self, items: list, make_link) -> tuple[list, dict[str, str]]:
        page = int(self.query.get("p", ["0"])[0])
        size = self.hub.page_size
        chunk = items[page * size : (page + 1) * size]
        headers = {}
        if (page + 1) * size < len(items):
            headers["Link"] = f'<{make_link(page + 1)}>; rel="next"'
        return chunk, headers

    def _self_url(self, path: str, **params) -> str:
        query = {k: v[0] for k, v in self.query.items() if k != "p"}
        query.update({k: str(v) for k, v in params.items()})
        return f"{self.hub.url}{path}?{urllib.parse.urlencode(query)}"

    # -- handlers -------------------------------------------------------------------------
    def _create(self, *, body: bytes, fault):
        req = json.loads(body)
        repo_id = f"{req['organization']}/{req['name']}" if req.get("organization") else req["name"]
        rtype = req.get("type", "model")
        if (rtype, repo_id) not in self.hub.repos:
            self.hub.create_repo(repo_id, rtype)
        self._json(200, {"url": f"{self.hub.url}/{_PREFIX[rtype]}{repo_id}", "name": repo_id})

    def _validate_yaml(self, *, body: bytes, fault):
        self._json(200, {"errors": [], "warnings": []})

    def _refs(self, rtype, repo_id, tail, *, body, fault):
        repo = self._repo(rtype, repo_id)
        if repo is None:
            return
        with self.hub.lock:
            branches = [{"name": n, "ref": f"refs/heads/{n}", "targetCommit": c} for n, c in repo.branches.items()]
        self._json(200, {"branches": branches, "converts": [], "tags": []})

    def _commits(self, rtype, repo_id, tail, *, body, fault):
        repo = self._repo(rtype, repo_id)
        if repo is None:
            return
        with self.hub.lock:
            head = self._revision(repo, tail)
            if head is None:
                return
            history = repo.history(head)
        items = [
            {
                "id": c.id,
                "title": c.title,
                "message": c.message,
                "date": c.date.isoformat().replace("+00:00", "Z"),
                "authors": [{"user": "relay-bot"}],
            }
            for c in history
        ]
        chunk, headers = self._page(items, lambda p: self._self_url(urllib.parse.urlsplit(self.path).path, p=p))
        self._json(200, chunk, headers)

    def _tree(self, rtype, repo_id, tail, *, body, fault):
        rev, _, sub = tail.partition("/")
        commit = self._commit_at(rtype, repo_id, rev)
        if commit is None:
            return
        files = dict(commit.files)
        sub = urllib.parse.unquote(sub).strip("/")
        recursive = self.query.get("recursive", ["false"])[0].lower() in ("1", "true")
        entries, dirs = [], set()
        for path in sorted(files):
            if sub and not path.startswith(sub + "/"):
                continue
            rel = path[len(sub) + 1 :] if sub else path
            if not recursive and "/" in rel:
                dirs.add((sub + "/" if sub else "") + rel.split("/", 1)[0])
                continue
            if recursive:
                parts = path.split("/")[:-1]
                for i in range(len(sub.split("/")) if sub else 0, len(parts)):
                    dirs.add("/".join(parts[: i + 1]))
            data = files[path]
            entry = {"type": "file", "path": path, "size": len(data), "oid": git_blob_sha1(data)}
            if is_lfs(path, len(data)):
                pointer = lfs_pointer(data)
                entry["oid"] = git_blob_sha1(pointer)
                entry["lfs"] = {"oid": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": len(pointer)}
            entries.append(entry)
        if sub and not entries and not dirs:
            self._error(404, "EntryNotFound", f"{sub} does not exist on {rev}")
            return
        entries += [{"type": "directory", "path": d, "oid": hashlib.sha1(d.encode()).hexdigest()} for d in dirs]
        entries.sort(key=lambda e: e["path"])
        chunk, headers = self._page(entries, lambda p: self._self_url(urllib.parse.urlsplit(self.path).path, p=p))
        self._json(200, chunk, headers)

    def _info(self, rtype, repo_id, tail, *, body, fault):
        commit = self._commit_at(rtype, repo_id, tail or "main")
        if commit is None:
            return
        siblings = [{"rfilename": p} for p in sorted(commit.files)]
        self._json(200, {"id": repo_id, "sha": commit.id, "private": True, "siblings": siblings})

    def _resolve(self, rtype, repo_id, tail, *, body, fault):
        rev, _, path = tail.partition("/")
        commit = self._commit_at(rtype, repo_id, rev)
        if commit is None:
            return
        data = commit.files.get(urllib.parse.unquote(path))
        if data is None:
            self._error(404, "EntryNotFound", "Entry not found", {"X-Repo-Commit": commit.id})
            return
        headers = {"ETag": f'"{git_blob_sha1(data)}"', "X-Repo-Commit": commit.id, "Accept-Ranges": "bytes"}
        if is_lfs(urllib.parse.unquote(path), len(data)):
            sha256 = hashlib.sha256(data).hexdigest()
            headers.update({"ETag": f'"{sha256}"', "X-Linked-Etag": f'"{sha256}"', "X-Linked-Size": str(len(data))})
        status, payload = 200, data
        match = re.fullmatch(r"bytes=(\d+)-", self.headers.get("Range", ""))
        if match and self.command == "GET":
            start = int(match.group(1))
            status, payload = 206, data[start:]
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        headers["Content-Length"] = str(len(payload))
        if fault is not None and fault.kind == "corrupt" and self.command == "GET" and payload:
            payload = bytes([payload[0] ^ 0x01]) + payload[1:]
        if fault is not None and fault.kind == "truncate" and self.command == "GET":
            self.send_response(status)
            self.send_header("Content-Type", "application/octet-stream")
            for key, value in headers.items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(payload[: len(payload) // 2])
            self.wfile.flush()
            self._drop()
        self._send(status, payload, headers, ctype="application/octet-stream")

    def _preupload(self, rtype, repo_id, tail, *, body, fault):
        if self._repo(rtype, repo_id) is None:
            return
        files = json.loads(body)["files"]
        with self.hub.lock:
            head = self._revision(self.hub.repos[(rtype, repo_id)], tail)
            if head is None:
                return
            existing = dict(head.files)
        modes = []
        for f in files:
            lfs = is_lfs(f["path"], f["size"])
            mode = {"path": f["path"], "uploadMode": "lfs" if lfs else "regular", "shouldIgnore": False}
            if f["path"] in existing:  # the Hub names the current content so unchanged files can be skipped
                data = existing[f["path"]]
                mode["oid"] = hashlib.sha256(data).hexdigest() if lfs else git_blob_sha1(data)
            modes.append(mode)
        self._json(200, {"files": modes})

    def _lfs_batch(self, *, body: bytes, fault):
        request = json.loads(body)
        objects = []
        for obj in request["objects"]:
            entry = {"oid": obj["oid"], "size": obj["size"]}
            if obj["oid"] not in self.hub.lfs_blobs:
                entry["actions"] = {
                    "upload": {"href": f"{self.hub.url}/lfs-upload/{obj['oid']}"},
                    "verify": {"href": f"{self.hub.url}/lfs-verify"},
                }
            objects.append(entry)
        self._json(200, {"transfer": "basic", "objects": objects})

    def _lfs_upload(self, oid: str, *, body: bytes, fault):
        if hashlib.sha256(body).hexdigest() != oid:
            self._error(400, None, "uploaded bytes do not hash to the oid")
            return
        with self.hub.lock:
            self.hub.lfs_blobs[oid] = body
        self._send(200)

    def _lfs_verify(self, *, body: bytes, fault):
        request = json.loads(body)
        blob = self.hub.lfs_blobs.get(request["oid"])
        if blob is None or len(blob) != request["size"]:
            self._error(404, None, "object not found")
            return
        self._json(200, {"success": True})

    def _commit(self, rtype, repo_id, tail, *, body, fault):
        repo = self._repo(rtype, repo_id)
        if repo is None:
            return
        if self.headers.get("Content-Type") != "application/x-ndjson":
            self._error(400, None, "commit payload must be application/x-ndjson")
            return
        branch = urllib.parse.unquote(tail)
        lines = [json.loads(line) for line in body.splitlines() if line.strip()]
        if not lines or lines[0].get("key") != "header":
            self._error(400, None, "first NDJSON line must be the header")
            return
        header = lines[0]["value"]
        adds, deletes = {}, []
        for line in lines[1:]:
            key, value = line["key"], line["value"]
            if key == "file":
                if value.get("encoding") != "base64":
                    self._error(400, None, "unsupported encoding")
                    return
                adds[value["path"]] = base64.b64decode(value["content"])
            elif key == "lfsFile":
                blob = self.hub.lfs_blobs.get(value["oid"])
                if value.get("algo") != "sha256" or blob is None or len(blob) != value["size"]:
                    self._error(400, None, f"LFS pointer for {value['path']} names an object that was not uploaded")
                    return
                adds[value["path"]] = blob
            elif key in ("deletedFile", "deletedFolder"):
                deletes.append(value["path"])
            else:
                self._error(400, None, f"unsupported operation {key}")
                return
        with self.hub.lock:
            self.hub.commit_posts += 1
            if branch not in repo.branches:
                self._error(404, "RevisionNotFound", f"Invalid rev id: {branch}")
                return
            parent = header.get("parentCommit")
            if parent is not None and parent != repo.branches[branch]:
                self._error(412, None, "A commit has happened since. Please refresh and try again.")
                return
            commit = self.hub.apply_commit(
                repo, branch, header["summary"], adds, deletes, message=header.get("description", "")
            )
        if fault is not None and fault.kind == "land_then_status":
            self._json(fault.status, {"error": f"injected {fault.status} after commit"}, dict(fault.headers))
            return
        if fault is not None and fault.kind == "land_then_drop":
            self._drop()
        url = f"{self.hub.url}/{_PREFIX[rtype]}{repo_id}/commit/{commit.id}"
        self._json(200, {"success": True, "commitOid": commit.id, "commitUrl": url, "pullRequestUrl": None})


FakeHub.handler_class = _HubHandler  # defined after the fake it serves
