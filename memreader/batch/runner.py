"""One input of a batch job, read from start to end: its batches of scenes through the reader,
its items into the sink (made visible at once on commit), and a result the driver records in
the manifest. A :class:`Worker` builds its reader, inputs and sink once and serves many inputs;
the engines (:mod:`memreader.batch.engines`) decide where workers run.

One input's failure is that input's result: a malformed record, a scene the reader refuses or a
window that fails becomes an error entry (input, scene, window, typed reason, message) and the
rest goes on; an input that cannot be read at all is recorded as ``failed``.

Only the reader's errors are a scene's own. The items of a call are written after the reader
returned, outside the scene-by-scene retry, so an output that cannot be written (a full disk, S3
refusing) fails the whole input at once: one error that names the output, nothing of the input
published, no scene read twice, and nothing written twice into the same output.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from memreader.batch.inputs import BadRecord, Batch, InputRef, Inputs
from memreader.batch.job import JobConfig
from memreader.batch.notes import NoteTally, reading
from memreader.batch.sinks import InputWriter, build_sink
from memreader.errors import MemReaderError
from memreader.items import TextualMemoryItem
from memreader.steps.report import ReadReport

__all__ = ["COUNTERS", "CancelFlag", "InputCancelled", "InputResult", "Worker"]

logger = logging.getLogger(__name__)

#: What each input's result counts (summed into the job's summary).
COUNTERS = (
    "scenes",
    "messages",
    "windows",
    "items",
    "fallbacks",
    "failures",
    "llm_calls",
    "prompt_tokens",
    "completion_tokens",
    "embeddings",
)
_SPENT = ("llm_calls", "prompt_tokens", "completion_tokens")


class CancelFlag(Protocol):
    """What asks a running job to stop: a :class:`threading.Event`, or a
    :class:`multiprocessing.Event` in a worker process."""

    def is_set(self) -> bool:
        """True once the job should stop."""
        ...


class InputCancelled(Exception):
    """Raised by :meth:`Worker.process` when the job is cancelled while it reads an input: the
    input's writer was discarded (nothing of it is published) and it has no manifest entry, so
    the manifest keeps what it said before and a rerun reads the input again.

    ``result``: when items of the input stay in the output all the same (a store's parts
    already written), a ``cancelled`` result counting them (``items``: the items written), so
    the job reports what it wrote; else ``None``."""

    def __init__(self, key: str, result: InputResult | None = None) -> None:
        super().__init__(key)
        self.result = result

    def __reduce__(self) -> tuple[type[InputCancelled], tuple[str, InputResult | None]]:
        # Sent back from worker processes whole (the default would drop ``result``).
        return (InputCancelled, (str(self.args[0]), self.result))


@dataclass
class InputResult:
    """What became of one input: ``done`` (its items committed; errors may be listed),
    ``failed`` (nothing of it was committed: ``error`` says why) or ``cancelled`` (cut short by
    a cancel after some of its items were written where they stay: see
    :class:`InputCancelled`; never recorded in the manifest)."""

    key: str
    digest: str
    status: str = "done"
    fingerprint: str = ""
    """What shaped the items (the job's, see :mod:`memreader.batch.fingerprint`); set by the
    driver before it records the result."""
    outputs: list[str] = field(default_factory=list)
    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(COUNTERS, 0))
    errors: list[dict[str, Any]] = field(default_factory=list)
    error: str | None = None
    seconds: float = 0.0
    owners: list[str] = field(default_factory=list)
    """The owners whose items the commit wrote (:attr:`InputWriter.owners`; not in the
    manifest): the driver hands them to :meth:`~memreader.batch.sinks.Sink.finish`."""
    notes: NoteTally = field(default_factory=NoteTally)
    """The windows with notes (not in the manifest): the driver says them in one line."""

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record (the manifest's entry for this input)."""
        return {
            "digest": self.digest,
            "fingerprint": self.fingerprint,
            "status": self.status,
            "outputs": self.outputs,
            "counts": self.counts,
            "errors": self.errors,
            "error": self.error,
            "seconds": round(self.seconds, 3),
        }

    @classmethod
    def from_dict(cls, key: str, data: dict[str, Any]) -> InputResult:
        """Back from :meth:`to_dict`."""
        return cls(
            key=key,
            digest=str(data.get("digest", "")),
            status=str(data.get("status", "failed")),
            fingerprint=str(data.get("fingerprint") or ""),
            outputs=list(data.get("outputs") or []),
            counts={**dict.fromkeys(COUNTERS, 0), **(data.get("counts") or {})},
            errors=list(data.get("errors") or []),
            error=data.get("error"),
            seconds=float(data.get("seconds") or 0.0),
        )

    def fail(self, reason: str, message: str, kept: int = 0) -> None:
        """Make this the result of an input that was not committed: ``failed``, with the one
        error that says why. Counts of what was read are dropped; the LLM usage stays (it was
        spent), and so do the ``kept`` items written before the failure where they stay (a
        store's parts: ``items`` counts them and the error says so; a rerun reads the input
        again, to the same rows)."""
        spent = {name: self.counts.get(name, 0) for name in _SPENT}
        self.counts = {**dict.fromkeys(COUNTERS, 0), **spent, "failures": 1, "items": kept}
        if kept:
            message += f" ({kept} items written before the failure stay in the output)"
        self.outputs = []
        self.errors = [_error(self.key, None, None, reason, message)]
        self.notes = NoteTally()
        self.status, self.error = "failed", f"{reason}: {message}"[:500]


def _error(
    key: str, scene: int | None, window: int | None, reason: str, message: str
) -> dict[str, Any]:
    return {
        "input": key,
        "scene": scene,
        "window": window,
        "reason": reason,
        "message": message[:500],
    }


class Worker:
    """Reads inputs of ``job`` one at a time (see the module docstring). ``refine``: the inputs
    are JSONL of stored fast items, refined with ``fine_transfer_simple_mem``."""

    def __init__(self, job: JobConfig, *, refine: bool = False) -> None:
        from memreader.factory import MemReaderConfigFactory

        self.job = job
        self.refine = refine
        config = job.reader_config()
        store = job.store_url()
        if store is not None:
            # The reader looks its items up in the output store before embedding (``dedup``).
            config = {**config, "config": {**dict(config.get("config") or {}), "store": store}}
        self.reader = MemReaderConfigFactory.from_dict(config).build()
        self.inputs = Inputs(job)
        self.sink = build_sink(job.output, s3=job.s3, base_dir=job.base_dir)
        self.sink.keep_categories(self.reader)

    def close(self) -> None:
        """Close the reader's clients, the inputs and the sink."""
        self.reader.close()
        self.inputs.close()
        self.sink.close()

    def process(self, ref: InputRef, digest: str, cancel: CancelFlag | None = None) -> InputResult:
        """Read ``ref`` whole and commit its items; never raises for the input's own problems.

        Raises:
            InputCancelled: ``cancel`` was set before a batch (``scenes_per_call`` scenes) of
                this input started; nothing of the input was committed.
        """
        start = time.perf_counter()
        result = InputResult(ref.key, digest)
        writer = self.sink.open_input(ref.key)
        try:
            with reading():
                self._read_input(ref, writer, result, cancel)
            result.outputs = writer.commit()
            result.owners = sorted(writer.owners)
        except InputCancelled as exc:
            writer.discard()
            if writer.kept:
                result.status = "cancelled"
                result.counts["items"] = writer.kept
                result.seconds = time.perf_counter() - start
                raise InputCancelled(ref.key, result) from exc
            raise
        except Exception as exc:  # the input's own failure is its result; the job goes on
            writer.discard()
            reason = type(exc).__name__ if isinstance(exc, MemReaderError) else "InternalError"
            if not isinstance(exc, MemReaderError):
                logger.error("input %s failed unexpectedly", ref.key, exc_info=exc)
            result.fail(reason, str(exc), kept=writer.kept)
        result.seconds = time.perf_counter() - start
        return result

    def _read_input(
        self, ref: InputRef, writer: InputWriter, result: InputResult, cancel: CancelFlag | None
    ) -> None:
        """Every batch of ``ref`` through the reader, its items into ``writer``; bad records
        into ``result``."""
        units = self._refine_units(ref) if self.refine else self.inputs.read(ref)
        for unit in units:
            # Between batches, so a long input stops within one batch. Once every batch is
            # read the input is committed even if a cancel came meanwhile: the work is done.
            if cancel is not None and cancel.is_set():
                raise InputCancelled(ref.key)
            if isinstance(unit, BadRecord):
                message = f"{unit.label}: {unit.message}"
                result.errors.append(_error(ref.key, unit.scene, None, unit.reason, message))
                result.counts["failures"] += 1
                continue
            self._batch(unit, ref, writer, result)

    # -- batches ------------------------------------------------------------------------------

    def _batch(self, batch: Batch, ref: InputRef, writer: InputWriter, result: InputResult) -> None:
        """One batch through the reader; when the reader refuses it, scene by scene so only the
        bad scenes are lost (and recorded). Writing is not inside the retry: a write failure
        (:class:`~memreader.errors.SinkError`) is the input's, and ends it."""
        try:
            items, report = self._read(batch.scene_data, batch)
        except MemReaderError as exc:
            if len(batch.scene_data) == 1:  # that scene's own error: no need to read it again
                self._scene_failed(batch, 0, exc, ref, result)
                return
            for k in range(len(batch.scene_data)):
                self._read_one(batch, k, ref, writer, result)
            return
        self._emit(items, report, batch.scene_data, batch, 0, ref, writer, result)

    def _read_one(
        self, batch: Batch, k: int, ref: InputRef, writer: InputWriter, result: InputResult
    ) -> None:
        scenes = [batch.scene_data[k]]
        try:
            items, report = self._read(scenes, batch)
        except MemReaderError as exc:
            self._scene_failed(batch, k, exc, ref, result)
            return
        self._emit(items, report, scenes, batch, k, ref, writer, result)

    @staticmethod
    def _scene_failed(
        batch: Batch, k: int, exc: MemReaderError, ref: InputRef, result: InputResult
    ) -> None:
        scene = batch.first_scene + k
        result.errors.append(
            _error(ref.key, scene, None, type(exc).__name__, f"{batch.labels[k]}: {exc}")
        )
        result.counts["failures"] += 1

    def _read(
        self, scenes: Sequence[Any], batch: Batch
    ) -> tuple[list[list[TextualMemoryItem]], ReadReport]:
        """The items of ``scenes`` and the reader's report; raises what the reader raises."""
        report = ReadReport()
        if self.refine:
            items = self.reader.fine_transfer_simple_mem(
                list(scenes), type=self.job.type, custom_tags=self.job.tags, report=report
            )
        else:
            items = self.reader.get_memory(
                list(scenes),
                type=self.job.type,
                info=batch.info,
                mode=self.job.mode,
                custom_tags=self.job.tags,
                report=report,
            )
        return items, report

    def _emit(
        self,
        items: list[list[TextualMemoryItem]],
        report: ReadReport,
        scenes: Sequence[Any],
        batch: Batch,
        offset: int,
        ref: InputRef,
        writer: InputWriter,
        result: InputResult,
    ) -> None:
        """Write the items of one call (a ``SinkError`` goes up: the input fails) and count."""
        first = batch.first_scene + offset
        for scene_items in items:
            for item in scene_items:
                writer.write(self._item_dict(item, first))
        self._count(report, scenes, items, first, ref, result)

    def _item_dict(self, item: TextualMemoryItem, first_scene: int) -> dict[str, Any]:
        if self.job.created_at is not None:
            item.metadata.created_at = self.job.created_at
        data = item.to_dict()
        if first_scene and not self.refine:
            # Calls number scenes from 0; the sources of items index the whole input.
            for source in data["metadata"]["sources"]:
                source["scene_index"] += first_scene
        return data

    def _count(
        self,
        report: ReadReport,
        scenes: Sequence[Any],
        items: list[list[TextualMemoryItem]],
        first: int,
        ref: InputRef,
        result: InputResult,
    ) -> None:
        counts = result.counts
        result.notes.add(report, 0 if self.refine else first)
        counts["scenes"] += len(scenes)
        counts["messages"] += sum(len(s) if isinstance(s, list) else 1 for s in scenes)
        counts["windows"] += len(report.windows)
        made = sum(len(i) for i in items)
        counts["items"] += made
        counts["embeddings"] += sum(
            1
            for scene_items in items
            for item in scene_items
            if item.metadata.embedding is not None
        )
        for window in report.windows:
            if window.status == "fallback":
                counts["fallbacks"] += 1
            if window.status == "error" or window.embedding_error:
                counts["failures"] += 1
                result.errors.append(
                    _error(
                        ref.key,
                        window.scene_index + (0 if self.refine else first),
                        window.window_index,
                        "WindowError" if window.status == "error" else "EmbeddingError",
                        window.error or window.embedding_error or "",
                    )
                )
        for part in report.parts:
            if part.status == "error":  # a file, image or audio part that could not be read
                counts["failures"] += 1
                result.errors.append(
                    _error(
                        ref.key,
                        part.scene_index + (0 if self.refine else first),
                        None,
                        part.error_type or "PartError",
                        f"message {part.message_index}: {part.type} part not read: "
                        f"{part.error or ''}",
                    )
                )
        if report.usage is not None:
            counts["llm_calls"] += report.usage.requests
            counts["prompt_tokens"] += report.usage.total.prompt_tokens
            counts["completion_tokens"] += report.usage.total.completion_tokens

    def _refine_units(self, ref: InputRef) -> Iterator[Batch | BadRecord]:
        """Stored fast items (one JSON object per line), in batches of ``scenes_per_call``."""
        pending: list[dict[str, Any]] = []
        labels: list[str] = []
        first = 0
        for number, line in enumerate(self.inputs.lines(ref), 1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
                if not isinstance(data, dict):
                    raise ValueError(f"expected an item object, got {type(data).__name__}")
                TextualMemoryItem.from_dict(data)
            except ValueError as exc:
                yield BadRecord(None, f"line {number}", "InputError", str(exc)[:300])
                continue
            pending.append(data)
            labels.append(f"line {number}")
            if len(pending) == self.job.scenes_per_call:
                yield Batch(pending, {}, first, labels)
                first += len(pending)
                pending, labels = [], []
        if pending:
            yield Batch(pending, {}, first, labels)
