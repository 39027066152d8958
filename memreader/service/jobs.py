"""Batch jobs over HTTP: each runs :func:`memreader.batch.job_run.run_job` in a thread, on the
service's reader and into the service's store, with progress to poll and a way to cancel.

A job over HTTP is the request's words, not the operator's: its inputs are paths inside the
operator's ``jobs.input_roots`` (no absolute paths, ``..``, globs or hidden names), its reader
is the service's (with the service's content switches), its output the service's store, and a
key that is not an admin's may only name its own users (``user_id`` from a constant).
"""

from __future__ import annotations

import logging
import os
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Literal

from pydantic import Field

from memreader.batch.job import InputSpec, JobConfig
from memreader.batch.job_run import JobSummary, run_job
from memreader.batch.results import InputResult
from memreader.errors import MemReaderError
from memreader.modes import ReadMode
from memreader.service.job_inputs import own_user, resolve_inside
from memreader.service.job_sharing import RemoteJob, SharedCancel
from memreader.service.keys import Principal
from memreader.service.metrics import ServiceMetrics
from memreader.service.models import RequestBody
from memreader.service.problems import ProblemError, problem_for, shown
from memreader.service.redact import PathScrub
from memreader.service.shared import JobRecord, SharedState
from memreader.service.shared.tables import LOST_PROBLEM

__all__ = ["JobInput", "JobManager", "JobRequest", "JobState", "resolve_inside"]

logger = logging.getLogger(__name__)

JobStatus = Literal["running", "cancelling", "succeeded", "failed", "cancelled"]


class JobInput(RequestBody):
    """One input of a job request: ``path`` inside the ``root``-th of the service's
    ``jobs.input_roots``, read as ``format``; ``user_id``/``session_id`` as in a job file."""

    root: int = Field(default=0, ge=0)
    path: str = Field(min_length=1, max_length=4096)
    format: str = "auto"
    mapping: dict[str, Any] | None = None
    user_id: dict[str, Any] | None = None
    session_id: dict[str, Any] | None = None


class JobRequest(RequestBody):
    """The body of ``POST /v1/jobs``."""

    inputs: list[JobInput] = Field(min_length=1, max_length=1000)
    type: Literal["chat", "doc"] = "chat"
    mode: ReadMode = "fast"
    tags: list[str] = Field(default_factory=list, max_length=64)
    scenes_per_call: int = Field(default=16, ge=1, le=10_000)


class JobState:
    """One job's status and live progress (updated by its thread; read by requests)."""

    def __init__(self, job_id: str, owner: str, scrub: PathScrub | None = None) -> None:
        self.id = job_id
        self.owner = owner
        self.scrub = scrub or PathScrub({})
        """What takes the server's absolute paths out of the summary and the problem."""
        self.status: JobStatus = "running"
        self.created_at = datetime.now(timezone.utc)
        self.finished_at: datetime | None = None
        self.cancel = threading.Event()
        self.inputs_total: int | None = None
        self.skipped = 0
        self.done = 0
        self.cut_short = 0
        self.failed = 0
        self.counts: dict[str, int] = {}
        self.errors = 0
        self.started = time.monotonic()
        self.summary: JobSummary | None = None
        self.problem: ProblemError | None = None
        #: Called with the job as shown after each change (the manager saves it for the
        #: other workers).
        self.on_change: Callable[[dict[str, Any]], None] | None = None
        self._lock = threading.Lock()

    def changed(self) -> None:
        """Tell :attr:`on_change` (outside the lock: it may write to the shared state)."""
        if self.on_change is not None:
            self.on_change(self.to_dict())

    def on_plan(self, to_read: int, skipped: int) -> None:
        with self._lock:
            self.inputs_total = to_read + skipped
            self.skipped = skipped
        self.changed()

    def on_result(self, result: InputResult) -> None:
        with self._lock:
            # An input cut short by the cancel is not done, but what it wrote is counted.
            self.cut_short += result.status == "cancelled"
            self.done += result.status != "cancelled"
            self.failed += result.status == "failed"
            self.errors += len(result.errors)
            for name, value in result.counts.items():
                self.counts[name] = self.counts.get(name, 0) + value
        self.changed()

    def to_dict(self) -> dict[str, Any]:
        """The job as ``GET /v1/jobs/{id}`` shows it."""
        with self._lock:
            elapsed = time.monotonic() - self.started
            if self.summary is not None:
                elapsed = self.summary.wall_s
            messages = self.counts.get("messages", 0)
            return {
                "id": self.id,
                "status": self.status,
                "created_at": self.created_at.isoformat(),
                "finished_at": None if self.finished_at is None else self.finished_at.isoformat(),
                "progress": {
                    "inputs_total": self.inputs_total,
                    "inputs_skipped": self.skipped,
                    "inputs_done": self.done,
                    "inputs_failed": self.failed,
                    "inputs_cut_short": self.cut_short,
                    "scenes": self.counts.get("scenes", 0),
                    "windows": self.counts.get("windows", 0),
                    "items": self.counts.get("items", 0),
                    "errors": self.errors + self.counts.get("failures", 0),
                    "messages": messages,
                    "messages_per_s": round(messages / elapsed, 2) if elapsed > 0 else 0.0,
                    "elapsed_s": round(elapsed, 3),
                },
                "summary": None if self.summary is None else self.scrub(self.summary.to_dict()),
                "problem": None if self.problem is None else self.scrub(self.problem.body()),
            }


class JobManager:
    """The service's jobs: at most ``max_running_per_key`` running per key (over every worker
    sharing ``shared``), the last ``keep_finished`` kept for polling. A job runs in the worker
    that took its request; any worker shows it and cancels it (:mod:`.job_sharing`)."""

    def __init__(
        self,
        *,
        reader: dict[str, Any],
        store_url: str | None,
        roots: list[Path],
        state_dir: str,
        max_running_per_key: int,
        keep_finished: int,
        metrics: ServiceMetrics,
        shared: SharedState | None = None,
    ) -> None:
        if shared is None:
            from memreader.service.shared.sqlite import SqliteSharedState

            shared = SqliteSharedState(":memory:").start()
        self.shared = shared
        self.reader = reader
        self.store_url = store_url
        self.roots = roots
        self.state_dir = state_dir
        self.max_running_per_key = max_running_per_key
        self.keep_finished = keep_finished
        self.metrics = metrics
        self._jobs: OrderedDict[str, JobState] = OrderedDict()
        self._threads: dict[str, threading.Thread] = {}
        self._lock = threading.Lock()

    def submit(self, principal: Principal, request: JobRequest) -> JobState:
        """Check ``request`` and start it.

        Raises:
            ProblemError: 403 (a path or user the key may not name, or jobs are off), 409 (no
                store), 422 (a bad input spec), 429 (the key's jobs are all running).
        """
        if not self.roots:
            raise ProblemError(
                403,
                "jobs-disabled",
                "Jobs are not enabled",
                "this service runs no jobs: its operator has set no jobs.input_roots",
            )
        if self.store_url is None:
            raise ProblemError(
                409, "no-store", "No store", "jobs write to the service's store; none is set"
            )
        job_id = uuid.uuid4().hex
        config = self._job_config(principal, request, job_id)
        state = JobState(job_id, principal.name, self._scrub(job_id))
        state.cancel = SharedCancel(lambda: self.shared.job_should_stop(job_id))
        record = JobRecord(job_id, principal.name, state.to_dict(), False, self.shared.worker)
        running = self.shared.job_add(record, self.max_running_per_key)
        if running is not None:
            raise ProblemError(
                429,
                "too-many-jobs",
                "Too many jobs",
                f"this key already runs {running} job(s) (max_running_per_key is "
                f"{self.max_running_per_key}); wait for one to end or cancel it",
                headers={"Retry-After": "5"},
            )
        state.on_change = lambda shown: self._save(job_id, shown)
        with self._lock:
            self._jobs[job_id] = state
            self._trim()
            thread = threading.Thread(
                target=self._run,
                args=(state, config),
                name=f"memreader-job-{job_id[:8]}",
                daemon=True,
            )
            self._threads[job_id] = thread
        thread.start()
        return state

    def get(self, principal: Principal, job_id: str) -> JobState | RemoteJob:
        """The job ``job_id`` of this key (an admin key sees every job): this worker's own
        as it runs, another's as it last saved it.

        Raises:
            ProblemError: 404, no such job of this key.
        """
        with self._lock:
            state: JobState | RemoteJob | None = self._jobs.get(job_id)
        if state is None:
            record = self.shared.job_load(job_id)
            state = None if record is None else RemoteJob(record)
        if state is None or not (principal.is_admin or state.owner == principal.name):
            raise ProblemError(404, "not-found", "No such job", f"no job {shown(job_id)}")
        return state

    def cancel(self, principal: Principal, job_id: str) -> JobState | RemoteJob:
        """Ask the job to stop (it ends as ``cancelled`` after the batch it is in), whichever
        worker runs it."""
        state = self.get(principal, job_id)
        if isinstance(state, RemoteJob):
            record = self.shared.job_cancel(job_id)
            return state if record is None else RemoteJob(record)
        with state._lock:
            if state.status == "running":
                state.status = "cancelling"
                state.cancel.set()
        self.shared.job_cancel(job_id)
        return state

    def close(self, timeout_s: float = 30.0) -> None:
        """Cancel every running job and wait (up to ``timeout_s`` in all) for them to end."""
        with self._lock:
            jobs = list(self._jobs.values())
            threads = list(self._threads.values())
        for job in jobs:
            job.cancel.set()
        deadline = time.monotonic() + timeout_s
        for thread in threads:
            thread.join(max(0.0, deadline - time.monotonic()))

    def _run(self, state: JobState, config: JobConfig) -> None:
        outcome = "failed"
        try:
            summary = run_job(
                config, on_plan=state.on_plan, on_result=state.on_result, cancel=state.cancel
            )
            state.summary = summary
            outcome = "cancelled" if summary.cancelled else "succeeded"
        except MemReaderError as exc:
            state.problem = problem_for(exc)
        except Exception as exc:  # a bug: the job fails with a problem, the service goes on
            state.problem = problem_for(exc)
        finally:
            if getattr(state.cancel, "lost", False):
                # Taken back while this worker was silent: failed, as every worker shows it.
                outcome, state.problem = "failed", _lost_problem()
            with state._lock:
                state.status = outcome  # type: ignore[assignment]
                state.finished_at = datetime.now(timezone.utc)
            state.changed()
            self.metrics.jobs.labels(outcome).inc()
            with self._lock:
                self._threads.pop(state.id, None)

    def _save(self, job_id: str, shown: dict[str, Any]) -> None:
        """Save the job as shown for the other workers; a failure is logged (this worker
        still shows it; the next change saves it again). A job taken back from this worker
        saves nothing: it is told to stop."""
        try:
            saved = self.shared.job_save(job_id, shown)
        except MemReaderError as exc:
            logger.warning("job %s: could not save its progress for other workers: %s", job_id, exc)
            return
        with self._lock:
            state = self._jobs.get(job_id)
        if not saved and state is not None and isinstance(state.cancel, SharedCancel):
            if not state.cancel.lost:
                logger.error("job %s was taken back from this worker; stopping it", job_id)
            state.cancel.set_lost()

    def _scrub(self, job_id: str) -> PathScrub:
        """Paths under the input roots become relative, the job's state folder ``job``, the
        store's file and the state folder their names."""
        from memreader.stores.urls import sqlite_file

        prefixes = {str(root): "" for root in self.roots}
        prefixes[os.path.join(self.state_dir, job_id)] = "job"
        prefixes[self.state_dir] = os.path.basename(self.state_dir.rstrip("/"))
        file = sqlite_file(self.store_url or "")
        if file is not None:
            prefixes[os.path.abspath(file)] = os.path.basename(file)
        return PathScrub(prefixes)

    def _trim(self) -> None:
        finished = [j for j in self._jobs.values() if j.status not in ("running", "cancelling")]
        for job in finished[: max(0, len(finished) - self.keep_finished)]:
            del self._jobs[job.id]
        self.shared.job_trim(self.keep_finished)

    def _job_config(self, principal: Principal, request: JobRequest, job_id: str) -> JobConfig:
        inputs = [self._input(principal, spec, n) for n, spec in enumerate(request.inputs)]
        try:
            return JobConfig.model_validate(
                {
                    "reader": self.reader,
                    "type": request.type,
                    "mode": request.mode,
                    "inputs": inputs,
                    "output": {
                        "path": os.path.join(self.state_dir, job_id),
                        "format": "store",
                        "store": self.store_url,
                    },
                    "tags": request.tags,
                    "scenes_per_call": request.scenes_per_call,
                }
            )
        except MemReaderError as exc:
            raise problem_for(exc) from None

    def _input(self, principal: Principal, spec: JobInput, n: int) -> dict[str, Any]:
        where = f"inputs[{n}]"
        if spec.root >= len(self.roots):
            raise ProblemError(
                403,
                "path-not-allowed",
                "Path not allowed",
                f"{where}.root: the service has {len(self.roots)} input root(s)",
            )
        root = self.roots[spec.root]
        path = resolve_inside(root, spec.path, where)
        user_id = spec.user_id
        if not principal.is_admin:
            user_id = own_user(principal, user_id, where)
        data = spec.model_dump(exclude={"root"}, exclude_none=True)
        # Every file read must stay in the root, a symlink inside a folder of it included.
        data.update(path=str(path), within=str(root))
        if user_id is not None:
            data["user_id"] = user_id
        try:
            return InputSpec.model_validate(data).model_dump(by_alias=True, exclude_none=True)
        except MemReaderError as exc:
            problem = problem_for(exc)
            problem.detail = f"{where}: {problem.detail}"
            raise problem from None


def _lost_problem() -> ProblemError:
    """The problem of a job taken back from its worker (as the shared state shows it)."""
    return ProblemError(
        int(LOST_PROBLEM["status"]),
        str(LOST_PROBLEM["type"]).rsplit(":", 1)[1],
        str(LOST_PROBLEM["title"]),
        str(LOST_PROBLEM["detail"]),
    )
