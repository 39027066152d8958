"""Reading what a part points at: files, images and audio, each fetched, converted, prepared or
transcribed once per content, within the limits.

A :class:`PartTask` names one part to read (from a chat message or a document); the
:class:`ResourceReader` reads many at once on a pool of threads bounded by the downloads'
concurrency budget. Work is shared twice over: parts naming the same reference (a URL, a path,
the same inline data) are fetched once per call, and content with the same sha256 is converted,
prepared or transcribed once, in this call or a recent one (a small LRU cache kept by the
reader). One part's failure is that part's result: it comes back as a :class:`Resolved` with
``status="error"``, the typed error, and a placeholder that keeps its place in its window.
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from memreader.errors import DocumentError, MemReaderError
from memreader.fetch.data_urls import decode_inline
from memreader.fetch.local_files import DEFAULT_LIMITS, DocumentLimits
from memreader.parts.resolved import (
    AudioMade,
    DocumentMade,
    ImageMade,
    Made,
    Resolved,
    part_label,
    placeholder,
    reused,
)
from memreader.parts.tasks import PartTask

if TYPE_CHECKING:
    from memreader.fetch.fetcher import Fetched, Fetcher
    from memreader.parts.audio import Transcriber
    from memreader.parts.settings import ImageConfig

__all__ = ["ResourceCache", "ResourceReader", "ResourceStats"]

logger = logging.getLogger(__name__)

T = TypeVar("T")


@dataclass
class ResourceStats:
    """Work done and saved by one :meth:`ResourceReader.read_all` call."""

    counts: dict[str, int] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def add(self, name: str, n: int = 1) -> None:
        with self.lock:
            self.counts[name] = self.counts.get(name, 0) + n


class ResourceCache:
    """What was made of recent content, by sha256 (and kind): converted text, prepared images,
    transcripts and image descriptions. Bounded by entries; thread-safe."""

    def __init__(self, max_entries: int = 256) -> None:
        self.max_entries = max_entries
        self._entries: OrderedDict[tuple[str, str], Any] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> Any:
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def put(self, key: tuple[str, str], value: Any) -> None:
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.max_entries:
                self._entries.popitem(last=False)


class _Once(Generic[T]):
    """Work done once per key among threads: the first caller does it, callers that come while
    it runs wait for its result (or its error); a failure is not kept for later callers.

    A waiter waits for work that is already running (its owner registered it before starting),
    so a pool whose tasks wait on each other cannot deadlock.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._futures: dict[tuple[str, str], Future[T]] = {}

    def run(self, key: tuple[str, str], make: Callable[[], T]) -> tuple[T, bool]:
        """``make()``'s value for ``key``, and whether another caller made it."""
        with self._lock:
            future = self._futures.get(key)
            owner = future is None
            if future is None:
                future = self._futures[key] = Future()
        if not owner:
            return future.result(), True
        try:
            value = make()
        except BaseException as exc:
            future.set_exception(exc)
            with self._lock:
                self._futures.pop(key, None)
            raise
        future.set_result(value)
        return value, False


class ResourceReader:
    """Reads parts' files, images and audio (see the module docstring).

    Args:
        fetcher: downloads and local reads, with their limits and budget.
        images: how images are checked and prepared.
        limits: the document limits (conversion).
        transcriber: the transcription endpoint, or ``None`` (audio becomes a placeholder).
        cache: content-keyed results shared across calls.
    """

    def __init__(
        self,
        fetcher: Fetcher,
        images: ImageConfig,
        *,
        limits: DocumentLimits = DEFAULT_LIMITS,
        transcriber: Transcriber | None = None,
        cache: ResourceCache | None = None,
        workers: int = 4,
    ) -> None:
        self.fetcher = fetcher
        self.images = images
        self.limits = limits
        self.transcriber = transcriber
        self.cache = cache if cache is not None else ResourceCache()
        self.workers = max(1, workers)

    def close(self) -> None:
        """Close the fetcher's connections and the transcriber's."""
        self.fetcher.close()
        if self.transcriber is not None:
            self.transcriber.close()

    def read_all(
        self, tasks: Sequence[PartTask], stats: ResourceStats | None = None
    ) -> list[Resolved]:
        """One :class:`Resolved` per task, in order; never raises for one part's failure."""
        stats = stats if stats is not None else ResourceStats()
        if not tasks:
            return []
        by_ref: _Once[Resolved] = _Once()
        by_content: _Once[Made] = _Once()

        def one(task: PartTask) -> Resolved:
            key = task.share_key
            if key is None:
                return self._read(task, stats, by_content)
            result, shared = by_ref.run(key, lambda: self._read(task, stats, by_content))
            if shared:
                stats.add("fetch_reused")
                return reused(result)
            return result

        # Every task runs to its end on its own thread (see _Once for why waits cannot
        # deadlock).
        with ThreadPoolExecutor(
            max_workers=min(self.workers, len(tasks)), thread_name_prefix="memreader-fetch"
        ) as pool:
            futures = [pool.submit(one, task) for task in tasks]
            results = []
            for task, future in zip(tasks, futures, strict=True):
                try:
                    results.append(future.result())
                except Exception as exc:  # a bug in one part's reading is that part's result
                    logger.error("reading part failed unexpectedly", exc_info=exc)
                    results.append(_failed(task, _typed(exc, task)))
            return results

    # -- one part --------------------------------------------------------------------------------

    def _read(self, task: PartTask, stats: ResourceStats, by_content: _Once[Made]) -> Resolved:
        if task.unsupported is not None:
            return Resolved(
                "unsupported", placeholder(task, task.unsupported), detail=task.unsupported
            )
        try:
            fetched = self._fetch(task, stats)
            key = (task.kind, fetched.digest)
            made: Made | None = self.cache.get(key)
            if made is None:
                made, shared = by_content.run(key, lambda: self._make(task, fetched, stats))
                if not shared:
                    self.cache.put(key, made)
            else:
                shared = True
            if shared:
                stats.add(_REUSE_COUNTER[task.kind])
        except MemReaderError as exc:
            return _failed(task, exc)
        return made(task, fetched)

    def _fetch(self, task: PartTask, stats: ResourceStats) -> Fetched:
        from memreader.fetch.fetcher import Fetched

        limit = self.images.max_bytes if task.kind == "image" else None
        if task.inline is not None:
            inline = decode_inline(
                task.inline,
                limit or self.fetcher_limit,
                what=f"inline {task.kind} data",
                limit_name="images.max_bytes" if task.kind == "image" else "max_file_bytes",
                where=task.where,
            )
            data = inline.data
            name = task.name
            return Fetched(
                data=data,
                source=os.path.basename(name) or "inline",
                name=name,
                extension=os.path.splitext(name)[1].lower(),
                media_type=inline.media_type,
                markdown=False,
                digest=hashlib.sha256(data).hexdigest(),
            )
        assert task.ref is not None
        fetched = self.fetcher.fetch(
            task.ref, kind=task.kind, max_bytes=limit, name=task.name or None, where=task.where
        )
        if fetched.source != "inline":
            stats.add("fetched")
        return fetched

    @property
    def fetcher_limit(self) -> int:
        return self.limits.max_file_bytes

    def _make(self, task: PartTask, fetched: Fetched, stats: ResourceStats) -> Made:
        """The content-keyed work on ``fetched`` (conversion, preparation, transcription), as a
        function of the part that turns it into that part's :class:`Resolved`."""
        if task.kind == "document":
            text = self._convert(task, fetched)
            stats.add("converted")
            return DocumentMade(text)
        if task.kind == "image":
            from memreader.parts.images import prepare_image

            image = prepare_image(
                fetched.data, self.images, label=part_label(task, fetched), where=task.where
            )
            stats.add("images_prepared")
            return ImageMade(image)
        if self.transcriber is None:
            return AudioMade(None)
        from memreader.parts.audio import audio_format

        extension, media_type = audio_format(task.audio_format, fetched.name or task.name)
        filename = fetched.name or task.name or f"audio{extension}"
        transcript = self.transcriber.transcribe(
            fetched.data, filename=filename, media_type=media_type, where=task.where
        )
        stats.add("transcribed")
        return AudioMade(transcript)

    def _convert(self, task: PartTask, fetched: Fetched) -> str:
        from memreader.documents.loader import convert_bytes

        extension = ".md" if fetched.markdown else fetched.extension
        if not extension:
            extension = os.path.splitext(task.name)[1].lower()
        where = {"scene_index": task.scene_index, "message_index": task.message_index}
        return convert_bytes(
            fetched.data, extension, limits=self.limits, media_type=fetched.media_type, **where
        )


_REUSE_COUNTER = {
    "document": "conversion_reused",
    "image": "image_reused",
    "audio": "transcription_reused",
}


def _failed(task: PartTask, error: MemReaderError) -> Resolved:
    reason = getattr(error, "reason", None) or str(error)
    logger.warning(
        "scene %d, message %d: %s part not read: %s",
        task.scene_index,
        task.message_index,
        task.kind,
        reason,
    )
    return Resolved(
        "error",
        placeholder(task, f"not read ({type(error).__name__}: {reason})"),
        error=error,
    )


def _typed(error: Exception, task: PartTask) -> MemReaderError:
    if isinstance(error, MemReaderError):
        return error
    return DocumentError(
        f"reading the {task.kind} failed unexpectedly: {type(error).__name__}: {error}",
        **task.where,
    )
