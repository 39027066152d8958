"""One input of a batch job, read from start to end: its batches of scenes through the reader,
its items into the sink (made visible at once on commit), and a result the driver records in
the manifest. A :class:`Worker` builds its reader, inputs and sink once, from its
:class:`WorkerSpec` (what it reads with: the reader config, how to call it, the inputs' and the
output's specs; never the whole job), and serves many inputs; the engines
(:mod:`memreader.batch.engines`) decide where workers run.

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
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memreader.batch.inputs import BadRecord, Batch, InputRef, Inputs, InputsSpec
from memreader.batch.places import PlaceSettings
from memreader.batch.results import CancelFlag, InputCancelled, InputResult, error_entry
from memreader.batch.sinks import InputWriter, build_sink
from memreader.batch.window_notes import reading
from memreader.errors import MemReaderError
from memreader.items import TextualMemoryItem
from memreader.modes import ReadMode
from memreader.steps.report import ReadReport

if TYPE_CHECKING:
    from memreader.batch.job import OutputSpec
    from memreader.factory import MemReaderConfigFactory

__all__ = ["CallSpec", "Worker", "WorkerSpec"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class CallSpec:
    """How a worker calls the reader: the job's ``type`` and ``mode``, the ``tags`` and
    ``created_at`` stamped on items, ``refine`` (the inputs are JSONL of stored fast items,
    refined with ``fine_transfer_simple_mem``) and ``scenes_per_call``."""

    type: str = "chat"
    mode: ReadMode = "fast"
    tags: tuple[str, ...] = ()
    created_at: datetime | None = None
    refine: bool = False
    scenes_per_call: int = 16


@dataclass(frozen=True)
class WorkerSpec:
    """What a worker reads with, sent whole to worker processes and Ray actors: ``reader``,
    the reader config (validated once by the driver, the output store set: see
    :func:`~memreader.batch.plan.plan_job`), ``calls`` (:class:`CallSpec`), ``inputs`` (the
    inputs' spec) and ``output`` with the ``places`` settings it is written with."""

    reader: MemReaderConfigFactory
    calls: CallSpec
    inputs: InputsSpec
    output: OutputSpec
    places: PlaceSettings

    def build(self) -> Worker:
        """A new worker (its reader, inputs and sink built now).

        Raises:
            ConfigError: the reader cannot be built, or the sink cannot work here.
        """
        return Worker(self)


class Worker:
    """Reads inputs one at a time, as ``spec`` says (see the module docstring)."""

    def __init__(self, spec: WorkerSpec) -> None:
        self.calls = spec.calls
        self.refine = spec.calls.refine
        self.inputs = Inputs(spec.inputs)
        self.sink = build_sink(spec.output, s3=spec.places.s3, base_dir=spec.places.base_dir)
        try:  # a store sink's reader is its Memory's: wired to that store, categories kept
            self.reader = self.sink.reader_for(spec.reader)
        except BaseException:
            self.sink.close()
            self.inputs.close()
            raise

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
                result.errors.append(error_entry(ref.key, unit.scene, None, unit.reason, message))
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
            error_entry(ref.key, scene, None, type(exc).__name__, f"{batch.labels[k]}: {exc}")
        )
        result.counts["failures"] += 1

    def _read(
        self, scenes: Sequence[Any], batch: Batch
    ) -> tuple[list[list[TextualMemoryItem]], ReadReport]:
        """The items of ``scenes`` and the reader's report; raises what the reader raises."""
        report = ReadReport()
        if self.refine:
            items = self.reader.fine_transfer_simple_mem(
                list(scenes), type=self.calls.type, custom_tags=list(self.calls.tags), report=report
            )
        else:
            items = self.reader.get_memory(
                list(scenes),
                type=self.calls.type,
                info=batch.info,
                mode=self.calls.mode,
                custom_tags=list(self.calls.tags),
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
        if self.calls.created_at is not None:
            item.metadata.created_at = self.calls.created_at
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
                    error_entry(
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
                    error_entry(
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
            if len(pending) == self.calls.scenes_per_call:
                yield Batch(pending, {}, first, labels)
                first += len(pending)
                pending, labels = [], []
        if pending:
            yield Batch(pending, {}, first, labels)
