"""What every fake service shares: a threaded HTTP server on 127.0.0.1 (an ephemeral
port), started and stopped around a test, its queues of injected faults, and the exception
a handler raises when it closes a connection on purpose (an injected fault)."""

from __future__ import annotations

import threading
from collections import deque
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Dropped(Exception):
    """The handler closed the connection on purpose."""


class LoopbackHandler(BaseHTTPRequestHandler):
    """Base of a fake's request handler: HTTP/1.1, no log on stderr, and a dropped connection."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - silence the default stderr log
        pass

    def _drop(self):
        """Close the connection without an answer (an injected fault)."""
        self.close_connection = True
        try:
            self.connection.shutdown(2)
        except OSError:
            pass
        raise Dropped


class LoopbackServer:
    """Base of a fake service: ``start()`` binds ``handler_class`` with the fake as
    ``handler_class.<fake_attr>``; ``url`` is where the real client should point."""

    handler_class: type[BaseHTTPRequestHandler]
    fake_attr: str
    thread_name: str
    server: ThreadingHTTPServer | None = None
    fault_points: tuple[str, ...]  # where faults can be injected: the fake's routes or methods
    faults: dict[str, deque]  # fault point -> its queued faults
    lock: threading.RLock

    def inject(self, point: str, *faults) -> None:
        """Queue faults for ``point`` (one of :attr:`fault_points`), consumed one per request."""
        if point not in self.fault_points:
            raise ValueError(f"unknown fault point {point!r}")
        with self.lock:
            self.faults[point].extend(faults)

    def take_fault(self, point: str):
        """The next fault queued for ``point``, or None."""
        with self.lock:
            queue = self.faults.get(point)
            return queue.popleft() if queue else None

    @property
    def url(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"http://{host}:{port}"

    def start(self):
        bound = type(f"Bound{self.handler_class.__name__}", (self.handler_class,), {self.fake_attr: self})
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), bound)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, args=(0.05,), name=self.thread_name, daemon=True).start()
        return self

    def stop(self) -> None:
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()
            self.server = None
