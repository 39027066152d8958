"""The simple structured reader: normalise, parse, window, then fast or fine items, embedded."""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memreader.config import SimpleStructMemReaderConfig
from memreader.documents.chunking import RecursiveSplitter
from memreader.emit import make_item, memory_type_for, scene_digest, window_sources
from memreader.errors import (
    ConfigError,
    EmbeddingError,
    InputError,
    InternalError,
    LLMRequiredError,
    MemReaderError,
    UnsupportedModeError,
)
from memreader.extraction import (
    WindowInput,
    WindowOutcome,
    arun_plan,
    detect_language,
    failed_outcome,
    run_plan,
    short_error,
    window_plan,
)
from memreader.items import SourceMessage, TextualMemoryItem
from memreader.llms.hooks import LLMHooks
from memreader.parsers import line_prefix, scene_units
from memreader.readers.base import BaseMemReader, register_reader
from memreader.readers.fine_items import fine_window_items
from memreader.report import ReadReport, WindowReport
from memreader.scene import Scene, check_text, normalize_chat, normalize_doc, validate_info
from memreader.tokens import get_tokenizer
from memreader.windows import Unit, Window, Windower

if TYPE_CHECKING:
    from memreader.embedders import Embedder
    from memreader.extraction.language import Language
    from memreader.llms import LLMHooks, LLMRouter

logger = logging.getLogger(__name__)

SCENE_TYPES = ("chat", "doc")
MODES = ("fast", "fine")


@dataclass(frozen=True)
class WindowedScene:
    """A scene, its units and the windows cut over them.

    ``digest`` identifies the scene by content, so item ids do not depend on how scenes were
    batched into calls: re-ingesting a scene gives the same ids wherever it stands.
    """

    scene: Scene
    units: list[Unit]
    windows: list[Window]
    digest: str


@dataclass
class FineJob:
    """One window's fine-mode work and where its items go."""

    position: int  # index of the inner result list
    window: WindowInput
    sources: list[SourceMessage]
    memory_text: str
    id_base: tuple[object, ...]
    report: WindowReport
    custom_tags: list[str]
    info: Mapping[str, Any]


@register_reader("simple_struct")
class SimpleStructMemReader(BaseMemReader):
    """Reads chats and documents into memory items.

    >>> reader = SimpleStructMemReader()                       # doctest: +SKIP
    >>> reader.get_memory([[{"role": "user", "content": "I love tea"}]],
    ...                   type="chat", info={"user_id": "u1", "session_id": "s1"})  # doctest: +SKIP
    [[TextualMemoryItem(...)]]
    """

    config_class = SimpleStructMemReaderConfig

    def __init__(
        self,
        config: SimpleStructMemReaderConfig | None = None,
        *,
        embedder: Embedder | None = None,
        hooks: LLMHooks | None = None,
    ) -> None:
        self.config = config or SimpleStructMemReaderConfig()
        window = self.config.window
        tokenizer = get_tokenizer(window.tokenizer)
        splitter = RecursiveSplitter(tokenizer) if window.splitter == "recursive" else None
        self.windower = Windower(window.max_tokens, window.overlap_tokens, tokenizer, splitter)
        self._embedder = embedder
        # Callbacks around every LLM call of this reader: append to hooks.before_call,
        # hooks.after_call or hooks.on_error (also on readers from MemReaderFactory).
        self.hooks = hooks if hooks is not None else LLMHooks()
        self._router: LLMRouter | None = None
        self._lock = threading.Lock()

    @property
    def embedder(self) -> Embedder:
        """The embedder, built on first use (loading a local model takes seconds)."""
        if self._embedder is None:
            if self.config.embedder is None:
                raise ConfigError("this reader has no embedder (config `embedder: null`)")
            from memreader.embedders import CachedEmbedder, EmbeddingCache, build_embedder

            with self._lock:
                if self._embedder is None:
                    inner = build_embedder(self.config.embedder)
                    cache = EmbeddingCache(max_entries=self.config.embedding_cache_size)
                    self._embedder = CachedEmbedder(inner, cache)
        return self._embedder

    @property
    def llm(self) -> LLMRouter:
        """The LLM slots' clients: one concurrency budget, one usage meter, one set of hooks."""
        if self._router is None:
            from memreader.llms import LLMRouter

            slots = self.config.llm_slots()
            if slots.resolve("llm") is None:
                raise LLMRequiredError(
                    "fine mode needs an LLM: set `llm` in the reader config "
                    "(see configs/fine_openai.yaml), or use mode='fast'"
                )
            with self._lock:
                if self._router is None:
                    self._router = LLMRouter(slots, hooks=self.hooks)
        return self._router

    # -- steps ------------------------------------------------------------------------------

    def normalize(self, scene_data: Any, type: str) -> list[Scene]:
        """Step 1: the caller's input as typed scenes."""
        _check_type(type)
        if type == "chat":
            return normalize_chat(scene_data)
        return normalize_doc(scene_data, **self.config.document_options())

    def window(self, scenes: Sequence[Scene]) -> list[WindowedScene]:
        """Steps 2 and 3: parse each scene into units and cut them into windows."""
        out = []
        for scene in scenes:
            units = scene_units(scene)
            digest = scene_digest(scene.type, units)
            out.append(WindowedScene(scene, units, self.windower.windows(units), digest))
        return out

    def fast_items(
        self,
        windowed: Sequence[WindowedScene],
        info: Mapping[str, Any],
        custom_tags: Sequence[str],
        report: ReadReport | None = None,
    ) -> list[list[TextualMemoryItem]]:
        """Fast extraction: each window becomes one item, all embedded in batched calls."""
        tags = ["mode:fast", *custom_tags]
        result = []
        made: list[tuple[TextualMemoryItem, WindowReport]] = []
        for ws in windowed:
            items = []
            for window in ws.windows:
                entry = WindowReport(ws.scene.index, window.index)
                if report is not None:
                    report.windows.append(entry)
                try:
                    sources = window_sources(window, ws.units, ws.scene)
                    item = make_item(
                        memory=window.text,
                        info=info,
                        sources=sources,
                        memory_type=memory_type_for(sources),
                        tags=list(tags),
                        id_parts=(ws.scene.type, "fast", ws.digest, window.index),
                    )
                except Exception as exc:  # one window's failure is that window's record
                    _record_window_error(entry, exc)
                    continue
                entry.items = 1
                items.append(item)
                made.append((item, entry))
            result.append(items)
        self.embed_items(made)
        return result

    def embed_items(self, made: Sequence[tuple[TextualMemoryItem, WindowReport]]) -> None:
        """Embed the items' memories in batched, cached calls. A batch that fails leaves its
        items without a vector, tagged ``embedding:failed``, and says so in their windows'
        reports; the other batches keep theirs."""
        if not made or (self._embedder is None and self.config.embedder is None):
            return
        embedder = self.embedder
        size = getattr(embedder, "batch_size", None)
        size = size if isinstance(size, int) and size > 0 else 64
        for offset in range(0, len(made), size):
            batch = made[offset : offset + size]
            try:
                vectors = embedder.embed([item.memory for item, _ in batch])
                if len(vectors) != len(batch):
                    raise EmbeddingError(
                        f"{embedder.name}: {len(vectors)} vectors for {len(batch)} texts"
                    )
            except Exception as exc:  # a failed batch is its items' record, not the call's
                error = short_error(exc)
                logger.warning(
                    "embedding %d items failed, returning them without vectors: %s",
                    len(batch),
                    error,
                    exc_info=not isinstance(exc, EmbeddingError),
                )
                for item, entry in batch:
                    item.metadata.tags.append("embedding:failed")
                    entry.embedding_error = error
                continue
            for (item, _), vector in zip(batch, vectors, strict=True):
                item.metadata.embedding = vector

    def _language(self, text: str) -> Language:
        language = self.config.fine.language
        return detect_language(text) if language == "auto" else language

    def fine_jobs(
        self,
        windowed: Sequence[WindowedScene],
        info: Mapping[str, Any],
        custom_tags: Sequence[str],
    ) -> Iterator[FineJob]:
        """One job per window: its numbered lines, sources, and report entry (made lazily, so
        the first windows' LLM calls start while later windows are prepared)."""
        for position, ws in enumerate(windowed):
            for window in ws.windows:
                sources = window_sources(window, ws.units, ws.scene)
                lines = [(i + 1, s.line) for i, s in enumerate(window.segments)]
                roles = {i + 1: source.role for i, source in enumerate(sources)}
                language = self._language(window.text)
                yield FineJob(
                    position=position,
                    window=WindowInput(lines, roles, language, tuple(custom_tags)),
                    sources=sources,
                    memory_text=window.text,
                    id_base=(ws.scene.type, "fine", ws.digest, window.index),
                    report=WindowReport(ws.scene.index, window.index, language=language),
                    custom_tags=list(custom_tags),
                    info=info,
                )

    def _plan(self, job: FineJob) -> Any:
        fine = self.config.fine
        return window_plan(job.window, use_filter=fine.hallucination_filter, rewrite=fine.rewrite)

    def _finish(self, job: FineJob, outcome: WindowOutcome) -> list[TextualMemoryItem]:
        """A window's items from its outcome (run as soon as its plan ends, so building items
        overlaps the other windows' LLM calls). Whatever fails here falls back to the raw
        window; if even that fails, the window is an error record."""
        try:
            return self._window_items(job, outcome)
        except Exception as exc:  # one window's failure is that window's result
            logger.exception(
                "scene %d, window %d: building items failed, keeping the raw window",
                job.report.scene_index,
                job.report.window_index,
            )
            fallback = failed_outcome(exc)
        try:
            return self._window_items(job, fallback)
        except Exception as exc:  # not even the raw window: an error record, never a raise
            _record_window_error(job.report, exc)
            return []

    def _window_items(self, job: FineJob, outcome: WindowOutcome) -> list[TextualMemoryItem]:
        return fine_window_items(
            outcome,
            job.sources,
            memory_text=job.memory_text,
            info=job.info,
            custom_tags=job.custom_tags,
            id_base=job.id_base,
            keep_empty=self.config.fine.empty_window == "fallback",
            report=job.report,
        )

    def _guarded_outcome(self, job: FineJob, error: Exception) -> WindowOutcome:
        # Not an LLM failure (those end inside the plan): a bug, or a plugin or SDK raising
        # something untyped. It is this window's fallback; the other windows go on.
        logger.error(
            "scene %d, window %d: unexpected error, keeping the raw window",
            job.report.scene_index,
            job.report.window_index,
            exc_info=error,
        )
        return failed_outcome(error)

    def _collect(
        self,
        size: int,
        done: Sequence[tuple[FineJob, list[TextualMemoryItem]]],
        report: ReadReport | None,
    ) -> list[list[TextualMemoryItem]]:
        result: list[list[TextualMemoryItem]] = [[] for _ in range(size)]
        for job, items in done:
            result[job.position].extend(items)
            if report is not None:
                report.windows.append(job.report)
        fallbacks = sum(1 for job, _ in done if job.report.status == "fallback")
        if fallbacks:
            logger.warning("%d of %d windows fell back to raw items", fallbacks, len(done))
        return result

    def run_fine(
        self, jobs: Iterable[FineJob], size: int, report: ReadReport | None
    ) -> list[list[TextualMemoryItem]]:
        """Run the jobs' plans on threads (bounded by the LLM budget), then emit and embed."""
        router = self.llm

        def work(job: FineJob) -> list[TextualMemoryItem]:
            try:
                outcome = run_plan(self._plan(job), router, meter)
            except Exception as exc:  # see _guarded_outcome
                outcome = self._guarded_outcome(job, exc)
            return self._finish(job, outcome)

        with (
            router.meter.scope() as meter,
            ThreadPoolExecutor(
                max_workers=self.config.llm_max_concurrency, thread_name_prefix="memreader-llm"
            ) as pool,
        ):
            futures = [(job, pool.submit(work, job)) for job in jobs]
            done = [(job, future.result()) for job, future in futures]
        if report is not None:
            report.usage = meter.snapshot()
        result = self._collect(size, done, report)
        self.embed_items([(item, job.report) for job, items in done for item in items])
        return result

    async def arun_fine(
        self, jobs: Iterable[FineJob], size: int, report: ReadReport | None
    ) -> list[list[TextualMemoryItem]]:
        """The async twin of :meth:`run_fine`: plans run as tasks on native async clients."""
        router = self.llm

        async def work(job: FineJob) -> list[TextualMemoryItem]:
            try:
                outcome = await arun_plan(self._plan(job), router, meter)
            except Exception as exc:  # see _guarded_outcome
                outcome = self._guarded_outcome(job, exc)
            return self._finish(job, outcome)

        with router.meter.scope() as meter:
            tasks = []
            for job in jobs:
                tasks.append((job, asyncio.ensure_future(work(job))))
                await asyncio.sleep(0)  # let the task send its first request now
            done = [(job, await task) for job, task in tasks]
        if report is not None:
            report.usage = meter.snapshot()
        result = self._collect(size, done, report)
        made = [(item, job.report) for job, items in done for item in items]
        await asyncio.to_thread(self.embed_items, made)
        return result

    # -- public API -------------------------------------------------------------------------

    def _prepare(
        self,
        type: str,
        info: Mapping[str, Any] | None,
        mode: str,
        custom_tags: Sequence[str] | None,
    ) -> tuple[dict[str, Any], list[str]]:
        if mode not in MODES:
            raise UnsupportedModeError(f"unknown mode {mode!r}; expected one of {MODES}")
        _check_type(type)
        checked = validate_info(info)
        tags = _check_tags(custom_tags)
        if mode == "fine":
            _ = self.llm  # fail before any work when no LLM is configured
        return checked, tags

    def get_memory(
        self,
        scene_data: Any,
        type: str = "chat",
        info: Mapping[str, Any] | None = None,
        mode: str = "fast",
        *,
        custom_tags: Sequence[str] | None = None,
        report: ReadReport | None = None,
    ) -> list[list[TextualMemoryItem]]:
        """Turn ``scene_data`` into memory items: one inner list per scene, in input order.

        ``info`` must hold string ``user_id`` and ``session_id``; its other keys are kept in
        each item's ``metadata.info``. Items are deterministic: the same input and config give
        the same ids in the same order. Pass ``report=ReadReport()`` to get per-window status
        and LLM usage.
        """
        with typed_errors("get_memory"):
            checked, tags = self._prepare(type, info, mode, custom_tags)
            windowed = self.window(self.normalize(scene_data, type))
            if report is not None:
                report.mode = mode
            logger.debug(
                "%d scenes, %d windows", len(windowed), sum(len(ws.windows) for ws in windowed)
            )
            if mode == "fast":
                return self.fast_items(windowed, checked, tags, report)
            return self.run_fine(self.fine_jobs(windowed, checked, tags), len(windowed), report)

    async def aget_memory(
        self,
        scene_data: Any,
        type: str = "chat",
        info: Mapping[str, Any] | None = None,
        mode: str = "fast",
        *,
        custom_tags: Sequence[str] | None = None,
        report: ReadReport | None = None,
    ) -> list[list[TextualMemoryItem]]:
        """The async twin of :meth:`get_memory` (same items, same ids)."""
        with typed_errors("aget_memory"):
            checked, tags = self._prepare(type, info, mode, custom_tags)
            scenes = await asyncio.to_thread(self.normalize, scene_data, type)
            windowed = await asyncio.to_thread(self.window, scenes)
            if report is not None:
                report.mode = mode
            if mode == "fast":
                return await asyncio.to_thread(self.fast_items, windowed, checked, tags, report)
            jobs = self.fine_jobs(windowed, checked, tags)
            return await self.arun_fine(jobs, len(windowed), report)

    def refinement_jobs(
        self,
        items: Sequence[TextualMemoryItem | Mapping[str, Any]],
        type: str,
        custom_tags: Sequence[str],
    ) -> list[FineJob]:
        """One fine job per stored item, rebuilt from its text and sources."""
        _check_type(type)
        jobs = []
        for position, raw in enumerate(items):
            item = _as_item(raw, position)
            sources = list(item.metadata.sources)
            if not sources:
                raise InputError(f"item {position} ({item.id}) has no sources to refine from")
            for k, source in enumerate(sources):
                check_text(source.content, f"item {position}, source {k}", error=InputError)
            lines = [
                (i + 1, line_prefix(s.role, s.chat_time) + s.content) for i, s in enumerate(sources)
            ]
            roles = {i + 1: s.role for i, s in enumerate(sources)}
            language = self._language(item.memory)
            info = {
                **item.metadata.info,
                "user_id": item.metadata.user_id,
                "session_id": item.metadata.session_id,
            }
            kept = [t for t in item.metadata.tags if not t.startswith(("mode:", "fallback:"))]
            tags = list(dict.fromkeys([*kept, *custom_tags]))
            jobs.append(
                FineJob(
                    position=position,
                    window=WindowInput(lines, roles, language, tuple(tags)),
                    sources=sources,
                    memory_text=item.memory,
                    id_base=(type, "refine", item.id),
                    report=WindowReport(sources[0].scene_index, position, language=language),
                    custom_tags=tags,
                    info=info,
                )
            )
        return jobs

    def fine_transfer_simple_mem(
        self,
        items: Sequence[TextualMemoryItem | Mapping[str, Any]],
        type: str = "chat",
        *,
        custom_tags: Sequence[str] | None = None,
        report: ReadReport | None = None,
    ) -> list[list[TextualMemoryItem]]:
        """Refine stored fast items into fine items: one inner list per input item.

        Each item's text and sources are sent through fine extraction; the new items keep the
        original user, session, info and provenance (the sources they cite). Idempotent: the
        same items give the same ids.
        """
        with typed_errors("fine_transfer_simple_mem"):
            jobs = self.refinement_jobs(items, type, _check_tags(custom_tags))
            if report is not None:
                report.mode = "refine"
            return self.run_fine(jobs, len(items), report)

    async def afine_transfer_simple_mem(
        self,
        items: Sequence[TextualMemoryItem | Mapping[str, Any]],
        type: str = "chat",
        *,
        custom_tags: Sequence[str] | None = None,
        report: ReadReport | None = None,
    ) -> list[list[TextualMemoryItem]]:
        """The async twin of :meth:`fine_transfer_simple_mem`."""
        with typed_errors("afine_transfer_simple_mem"):
            jobs = self.refinement_jobs(items, type, _check_tags(custom_tags))
            if report is not None:
                report.mode = "refine"
            return await self.arun_fine(jobs, len(items), report)

    def close(self) -> None:
        """Close the LLM clients' connections."""
        if self._router is not None:
            self._router.close()

    async def aclose(self) -> None:
        """Close the LLM clients' connections, the running loop's async ones included."""
        if self._router is not None:
            await self._router.aclose()


def _record_window_error(entry: WindowReport, error: BaseException) -> None:
    logger.error(
        "scene %d, window %d: no item could be made: %s",
        entry.scene_index,
        entry.window_index,
        short_error(error),
        exc_info=error,
    )
    entry.status, entry.error, entry.items = "error", short_error(error), 0


@contextmanager
def typed_errors(call: str) -> Iterator[None]:
    """Public calls raise only :class:`MemReaderError`: anything else is a bug, kept as the
    cause of an :class:`InternalError` that names the call."""
    try:
        yield
    except MemReaderError:
        raise
    except Exception as exc:
        raise InternalError(f"{call} failed unexpectedly: {short_error(exc)}") from exc


def _as_item(raw: TextualMemoryItem | Mapping[str, Any], position: int) -> TextualMemoryItem:
    if isinstance(raw, TextualMemoryItem):
        return raw
    if isinstance(raw, Mapping):
        try:
            return TextualMemoryItem.from_dict(dict(raw))
        except ValueError as exc:
            raise InputError(f"item {position} is not a valid memory item: {exc}") from exc
    raise InputError(
        f"item {position} must be a TextualMemoryItem or its dict, got {type(raw).__name__}"
    )


def _check_type(type: str) -> None:
    if type not in SCENE_TYPES:
        raise UnsupportedModeError(f"unknown input type {type!r}; expected one of {SCENE_TYPES}")


def _check_tags(custom_tags: Sequence[str] | None) -> list[str]:
    if custom_tags is None:
        return []
    if isinstance(custom_tags, str) or not all(isinstance(t, str) for t in custom_tags):
        raise InputError("custom_tags must be a list of strings")
    return [check_text(t, f"custom_tags[{i}]", error=InputError) for i, t in enumerate(custom_tags)]
