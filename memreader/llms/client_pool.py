"""The SDK clients behind a backend: one sync client, and one async client per event loop.

An async HTTP client is bound to the event loop it first ran on, so a backend used from
several loops (``asyncio.run`` twice, or loops in several threads) needs one per loop; loops
that are gone are forgotten through weak references.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import Callable
from typing import Any, Generic, TypeVar

S = TypeVar("S")
A = TypeVar("A")


class ClientPool(Generic[S, A]):
    """Builds SDK clients on first use and closes them."""

    def __init__(self, make_sync: Callable[[], S], make_async: Callable[[], A]) -> None:
        self._make_sync = make_sync
        self._make_async = make_async
        self._lock = threading.Lock()
        self._sync: S | None = None
        self._async: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, A] = (
            weakref.WeakKeyDictionary()
        )

    def sync(self) -> S:
        """The sync client."""
        with self._lock:
            if self._sync is None:
                self._sync = self._make_sync()
            return self._sync

    def for_running_loop(self) -> A:
        """The async client of the running event loop."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._async.get(loop)
            if client is None:
                client = self._make_async()
                self._async[loop] = client
            return client

    def close(self) -> None:
        """Close the sync client; async clients are dropped (close them with :meth:`aclose`)."""
        with self._lock:
            client, self._sync = self._sync, None
            self._async = weakref.WeakKeyDictionary()
        if client is not None:
            _closer(client)()

    async def aclose(self) -> None:
        """Close the running loop's async client, then the sync client."""
        loop = asyncio.get_running_loop()
        with self._lock:
            client = self._async.pop(loop, None)
        if client is not None:
            await _closer(client)()
        self.close()


def _closer(client: Any) -> Any:
    # The SDKs name it `close` for both kinds; the async one returns a coroutine.
    return client.close
