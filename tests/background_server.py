"""What the test servers share: a threading HTTP server on 127.0.0.1 (ephemeral port) served
from a background thread, quiet about clients that give up, and a lifecycle (start, stop, ``with``).

A subclass names its request handler (``handler``); the handler reaches the test server as
``self.server.owner``.
"""

from __future__ import annotations

import logging
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, ClassVar

from typing_extensions import Self

__all__ = ["BackgroundServer", "OwnedServer"]

logger = logging.getLogger(__name__)


class OwnedServer(ThreadingHTTPServer):
    """A threading server that knows the test server it belongs to."""

    daemon_threads = True
    block_on_close = False
    allow_reuse_address = True
    owner: Any

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that gave up (a deadline, a size limit, a reset it provoked) is what these
        # tests provoke; socketserver would print a traceback to stderr for each one.
        logger.debug("test server: connection from %s ended early", client_address, exc_info=True)


class BackgroundServer:
    """Serves :attr:`handler` in a background thread (see the module docstring)."""

    handler: ClassVar[type[BaseHTTPRequestHandler]]

    def __init__(self) -> None:
        self.stopping = threading.Event()
        self._httpd: OwnedServer | None = None
        self._thread: threading.Thread | None = None

    def start(self) -> Self:
        """Bind an ephemeral port on 127.0.0.1 and serve (again a no-op while serving)."""
        if self._httpd is not None:
            return self
        self.stopping.clear()
        httpd = OwnedServer(("127.0.0.1", 0), self.handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving; answers in progress that watch :attr:`stopping` are cut short."""
        self.stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The bound port."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return int(self._httpd.server_address[1])
