"""The jobs in the shared state: each row names the worker running it, and only that worker,
while the job is running, may save it (:meth:`JobTable.job_save`). A worker taken for dead
(:meth:`~memreader.service.shared.tables.Tables.reap`) loses its jobs: they are ``failed``
(``worker-lost``), and when it resumes, :meth:`JobTable.job_should_stop` tells each of its job
threads to stop, and nothing it saves lands."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any, Literal

from memreader.service.shared.tables import JOBS, Tables

__all__ = ["JobRecord", "JobTable"]

_RUNNING = "('running', 'cancelling')"


@dataclass(frozen=True)
class JobRecord:
    """One job as every worker sees it: its owner, ``data`` (what ``GET /v1/jobs/{id}`` shows),
    whether a cancel was asked, and the worker running it."""

    id: str
    owner: str
    data: dict[str, Any]
    cancel: bool
    worker: str


class JobTable(Tables):
    """The job methods of the shared state."""

    def job_add(self, job: JobRecord, limit: int) -> int | None:
        """Record ``job`` as running in this worker, unless its owner runs ``limit`` jobs
        already (then that count). Jobs of dead workers are taken back first (failed), so
        the count is of jobs that are really running."""
        now = time.time()
        with self.transaction(f"jobs:{job.owner}") as run:
            self.reap(run, now)
            (running,) = run(
                f"SELECT count(*) FROM {JOBS} WHERE owner = ? AND status IN {_RUNNING} "
                f"AND {self._live()}",
                (job.owner, *self._live_params()),
            )[0]
            if running >= limit:
                return int(running)
            run(
                f"INSERT INTO {JOBS} (id, owner, status, worker, cancel, updated, data) "
                "VALUES (?, ?, ?, ?, 0, ?, ?)",
                (job.id, job.owner, job.data["status"], self.worker, now, _dump(job.data)),
            )
            return None

    def job_save(self, job_id: str, data: dict[str, Any]) -> bool:
        """Store a job's progress (and status) as this worker sees it now; a cancel asked
        elsewhere stays asked. Only while the job is this worker's and running: ``False``
        when it was taken back (then nothing is saved)."""
        with self.transaction() as run:
            found = run(
                f"SELECT 1 FROM {JOBS} WHERE id = ? AND worker = ? AND status IN {_RUNNING}",
                (job_id, self.worker),
            )
            if not found:
                return False
            run(
                f"UPDATE {JOBS} SET status = ?, data = ?, updated = ? WHERE id = ?",
                (data["status"], _dump(data), time.time(), job_id),
            )
            return True

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

    def job_should_stop(self, job_id: str) -> Literal["cancel", "lost"] | None:
        """Whether this worker's job ``job_id`` must stop: ``cancel`` (asked by any worker),
        ``lost`` (it is no longer this worker's running job: taken back), else ``None``."""
        with self.transaction() as run:
            rows = run(f"SELECT cancel, status, worker FROM {JOBS} WHERE id = ?", (job_id,))
        if not rows:
            return "lost"
        cancel, status, worker = rows[0]
        if worker != self.worker or status not in ("running", "cancelling"):
            return "lost"
        return "cancel" if cancel else None

    def job_trim(self, keep: int) -> None:
        """Forget all but the ``keep`` newest finished jobs."""
        with self.transaction("jobs") as run:
            run(
                f"DELETE FROM {JOBS} WHERE status NOT IN {_RUNNING} AND updated < "
                f"(SELECT updated FROM {JOBS} WHERE status NOT IN {_RUNNING} "
                "ORDER BY updated DESC LIMIT 1 OFFSET ?)",
                (max(0, keep - 1),),
            )


def _dump(data: dict[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False)


def _record(row: tuple[Any, ...]) -> JobRecord:
    job_id, owner, data, cancel, worker = row
    return JobRecord(job_id, owner, json.loads(data), bool(cancel), worker)
