"""What every worker and replica of one service shares, in SQL: who is alive, the per-key
request slots and rate buckets, the ``Idempotency-Key`` answers and the jobs with their
progress.

A backend (:mod:`~memreader.service.shared.sqlite`,
:mod:`~memreader.service.shared.postgres`) gives :meth:`SharedState.transaction` and its
tables; the rules are here, once. Every transaction is short (a few statements, never a call
out) so that workers queue on it for microseconds.

A worker proves it is alive by a heartbeat row it refreshes every :attr:`SharedState.beat_s`;
one silent for :attr:`SharedState.stale_s` (it crashed, or its machine went) is dead: its
slots free themselves, its unanswered idempotency records are dropped (a retry runs) and its
running jobs are marked failed. Times are the workers' clocks (seconds since the epoch): the
stale margin absorbs a small skew between machines.
"""

from __future__ import annotations

import json
import logging
import os
import socket
import threading
import time
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Literal

__all__ = ["IdemVerdict", "JobRecord", "Run", "SharedState", "StoredAnswer"]

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


@dataclass(frozen=True)
class StoredAnswer:
    """A finished request's answer, as it is replayed."""

    status: int
    body: bytes
    media_type: str


@dataclass(frozen=True)
class IdemVerdict:
    """What :meth:`SharedState.idem_begin` found: ``new`` (run it), ``running`` (the first is
    still running), ``mismatch`` (the key came with another body) or ``done`` with ``answer``."""

    kind: Literal["new", "running", "mismatch", "done"]
    answer: StoredAnswer | None = None


@dataclass(frozen=True)
class JobRecord:
    """One job as every worker sees it: its owner, ``data`` (what ``GET /v1/jobs/{id}`` shows),
    whether a cancel was asked, and the worker running it."""

    id: str
    owner: str
    data: dict[str, Any]
    cancel: bool
    worker: str


class SharedState(ABC):
    """The shared tables of one service (see the module docstring)."""

    beat_s: float = 5.0
    stale_s: float = 15.0

    def __init__(self) -> None:
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
        self._stop = threading.Event()
        self._beats: threading.Thread | None = None

    # -- what a backend gives ------------------------------------------------------------

    @abstractmethod
    def transaction(self, lock: str | None = None) -> AbstractContextManager[Run]:
        """One transaction; ``lock`` names what it decides (the backend serialises the
        transactions deciding the same thing, or all of them)."""

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
        """Refresh this worker's heartbeat and clear what dead workers left."""
        now = time.time()
        with self.transaction() as run:
            run(
                f"INSERT INTO {WORKERS} (id, seen) VALUES (?, ?) "
                "ON CONFLICT (id) DO UPDATE SET seen = excluded.seen",
                (self.worker, now),
            )
            dead = [
                row[0]
                for row in run(f"SELECT id FROM {WORKERS} WHERE seen < ?", (now - self.stale_s,))
            ]
            for worker in dead:
                logger.warning(
                    "shared state: worker %s stopped answering; freeing its work", worker
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
                    shown["problem"] = {
                        "type": "urn:memreader:problem:worker-lost",
                        "title": "Worker lost",
                        "status": 500,
                        "detail": "the service worker running this job stopped; rerun the job "
                        "(inputs already read are skipped)",
                    }
                    run(
                        f"UPDATE {JOBS} SET status = 'failed', data = ? WHERE id = ?",
                        (json.dumps(shown), job_id),
                    )
                run(f"DELETE FROM {WORKERS} WHERE id = ?", (worker,))

    def _live(self) -> str:
        """SQL: whether the row's ``worker`` is alive (this one, or one whose beat is fresh);
        two parameters, :meth:`_live_params`."""
        return f"(worker = ? OR worker IN (SELECT id FROM {WORKERS} WHERE seen >= ?))"

    def _live_params(self) -> tuple[str, float]:
        return self.worker, time.time() - self.stale_s

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

    def slot_free(self, token: str) -> None:
        """Give a slot back."""
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

    # -- per-key rates -------------------------------------------------------------------

    def rate_take(self, key: str, per_minute: int, now: float | None = None) -> float:
        """Take one of ``key``'s requests from its bucket (``per_minute`` at most, refilled
        evenly): 0 when taken, else the seconds until one is free (nothing taken)."""
        now = time.time() if now is None else now
        refill = per_minute / 60.0
        with self.transaction(f"rate:{key}") as run:
            rows = run(f"SELECT tokens, updated FROM {RATES} WHERE key = ?", (key,))
            tokens = float(per_minute)
            if rows:
                tokens = min(tokens, float(rows[0][0]) + max(0.0, now - rows[0][1]) * refill)
            if tokens < 1.0:
                return (1.0 - tokens) / refill
            run(
                f"INSERT INTO {RATES} (key, tokens, updated) VALUES (?, ?, ?) "
                "ON CONFLICT (key) DO UPDATE SET tokens = excluded.tokens, "
                "updated = excluded.updated",
                (key, tokens - 1.0, now),
            )
            return 0.0

    # -- idempotency ----------------------------------------------------------------------

    def idem_begin(
        self, slot: tuple[str, str, str], digest: str, ttl_s: float, max_entries: int
    ) -> IdemVerdict:
        """Look up (API key, route, Idempotency-Key) ``slot``; record it as running when new
        (expired records go first, and the oldest beyond ``max_entries``)."""
        now = time.time()
        with self.transaction("idem:" + "\x1f".join(slot)) as run:
            run(f"DELETE FROM {IDEM} WHERE created < ?", (now - ttl_s,))
            rows = run(
                f"SELECT digest, status, body, media_type, {self._live()} FROM {IDEM} "
                "WHERE principal = ? AND route = ? AND key = ?",
                (*self._live_params(), *slot),
            )
            if rows:
                found, status, body, media_type, alive = rows[0]
                if status is not None or alive:
                    if found != digest:
                        return IdemVerdict("mismatch")
                    if status is None:
                        return IdemVerdict("running")
                    return IdemVerdict("done", StoredAnswer(int(status), bytes(body), media_type))
                # Its worker died before answering: this request runs it.
                run(f"DELETE FROM {IDEM} WHERE principal = ? AND route = ? AND key = ?", slot)
            run(
                f"INSERT INTO {IDEM} (principal, route, key, digest, created, worker) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                (*slot, digest, now, self.worker),
            )
            (count,) = run(f"SELECT count(*) FROM {IDEM}", ())[0]
            if count > max_entries:
                run(
                    f"DELETE FROM {IDEM} WHERE created <= (SELECT created FROM {IDEM} "
                    "ORDER BY created DESC LIMIT 1 OFFSET ?)",
                    (max_entries,),
                )
            return IdemVerdict("new")

    def idem_finish(self, slot: tuple[str, str, str], answer: StoredAnswer) -> None:
        """Keep ``answer`` for retries."""
        with self.transaction() as run:
            run(
                f"UPDATE {IDEM} SET status = ?, body = ?, media_type = ? "
                "WHERE principal = ? AND route = ? AND key = ?",
                (answer.status, answer.body, answer.media_type, *slot),
            )

    def idem_abandon(self, slot: tuple[str, str, str]) -> None:
        """Forget a request that failed before it changed anything, so a retry runs it."""
        with self.transaction() as run:
            run(
                f"DELETE FROM {IDEM} WHERE principal = ? AND route = ? AND key = ? "
                "AND status IS NULL",
                slot,
            )

    # -- jobs -----------------------------------------------------------------------------

    def job_add(self, job: JobRecord, limit: int) -> int | None:
        """Record ``job`` as running, unless its owner runs ``limit`` jobs already (then that
        count)."""
        with self.transaction(f"jobs:{job.owner}") as run:
            (running,) = run(
                f"SELECT count(*) FROM {JOBS} WHERE owner = ? AND status IN ('running', "
                f"'cancelling') AND {self._live()}",
                (job.owner, *self._live_params()),
            )[0]
            if running >= limit:
                return int(running)
            run(
                f"INSERT INTO {JOBS} (id, owner, status, worker, cancel, updated, data) "
                "VALUES (?, ?, ?, ?, 0, ?, ?)",
                (job.id, job.owner, job.data["status"], self.worker, time.time(), _dump(job.data)),
            )
            return None

    def job_save(self, job_id: str, data: dict[str, Any]) -> None:
        """Store a job's progress (and status) as its worker sees it now; a cancel asked
        elsewhere stays asked."""
        with self.transaction() as run:
            run(
                f"UPDATE {JOBS} SET status = ?, data = ?, updated = ? WHERE id = ?",
                (data["status"], _dump(data), time.time(), job_id),
            )

    def job_load(self, job_id: str) -> JobRecord | None:
        """The job ``job_id``, as its worker last stored it."""
        with self.transaction() as run:
            rows = run(
                f"SELECT id, owner, data, cancel, worker FROM {JOBS} WHERE id = ?", (job_id,)
            )
        return _record(rows[0]) if rows else None

    def job_cancel(self, job_id: str) -> JobRecord | None:
        """Ask the job to stop (its worker sees it at its next look); the job as it is now."""
        with self.transaction(f"job:{job_id}") as run:
            rows = run(
                f"SELECT id, owner, data, cancel, worker FROM {JOBS} WHERE id = ?", (job_id,)
            )
            if not rows:
                return None
            record = _record(rows[0])
            if record.data["status"] == "running":
                record.data["status"] = "cancelling"
                run(
                    f"UPDATE {JOBS} SET cancel = 1, status = 'cancelling', data = ? WHERE id = ?",
                    (_dump(record.data), job_id),
                )
            return JobRecord(record.id, record.owner, record.data, True, record.worker)

    def job_cancel_asked(self, job_id: str) -> bool:
        """Whether a cancel was asked for ``job_id`` (by any worker)."""
        with self.transaction() as run:
            rows = run(f"SELECT cancel FROM {JOBS} WHERE id = ?", (job_id,))
        return bool(rows and rows[0][0])

    def job_trim(self, keep: int) -> None:
        """Forget all but the ``keep`` newest finished jobs."""
        with self.transaction("jobs") as run:
            run(
                f"DELETE FROM {JOBS} WHERE status NOT IN ('running', 'cancelling') AND updated < "
                f"(SELECT updated FROM {JOBS} WHERE status NOT IN ('running', 'cancelling') "
                "ORDER BY updated DESC LIMIT 1 OFFSET ?)",
                (max(0, keep - 1),),
            )


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False)


def _record(row: tuple[Any, ...]) -> JobRecord:
    job_id, owner, data, cancel, worker = row
    return JobRecord(job_id, owner, json.loads(data), bool(cancel), worker)
