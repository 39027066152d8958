"""What every worker and replica of one service shares, in SQL: who is alive, the per-key
request slots and rate buckets, the leases (one holder at a time), the ``Idempotency-Key``
answers (:mod:`~memreader.service.shared.answers`) and the jobs with their progress
(:mod:`~memreader.service.shared.job_table`).

A backend (:mod:`~memreader.service.shared.sqlite`,
:mod:`~memreader.service.shared.postgres`) gives :meth:`SharedState.transaction` and its
tables; the rules are here, once. Every transaction is short (a few statements, never a call
out) so that workers queue on it for microseconds.

A worker proves it is alive by a heartbeat row it refreshes every :attr:`SharedState.beat_s`;
one silent for :attr:`SharedState.stale_s` (it crashed, its machine went, or it was paused) is
dead, and what it held is taken back (:meth:`~memreader.service.shared.tables.Tables.reap`):
its slots and leases free themselves, its unanswered idempotency records are dropped (a
retry runs) and its running jobs are marked failed. Taking back is a fence: a paused worker
that resumes cannot use what it lost (its lease token is gone, its jobs refuse its saves and
tell it to stop). Times are the workers' clocks (seconds since the epoch): the stale margin
absorbs a small skew between machines.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
import uuid
from abc import abstractmethod

from memreader.service.shared.answers import AnswerTable, IdemVerdict, StoredAnswer
from memreader.service.shared.job_table import JobRecord, JobTable
from memreader.service.shared.tables import IDEM, JOBS, RATES, SLOTS, WORKERS, Run

__all__ = [
    "IDEM",
    "JOBS",
    "RATES",
    "SLOTS",
    "WORKERS",
    "IdemVerdict",
    "JobRecord",
    "Run",
    "SharedState",
    "StoredAnswer",
]

logger = logging.getLogger(__name__)


class SharedState(AnswerTable, JobTable):
    """The shared tables of one service (see the module docstring)."""

    def __init__(self) -> None:
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._beats: threading.Thread | None = None

    # -- what a backend gives ------------------------------------------------------------

    @abstractmethod
    def _close_connections(self) -> None:
        """Close the backend's connections."""

    # -- life -----------------------------------------------------------------------------

    #: Whether other processes may share this state (an in-memory one needs no heartbeat).
    shared: bool = True

    def start(self) -> SharedState:
        """Announce this worker and keep its heartbeat going (a daemon thread)."""
        self.beat()
        if self._beats is None and self.shared:
            self._beats = threading.Thread(
                target=self._beat_loop, name="memreader-heartbeat", daemon=True
            )
            self._beats.start()
        return self

    def close(self) -> None:
        """Stop the heartbeat, give up this worker's slots and rows, close the connections."""
        self._stop.set()
        if self._beats is not None:
            self._beats.join(10)
        try:
            with self.transaction() as run:
                run(f"DELETE FROM {SLOTS} WHERE worker = ?", (self.worker,))
                run(f"DELETE FROM {IDEM} WHERE worker = ? AND status IS NULL", (self.worker,))
                run(f"DELETE FROM {WORKERS} WHERE id = ?", (self.worker,))
        finally:
            self._close_connections()

    def _beat_loop(self) -> None:
        while not self._stop.wait(self.beat_s):
            try:
                self.beat()
            except Exception:  # a lost beat is retried at the next; the worker serves on
                logger.warning("shared state: a heartbeat failed", exc_info=True)

    def beat(self) -> None:
        """Refresh this worker's heartbeat and take back what dead workers left."""
        now = time.time()
        with self.transaction() as run:
            known = run(f"SELECT seen FROM {WORKERS} WHERE id = ?", (self.worker,))
            if self._beats is not None and not known:
                logger.warning(
                    "shared state: this worker (%s) was taken for dead while it was silent; "
                    "its slots, leases and jobs were taken back",
                    self.worker,
                )
            run(
                f"INSERT INTO {WORKERS} (id, seen) VALUES (?, ?) "
                "ON CONFLICT (id) DO UPDATE SET seen = excluded.seen",
                (self.worker, now),
            )
            self.reap(run, now)

    # -- per-key slots --------------------------------------------------------------------

    def slot_take(self, key: str, limit: int) -> tuple[str | None, int]:
        """Take one of ``key``'s ``limit`` slots: ``(token, in flight now)``, or ``(None, in
        flight)`` when all are taken."""
        with self.transaction(f"slot:{key}") as run:
            held = self._held(run, key)
            if held >= limit:
                return None, held
            token = uuid.uuid4().hex
            run(
                f"INSERT INTO {SLOTS} (token, key, worker) VALUES (?, ?, ?)",
                (token, key, self.worker),
            )
            return token, held + 1

    def slot_try(self, key: str, limit: int) -> str | None:
        """Take one of ``key``'s ``limit`` slots: its token, or ``None`` when all are taken
        (:meth:`slot_take` without the count: what admission needs on every request)."""
        return self.slot_take(key, limit)[0]

    def slot_free(self, token: str) -> None:
        """Give a slot (or a lease) back."""
        with self.transaction() as run:
            run(f"DELETE FROM {SLOTS} WHERE token = ?", (token,))

    def slots_held(self, key: str) -> int:
        """``key``'s requests in flight, over every live worker."""
        with self.transaction() as run:
            return self._held(run, key)

    def _held(self, run: Run, key: str) -> int:
        rows = run(
            f"SELECT count(*) FROM {SLOTS} WHERE key = ? AND {self._live()}",
            (key, *self._live_params()),
        )
        return int(rows[0][0])

    # -- leases: one holder at a time, fenced --------------------------------------------

    def lease_take(self, name: str) -> str | None:
        """Take the lease ``name``: its token, or ``None`` while a live worker holds it. A
        dead holder's lease is taken back first, in the same transaction, so its token is
        useless once another worker holds the lease (:meth:`lease_held`)."""
        now = time.time()
        with self.transaction(f"slot:{name}") as run:
            self.reap(run, now)
            if self._held(run, name):
                return None
            token = uuid.uuid4().hex
            run(
                f"INSERT INTO {SLOTS} (token, key, worker) VALUES (?, ?, ?)",
                (token, name, self.worker),
            )
            return token

    def lease_held(self, token: str) -> bool:
        """Whether the lease of ``token`` is still this worker's: not taken back, and this
        worker's heartbeat fresh (a worker silent past :attr:`stale_s` may be taken for dead
        at any moment: it holds nothing it could lose meanwhile)."""
        fresh = time.time() - self.stale_s if self.shared else 0.0
        with self.transaction() as run:
            rows = run(
                f"SELECT 1 FROM {SLOTS} WHERE token = ? AND worker = ? AND worker IN "
                f"(SELECT id FROM {WORKERS} WHERE seen >= ?)",
                (token, self.worker, fresh),
            )
        return bool(rows)

    # -- per-key rates -------------------------------------------------------------------

    def rate_take(self, key: str, per_minute: int, now: float | None = None) -> float:
        """Take one of ``key``'s requests from its bucket (``per_minute`` at most, refilled
        evenly): 0 when taken, else the seconds until one is free (nothing taken)."""
        now = time.time() if now is None else now
        refill = per_minute / 60.0
        with self.transaction(f"rate:{key}") as run:
            rows = run(f"SELECT tokens, updated FROM {RATES} WHERE key = ?", (key,))
            tokens = float(per_minute)
            updated = now
            if rows:
                # Another worker may have written a later time: its clock, or it took the
                # lock first. Refill from the later of both, never backwards.
                updated = max(now, float(rows[0][1]))
                tokens = min(tokens, float(rows[0][0]) + max(0.0, now - rows[0][1]) * refill)
            if tokens < 1.0:
                return (1.0 - tokens) / refill
            run(
                f"INSERT INTO {RATES} (key, tokens, updated) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, "
                "updated = excluded.updated",
                (key, tokens - 1.0, updated),
            )
            return 0.0
