"""The service's background ``maintain`` (:class:`MaintainTask`): off unless the service
settings set ``maintain_every_s``; then every worker, every ``maintain_every_s`` seconds, tries
to take the shared lease (:data:`LEASE_KEY`, :meth:`~memreader.service.shared.base.SharedState.
lease_take`) and, when it gets it, runs :meth:`~memreader.stores.base.MemoryStore.maintain` on
the store in the store's thread pool: with ``--workers N`` or several replicas, one run at a
time. The lease frees itself when its worker dies (its heartbeat goes stale), and a run killed
halfway leaves a consistent store that the next run finishes.

The lease is a fence: the run checks it before each step and each repair batch
(:class:`LeaseDeadline`), so a worker paused past its heartbeat (taken for dead, its lease
given to another) stops at its next check when it resumes, instead of running beside the new
holder. A run that finds nothing to do costs a few counting queries."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Callable
from concurrent.futures import Executor

from memreader.calls.deadlines import Deadline
from memreader.errors import DeadlineExceeded, MemReaderError
from memreader.front.memory import Memory
from memreader.service.shared import SharedState
from memreader.stores import MaintainReport

__all__ = ["LEASE_KEY", "LeaseDeadline", "MaintainTask"]

logger = logging.getLogger(__name__)

#: The shared lease whose holder is the one worker maintaining the store.
LEASE_KEY = "memreader:maintain"


class LeaseDeadline(Deadline):
    """A deadline without a time limit that passes once the lease of ``token`` is no longer
    this worker's (looked up at most every ``every_s`` seconds; a failed look counts as
    lost: a run never goes on unsure of its lease)."""

    def __init__(self, shared: SharedState, token: str, every_s: float = 0.5) -> None:
        super().__init__(None, what="the maintain run")
        self._shared = shared
        self._token = token
        self._every_s = every_s
        self._next = 0.0

    @property
    def expired(self) -> bool:
        if super().expired:
            return True
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self._every_s
            try:
                held = self._shared.lease_held(self._token)
            except MemReaderError as exc:
                logger.warning("maintain: could not check the lease (%s); stopping", exc)
                held = False
            if not held:
                self.what = "the maintain run, whose lease was lost,"
                self.cancel()
        return super().expired


class MaintainTask:
    """Runs ``maintain`` every ``every_s`` seconds under the shared lease (see the module
    docstring); ``memory`` opens (or returns) the service's :class:`~memreader.Memory`."""

    def __init__(
        self,
        memory: Callable[[], Memory],
        shared: SharedState,
        pool: Executor,
        every_s: float,
    ) -> None:
        self._memory = memory
        self._shared = shared
        self._pool = pool
        self.every_s = every_s
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start the loop on the running event loop (the first run after ``every_s``)."""
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def stop(self) -> None:
        """Stop the loop (a run in its thread finishes its current batch's transaction)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.every_s)
            await self.run_once()

    async def run_once(self) -> MaintainReport | None:
        """One run if this worker gets the lease: its report; ``None`` when another worker
        holds the lease, the lease was lost on the way, or the run failed (logged)."""
        token = self._shared.lease_take(LEASE_KEY)
        if token is None:
            logger.info("maintain: another worker holds the lease; skipped")
            return None
        lease = LeaseDeadline(self._shared, token)
        try:
            memory = self._memory()

            def run() -> MaintainReport:
                with memory.within(lease):
                    return memory.maintain()

            report = await asyncio.get_running_loop().run_in_executor(self._pool, run)
        except DeadlineExceeded as exc:
            logger.warning("maintain stopped: %s (the holder of the lease does the rest)", exc)
            return None
        except MemReaderError as exc:
            logger.warning("maintain failed (the next run does the rest): %s", exc)
            return None
        finally:
            self._shared.slot_free(token)
        level = logging.INFO if report.complete else logging.WARNING
        logger.log(level, "maintain: %s", ", ".join(report.lines()))
        return report
