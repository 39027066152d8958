"""The service's index repair at start-up (:class:`IndexRepairTask`, the service setting
``repair_index_on_start``, on by default): once the app has started, each worker counts the
store's active memories its vector search cannot find (no vector, or another model's:
:mod:`memreader.stores.lifecycle.index_check`); when there are some, it tries to take the
maintain lease (:data:`~memreader.service.maintenance.LEASE_KEY`, the one periodic
``maintain`` takes), and the one worker that gets it embeds them again in the store's thread
pool (:meth:`~memreader.stores.base.MemoryStore.repair_index`: nothing purged or expired),
checking the lease before each batch. The others skip it. Start-up does not wait for it, and
requests are served meanwhile (a memory not yet repaired is found by its words).

Its outcome is logged and in ``/metrics``: ``memreader_index_unindexed{cause}`` (the count
after the check, and again after the repair), ``memreader_index_repaired`` (memories embedded
again) and ``memreader_index_checks{outcome}`` (``ok``: nothing to repair; ``repaired``;
``incomplete``: rows the report names were left; ``skipped``: another worker holds the lease;
``stopped``: the lease was lost; ``failed``: the store or its embedder failed)."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from concurrent.futures import Executor

from memreader.errors import DeadlineExceeded, MemReaderError
from memreader.front.memory import Memory
from memreader.service.maintenance import LEASE_KEY, LeaseDeadline
from memreader.service.metrics import ServiceMetrics
from memreader.service.shared import SharedState
from memreader.stores import IndexHealth, MaintainReport

__all__ = ["IndexRepairTask"]

logger = logging.getLogger(__name__)


class IndexRepairTask:
    """Checks the index once, and repairs it under the lease (see the module docstring);
    ``memory`` opens (or returns) the service's :class:`~memreader.Memory`."""

    def __init__(
        self,
        memory: Callable[[], Memory],
        shared: SharedState,
        pool: Executor,
        metrics: ServiceMetrics,
    ) -> None:
        self._memory = memory
        self._shared = shared
        self._pool = pool
        self._metrics = metrics
        self._task: asyncio.Task[str] | None = None
        #: The last run's outcome (see the module docstring); ``None`` before it ends.
        self.outcome: str | None = None

    def start(self) -> None:
        """Run :meth:`run_once` on the running event loop, without waiting for it."""
        self._task = asyncio.get_running_loop().create_task(self.run_once())

    async def stop(self) -> None:
        """Stop a run still going (its current batch's transaction finishes in its thread)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def run_once(self) -> str:
        """Check the index and, when something is missing and this worker gets the lease,
        repair it: the outcome (also :attr:`outcome` and ``/metrics``). Never raises but
        for cancellation: a failure is logged and is the outcome ``failed``."""
        loop = asyncio.get_running_loop()
        try:
            memory = self._memory()  # opened here, on the loop, as requests open it
            health = await loop.run_in_executor(self._pool, memory.index_health)
        except MemReaderError as exc:
            logger.warning("index check at start-up failed: %s", exc)
            return self._end("failed")
        self._observe(health)
        if health.ok:
            logger.info("index check at start-up: all %d active memories indexed", health.active)
            return self._end("ok")
        token = self._shared.lease_take(LEASE_KEY)
        if token is None:
            logger.info(
                "index check: %d to repair; another worker holds the lease", health.unindexed
            )
            return self._end("skipped")
        lease = LeaseDeadline(self._shared, token)
        try:
            report = await loop.run_in_executor(
                self._pool, lambda: memory.store.repair_index(deadline=lease)
            )
            after = await loop.run_in_executor(self._pool, memory.index_health)
        except DeadlineExceeded as exc:
            logger.warning("index repair stopped: %s (the lease's holder does the rest)", exc)
            return self._end("stopped")
        except MemReaderError as exc:
            logger.warning("index repair failed (maintain does the rest): %s", exc)
            return self._end("failed")
        finally:
            self._shared.slot_free(token)
        return self._end(self._reported(report, after))

    def _reported(self, report: MaintainReport, after: IndexHealth) -> str:
        repaired = report.totals()["repaired"]
        self._metrics.index_repaired.inc(repaired)
        self._observe(after)
        level = logging.INFO if report.complete else logging.WARNING
        logger.log(
            level,
            "index repair at start-up: %d repaired, %d left; %s",
            repaired,
            after.unindexed,
            "; ".join(report.lines()),
        )
        return "repaired" if report.complete else "incomplete"

    def _observe(self, health: IndexHealth) -> None:
        self._metrics.index_unindexed.labels("missing").set(health.missing)
        self._metrics.index_unindexed.labels("foreign").set(sum(health.foreign.values()))

    def _end(self, outcome: str) -> str:
        self.outcome = outcome
        self._metrics.index_checks.labels(outcome).inc()
        return outcome
