"""The steps the multimodal reader adds: parts read from outside the text (files, images,
audio), images described by a vision model, and fine mode's image and raw-file items.

=================  ==========================================  ====================  ========
step               requires                                    produces              modes
=================  ==========================================  ====================  ========
normalize          scene_data, type                            scenes                fast, fine
read_parts         scenes                                      scenes, part_reads    fast, fine
describe_images    scenes, part_reads                          scenes, image_outcomes  fine
note_parts         windows, part_reads                         windows               fast, fine
image_items        windows, items, emitted, image_outcomes     items, emitted        fine
raw_file_items     windows, items, emitted                     items, emitted        fine
=================  ==========================================  ====================  ========

A part keeps its place: a file's converted text, an image's description or an audio's
transcript replaces the part in its message, so it is windowed next to the text around it. A
part that cannot be read is a placeholder naming it and the reason, reported in
``report.parts`` and in its window's ``part_issues`` (never dropped); with ``strict_parts`` its
typed error is raised instead.
"""

from __future__ import annotations

import dataclasses
import itertools
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memreader.documents.normalize import normalize_doc_refs
from memreader.documents.resources import (
    PartTask,
    Resolved,
    ResourceCache,
    ResourceReader,
    ResourceStats,
    task_for_part,
)
from memreader.emit import is_document_unit, make_item
from memreader.errors import InputError
from memreader.extraction import short_error
from memreader.extraction.driver import arun_plans, run_plans
from memreader.extraction.image import ImageOutcome, describe_image_plan
from memreader.items import MemoryType, SourceMessage, TextualMemoryItem
from memreader.parsers import PartRef
from memreader.pipeline.chain import call_router
from memreader.pipeline.runtime import ReaderRuntime
from memreader.pipeline.state import ReadState, WindowedScene
from memreader.pipeline.step import STEPS, Step
from memreader.report import PartReport, WindowReport
from memreader.scene import UNSUPPORTED_PART, Part, Scene, check_text, normalize_chat

if TYPE_CHECKING:
    from memreader.readers.multimodal import MultiModalStructMemReaderConfig

__all__ = [
    "DescribeImages",
    "ImageItems",
    "NormalizeParts",
    "NoteParts",
    "RawFileItems",
    "ReadParts",
]

logger = logging.getLogger(__name__)

SCENE_MODES = frozenset({"fast", "fine"})
FINE = frozenset({"fine"})
#: Where a part is in a call: scene position in the call, message index, part index.
PartKey = tuple[int, int, int | None]
#: An image description shown in a window is clipped to this many characters.
MAX_DESCRIPTION_CHARS = 1500
#: Messages before an image (and after it) shown to the vision model as context.
CONTEXT_BEFORE, CONTEXT_AFTER = 4, 1


@dataclasses.dataclass
class PartRead:
    """One part's record in a call: its report entry and what it became."""

    report: PartReport
    resolved: Resolved | None = None
    label: str = ""


@STEPS.register("normalize_parts")
class NormalizeParts(Step):
    """The caller's input as typed scenes that keep every part: chats with parts of unknown
    types kept (as ``unsupported``), documents with files, URLs and ``s3://`` keys left as
    references for ``read_parts``."""

    name = "normalize"
    requires = ("scene_data", "type")
    produces = ("scenes",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        if state.type == "chat":
            state.scenes = normalize_chat(state.scene_data, unknown_parts="keep")
        else:
            state.scenes = normalize_doc_refs(
                state.scene_data, allow_local_paths=runtime.config.allow_local_paths
            )


def resource_reader(runtime: ReaderRuntime) -> ResourceReader:
    """The reader's shared :class:`ResourceReader` (fetcher, transcriber, content cache)."""

    def build() -> ResourceReader:
        from memreader.documents.fetch import Fetcher
        from memreader.documents.limits import DocumentLimits

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
            base_dir=config.base_dir,
        )
        limits = DocumentLimits(
            max_file_bytes=config.max_file_bytes,
            max_unpacked_bytes=config.max_unpacked_bytes,
            max_compression_ratio=config.max_compression_ratio,
            max_archive_members=config.max_archive_members,
            max_document_chars=config.max_document_chars,
        )
        return _ClosingReader(
            fetcher,
            config.images,
            limits=limits,
            transcriber=transcriber,
            cache=ResourceCache(config.resource_cache_size),
            workers=config.fetch.max_concurrency,
        )

    return runtime.shared("resource_reader", build)


class _ClosingReader(ResourceReader):
    def close(self) -> None:
        self.fetcher.close()
        if self.transcriber is not None:
            self.transcriber.close()


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
                        reads[key] = PartRead(
                            PartReport(
                                scene.index,
                                message.index,
                                part.index,
                                str(kind),
                                status="unsupported",
                                detail=f"no parser for part type {kind!r}",
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
            state.scenes = [_with_reads(scene, i, reads) for i, scene in enumerate(state.scenes)]
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


def _with_reads(scene: Scene, position: int, reads: dict[PartKey, PartRead]) -> Scene:
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


@STEPS.register("describe_images")
class DescribeImages(Step):
    """Fine mode: the ``image_parser_llm`` slot describes each distinct image (by content, once
    per call, and not again while its description is in the reader's cache) with the
    conversation around it, and extracts memories; the description joins the image's line."""

    name = "describe_images"
    requires = ("scenes", "part_reads")
    produces = ("scenes", "image_outcomes")
    modes = FINE

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        jobs, plans = self._plans(state, runtime)
        router, meter = call_router(state, runtime)
        outcomes = run_plans(
            plans,
            router,
            meter=meter,
            workers=runtime.config.llm_max_concurrency,
            on_error=_failed_image,
        )
        self._finish(state, runtime, jobs, outcomes)

    async def arun(self, state: ReadState, runtime: ReaderRuntime) -> None:
        jobs, plans = self._plans(state, runtime)
        router, meter = call_router(state, runtime)
        outcomes = await arun_plans(plans, router, meter=meter, on_error=_failed_image)
        self._finish(state, runtime, jobs, outcomes)

    def _plans(
        self, state: ReadState, runtime: ReaderRuntime
    ) -> tuple[list[tuple[str, list[PartKey]]], list[Any]]:
        reads: dict[PartKey, PartRead] = state.get("part_reads")
        by_digest: dict[str, list[PartKey]] = {}
        for key, read in reads.items():
            result = read.resolved
            if result is not None and result.image is not None and result.digest:
                by_digest.setdefault(result.digest, []).append(key)
        config: MultiModalStructMemReaderConfig = runtime.config  # type: ignore[assignment]
        cache = resource_reader(runtime).cache
        jobs: list[tuple[str, list[PartKey]]] = []
        plans = []
        self._cached: dict[str, ImageOutcome] = {}
        if not config.images.describe:
            return [], []
        for digest, keys in by_digest.items():
            cached = cache.get(("description", digest))
            if isinstance(cached, ImageOutcome):
                self._cached[digest] = cached
                jobs.append((digest, keys))
                continue
            first = reads[keys[0]]
            assert first.resolved is not None and first.resolved.image is not None
            context = _context(state.scenes[keys[0][0]], keys[0][1])
            label = first.label or first.resolved.source or "image"
            plans.append(
                describe_image_plan(
                    first.resolved.image.data_url(),
                    label,
                    context,
                    runtime.language(context or label),
                )
            )
            jobs.append((digest, keys))
        return jobs, plans

    def _finish(
        self,
        state: ReadState,
        runtime: ReaderRuntime,
        jobs: list[tuple[str, list[PartKey]]],
        asked: list[ImageOutcome],
    ) -> None:
        reads: dict[PartKey, PartRead] = state.get("part_reads")
        cache = resource_reader(runtime).cache
        outcomes: dict[str, tuple[ImageOutcome, PartKey]] = {}
        answers = iter(asked)
        for digest, keys in jobs:
            outcome = self._cached.get(digest)
            if outcome is None:
                outcome = next(answers)
                if outcome.fallback_reason is None:
                    cache.put(("description", digest), outcome)
                    state.report.count("images_described")
            else:
                state.report.count("description_reused")
            outcomes[digest] = (outcome, keys[0])
            for key in keys:
                read = reads[key]
                assert read.resolved is not None
                if outcome.fallback_reason is not None:
                    read.report.status = "fallback"
                    read.report.error = outcome.error
                    read.report.detail = f"not described ({outcome.fallback_reason})"
                    continue
                read.report.detail = f"{read.report.detail}, described"
                description = " ".join(outcome.description.split())[:MAX_DESCRIPTION_CHARS]
                if description:
                    base = read.resolved.text
                    base = base[:-1] if base.endswith("]") else base
                    read.resolved = dataclasses.replace(
                        read.resolved, text=f"{base}: {description}]"
                    )
        if outcomes:
            state.scenes = [_with_reads(s, i, reads) for i, s in enumerate(state.scenes)]
        state.set("image_outcomes", outcomes)


def _failed_image(index: int, error: Exception) -> ImageOutcome:
    logger.error("describing an image failed unexpectedly", exc_info=error)
    return ImageOutcome(fallback_reason="internal_error", error=short_error(error))


def _context(scene: Scene, message_index: int) -> str:
    """The text of the messages around ``message_index`` (the image's own included)."""
    lines = []
    for message in scene.messages:
        if message_index - CONTEXT_BEFORE <= message.index <= message_index + CONTEXT_AFTER:
            text = " ".join(p.text for p in message.parts if p.exact and p.text)
            if text:
                lines.append(f"{message.role}: {text}" if message.role else text)
    return "\n".join(lines)


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


def _part_window(ws: WindowedScene, message_index: int, part_index: int | None) -> int | None:
    """The first window holding the part, or ``None``."""
    for window in ws.windows:
        for segment in window.segments:
            ref = ws.units[segment.unit].key
            if (
                isinstance(ref, PartRef)
                and ref.message.index == message_index
                and ref.part.index == part_index
            ):
                return window.index
    return None


@STEPS.register("image_items")
class ImageItems(Step):
    """Fine mode: the memories the vision model extracted from each image (once per distinct
    image, in the scene and window where it first appears), or a fallback item saying only
    what is known of an image it could not describe."""

    name = "image_items"
    requires = ("windows", "items", "emitted", "image_outcomes")
    produces = ("items", "emitted")
    modes = FINE

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        outcomes: dict[str, tuple[ImageOutcome, PartKey]] = state.get("image_outcomes")
        reads: dict[PartKey, PartRead] = state.get("part_reads")
        for digest, (outcome, key) in outcomes.items():
            position, message_index, part_index = key
            ws = state.windows[position]
            index = _part_window(ws, message_index, part_index)
            if index is None:  # a step removed the window: nothing to attach the items to
                continue
            window, entry = ws.windows[index], ws.reports[index]
            sources = [
                s
                for s in ws.sources(window)
                if s.message_index == message_index and s.part_index == part_index
            ]
            try:
                items = _image_items(state, ws, digest, outcome, sources, reads[key])
            except Exception as exc:  # one image's failure is that image's record
                logger.error("building the items of an image failed", exc_info=exc)
                reads[key].report.status = "error"
                reads[key].report.error = short_error(exc)
                continue
            state.items[position].extend(items)
            state.emitted.extend((item, entry) for item in items)


def _image_items(
    state: ReadState,
    ws: WindowedScene,
    digest: str,
    outcome: ImageOutcome,
    sources: list[SourceMessage],
    read: PartRead,
) -> list[TextualMemoryItem]:
    base = (ws.scene.type, "image", digest)
    tags = ["mode:fine", "image"]
    if outcome.fallback_reason is not None:
        assert read.resolved is not None
        return [
            make_item(
                memory=read.resolved.text,
                info=state.info,
                sources=sources,
                memory_type=MemoryType.LONG_TERM,
                tags=list(dict.fromkeys([*tags, f"fallback:{outcome.fallback_reason}"]))
                + list(state.custom_tags),
                id_parts=(*base, "fallback"),
            )
        ]
    if not outcome.memories:
        return [
            make_item(
                memory=outcome.description,
                info=state.info,
                sources=sources,
                memory_type=MemoryType.LONG_TERM,
                tags=[*tags, "image:description", *state.custom_tags],
                id_parts=(*base, "description"),
            )
        ]
    return [
        make_item(
            memory=memory.value,
            info=state.info,
            sources=sources,
            memory_type=memory.memory_type,
            tags=list(dict.fromkeys([*tags, *memory.tags, *state.custom_tags])),
            id_parts=(*base, k),
            key=memory.key,
            background=outcome.description,
        )
        for k, memory in enumerate(outcome.memories)
    ]


@STEPS.register("raw_file_items")
class RawFileItems(Step):
    """Fine mode: each chunk of each document (the part of it in one window) is also kept
    verbatim as a ``RawFileMemory`` item, chained in document order (``preceding_id``,
    ``following_id``) and pointing at the fine items extracted from it (``summary_ids``)."""

    name = "raw_file_items"
    requires = ("windows", "items", "emitted")
    produces = ("items", "emitted")
    modes = FINE

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        by_report: dict[int, list[TextualMemoryItem]] = {}
        for item, entry in state.emitted:
            if "image" not in item.metadata.tags:
                by_report.setdefault(id(entry), []).append(item)
        for position, ws in enumerate(state.windows):
            chunks: dict[int, list[int]] = {}
            for window_index, unit in sorted(ws.chunks):
                if is_document_unit(ws.units[unit], ws.scene):
                    chunks.setdefault(unit, []).append(window_index)
            for unit in sorted(chunks):
                try:
                    made = _raw_chunks(state, ws, unit, chunks[unit], by_report)
                except Exception as exc:  # one document's failure is that document's record
                    logger.error("raw file items of a document failed", exc_info=exc)
                    ws.reports[chunks[unit][0]].notes.append(
                        f"raw file items not made: {short_error(exc)}"
                    )
                    continue
                state.items[position].extend(item for item, _ in made)
                state.emitted.extend(made)


def _raw_chunks(
    state: ReadState,
    ws: WindowedScene,
    unit: int,
    window_indexes: Sequence[int],
    by_report: dict[int, list[TextualMemoryItem]],
) -> list[tuple[TextualMemoryItem, WindowReport]]:
    made: list[tuple[TextualMemoryItem, WindowReport]] = []
    text = ws.units[unit].text
    for window_index in window_indexes:
        window, entry = ws.windows[window_index], ws.reports[window_index]
        segments = [s for s in window.segments if s.unit == unit]
        sources = [
            s
            for s, seg in zip(ws.sources(window), window.segments, strict=True)
            if seg.unit == unit
        ]
        if not segments:
            continue
        source = sources[0]
        summaries = [
            item.id
            for item in by_report.get(id(entry), [])
            if any(
                s.message_index == source.message_index and s.part_index == source.part_index
                for s in item.metadata.sources
            )
        ]
        item = make_item(
            memory="\n".join(text[s.start : s.end] for s in segments),
            info=state.info,
            sources=sources,
            memory_type=MemoryType.RAW_FILE,
            tags=["mode:fine", "raw_file", *state.custom_tags],
            id_parts=(ws.scene.type, "raw_file", ws.digest, window_index, unit),
        )
        item.metadata.summary_ids = summaries
        made.append((item, entry))
    for (before, _), (after, _) in itertools.pairwise(made):
        before.metadata.following_id = after.id
        after.metadata.preceding_id = before.id
    return made
