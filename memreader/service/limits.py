"""What keeps one request or one client from taking the service: a cap on request bodies,
a per-key limit on requests in flight, and a deadline on every request that stops its work
(not only the wait for it)."""

from __future__ import annotations

import asyncio
import math
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from typing import Any, TypeVar

import anyio

from memreader.calls.deadlines import Deadline
from memreader.errors import DeadlineExceeded
from memreader.service.bodies import BodyLimit, too_large
from memreader.service.problems import ProblemError
from memreader.service.shared import SharedState

__all__ = ["BodyLimit", "KeyRates", "KeySlots", "deadline_problem", "too_large", "within_deadline"]

T = TypeVar("T")


class KeySlots:
    """At most ``limit`` requests in flight per key, over every worker sharing ``shared``
    (default: this process's memory); one more is 429 with ``Retry-After``."""

    def __init__(self, limit: int, shared: SharedState | None = None) -> None:
        self.limit = limit
        if shared is None:
            from memreader.service.shared.sqlite import SqliteSharedState

            shared = SqliteSharedState(":memory:").start()
        self.shared = shared

    def in_flight(self, key: str) -> int:
        """Requests of ``key`` now in flight."""
        return self.shared.slots_held(key)

    def acquire(self, key: str) -> Callable[[], None]:
        """Take one of ``key``'s slots; returns the release (safe to call more than once).

        Raises:
            ProblemError: 429, every slot of ``key`` is taken.
        """
        token = self.shared.slot_try(key, self.limit)
        if token is None:
            # Counted only when refused, for the message (a taken slot needs no count).
            now = self.shared.slots_held(key)
            raise ProblemError(
                429,
                "too-many-requests",
                "Too many requests",
                f"this key already has {now} requests in flight (the service's "
                f"max_concurrent_per_key is {self.limit}); retry after the others end",
                headers={"Retry-After": "1"},
            )
        # Taken at most once, from whichever thread calls first (a lock that is only ever
        # tried: cheaper to make than an Event, and as atomic).
        unreleased = threading.Lock()

        def release() -> None:
            if not unreleased.acquire(blocking=False):
                return
            self.shared.slot_free(token)

        return release

    @asynccontextmanager
    async def hold(self, key: str) -> AsyncIterator[None]:
        """Hold one of ``key``'s slots for the block (429 when none is free)."""
        release = self.acquire(key)
        try:
            yield
        finally:
            release()


class KeyRates:
    """At most ``per_minute`` requests per key and minute (refilled evenly), over every worker
    sharing ``shared``; one more is 429 with ``Retry-After``. ``None``: no limit."""

    def __init__(self, per_minute: int | None, shared: SharedState) -> None:
        self.per_minute = per_minute
        self.shared = shared

    def take(self, key: str) -> None:
        """Count one request of ``key``.

        Raises:
            ProblemError: 429, ``key`` used its requests of the last minute.
        """
        if self.per_minute is None:
            return
        wait = self.shared.rate_take(key, self.per_minute)
        if wait > 0:
            raise ProblemError(
                429,
                "rate-limited",
                "Too many requests",
                f"this key sent its {self.per_minute} requests of the last minute (the "
                f"service's requests_per_minute_per_key); retry after {math.ceil(wait)} s",
                headers={"Retry-After": str(math.ceil(wait))},
            )


def deadline_problem(deadline: Deadline, what: str, *, stopped: bool = True) -> ProblemError:
    """The 504 problem of ``what`` past the request's ``deadline``: its work ``stopped`` (and
    nothing of it stored), or a reading call that ran to its end too late."""
    limit = f" ({deadline.seconds:g} s)" if deadline.seconds is not None else ""
    tail = (
        "its work was stopped and nothing of it was stored"
        if stopped
        else "it changed nothing; its late answer was dropped"
    )
    return ProblemError(
        504,
        "deadline",
        "Deadline exceeded",
        f"{what} did not finish within the service's request_timeout_s{limit}; {tail}",
    )


async def within_deadline(work: Awaitable[T], deadline: Deadline | float, what: str) -> T:
    """``await work`` within ``deadline`` (a :class:`~memreader.calls.deadlines.Deadline`, or
    seconds from now), else a 504 problem.

    At the deadline the work is stopped, not abandoned: the deadline is cancelled (the reader
    and the store check it), the task is cancelled (its LLM calls end; its worker threads are
    waited for) and the 504 comes once it has ended. Work that finished regardless (a write
    that committed just at the deadline) is answered with its result. Cancelled itself (the
    client went away), it stops the work the same way before the cancellation goes on.
    """
    if not isinstance(deadline, Deadline):
        deadline = Deadline.after(deadline, what=what)
    if deadline.expired:
        close = getattr(work, "close", None)
        if callable(close):
            close()  # a coroutine never started: nothing ran
        raise deadline_problem(deadline, what)
    task = asyncio.ensure_future(work)
    try:
        await asyncio.wait([task], timeout=_timeout(deadline))
    except asyncio.CancelledError:
        await _stop(task, deadline)
        raise
    if not task.done():
        await _stop(task, deadline)
    if task.cancelled():
        raise deadline_problem(deadline, what)
    error = task.exception()
    if isinstance(error, DeadlineExceeded):
        raise deadline_problem(deadline, what) from None
    if error is not None:
        raise error
    return task.result()


def _timeout(deadline: Deadline) -> float | None:
    remaining = deadline.remaining
    return None if remaining == float("inf") else remaining


async def _stop(task: asyncio.Future[Any], deadline: Deadline) -> None:
    """Cancel ``deadline`` and ``task``, and wait until the task has ended (shielded: a
    caller cancelled again still waits, without spinning)."""
    deadline.cancel()
    task.cancel()
    with anyio.CancelScope(shield=True):
        while not task.done():
            try:
                await asyncio.wait([task])
            except asyncio.CancelledError:
                continue
