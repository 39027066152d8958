"""What keeps one request or one client from taking the service: a cap on request bodies,
a per-key limit on requests in flight, and a deadline on every request."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import TypeVar

from memreader.service.bodies import BodyLimit, too_large
from memreader.service.problems import ProblemError

__all__ = ["BodyLimit", "KeySlots", "too_large", "within_deadline"]

T = TypeVar("T")


class KeySlots:
    """At most ``limit`` requests in flight per key; one more is 429 with ``Retry-After``."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._in_flight: dict[str, int] = {}
        self._lock = threading.Lock()

    def in_flight(self, key: str) -> int:
        """Requests of ``key`` now in flight."""
        with self._lock:
            return self._in_flight.get(key, 0)

    def acquire(self, key: str) -> Callable[[], None]:
        """Take one of ``key``'s slots; returns the release (safe to call more than once).

        Raises:
            ProblemError: 429, every slot of ``key`` is taken.
        """
        with self._lock:
            now = self._in_flight.get(key, 0)
            if now >= self.limit:
                raise ProblemError(
                    429,
                    "too-many-requests",
                    "Too many requests",
                    f"this key already has {now} requests in flight (the service's "
                    f"max_concurrent_per_key is {self.limit}); retry after the others end",
                    headers={"Retry-After": "1"},
                )
            self._in_flight[key] = now + 1
        released = False

        def release() -> None:
            nonlocal released
            with self._lock:
                if released:
                    return
                released = True
                left = self._in_flight[key] - 1
                if left:
                    self._in_flight[key] = left
                else:
                    del self._in_flight[key]

        return release

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold one of ``key``'s slots for the block (429 when none is free)."""
        release = self.acquire(key)
        try:
            yield
        finally:
            release()


async def within_deadline(work: Awaitable[T], seconds: float, what: str) -> T:
    """``await work``, or a 504 problem once ``seconds`` pass (the work is cancelled)."""
    try:
        return await asyncio.wait_for(work, timeout=seconds)
    except TimeoutError:
        raise ProblemError(
            504,
            "deadline",
            "Deadline exceeded",
            f"{what} did not finish within the service's request_timeout_s ({seconds:g} s)",
        ) from None
