"""What every fake service shares: a threaded HTTP server on 127.0.0.1 (an ephemeral
port), started and stopped around a test, and the exception a handler raises when it
closes a connection on purpose (an injected fault)."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Dropped(Exception):
    """The handler closed the connection on purpose."""


class LoopbackServer:
    """Base of a fake service: ``start()`` binds ``handler_class`` with the fake as
    ``handler_class.<fake_attr>``; ``url`` is where the real client should point."""

    handler_class: type[BaseHTTPRequestHandler]
    fake_attr: str
    thread_name: str
    server: ThreadingHTTPServer | None = None

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
