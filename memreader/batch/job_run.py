"""Running a job: find its inputs, skip those the manifest says are done (same content, same
job fingerprint), hand the rest to the engine, record each result as it comes back, and write
the errors file and the summary next to the outputs.

A job given a ``cancel`` event stops when it is set: no input starts, the one being read stops
before its next batch and is not published, and the errors file and summary are written for
what was done (``cancelled``; exit code :data:`EXIT_CANCELLED`). An input cut short has no
manifest entry of this run (the one before, if any, stays, as do its outputs), so running the
job again reads it, with the inputs never started. When items of an input cut short stay
written all the same (a store's parts), its ``cancelled`` result reaches ``on_result`` and the
summary counts them (``cut_short``, and its ``counts``): a cancelled job reports what it wrote.

>>> JobSummary().exit_code
0
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from memreader.batch.engines import run_engine
from memreader.batch.fingerprint import input_fingerprints
from memreader.batch.inputs import BadRecord, InputRef, Inputs
from memreader.batch.job import ERRORS_FILE, SUMMARY_FILE, JobConfig
from memreader.batch.manifest import Manifest
from memreader.batch.plan import inputs_spec, plan_job
from memreader.batch.results import COUNTERS, InputResult
from memreader.batch.sinks import build_sink
from memreader.batch.window_notes import log_notes
from memreader.errors import MemReaderError

__all__ = ["ERRORS", "EXIT_CANCELLED", "SUMMARY", "JobSummary", "dry_run", "run_job"]

logger = logging.getLogger(__name__)

ERRORS = ERRORS_FILE
SUMMARY = SUMMARY_FILE
#: The exit code of a cancelled job: the shell's for a command stopped by Ctrl-C (128 + SIGINT),
#: which ``memreader`` also returns when interrupted.
EXIT_CANCELLED = 130


@dataclass
class JobSummary:
    """What a job did: inputs found, read now, skipped (done before, same content, same job)
    and failed; of those read now, ``retried`` (they had failed) and ``changed`` (read before by
    a job with another fingerprint); ``hidden`` files and folders passed over in input folders;
    the counts summed over every input the manifest holds; the wall time of this run;
    ``cancelled`` when the job was cancelled before every input was read (``inputs - skipped -
    read`` were not: a rerun reads them); ``cut_short``: inputs the cancel stopped after some of
    their items were written where they stay (a store), counted in ``counts``."""

    inputs: int = 0
    read: int = 0
    skipped: int = 0
    failed_inputs: int = 0
    retried: int = 0
    changed: int = 0
    hidden: int = 0
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    wall_s: float = 0.0
    messages_per_s: float = 0.0
    outputs: list[str] = field(default_factory=list)
    cancelled: bool = False
    cut_short: int = 0

    @property
    def exit_code(self) -> int:
        """0 when nothing failed, 1 when an input, scene, window or part failed or a window fell
        back to raw items (as ``memreader read``), :data:`EXIT_CANCELLED` when the job was
        cancelled (whatever failed)."""
        if self.cancelled:
            return EXIT_CANCELLED
        failed = self.failed_inputs or self.counts.get("failures") or self.counts.get("fallbacks")
        return 1 if failed else 0

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready."""
        data = asdict(self)
        data["exit_code"] = self.exit_code
        return data

    def lines(self) -> list[str]:
        """The summary for a terminal."""
        c = self.counts
        notes = [
            f"{n} {what}"
            for n, what in (
                (self.retried, "failed before"),
                (self.changed, "read by a changed job"),
                (self.hidden, "hidden files passed over"),
            )
            if n
        ]
        return [
            f"inputs {self.inputs} (read {self.read}, skipped {self.skipped}, failed "
            f"{self.failed_inputs}{''.join('; ' + n for n in notes)}); scenes {c['scenes']}, "
            f"windows {c['windows']}, items {c['items']}",
            f"failures {c['failures']}, fallbacks {c['fallbacks']}; LLM calls {c['llm_calls']} "
            f"({c['prompt_tokens']} prompt + {c['completion_tokens']} completion tokens); "
            f"embeddings {c['embeddings']}",
            f"wall {self.wall_s:.1f} s ({self.messages_per_s:.0f} messages/s)",
        ] + (
            [
                f"cancelled: {self.inputs - self.skipped - self.read} input(s) not read "
                "(run the job again to read them)"
                + (
                    f"; {self.cut_short} of them cut short, their items written so far "
                    "stay (counted above)"
                    if self.cut_short
                    else ""
                )
            ]
            if self.cancelled
            else []
        )


OnResult = Callable[[InputResult], None]


def run_job(
    job: JobConfig,
    *,
    refine: bool = False,
    restart: bool = False,
    on_result: OnResult | None = None,
    on_plan: Callable[[int, int], None] | None = None,
    cancel: threading.Event | None = None,
) -> JobSummary:
    """Run ``job`` (see the module docstring). ``on_plan(inputs_to_read, skipped)`` is called once
    the inputs are known, ``on_result`` after each input read (progress: its ``status``, and its
    ``counts`` of scenes, messages, windows, items, failures...), both in the calling thread.

    ``cancel``, set from any thread (or from a callback), stops the job promptly: see the module
    docstring. The summary says ``cancelled`` when inputs were left unread.

    An input read by a job with another fingerprint (see :mod:`memreader.batch.fingerprint`)
    is read again, with a warning that says how many."""
    start = time.perf_counter()
    plan = plan_job(job, refine=refine)
    fingerprints = input_fingerprints(job, plan.reader, refine=refine)
    inputs = Inputs(plan.inputs)
    sink = build_sink(plan.output, s3=plan.places.s3, base_dir=plan.places.base_dir)
    try:
        manifest = Manifest(sink.folder, restart=restart)
        refs = inputs.discover()
        summary = JobSummary(inputs=len(refs), hidden=inputs.hidden)
        fingerprint = {ref.key: fingerprints[ref.spec_index] for ref in refs}
        todo = _plan(inputs, refs, manifest, fingerprint, summary, cancel)
        if on_plan is not None:
            on_plan(len(todo), summary.skipped)
        run = _Run(manifest, fingerprint, summary, on_result)
        try:
            if not _is_set(cancel):
                for result in run_engine(plan.engine, plan.worker, todo, cancel=cancel):
                    run.take(result)
        finally:
            manifest.flush()
        summary.cancelled = _is_set(cancel) and summary.read + summary.skipped < summary.inputs
        _total(summary, manifest, refs)
        run.count_cut_short()
        summary.outputs.extend(sink.finish(run.owners))
        summary.wall_s = time.perf_counter() - start
        summary.messages_per_s = run.messages / summary.wall_s if summary.wall_s else 0.0
        errors = [e for k in sorted({r.key for r in refs}) for e in _errors(manifest, k)]
        errors_text = "".join(json.dumps(e, ensure_ascii=False) + "\n" for e in errors)
        sink.folder.write_text(ERRORS, errors_text)
        sink.folder.write_text(SUMMARY, json.dumps(summary.to_dict(), ensure_ascii=False, indent=1))
        return summary
    finally:
        inputs.close()
        sink.close()


@dataclass
class _Run:
    """What the driver gathers while the engine's results come back."""

    manifest: Manifest
    fingerprint: dict[str, str]
    summary: JobSummary
    on_result: OnResult | None
    messages: int = 0
    owners: set[str] = field(default_factory=set)
    cut_short: list[InputResult] = field(default_factory=list)

    def take(self, result: InputResult) -> None:
        """Record one result (an input cut short by the cancel has no manifest entry: a rerun
        reads it) and pass it on."""
        if result.status == "cancelled":
            self.cut_short.append(result)
        else:
            result.fingerprint = self.fingerprint[result.key]
            self.manifest.record(result)
            log_notes(result.key, result.notes)
            self.summary.read += 1
            self.messages += result.counts.get("messages", 0)
            self.owners.update(result.owners)
        if self.on_result is not None:
            self.on_result(result)

    def count_cut_short(self) -> None:
        """Add what the inputs cut short wrote to the summary (after :func:`_total`)."""
        self.summary.cut_short = len(self.cut_short)
        for result in self.cut_short:
            for name in COUNTERS:
                self.summary.counts[name] += result.counts.get(name, 0)


def _is_set(cancel: threading.Event | None) -> bool:
    return cancel is not None and cancel.is_set()


def _plan(
    inputs: Inputs,
    refs: list[InputRef],
    manifest: Manifest,
    fingerprint: dict[str, str],
    summary: JobSummary,
    cancel: threading.Event | None,
) -> list[tuple[InputRef, str]]:
    """The inputs to read, with their digests; counts the skipped, retried and changed ones.
    Hashing stops at a cancel (it reads every input: long on a large corpus)."""
    todo = []
    for ref in refs:
        if _is_set(cancel):
            break
        digest = inputs.content_hash(ref)
        why = manifest.why_read(ref.key, digest, fingerprint[ref.key])
        if why is None:
            summary.skipped += 1
            continue
        todo.append((ref, digest))
        summary.retried += why == "failed"
        summary.changed += why == "job"
    if summary.changed:
        logger.warning(
            "%d input(s) were read by a different job (reader config, mode, type, mapping, "
            "tags, created_at, output format or memreader version): reading them again",
            summary.changed,
        )
    return todo


def _total(summary: JobSummary, manifest: Manifest, refs: list[InputRef]) -> None:
    """Failed inputs, outputs and counts over every input found that the manifest holds."""
    for key in sorted({ref.key for ref in refs}):
        entry = manifest.entries.get(key)
        if entry is None:
            continue
        summary.failed_inputs += entry.status == "failed"
        summary.outputs.extend(entry.outputs)
        for name in COUNTERS:
            summary.counts[name] += entry.counts.get(name, 0)


def _errors(manifest: Manifest, key: str) -> list[dict[str, Any]]:
    entry = manifest.entries.get(key)
    return entry.errors if entry is not None else []


def dry_run(job: JobConfig) -> list[dict[str, Any]]:
    """What the job would read: each input with its scenes and windows, counted by the reader's
    own windowing with no LLM call and no embedding."""
    from memreader.factory import MemReaderConfigFactory
    from memreader.steps.report import ReadReport

    data = job.reader_config()
    config = dict(data.get("config") or {})
    config["embedder"] = None
    reader = MemReaderConfigFactory.from_dict({**data, "config": config}).build()
    inputs = Inputs(inputs_spec(job))
    rows = []
    try:
        for ref in inputs.discover():
            row: dict[str, Any] = {"input": ref.key, "scenes": 0, "windows": 0, "bad_records": 0}
            for unit in inputs.read(ref):
                if isinstance(unit, BadRecord):
                    row["bad_records"] += 1
                    continue
                report = ReadReport()
                try:
                    reader.get_memory(unit.scene_data, type=job.type, info=unit.info, report=report)
                except MemReaderError as exc:  # counted, not fatal: a dry run lists what it can
                    row["bad_records"] += len(unit.scene_data)
                    logger.debug("dry run: %s", exc)
                    continue
                row["scenes"] += len(unit.scene_data)
                row["windows"] += len(report.windows)
            rows.append(row)
    finally:
        inputs.close()
        reader.close()
    return rows
