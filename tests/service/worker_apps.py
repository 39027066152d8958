"""Several apps on one store, standing for the workers of one service (each its own process
state: slots, answers, jobs, caches; the same store and state file), and a bounded wait."""

from __future__ import annotations

import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, ServiceSettings, create_app
from memreader.service.state import ServiceState
from tests.common import HASH_EMBEDDER
from tests.service.http_client import key_entries
from tests.service_server import running

__all__ = ["Workers", "launch_workers", "until"]

#: ``workers(n, **service)``: ``n`` served apps on one store; their URLs and states.
Workers = Callable[..., list[tuple[str, ServiceState]]]


def launch_workers(
    folder: Path, contexts: list[AbstractContextManager[str]], n: int = 2, **service: Any
) -> list[tuple[str, ServiceState]]:
    """Serve ``n`` apps on the SQLite store ``folder/memories.db`` (the test keys unless
    ``keys`` is given); each server's context goes to ``contexts`` (the caller exits them)."""
    config = {"embedder": HASH_EMBEDDER, "store": "sqlite:///memories.db"}
    service.setdefault("keys", key_entries())
    out = []
    for _ in range(n):
        factory = MemReaderConfigFactory.from_dict({"config": config})
        app = create_app(ServiceConfig(factory, ServiceSettings(**service), base_dir=str(folder)))
        context = running(app)
        out.append((context.__enter__(), app.state.service))
        contexts.append(context)
    return out


def until(condition: Callable[[], bool], what: str, tries: int = 2000) -> None:
    """Look at ``condition`` until it holds (a bounded number of looks, 10 ms apart)."""
    for _ in range(tries):
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError(f"never happened: {what}")
