"""A small routed HTTP server for download tests (stdlib, 127.0.0.1, ephemeral port).

Each route is a function of the request handler that writes a whole raw response, so a test
can send anything: any status, type and headers, a chunked body without ``Content-Length``, a
body that never ends or one that trickles. Long-running answers stop when the client goes
away or the server stops, so the server always shuts down cleanly.

Example::

    with FetchTestServer() as server:
        url = server.route("/a.csv", answer(b"a,b\\n", "text/csv"))
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler
from typing import Any

from tests.background_server import BackgroundServer, OwnedServer

__all__ = [
    "FetchTestServer",
    "Route",
    "answer",
    "chunked_forever",
    "endless",
    "redirect",
    "sequence",
    "trickle",
]

logger = logging.getLogger(__name__)

Route = Callable[["_Handler"], None]


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: OwnedServer

    def do_GET(self) -> None:
        owner = self.server.owner
        path = self.path.partition("?")[0]
        with owner.lock:
            owner.hits[path] += 1
            owner.headers.append({k.lower(): v for k, v in self.headers.items()})
        route = owner.routes.get(path)
        try:
            if route is None:
                answer(b"no route", "text/plain", status=404)(self)
            else:
                route(self)
        except OSError:  # the client went away
            self.close_connection = True

    def log_message(self, format: str, *args: Any) -> None:
        logger.debug("fetch test server: " + format, *args)

    @property
    def stopping(self) -> threading.Event:
        event: threading.Event = self.server.owner.stopping
        return event

    def head(self, status: int, headers: dict[str, str]) -> None:
        """Send the status line and headers."""
        self.send_response(status)
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()


class FetchTestServer(BackgroundServer):
    """Routes (path → :data:`Route`) served on 127.0.0.1; :attr:`hits` counts requests per path
    and :attr:`headers` keeps each request's headers."""

    handler = _Handler

    def __init__(self) -> None:
        self.routes: dict[str, Route] = {}
        self.hits: Counter[str] = Counter()
        self.headers: list[dict[str, str]] = []
        self.lock = threading.Lock()
        super().__init__()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def route(self, path: str, handler: Route) -> str:
        """Serve ``handler`` at ``path``; returns the URL."""
        self.routes[path] = handler
        return self.url(path)


def answer(
    body: bytes,
    content_type: str | None,
    *,
    status: int = 200,
    headers: dict[str, str] | None = None,
) -> Route:
    """A complete answer with ``Content-Length``."""

    def send(handler: _Handler) -> None:
        all_headers = {"Content-Length": str(len(body)), **(headers or {})}
        if content_type is not None:
            all_headers["Content-Type"] = content_type
        handler.head(status, all_headers)
        handler.wfile.write(body)

    return send


def redirect(location: str, status: int = 302) -> Route:
    """A redirect to ``location`` (absolute or relative)."""
    return answer(b"", "text/plain", status=status, headers={"Location": location})


def sequence(*routes: Route) -> Route:
    """Each request gets the next route; the last one repeats."""
    queue = list(routes)
    lock = threading.Lock()

    def send(handler: _Handler) -> None:
        with lock:
            route = queue.pop(0) if len(queue) > 1 else queue[0]
        route(handler)

    return send


def chunked_forever(content_type: str = "text/plain", chunk: int = 16 * 1024) -> Route:
    """A chunked body without ``Content-Length`` that never ends."""

    def send(handler: _Handler) -> None:
        handler.head(200, {"Content-Type": content_type, "Transfer-Encoding": "chunked"})
        piece = f"{chunk:x}\r\n".encode() + b"x" * chunk + b"\r\n"
        while not handler.stopping.is_set():
            handler.wfile.write(piece)

    return send


def endless(content_type: str = "text/plain", every: float = 0.01) -> Route:
    """A body that promises 1 GB and sends a few bytes every ``every`` seconds, forever."""

    def send(handler: _Handler) -> None:
        handler.head(200, {"Content-Type": content_type, "Content-Length": str(10**9)})
        while not handler.stopping.wait(every):
            handler.wfile.write(b"ab")
            handler.wfile.flush()

    return send


def trickle(body: bytes, content_type: str = "text/plain", every: float = 0.05) -> Route:
    """A body sent one byte every ``every`` seconds (each read well within any read timeout)."""

    def send(handler: _Handler) -> None:
        handler.head(200, {"Content-Type": content_type, "Content-Length": str(len(body))})
        for i in range(len(body)):
            if handler.stopping.is_set():
                return
            handler.wfile.write(body[i : i + 1])
            handler.wfile.flush()
            time.sleep(every)

    return send
