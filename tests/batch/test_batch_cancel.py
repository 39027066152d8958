"""Cancelling a batch job (``run_job(..., cancel=event)``): no input starts after the cancel, an
input being read stops within one batch and publishes nothing, the summary says ``cancelled``,
and a rerun reads the rest and ends with the items of an uncancelled run. In this process, with
worker processes and on Ray; progress from ``on_plan`` and ``on_result`` alone."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from memreader.batch.job import load_job
from memreader.batch.job_run import EXIT_CANCELLED, JobSummary, run_job
from memreader.batch.results import InputResult
from memreader.pipeline import Step
from tests.batch.jobs import HASH_READER, chat_lines, output_items, write_job

pytestmark = pytest.mark.timeout(120)

#: Set by :class:`Trip` once it has run :data:`TRIP_AFTER` times (this process only).
TRIPPED = threading.Event()
TRIP_AFTER = 2
CALLS: list[int] = []


class Trip(Step):
    """Counts reader calls (one per batch) and sets :data:`TRIPPED` after the second: a cancel
    that arrives while an input is being read."""

    name = "trip"
    requires = ("emitted",)
    produces = ("emitted",)

    def run(self, state: Any, runtime: Any) -> None:
        CALLS.append(1)
        if len(CALLS) >= TRIP_AFTER:
            TRIPPED.set()


#: Where :class:`CountedSlow` (in worker processes too) writes a line per reader call.
CALL_LOG = "MEMREADER_TEST_CALL_LOG"


class CountedSlow(Step):
    """Takes a moment per reader call (one per batch) and writes a line for it to the file
    named by :data:`CALL_LOG`: a count of batches started that no machine's load changes."""

    name = "counted_slow"
    requires = ("emitted",)
    produces = ("emitted",)

    def run(self, state: Any, runtime: Any) -> None:
        with open(os.environ[CALL_LOG], "a", encoding="utf-8") as log:
            log.write("call\n")
        time.sleep(0.15)


def _reader(step: str | None) -> dict[str, Any]:
    if step is None:
        return HASH_READER
    return {
        "backend": "simple_struct",
        "config": {
            "embedder": {"backend": "hash"},
            "pipeline": {
                "insert_before": {"embed": [{"step": step}]},
                "allow_imports": True,
            },
        },
    }


def _inputs(folder: Path, n: int, scenes: int = 3) -> None:
    (folder / "in").mkdir()
    for k in range(n):
        (folder / "in" / f"c{k:02d}.jsonl").write_text(chat_lines(scenes, f"x{k}"))


def _job(folder: Path, out: str, *, step: str | None = None, **extra: Any) -> Path:
    return write_job(
        folder,
        {"reader": _reader(step), "inputs": [{"path": "in"}], "output": {"path": out}, **extra},
        f"{out}.yaml",
    )


def _manifest(folder: Path) -> dict[str, Any]:
    """The manifest's entries (none when it was never written)."""
    path = folder / "_manifest.json"
    if not path.exists():
        return {}
    inputs: dict[str, Any] = json.loads(path.read_text())["inputs"]
    return inputs


def _published(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.glob("*.jsonl") if not p.name.startswith("_"))


def _cancel_after_first(cancel: threading.Event, seen: list[InputResult]) -> Any:
    def on_result(result: InputResult) -> None:
        seen.append(result)
        cancel.set()

    return on_result


def _rerun_matches_uncancelled(tmp_path: Path, out: str, summary: JobSummary, **extra: Any) -> None:
    """Running the cancelled job again reads the rest: every input done, the items of a run
    that was never cancelled."""
    again = run_job(load_job(_job(tmp_path, out, **extra)))
    assert not again.cancelled and again.exit_code == 0
    assert again.skipped == summary.read and again.read == summary.inputs - summary.read
    assert {e["status"] for e in _manifest(tmp_path / out).values()} == {"done"}
    assert len(_manifest(tmp_path / out)) == summary.inputs
    run_job(load_job(_job(tmp_path, "fresh")))
    assert output_items(tmp_path / out) == output_items(tmp_path / "fresh")


def test_a_cancel_between_inputs_stops_the_job_and_a_rerun_reads_the_rest(
    tmp_path: Path,
) -> None:
    _inputs(tmp_path, 5)
    cancel = threading.Event()
    seen: list[InputResult] = []
    planned: list[tuple[int, int]] = []
    summary = run_job(
        load_job(_job(tmp_path, "out")),
        cancel=cancel,
        on_result=_cancel_after_first(cancel, seen),
        on_plan=lambda todo, skipped: planned.append((todo, skipped)),
    )
    assert planned == [(5, 0)]
    assert summary.cancelled and summary.read == 1 == len(seen) < summary.inputs == 5
    assert summary.exit_code == EXIT_CANCELLED
    assert summary.to_dict()["cancelled"] is True
    assert any("cancelled: 4 input(s) not read" in line for line in summary.lines())
    out = tmp_path / "out"
    # Only the input that finished is published and recorded; the summary is still written.
    assert len(_published(out)) == 1
    assert list(_manifest(out)) == [seen[0].key]
    written = json.loads((out / "_summary.json").read_text())
    assert written["cancelled"] is True and written["exit_code"] == EXIT_CANCELLED
    # The fields a progress display needs come with each result.
    assert seen[0].status == "done"
    assert {"scenes", "messages", "windows", "items", "failures"} <= set(seen[0].counts)
    assert seen[0].counts["scenes"] == 3 and seen[0].counts["items"] > 0
    _rerun_matches_uncancelled(tmp_path, "out", summary)


def test_a_cancel_inside_an_input_stops_within_a_batch_and_publishes_nothing(
    tmp_path: Path,
) -> None:
    _inputs(tmp_path, 2, scenes=6)
    CALLS.clear()
    TRIPPED.clear()
    trip = "tests.batch.test_batch_cancel:Trip"
    summary = run_job(load_job(_job(tmp_path, "out", step=trip, scenes_per_call=1)), cancel=TRIPPED)
    # Batch 2 of 6 set the cancel: batch 3 never started, and nothing of the input is out.
    assert len(CALLS) == TRIP_AFTER
    assert summary.cancelled and summary.read == 0 and summary.failed_inputs == 0
    out = tmp_path / "out"
    assert _published(out) == []
    assert not [p for p in out.iterdir() if p.name.endswith(".tmp")], "temporary files left"
    assert _manifest(out) == {}
    assert (out / "_errors.jsonl").read_text() == ""
    _rerun_matches_uncancelled(tmp_path, "out", summary, step=trip, scenes_per_call=1)


def test_a_cancel_before_the_job_reads_nothing(tmp_path: Path) -> None:
    _inputs(tmp_path, 2)
    cancel = threading.Event()
    cancel.set()
    summary = run_job(load_job(_job(tmp_path, "out")), cancel=cancel)
    assert summary.cancelled and summary.read == 0 and summary.inputs == 2
    assert _published(tmp_path / "out") == []


def test_a_cancel_after_the_last_input_is_not_a_cancelled_job(tmp_path: Path) -> None:
    _inputs(tmp_path, 1)
    cancel = threading.Event()
    summary = run_job(
        load_job(_job(tmp_path, "out")), cancel=cancel, on_result=lambda _: cancel.set()
    )
    assert not summary.cancelled and summary.read == 1 and summary.exit_code == 0


@pytest.mark.timeout(90)
def test_a_cancel_stops_worker_processes_within_a_batch(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # One short input, then long ones (20 slow batches, 3 s): the short one's result cancels
    # the job while the other worker is early in a long input, which must stop at its next
    # batch, not run to its end (nor wait out the grace period). Batches are counted, not
    # timed: each call writes a line, and the cancel writes one where it happens.
    _inputs(tmp_path, 4, scenes=20)
    (tmp_path / "in" / "c00.jsonl").write_text(chat_lines(1, "short"))
    log = tmp_path / "calls.log"
    monkeypatch.setenv(CALL_LOG, str(log))
    slow = "tests.batch.test_batch_cancel:CountedSlow"
    cancel = threading.Event()
    seen: list[InputResult] = []

    def on_result(result: InputResult) -> None:
        seen.append(result)
        cancel.set()
        with open(log, "a", encoding="utf-8") as out:
            out.write("cancel\n")

    extra: dict[str, Any] = {
        "step": slow,
        "scenes_per_call": 1,
        "engine": {"kind": "local", "workers": 2},
    }
    summary = run_job(load_job(_job(tmp_path, "out", **extra)), cancel=cancel, on_result=on_result)
    lines = log.read_text(encoding="utf-8").splitlines()
    after = lines[lines.index("cancel") + 1 :]
    # At most the batch each worker had in hand when the cancel reached it, of 20 per input.
    assert lines.count("cancel") == 1 and len(after) <= 2 * 2, lines
    assert len(lines) - 1 < 1 + 20, "the long input ran to its end"
    assert summary.cancelled and summary.read == len(seen) == 1
    assert len(_published(tmp_path / "out")) == 1 == len(_manifest(tmp_path / "out"))
    assert not [p for p in (tmp_path / "out").iterdir() if p.name.endswith(".tmp")]
    _rerun_matches_uncancelled(tmp_path, "out", summary, **extra)


@pytest.mark.ray
def test_a_cancel_on_the_ray_engine_cancels_the_remaining_inputs(tmp_path: Path) -> None:
    pytest.importorskip("ray")
    _inputs(tmp_path, 8)
    cancel = threading.Event()
    seen: list[InputResult] = []
    engine = {"kind": "ray", "workers": 1}
    summary = run_job(
        load_job(_job(tmp_path, "out", engine=engine)),
        cancel=cancel,
        on_result=_cancel_after_first(cancel, seen),
    )
    # One actor holds at most two inputs: the rest were never handed out.
    assert summary.cancelled and summary.read == 1 and summary.exit_code == EXIT_CANCELLED
    assert list(_manifest(tmp_path / "out")) == [seen[0].key]
    _rerun_matches_uncancelled(tmp_path, "out", summary, engine=engine)
