"""The service's background ``maintain`` (:class:`MaintainTask`): off unless the service
settings set ``maintain_every_s``; then every worker, every ``maintain_every_s`` seconds, tries
to take the shared lease (one slot of :data:`LEASE_KEY` in the workers' shared state,
:mod:`memreader.service.shared`) and, when it gets it, runs
:meth:`~memreader.stores.base.MemoryStore.maintain` on the store in the store's thread pool:
with ``--workers N`` or several replicas, one run at a time. The lease frees itself when its
worker dies (its heartbeat goes stale), and a run killed halfway leaves a consistent store
that the next run finishes. A run that finds nothing to do costs a few counting queries."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import Executor

from memreader.errors import MemReaderError
from memreader.service.shared import SharedState
from memreader.stores import MaintainReport, MemoryStore

__all__ = ["LEASE_KEY", "MaintainTask"]

logger = logging.getLogger(__name__)

#: The shared slot whose holder is the one worker maintaining the store.
LEASE_KEY = "memreader:maintain"


class MaintainTask:
    """Runs ``maintain`` every ``every_s`` seconds under the shared lease (see the module
    docstring); ``store`` opens (or returns) the service's store."""

    def __init__(
        self,
        store: Callable[[], MemoryStore],
        shared: SharedState,
        pool: Executor,
        every_s: float,
    ) -> None:
        self._store = store
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
        holds the lease or the run failed (logged)."""
        token, _ = self._shared.slot_take(LEASE_KEY, 1)
        if token is None:
            logger.info("maintain: another worker holds the lease; skipped")
            return None
        try:
            store = self._store()
            loop = asyncio.get_running_loop()
            report = await loop.run_in_executor(self._pool, store.maintain)
        except MemReaderError as exc:
            logger.warning("maintain failed (the next run does the rest): %s", exc)
            return None
        finally:
            self._shared.slot_free(token)
        level = logging.INFO if report.complete else logging.WARNING
        logger.log(level, "maintain: %s", ", ".join(report.lines()))
        return report
