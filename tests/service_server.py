"""A real uvicorn server on 127.0.0.1 for the service tests, in a thread of the test process,
on a free port; stopped (and the app's lifespan closed) on exit."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import uvicorn


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def running(
    app: Any, *, timeout_s: float = 30.0, settings: Any = None, log_level: str = "warning"
) -> Iterator[str]:
    """Serve ``app``; yields its base URL (``http://127.0.0.1:PORT``). With ``settings`` (a
    ``ServiceSettings``), as ``memreader serve`` does: its connection limits and log filters."""
    port = free_port()
    if settings is not None:
        from memreader.service.server import uvicorn_config

        config = uvicorn_config(app, settings, host="127.0.0.1", port=port, log_level=log_level)
    else:
        config = uvicorn.Config(
            app, host="127.0.0.1", port=port, log_level=log_level, lifespan="on", workers=1
        )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, name="uvicorn-test", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout_s
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout_s)
