"""A cancelled job into a store reports what it wrote: the parts of an input cut short stay in
the store (a store has no uncommitted rows), so its ``cancelled`` result, the summary and a
service job's progress count them; a rerun still reads that input again."""

from __future__ import annotations

import pickle
import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from memreader.batch.job import load_job
from memreader.batch.job_run import run_job
from memreader.batch.results import InputCancelled, InputResult
from memreader.batch.sinks import store as store_sink
from memreader.factory import MemReaderConfigFactory
from memreader.pipeline import Step
from memreader.service import ServiceConfig, ServiceSettings, create_app
from memreader.service.jobs import JobState
from tests.batch.jobs import chat_lines
from tests.service_server import running

pytestmark = pytest.mark.timeout(120)

CANCEL = threading.Event()
CALLS: list[int] = []
#: The reader call (one per batch of one scene) after which :class:`CancelAt` cancels.
CANCEL_AT = 3
#: Called too when :class:`CancelAt` cancels (a service job's own cancel).
HOOKS: list[Callable[[], None]] = []


class CancelAt(Step):
    """Counts reader calls and sets :data:`CANCEL` at the :data:`CANCEL_AT`-th."""

    name = "cancel_at"
    requires = ("emitted",)
    produces = ("emitted",)

    def run(self, state: Any, runtime: Any) -> None:
        CALLS.append(1)
        if len(CALLS) >= CANCEL_AT:
            CANCEL.set()
            for hook in HOOKS:
                hook()


STEP = {"step": "tests.batch.test_batch_cancel_store:CancelAt"}


READER = {
    "embedder": {"backend": "hash"},
    "pipeline": {"insert_before": {"embed": [STEP]}, "allow_imports": True},
}


def _job(folder: Path) -> Path:
    (folder / "in").mkdir()
    (folder / "in" / "a.jsonl").write_text(chat_lines(6, "a"))
    job = {
        "reader": {"backend": "simple_struct", "config": READER},
        "inputs": [{"path": "in", "user_id": {"from": "constant", "value": "u1"}}],
        "output": {"store": "sqlite:///m.db"},
        "scenes_per_call": 1,
    }
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return path


def _rows(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return int(conn.execute("SELECT count(*) FROM memories").fetchone()[0])


def test_a_cancelled_store_job_counts_the_rows_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_sink, "PART_ITEMS", 1)  # every item is written as it comes
    CALLS.clear()
    CANCEL.clear()
    seen: list[InputResult] = []
    job = load_job(_job(tmp_path))
    summary = run_job(job, cancel=CANCEL, on_result=seen.append)
    written = _rows(tmp_path / "m.db")
    assert len(CALLS) == CANCEL_AT and written > 0  # batches 1-3 wrote, 4-6 never ran
    assert summary.cancelled and summary.read == 0 and summary.cut_short == 1
    assert summary.counts["items"] == written
    assert [r.status for r in seen] == ["cancelled"] and seen[0].counts["items"] == written
    assert any("1 of them cut short" in line for line in summary.lines())
    # The service's progress counts it too, without calling the input done.
    state = JobState("j", "key")
    state.on_plan(1, 0)
    state.on_result(seen[0])
    progress = state.to_dict()["progress"]
    assert progress["items"] == written and progress["inputs_done"] == 0
    assert progress["inputs_cut_short"] == 1
    # No manifest entry: a rerun reads the input again, to the same rows plus the rest.
    CALLS.clear()
    again = run_job(load_job(tmp_path / "job.yaml"))
    assert again.read == 1 and not again.cancelled
    assert _rows(tmp_path / "m.db") == again.counts["items"] >= written


def test_a_cut_short_result_comes_back_whole_from_a_worker_process() -> None:
    result = InputResult("a.jsonl", "d", status="cancelled")
    result.counts["items"] = 7
    back = pickle.loads(pickle.dumps(InputCancelled("a.jsonl", result)))
    assert back.result is not None and back.result.counts["items"] == 7
    assert pickle.loads(pickle.dumps(InputCancelled("b"))).result is None


def test_a_cancelled_service_job_reports_the_rows_it_wrote(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(store_sink, "PART_ITEMS", 1)
    CALLS.clear()
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "a.jsonl").write_text(chat_lines(6, "a"))
    factory = MemReaderConfigFactory.from_dict({"config": {**READER, "store": "sqlite:///m.db"}})
    settings = ServiceSettings(jobs={"input_roots": ["data"]})
    app = create_app(ServiceConfig(factory, settings, base_dir=str(tmp_path)))
    jobs = app.state.service.jobs
    # The job's own cancel, as DELETE /v1/jobs/{id} sets it, at the third batch.
    HOOKS.append(lambda: [job.cancel.set() for job in jobs._jobs.values()])
    try:
        with running(app) as url:
            spec = {"inputs": [{"path": "a.jsonl"}], "scenes_per_call": 1}
            job_id = httpx.post(f"{url}/v1/jobs", json=spec).json()["id"]
            for _ in range(600):  # bounded wait for the job to end
                job = httpx.get(f"{url}/v1/jobs/{job_id}").json()
                if job["status"] not in ("running", "cancelling"):
                    break
                time.sleep(0.05)
    finally:
        HOOKS.clear()
    written = _rows(tmp_path / "m.db")
    assert job["status"] == "cancelled" and written > 0, job
    assert job["progress"]["items"] == written == job["summary"]["counts"]["items"]
    assert job["progress"]["inputs_cut_short"] == 1 == job["summary"]["cut_short"]
    assert job["progress"]["inputs_done"] == 0


def test_a_store_input_that_fails_midway_counts_the_rows_it_left(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails after two parts were written: the input is ``failed`` (and read
    again by a rerun), and its result, the manifest and the summary count the rows that stay."""
    from memreader.errors import StoreError
    from memreader.stores.sqlite.store import SQLiteStore

    monkeypatch.setattr(store_sink, "PART_ITEMS", 1)
    CALLS.clear()
    CANCEL.clear()
    real = SQLiteStore.write_part
    parts: list[int] = []

    def failing_third(self: SQLiteStore, *args: Any, **kwargs: Any) -> Any:
        parts.append(1)
        if len(parts) == 3:
            raise StoreError("disk full (a test's)")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(SQLiteStore, "write_part", failing_third)
    seen: list[InputResult] = []
    summary = run_job(load_job(_job(tmp_path)), on_result=seen.append)
    written = _rows(tmp_path / "m.db")
    assert written == 2  # parts 1 and 2 stay: a store has no uncommitted rows across parts
    assert [r.status for r in seen] == ["failed"] and seen[0].counts["items"] == written
    assert (
        "disk full" in (seen[0].error or "")
        and "2 items written before" in seen[0].errors[0]["message"]
    )
    assert summary.failed_inputs == 1 and summary.counts["items"] == written
    # The failure is recorded: a rerun (the store healthy again) reads the input again.
    monkeypatch.setattr(SQLiteStore, "write_part", real)
    again = run_job(load_job(tmp_path / "job.yaml"))
    assert again.retried == 1 and again.failed_inputs == 0
    assert _rows(tmp_path / "m.db") == again.counts["items"] >= written
