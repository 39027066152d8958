"""The steps that read parts from outside the text (files, images, audio) into their places,
and report the parts that are unsupported or could not be read.

=============  ============================  ===================  ==========
step           requires                      produces             modes
=============  ============================  ===================  ==========
normalize      scene_data, type              scenes               fast, fine
read_parts     scenes                        scenes, part_reads   fast, fine
note_parts     windows, part_reads           windows              fast, fine
=============  ============================  ===================  ==========

A part keeps its place: a file's converted text, an image's description or an audio's
transcript replaces the part in its message, so it is windowed next to the text around it. A
part that cannot be read is a placeholder naming it and the reason, reported in
``report.parts`` and in its window's ``part_issues`` (never dropped); with ``strict_parts`` its
typed error is raised instead.
"""

from __future__ import annotations

import dataclasses
import logging
from typing import TYPE_CHECKING

from memreader.documents.normalize import normalize_doc_refs
from memreader.documents.resources import (
    PartTask,
    Resolved,
    ResourceCache,
    ResourceReader,
    ResourceStats,
    task_for_part,
)
from memreader.errors import InputError
from memreader.extraction import short_error
from memreader.parsers import PartRef
from memreader.pipeline.runtime import ReaderRuntime
from memreader.pipeline.state import ReadState
from memreader.pipeline.step import STEPS, Step
from memreader.pipeline.steps import Normalize
from memreader.rendering import MAX_LABEL, clip
from memreader.report import PartReport
from memreader.scene import UNSUPPORTED_PART, Part, Scene, check_text, normalize_chat

if TYPE_CHECKING:
    from memreader.readers.multimodal import MultiModalStructMemReaderConfig

logger = logging.getLogger(__name__)

__all__ = [
    "NormalizeParts",
    "NoteParts",
    "PartKey",
    "PartRead",
    "ReadParts",
    "resource_reader",
    "with_reads",
]

SCENE_MODES = frozenset({"fast", "fine"})
#: Where a part is in a call: scene position in the call, message index, part index.
PartKey = tuple[int, int, int | None]


@dataclasses.dataclass
class PartRead:
    """One part's record in a call: its report entry and what it became."""

    report: PartReport
    resolved: Resolved | None = None
    label: str = ""


@STEPS.register("normalize_parts")
class NormalizeParts(Normalize):
    """The caller's input as typed scenes that keep every part: chats with parts of unknown
    types kept (as ``unsupported``), documents with files, URLs and ``s3://`` keys left as
    references for ``read_parts``."""

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        if state.type == "chat":
            state.scenes = normalize_chat(state.scene_data, unknown_parts="keep")
        else:
            state.scenes = normalize_doc_refs(
                state.scene_data,
                allow_local_paths=runtime.config.allow_local_paths,
                base_dir=getattr(runtime.config, "base_dir", None),
            )


def resource_reader(runtime: ReaderRuntime) -> ResourceReader:
    """The reader's shared :class:`ResourceReader` (fetcher, transcriber, content cache)."""

    def build() -> ResourceReader:
        from memreader.documents.fetch import Fetcher

        config: MultiModalStructMemReaderConfig = runtime.config  # type: ignore[assignment]
        transcriber = None
        if config.transcription is not None:
            from memreader.documents.audio import Transcriber

            transcriber = Transcriber(config.transcription)
        fetcher = Fetcher(
            config.fetch,
            max_bytes=config.max_file_bytes,
            allow_local_paths=config.allow_local_paths,
            allowed_roots=tuple(config.allowed_roots),
            allow_hidden_files=config.allow_hidden_files,
            base_dir=config.base_dir,
        )
        return ResourceReader(
            fetcher,
            config.images,
            limits=config.document_limits(),
            transcriber=transcriber,
            cache=ResourceCache(config.resource_cache_size),
            workers=config.fetch.max_concurrency,
        )

    return runtime.shared("resource_reader", build)


@STEPS.register("read_parts")
class ReadParts(Step):
    """Files, images and audio read (fetched once per reference, converted, prepared or
    transcribed once per content) and put in their parts' places."""

    name = "read_parts"
    requires = ("scenes",)
    produces = ("scenes", "part_reads")
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        reads: dict[PartKey, PartRead] = {}
        tasks: list[PartTask] = []
        keys: list[PartKey] = []
        for position, scene in enumerate(state.scenes):
            for message in scene.messages:
                for part in message.parts:
                    key = (position, message.index, part.index)
                    if part.type == UNSUPPORTED_PART:
                        kind = part.payload.get("type") if isinstance(part.payload, dict) else None
                        shown = clip(str(kind), MAX_LABEL).text  # a type name can be huge
                        reads[key] = PartRead(
                            PartReport(
                                scene.index,
                                message.index,
                                part.index,
                                shown,
                                status="unsupported",
                                detail=f"no parser for part type {shown!r}",
                            )
                        )
                        continue
                    if part.exact:
                        continue
                    task = task_for_part(
                        part.type,
                        part.payload,
                        scene_index=scene.index,
                        message_index=message.index,
                        part_index=part.index,
                    )
                    if task is not None:
                        tasks.append(task)
                        keys.append(key)
        if tasks:
            stats = ResourceStats()
            results = resource_reader(runtime).read_all(tasks, stats)
            for name, n in stats.counts.items():
                state.report.count(name, n)
            config: MultiModalStructMemReaderConfig = runtime.config  # type: ignore[assignment]
            for task, key, result in zip(tasks, keys, results, strict=True):
                result = _checked(result, task)
                if config.strict_parts and result.error is not None:
                    raise result.error
                reads[key] = PartRead(_part_report(task, result), result, _label(task, result))
            state.scenes = [with_reads(scene, i, reads) for i, scene in enumerate(state.scenes)]
        state.report.parts.extend(
            sorted(
                (read.report for read in reads.values()),
                key=lambda r: (r.scene_index, r.message_index, r.part_index or 0),
            )
        )
        state.set("part_reads", reads)


def _checked(result: Resolved, task: PartTask) -> Resolved:
    """``result``, unless its text is not valid Unicode (a transcript with a lone surrogate):
    then the part failed."""
    try:
        check_text(result.text, f"{task.kind} text", error=InputError, **task.where)
    except InputError as exc:
        return Resolved("error", f"[{task.kind}: not readable text]", error=exc)
    return result


def _label(task: PartTask, result: Resolved) -> str:
    return task.name or (result.source if result.source not in (None, "inline") else "") or ""


def _part_report(task: PartTask, result: Resolved) -> PartReport:
    kind = {"document": "file", "image": "image_url", "audio": "input_audio"}[task.kind]
    error = result.error
    return PartReport(
        task.scene_index,
        task.message_index,
        task.part_index,
        kind,
        status=result.status,
        source=result.source,
        digest=result.digest,
        bytes=result.bytes,
        detail=result.detail,
        error=short_error(error) if error is not None else None,
        error_type=type(error).__name__ if error is not None else None,
    )


def with_reads(scene: Scene, position: int, reads: dict[PartKey, PartRead]) -> Scene:
    """``scene`` with each part that was read replaced by what it became."""
    messages = []
    changed = False
    for message in scene.messages:
        parts = []
        for part in message.parts:
            read = reads.get((position, message.index, part.index))
            if read is None or read.resolved is None:
                parts.append(part)
                continue
            parts.append(_resolved_part(part, read.resolved))
            changed = True
        messages.append(dataclasses.replace(message, parts=tuple(parts)))
    return dataclasses.replace(scene, messages=tuple(messages)) if changed else scene


def _resolved_part(part: Part, result: Resolved) -> Part:
    """The part as its window shows it: exact text (a document, a transcript) with its source,
    or a line describing it."""
    if result.exact and result.text:
        return dataclasses.replace(part, text=result.text, exact=True, doc_path=result.source)
    text = result.text
    if result.exact:  # read, but nothing came of it: an empty document or transcript
        text = f"[{_what(part)}: {result.source or 'inline'}: no text]"
    return dataclasses.replace(part, text=text, exact=False, doc_path=result.source)


def _what(part: Part) -> str:
    return {"file": "file", "image_url": "image", "input_audio": "audio"}.get(part.type, part.type)


@STEPS.register("note_parts")
class NoteParts(Step):
    """Each window's report lists its parts that are unsupported or could not be read."""

    name = "note_parts"
    requires = ("windows", "part_reads")
    produces = ("windows",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        reads: dict[PartKey, PartRead] = state.get("part_reads")
        issues = {k: r for k, r in reads.items() if r.report.status in ("unsupported", "error")}
        if not issues:
            return
        for position, ws in enumerate(state.windows):
            for window, entry in zip(ws.windows, ws.reports, strict=True):
                seen = set()
                for segment in window.segments:
                    ref = ws.units[segment.unit].key
                    assert isinstance(ref, PartRef)
                    key = (position, ref.message.index, ref.part.index)
                    read = issues.get(key)
                    if read is None or key in seen:
                        continue
                    seen.add(key)
                    report = read.report
                    entry.part_issues.append(
                        {
                            "scene_index": report.scene_index,
                            "message_index": report.message_index,
                            "part_index": report.part_index,
                            "type": report.type,
                            "status": report.status,
                            "reason": report.error or report.detail,
                        }
                    )
