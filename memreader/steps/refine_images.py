"""Refinement's image steps: a stored item whose sources include images has those images read
again and sent to the ``image_parser_llm`` slot, as fine mode does (MemOS's multimodal
``fine_transfer_simple_mem``).

=============  ============  ===================================  ======
step           requires      produces                             modes
=============  ============  ===================================  ======
refine_images  stored_items  stored_items, image_refinements      refine
=============  ============  ===================================  ======

What a fast item kept of an image is its source (``type="image_url"``): ``doc_path``, the
reference the first read used (a path as given, a URL without credentials or query,
``s3://bucket/key``), or, for an inline image, ``image_data_url`` (the prepared image, within
``images.keep_inline_bytes``). It is read again through the reader's own fetcher, with every rule
of the first read (local roots, schemes, private addresses, ``fetch.s3.allow_buckets``, the
``images`` limits): a stored item is content, and one naming ``file:///etc/passwd`` is refused.

Each distinct image (by sha256) is described once per call (not again while its description is
cached); the description joins the image's line (the text refinement reads it, as in fine mode)
and the vision model's memories become items tagged ``image`` citing the image's source
(:mod:`memreader.steps.refined_image_items`). An
image not read or not described is its record in ``report.parts`` (``error``, ``unsupported``
or ``fallback``, with ``error_type``) and a note in its item's window report; that item is
refined from its text, and the others as usual.
"""

from __future__ import annotations

import logging
import os
from typing import Any

from memreader.calls.deadlines import in_thread
from memreader.errors import DeadlineExceeded, InputError
from memreader.extraction import short_error
from memreader.extraction.driver import arun_plans, run_plans
from memreader.extraction.image_pass import ImageOutcome, describe_image_plan
from memreader.items import SourceMessage, TextualMemoryItem
from memreader.parts.resolved import Resolved
from memreader.parts.resources import ResourceStats
from memreader.parts.tasks import PartTask
from memreader.pipeline import Step
from memreader.steps.chain import call_router
from memreader.steps.images import MAX_DESCRIPTION_CHARS
from memreader.steps.parts import PartsSettings, resource_reader
from memreader.steps.refine import check_stored_item
from memreader.steps.registry import STEPS
from memreader.steps.report import PartReport
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ImageRefinement, ReadState

__all__ = ["IMAGE_SOURCE_TYPE", "RefineImages"]

logger = logging.getLogger(__name__)

#: The source type of an image part (every image shape is read as an ``image_url`` part).
IMAGE_SOURCE_TYPE = "image_url"
#: What a fast item's source names when the image came inline: nothing to read again.
INLINE = "inline"

REFINE = frozenset({"refine"})


@STEPS.register("refine_images")
class RefineImages(Step):
    """Refinement: each image source of each stored item read again and described by the
    ``image_parser_llm`` slot; the description joins the image's line (see the module)."""

    name = "refine_images"
    requires = ("stored_items",)
    produces = ("stored_items", "image_refinements")
    modes = REFINE

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        found = self._read(state, runtime)
        plans = self._plans(state, runtime, found)
        router, meter = call_router(state, runtime)
        outcomes = run_plans(
            plans,
            router,
            meter=meter,
            workers=runtime.config.llm_max_concurrency,
            on_error=_failed_description,
        )
        self._finish(state, runtime, found, outcomes)

    async def arun(self, state: ReadState, runtime: ReaderRuntime) -> None:
        found = await in_thread(self._read, state, runtime, on_cancel=state.cancel)
        plans = self._plans(state, runtime, found)
        router, meter = call_router(state, runtime)
        outcomes = await arun_plans(plans, router, meter=meter, on_error=_failed_description)
        self._finish(state, runtime, found, outcomes)

    def _read(self, state: ReadState, runtime: ReaderRuntime) -> list[ImageRefinement]:
        """Every image source of every valid stored item, its image read again (or why not)."""
        found: list[ImageRefinement] = []
        tasks: list[PartTask] = []
        asked: list[ImageRefinement] = []
        for position, stored in enumerate(state.stored_items):
            if isinstance(stored, InputError):
                continue  # refine_input records it
            try:
                check_stored_item(stored, position)
            except InputError:
                continue  # refine_input records it
            for k, source in enumerate(stored.metadata.sources):
                if source.type != IMAGE_SOURCE_TYPE:
                    continue
                entry = ImageRefinement(position, k, _report(stored, position, k, source))
                found.append(entry)
                ref = source.image_data_url or source.doc_path
                if not ref or ref == INLINE:
                    _not_kept(entry)
                    continue
                tasks.append(_task(source, ref))
                asked.append(entry)
        if not tasks:
            return found
        why_not = _why_not_described(runtime)
        if why_not is not None:
            for entry in asked:
                entry.report.status = "unsupported"
                entry.report.detail = f"{entry.report.detail}: {why_not}: refined from its text"
            return found
        stats = ResourceStats()
        results = resource_reader(runtime).read_all(tasks, stats)
        for name, n in stats.counts.items():
            state.report.count(name, n)
        for entry, result in zip(asked, results, strict=True):
            _read_into(entry, result)
        return found

    def _plans(
        self, state: ReadState, runtime: ReaderRuntime, found: list[ImageRefinement]
    ) -> list[Any]:
        """The plans of the distinct images to describe (once per sha256, none whose
        description is cached); each entry names the digest whose outcome it takes."""
        state.check_deadline("before describing the stored items' images")
        if all(entry.image_data_url is None for entry in found):
            return []
        cache = resource_reader(runtime).cache
        plans: list[Any] = []
        planned: set[str] = set()
        for entry in found:
            digest = entry.report.digest
            if entry.image_data_url is None or digest is None or digest in planned:
                continue
            cached = cache.get(("description", digest))
            if isinstance(cached, ImageOutcome):
                entry.outcome = cached
                state.report.count("description_reused")
                continue
            planned.add(digest)
            stored = state.stored_items[entry.position]
            assert isinstance(stored, TextualMemoryItem)
            context = _context(stored, entry.source_index)
            label = _label(stored.metadata.sources[entry.source_index])
            plans.append(
                describe_image_plan(
                    entry.image_data_url, label, context, runtime.language(context or label)
                )
            )
            entry.planned = True
        return plans

    def _finish(
        self,
        state: ReadState,
        runtime: ReaderRuntime,
        found: list[ImageRefinement],
        asked: list[ImageOutcome],
    ) -> None:
        state.check_deadline("after describing the stored items' images")
        answers = iter(asked)
        by_digest: dict[str, ImageOutcome] = {}
        cache = resource_reader(runtime).cache if asked else None
        for entry in found:
            if entry.planned:
                answer = next(answers)
                assert entry.report.digest is not None
                by_digest[entry.report.digest] = answer
                if answer.fallback_reason is None and cache is not None:
                    cache.put(("description", entry.report.digest), answer)
                    state.report.count("images_described")
        changed: dict[int, dict[int, SourceMessage]] = {}
        for entry in found:
            entry.image_data_url = None  # the bytes are not needed any more
            digest = entry.report.digest
            if entry.outcome is None and digest is not None:
                entry.outcome = by_digest.get(digest)
            outcome = entry.outcome
            if outcome is None:
                continue
            if outcome.fallback_reason is not None:
                entry.report.status = "fallback"
                entry.report.error = outcome.error
                entry.report.detail = (
                    f"{entry.report.detail}; not described ({outcome.fallback_reason}): "
                    "refined from its text"
                )
                entry.outcome = None
                continue
            entry.report.detail = f"{entry.report.detail}, described"
            stored = state.stored_items[entry.position]
            assert isinstance(stored, TextualMemoryItem)
            source = stored.metadata.sources[entry.source_index]
            entry.source = _described(source, outcome.description)
            changed.setdefault(entry.position, {})[entry.source_index] = entry.source
        for position, sources in changed.items():
            stored = state.stored_items[position]
            assert isinstance(stored, TextualMemoryItem)
            state.stored_items[position] = _with_sources(stored, sources)
        state.report.parts.extend(entry.report for entry in found)
        state.image_refinements = found


def _report(item: TextualMemoryItem, position: int, k: int, source: SourceMessage) -> PartReport:
    return PartReport(
        source.scene_index,
        source.message_index,
        source.part_index,
        IMAGE_SOURCE_TYPE,
        source=source.doc_path,
        detail=f"stored item {position} ({item.id[:64]}), source {k}",
    )


def _why_not_described(runtime: ReaderRuntime) -> str | None:
    """Why this reader describes no image, or ``None`` when it does."""
    config = runtime.config
    if not isinstance(config, PartsSettings):  # a user put the step in another reader
        return "this reader does not read images (multimodal_struct does)"
    if not config.images.describe:
        return "images.describe is off"
    return None


def _not_kept(entry: ImageRefinement) -> None:
    entry.report.status = "unsupported"
    entry.report.detail = (
        f"{entry.report.detail}: the fast item kept no reference to read the image again "
        "(it was given inline): refined from its text"
    )


def _task(source: SourceMessage, ref: str) -> PartTask:
    inline = ref is source.image_data_url
    name = "" if inline else os.path.basename(ref.split("?", 1)[0].rstrip("/"))
    return PartTask(
        source.scene_index, source.message_index, source.part_index, "image", ref=ref, name=name
    )


def _read_into(entry: ImageRefinement, result: Resolved) -> None:
    """``result`` (the image read again) in ``entry``: its bytes to describe, or why not."""
    report = entry.report
    report.digest = result.digest
    report.bytes = result.bytes
    if result.image is None:
        report.status = "error" if result.error is not None else "unsupported"
        report.error = short_error(result.error) if result.error is not None else result.detail
        report.error_type = type(result.error).__name__ if result.error is not None else None
        report.detail = f"{report.detail}: not read again: refined from its text"
        return
    report.status = "reused" if result.reused else "ok"
    report.detail = f"{report.detail}: read again ({result.detail})"
    report.digest = result.image.digest
    entry.image_data_url = result.image.data_url()


def _failed_description(index: int, error: Exception) -> ImageOutcome:
    if isinstance(error, DeadlineExceeded):
        raise error  # the call's deadline stops the whole call, not one image
    logger.error("describing a stored item's image failed unexpectedly", exc_info=error)
    return ImageOutcome(fallback_reason="internal_error", error=short_error(error))


def _label(source: SourceMessage) -> str:
    ref = source.doc_path or "image"
    return os.path.basename(ref.split("?", 1)[0].rstrip("/")) or ref


def _context(item: TextualMemoryItem, image_index: int) -> str:
    """The item's other lines (its text around the image), as the vision model's context."""
    lines = []
    for k, source in enumerate(item.metadata.sources):
        if k == image_index or source.type == IMAGE_SOURCE_TYPE or not source.content:
            continue
        lines.append(f"{source.role}: {source.content}" if source.role else source.content)
    return "\n".join(lines)


def _described(source: SourceMessage, description: str) -> SourceMessage:
    """The image's source with the description joined to its line, as fine mode shows it."""
    text = " ".join(description.split())[:MAX_DESCRIPTION_CHARS]
    if not text:
        return source
    base = source.content or f"[image: {_label(source)}]"
    base = base[:-1] if base.endswith("]") else base
    return source.model_copy(update={"content": f"{base}: {text}]"})


def _with_sources(item: TextualMemoryItem, changed: dict[int, SourceMessage]) -> TextualMemoryItem:
    """A copy of ``item`` with some sources replaced (the caller's item is left as it was)."""
    sources = [changed.get(k, s) for k, s in enumerate(item.metadata.sources)]
    metadata = item.metadata.model_copy(update={"sources": sources})
    return item.model_copy(update={"metadata": metadata})
