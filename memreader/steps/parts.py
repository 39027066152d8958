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
``report.parts`` and in its window's ``part_issues``; with ``strict_parts`` its typed error is
raised instead. A placeholder is no memory: a window of nothing but placeholders of parts that
could not be read is dropped (its report says so), while one with other text keeps them.

What these steps read beside the base reader config is :class:`PartsSettings` (the multimodal
reader's config inherits it).
"""

from __future__ import annotations

import dataclasses
import logging

from pydantic import Field, field_validator

from memreader.config_model import ConfigModel
from memreader.documents.normalize import normalize_doc_refs
from memreader.errors import InputError
from memreader.extraction import short_error
from memreader.fetch.data_urls import is_data_url
from memreader.fetch.settings import FetchConfig
from memreader.modes import SCENE_MODES
from memreader.parts.resolved import Resolved
from memreader.parts.resources import ResourceCache, ResourceReader, ResourceStats
from memreader.parts.settings import ImageConfig, TranscriptionConfig
from memreader.parts.tasks import PartTask, task_for_part
from memreader.pipeline import Step
from memreader.scenes.api_parts import UNSUPPORTED_PART, Part
from memreader.scenes.clipping import MAX_LABEL, clip
from memreader.scenes.scene import Scene, normalize_chat
from memreader.scenes.text_checks import check_text
from memreader.steps.read import Normalize
from memreader.steps.registry import STEPS
from memreader.steps.report import PartReport
from memreader.steps.runtime import ReaderRuntime, SharedKey
from memreader.steps.state import PartKey, PartRead, ReadState, WindowedScene
from memreader.windowing.parsers import PartRef
from memreader.windowing.provenance import chunk_positions

logger = logging.getLogger(__name__)

__all__ = [
    "RESOURCE_READER",
    "NormalizeParts",
    "NoteParts",
    "PartsSettings",
    "ReadParts",
    "resource_reader",
    "with_reads",
]


class PartsSettings(ConfigModel):
    """How parts from outside the text are read (the multimodal reader's config inherits these):

    - ``fetch``: downloads (timeouts, redirects, retries, the download budget, the private-address
      allow-list, ``direct_markdown_hostnames``, the S3 endpoint and ``s3.allow_buckets``, the
      buckets ``s3://`` in content may name: none by default); see
      :class:`~memreader.fetch.settings.FetchConfig`.
    - ``images``: formats, byte and pixel limits, the longest side sent to a vision model, and
      whether fine mode describes images; see
      :class:`~memreader.parts.settings.ImageConfig`.
    - ``transcription``: an OpenAI-compatible ``/audio/transcriptions`` endpoint; without one,
      audio is kept as a placeholder and reported as unsupported.
    - ``strict_parts`` (``False``): raise the typed error of the first part that cannot be read
      instead of keeping a placeholder and reporting it.
    - ``resource_cache_size`` (256): converted documents, prepared images, transcripts and image
      descriptions kept by content hash across calls.
    - ``base_dir``: the folder relative local paths are resolved against, in chat parts and in
      doc input (default: the working directory); they must still lie under
      ``allowed_roots``. With local paths allowed, a doc input string that names an existing
      file under ``base_dir`` (``"ok.txt"``) is that file, read; any other string is text.
    """

    fetch: FetchConfig = Field(default_factory=FetchConfig)
    images: ImageConfig = Field(default_factory=ImageConfig)
    transcription: TranscriptionConfig | None = None
    strict_parts: bool = False
    resource_cache_size: int = Field(default=256, ge=1, le=100_000)
    base_dir: str | None = None

    @field_validator("base_dir")
    @classmethod
    def _check_base_dir(cls, value: str | None) -> str | None:
        if value is not None and (not value.strip() or "\0" in value):
            raise ValueError("base_dir must be a non-empty path")
        return value


@STEPS.register("normalize_parts")
class NormalizeParts(Normalize):
    """The caller's input as typed scenes that keep every part: chats with parts of unknown
    types kept (as ``unsupported``), documents with files, URLs and ``s3://`` keys left as
    references for ``read_parts``."""

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        if state.type == "chat":
            state.scenes = normalize_chat(state.scene_data, unknown_parts="keep")
        else:
            # Only where relative paths are resolved; a reader without the parts settings
            # resolves them nowhere (they are refused).
            config = runtime.config
            base_dir = config.base_dir if isinstance(config, PartsSettings) else None
            state.scenes = normalize_doc_refs(
                state.scene_data, allow_local_paths=config.allow_local_paths, base_dir=base_dir
            )


def _build_resource_reader(runtime: ReaderRuntime) -> ResourceReader:
    from memreader.fetch.fetcher import Fetcher

    config = runtime.config
    settings = runtime.settings(PartsSettings, "read_parts")
    transcriber = None
    if settings.transcription is not None:
        from memreader.parts.audio import Transcriber

        transcriber = Transcriber(settings.transcription)
    fetcher = Fetcher(settings.fetch, access=config, base_dir=settings.base_dir)
    return ResourceReader(
        fetcher,
        settings.images,
        limits=config,
        transcriber=transcriber,
        cache=ResourceCache(settings.resource_cache_size),
        workers=settings.fetch.max_concurrency,
    )


#: The reader's :class:`ResourceReader` (fetcher, transcriber, content cache), shared by calls.
RESOURCE_READER = SharedKey("resource_reader", _build_resource_reader)


def resource_reader(runtime: ReaderRuntime) -> ResourceReader:
    """The reader's shared :class:`ResourceReader` (fetcher, transcriber, content cache)."""
    return runtime.shared(RESOURCE_READER)


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
                        reads[key] = _unsupported(scene, message.index, part, reads.get(key))
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
            settings = runtime.settings(PartsSettings, self.name)
            strict = settings.strict_parts
            for task, key, result in zip(tasks, keys, results, strict=True):
                result = _kept_inline(_checked(result, task), task, settings.images)
                if strict and result.error is not None:
                    raise result.error
                reads[key] = PartRead(_part_report(task, result), result, _label(task, result))
            state.scenes = [with_reads(scene, i, reads) for i, scene in enumerate(state.scenes)]
        state.report.parts.extend(
            sorted(
                (read.report for read in reads.values()),
                key=lambda r: (r.scene_index, r.message_index, r.part_index or 0),
            )
        )
        state.part_reads = reads


def _unsupported(scene: Scene, message: int, part: Part, before: PartRead | None) -> PartRead:
    """The report of a part of an unknown type or shape, saying why (several such blocks inside
    one part, e.g. a tool result's, make one report naming them all)."""
    payload = part.payload if isinstance(part.payload, dict) else {}
    shown = clip(str(payload.get("type")), MAX_LABEL).text  # a type name can be huge
    detail = str(payload.get("reason") or f"no parser for part type {shown!r}")
    if before is not None and before.report.detail:
        detail = f"{before.report.detail}; {detail}"
        shown = before.report.type
    report = PartReport(
        scene.index, message, part.index, shown, status="unsupported", detail=detail
    )
    return PartRead(report)


def _checked(result: Resolved, task: PartTask) -> Resolved:
    """``result``, unless its text is not valid Unicode (a transcript with a lone surrogate):
    then the part failed."""
    try:
        check_text(result.text, f"{task.kind} text", error=InputError, **task.where)
    except InputError as exc:
        return Resolved("error", f"[{task.kind}: not readable text]", error=exc)
    return result


def _kept_inline(result: Resolved, task: PartTask, images: ImageConfig) -> Resolved:
    """``result``, with the prepared image kept for its sources when it came inline (it has
    no reference to be read again by) and is within ``images.keep_inline_bytes``."""
    image = result.image
    inline = task.inline is not None or is_data_url(task.ref or "")
    if image is None or not inline or len(image.data) > images.keep_inline_bytes:
        return result
    return dataclasses.replace(result, kept_image=image.data_url())


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
            if read is None or read.resolved is None or part.exact:
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
    return dataclasses.replace(
        part, text=text, exact=False, doc_path=result.source, image_data_url=result.kept_image
    )


def _what(part: Part) -> str:
    return {"file": "file", "image_url": "image", "input_audio": "audio"}.get(part.type, part.type)


@STEPS.register("note_parts")
class NoteParts(Step):
    """Each window's report lists its parts that are unsupported or could not be read; a window
    made only of placeholders of parts that could not be read is dropped (``status="dropped"``):
    a placeholder says a file was there, which is no memory. A window that has any other text
    keeps its placeholders, in their places."""

    name = "note_parts"
    requires = ("windows", "part_reads")
    produces = ("windows",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        reads = state.part_reads
        issues = {k: r for k, r in reads.items() if r.report.status in ("unsupported", "error")}
        if issues:
            state.windows = [_noted(i, ws, issues) for i, ws in enumerate(state.windows)]


def _noted(position: int, ws: WindowedScene, issues: dict[PartKey, PartRead]) -> WindowedScene:
    """``ws`` with its windows' part issues noted, less its windows of unread placeholders."""
    kept: list[int] = []
    for i, (window, entry) in enumerate(zip(ws.windows, ws.reports, strict=True)):
        keys = []
        for segment in window.segments:
            ref = ws.units[segment.unit].key
            assert isinstance(ref, PartRef)
            keys.append((position, ref.message.index, ref.part.index))
        for key in dict.fromkeys(k for k in keys if k in issues):
            report = issues[key].report
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
        if keys and all(k in issues and issues[k].report.status == "error" for k in keys):
            entry.status = "dropped"
            entry.error = "only placeholders of parts that could not be read (see part_issues)"
        else:
            kept.append(i)
    if len(kept) == len(ws.windows):
        return ws
    windows = [ws.windows[i] for i in kept]
    return dataclasses.replace(
        ws,
        windows=windows,
        reports=[ws.reports[i] for i in kept],
        chunks=chunk_positions(windows, ws.units, ws.scene),
    )
