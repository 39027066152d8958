"""The shared tables' names and what every part of the shared state stands on: one
transaction at a time (:meth:`Tables.transaction`), this worker's id, which workers are alive,
and taking back what a dead worker held (:meth:`Tables.reap`).

Taking back is the fence: a dead worker's slots and leases are deleted and its running jobs
marked failed in the same transaction that then decides for the living, so a worker that was
only paused (past :attr:`Tables.stale_s`) and resumes finds its tokens gone and its jobs no
longer its own: it cannot save, finish or hold anything it lost.
"""

from __future__ import annotations

import json
import logging
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from typing import Any

__all__ = ["IDEM", "JOBS", "LOST_PROBLEM", "RATES", "SLOTS", "WORKERS", "Run", "Tables"]

logger = logging.getLogger(__name__)

#: ``run(sql, params)``: one statement in the open transaction (``?`` placeholders), its rows.
Run = Callable[[str, Sequence[Any]], list[tuple[Any, ...]]]

WORKERS, SLOTS, IDEM, JOBS, RATES = (
    "memreader_service_workers",
    "memreader_service_slots",
    "memreader_service_idempotency",
    "memreader_service_jobs",
    "memreader_service_rates",
)

#: The problem of a job whose worker stopped answering (its work was taken back).
LOST_PROBLEM: dict[str, Any] = {
    "type": "urn:memreader:problem:worker-lost",
    "title": "Worker lost",
    "status": 500,
    "detail": "the service worker running this job stopped answering and the job was taken "
    "back from it; rerun the job (inputs already read are skipped)",
}


class Tables(ABC):
    """What the parts of :class:`~memreader.service.shared.base.SharedState` share."""

    #: Seconds between two heartbeats of a worker.
    beat_s: float = 5.0
    #: A worker silent this long is dead: what it held is taken back.
    stale_s: float = 15.0
    #: This worker's id (host, process, a random part).
    worker: str

    @abstractmethod
    def transaction(self, lock: str | None = None) -> AbstractContextManager[Run]:
        """One transaction; ``lock`` names what it decides (the backend serialises the
        transactions deciding the same thing, or all of them)."""

    def _live(self) -> str:
        """SQL: whether the row's ``worker`` is alive (this one, or one whose beat is fresh);
        two parameters, :meth:`_live_params`."""
        return f"(worker = ? OR worker IN (SELECT id FROM {WORKERS} WHERE seen >= ?))"

    def _live_params(self) -> tuple[str, float]:
        return self.worker, time.time() - self.stale_s

    def reap(self, run: Run, now: float) -> list[str]:
        """In the open transaction: take back what every worker silent for :attr:`stale_s`
        held (its slots and leases deleted, its unanswered ``Idempotency-Key`` records
        dropped, its running jobs failed) and forget it; the dead workers' ids."""
        dead = [
            row[0]
            for row in run(
                f"SELECT id FROM {WORKERS} WHERE seen < ? AND id <> ?",
                (now - self.stale_s, self.worker),
            )
        ]
        # A worker that never beat (its row gone: reaped before) but still holds rows.
        dead += [
            row[0]
            for row in run(
                f"SELECT DISTINCT worker FROM {JOBS} WHERE status IN ('running', 'cancelling') "
                f"AND worker <> ? AND worker NOT IN (SELECT id FROM {WORKERS})",
                (self.worker,),
            )
        ]
        for worker in dict.fromkeys(dead):
            logger.warning(
                "shared state: worker %s stopped answering; taking back its work", worker
            )
            run(f"DELETE FROM {SLOTS} WHERE worker = ?", (worker,))
            run(f"DELETE FROM {IDEM} WHERE worker = ? AND status IS NULL", (worker,))
            for job_id, data in run(
                f"SELECT id, data FROM {JOBS} WHERE worker = ? AND status IN "
                "('running', 'cancelling')",
                (worker,),
            ):
                shown = json.loads(data)
                shown["status"] = "failed"
                shown["problem"] = dict(LOST_PROBLEM)
                run(
                    f"UPDATE {JOBS} SET status = 'failed', data = ?, updated = ? WHERE id = ?",
                    (json.dumps(shown, ensure_ascii=False), now, job_id),
                )
            run(f"DELETE FROM {WORKERS} WHERE id = ?", (worker,))
        return dead
