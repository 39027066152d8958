"""One concurrency budget for LLM calls, shared by threads and asyncio tasks.

The budget is a single :class:`threading.BoundedSemaphore`; threads acquire it directly.
Coroutines must not block the event loop, so the async path works like this:

1. try a non-blocking acquire (the common case when the budget is not exhausted);
2. otherwise wait on a per-event-loop :class:`asyncio.Lock`, so that at most one coroutine per
   loop waits for the semaphore at a time (the others wait cheaply on the lock);
3. that one coroutine waits for the semaphore in a worker thread (``run_in_executor``) that
   polls with a short timeout, so it can give up promptly when the coroutine is cancelled.

Why not a per-loop :class:`asyncio.Semaphore` with the same limit? Because then threads and
each event loop would each have the full budget, and together exceed it. Why not
``asyncio.to_thread(sem.acquire)`` for every waiter? Because every waiting coroutine would pin
an executor thread; with the lock, one thread per loop is enough.

A permit acquired by a worker thread after its coroutine was cancelled is released at once (by
the thread itself, or by the cancelled coroutine if the thread was first), so cancellation never
leaks budget, even when the event loop closes right after.
"""

from __future__ import annotations

import asyncio
import threading
import weakref
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager, contextmanager
from types import TracebackType

__all__ = ["DEFAULT_MAX_CONCURRENCY", "ConcurrencyLimiter"]

#: The budget of a reader's LLM calls (``llm_max_concurrency``), and of a client built without a
#: shared limiter.
DEFAULT_MAX_CONCURRENCY = 4

_POLL_S = 0.05


class _Handoff:
    """A worker thread waiting for a permit on behalf of a coroutine.

    If the coroutine gives up (cancellation) the permit is released whether the thread got it
    before or after that moment, without relying on the event loop still running.
    """

    def __init__(self, sem: threading.BoundedSemaphore) -> None:
        self._sem = sem
        self._lock = threading.Lock()
        self._abandoned = False
        self._acquired = False

    def wait(self) -> bool:
        """Run in a worker thread: poll for a permit until it is ours or we are abandoned."""
        while True:
            with self._lock:
                if self._abandoned:
                    return False
            if self._sem.acquire(timeout=_POLL_S):
                with self._lock:
                    if self._abandoned:
                        self._sem.release()
                        return False
                    self._acquired = True
                return True

    def abandon(self) -> None:
        """The coroutine will not take the permit: stop waiting, or give back what we got."""
        with self._lock:
            self._abandoned = True
            if self._acquired:
                self._acquired = False
                self._sem.release()


class ConcurrencyLimiter:
    """At most ``limit`` holders at once, across threads and event loops.

    Use ``with limiter:`` (or :meth:`hold`) in threads and ``async with limiter:`` (or
    :meth:`ahold`) in coroutines. :attr:`in_use` and :attr:`max_in_use` (a high-water mark)
    help tests and metrics.
    """

    def __init__(self, limit: int) -> None:
        if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
            raise ValueError(f"limit must be a positive integer, got {limit!r}")
        self.limit = limit
        self._sem = threading.BoundedSemaphore(limit)
        self._count_lock = threading.Lock()
        self._in_use = 0
        self._max_in_use = 0
        self._loop_locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = (
            weakref.WeakKeyDictionary()
        )
        self._loop_locks_guard = threading.Lock()

    # -- counters ---------------------------------------------------------------------------

    @property
    def in_use(self) -> int:
        """Permits held right now."""
        return self._in_use

    @property
    def max_in_use(self) -> int:
        """The most permits ever held at once."""
        return self._max_in_use

    def _acquired(self) -> None:
        with self._count_lock:
            self._in_use += 1
            self._max_in_use = max(self._max_in_use, self._in_use)

    # -- sync path --------------------------------------------------------------------------

    def acquire(self, timeout: float | None = None) -> bool:
        """Take a permit, blocking the calling thread; ``False`` if ``timeout`` ran out."""
        ok = self._sem.acquire(timeout=timeout) if timeout is not None else self._sem.acquire()
        if ok:
            self._acquired()
        return ok

    def release(self) -> None:
        """Give a permit back."""
        with self._count_lock:
            self._in_use -= 1
        self._sem.release()

    @contextmanager
    def hold(self) -> Iterator[None]:
        """Hold a permit for the ``with`` block (threads)."""
        self.acquire()
        try:
            yield
        finally:
            self.release()

    def __enter__(self) -> ConcurrencyLimiter:
        self.acquire()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    # -- async path -------------------------------------------------------------------------

    def _loop_lock(self, loop: asyncio.AbstractEventLoop) -> asyncio.Lock:
        with self._loop_locks_guard:
            lock = self._loop_locks.get(loop)
            if lock is None:
                lock = asyncio.Lock()
                self._loop_locks[loop] = lock
            return lock

    async def aacquire(self) -> None:
        """Take a permit without blocking the event loop."""
        if self._sem.acquire(blocking=False):
            self._acquired()
            return
        loop = asyncio.get_running_loop()
        async with self._loop_lock(loop):
            if self._sem.acquire(blocking=False):
                self._acquired()
                return
            handoff = _Handoff(self._sem)
            future = loop.run_in_executor(None, handoff.wait)
            try:
                got = await asyncio.shield(future)
            except BaseException:
                handoff.abandon()
                raise
            if not got:  # pragma: no cover - only after abandon(), i.e. when cancelled
                raise asyncio.CancelledError
            self._acquired()

    @asynccontextmanager
    async def ahold(self) -> AsyncIterator[None]:
        """Hold a permit for the ``async with`` block (coroutines)."""
        await self.aacquire()
        try:
            yield
        finally:
            self.release()

    async def __aenter__(self) -> ConcurrencyLimiter:
        await self.aacquire()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.release()

    def __repr__(self) -> str:
        return f"ConcurrencyLimiter(limit={self.limit}, in_use={self._in_use})"
