"""Fine mode's image steps: each distinct image described by the ``image_parser_llm`` slot
(``describe_images``, before parsing, so the description joins the image's line), and the items
of what it extracted (``image_items``, after the fine items).

===============  ==========================================  =======================  =====
step             requires                                    produces                 modes
===============  ==========================================  =======================  =====
describe_images  scenes, part_reads                          scenes, image_outcomes   fine
image_items      windows, items, emitted, image_outcomes     items, emitted           fine
===============  ==========================================  =======================  =====
"""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Mapping, Sequence
from typing import Any

from memreader.extraction import short_error
from memreader.extraction.driver import arun_plans, run_plans
from memreader.extraction.image_pass import ImageOutcome, describe_image_plan
from memreader.extraction.importance import heuristic_importance
from memreader.items import MemoryType, SourceMessage, TextualMemoryItem
from memreader.pipeline import Step
from memreader.scenes.scene import Scene
from memreader.steps.chain import call_router
from memreader.steps.items import make_item
from memreader.steps.parts import PartsSettings, resource_reader, with_reads
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import PartKey, PartRead, ReadState, WindowedScene
from memreader.windowing.parsers import PartRef

logger = logging.getLogger(__name__)

__all__ = ["DescribeImages", "ImageItems", "described_items"]

#: An image to describe: its sha256, where it appears, and its cached outcome (if any).
_Job = tuple[str, list[PartKey], ImageOutcome | None]

FINE = frozenset({"fine"})
#: An image description shown in a window is clipped to this many characters.
MAX_DESCRIPTION_CHARS = 1500
#: Messages before an image (and after it) shown to the vision model as context.
CONTEXT_BEFORE, CONTEXT_AFTER = 4, 1


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

    def _plans(self, state: ReadState, runtime: ReaderRuntime) -> tuple[list[_Job], list[Any]]:
        """One job per distinct image (with its cached outcome, if any) and the plans of the
        images to ask about, in job order. Per call: a reader may serve calls concurrently."""
        reads = state.part_reads
        by_digest: dict[str, list[PartKey]] = {}
        for key, read in reads.items():
            result = read.resolved
            if result is not None and result.image is not None and result.digest:
                by_digest.setdefault(result.digest, []).append(key)
        settings = runtime.settings(PartsSettings, self.name)
        cache = resource_reader(runtime).cache
        jobs: list[_Job] = []
        plans = []
        if not settings.images.describe:
            return [], []
        for digest, keys in by_digest.items():
            cached = cache.get(("description", digest))
            if isinstance(cached, ImageOutcome):
                jobs.append((digest, keys, cached))
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
            jobs.append((digest, keys, None))
        return jobs, plans

    def _finish(
        self,
        state: ReadState,
        runtime: ReaderRuntime,
        jobs: list[_Job],
        asked: list[ImageOutcome],
    ) -> None:
        reads = state.part_reads
        cache = resource_reader(runtime).cache
        outcomes: dict[str, tuple[ImageOutcome, PartKey]] = {}
        answers = iter(asked)
        for digest, keys, outcome in jobs:
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
            state.scenes = [with_reads(s, i, reads) for i, s in enumerate(state.scenes)]
        state.image_outcomes = outcomes


def _failed_image(index: int, error: Exception) -> ImageOutcome:
    logger.error("describing an image failed unexpectedly", exc_info=error)
    return ImageOutcome(fallback_reason="internal_error", error=short_error(error))


def _context(scene: Scene, message_index: int) -> str:
    """The text of the messages around ``message_index`` (the image's own included)."""
    lines = []
    for message in scene.messages:
        if message_index - CONTEXT_BEFORE <= message.index <= message_index + CONTEXT_AFTER:
            # The words around the image, not the documents attached to the messages.
            text = " ".join(p.text for p in message.parts if p.type == "text" and p.text)
            if text:
                lines.append(f"{message.role}: {text}" if message.role else text)
    return "\n".join(lines)


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
        outcomes = state.image_outcomes
        reads = state.part_reads
        for digest, (outcome, key) in outcomes.items():
            position, message_index, part_index = key
            ws = state.windows[position]
            index = _part_window(ws, message_index, part_index)
            if index is None:  # a step removed the window: nothing to attach the items to
                reads[
                    key
                ].report.detail = (
                    f"{reads[key].report.detail}; no items: its window was removed by a step"
                )
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
                importance=heuristic_importance(read.resolved.text),
            )
        ]
    return described_items(
        outcome, info=state.info, sources=sources, tags=tags, last=state.custom_tags, base=base
    )


def described_items(
    outcome: ImageOutcome,
    *,
    info: Mapping[str, Any],
    sources: list[SourceMessage],
    tags: Sequence[str],
    last: Sequence[str],
    base: tuple[Any, ...],
    description_type: MemoryType = MemoryType.LONG_TERM,
) -> list[TextualMemoryItem]:
    """The items of an image the vision model described: its memories (their own types; tags:
    ``tags``, each memory's, then ``last``), or, when it gave none, its description as one
    ``description_type`` item tagged ``image:description``; ids from ``base``. Reading and
    refinement share it."""
    if not outcome.memories:
        return [
            make_item(
                memory=outcome.description,
                info=info,
                sources=sources,
                memory_type=description_type,
                tags=list(dict.fromkeys([*tags, "image:description", *last])),
                id_parts=(*base, "description"),
                importance=heuristic_importance(outcome.description),
            )
        ]
    return [
        make_item(
            memory=memory.value,
            info=info,
            sources=sources,
            memory_type=memory.memory_type,
            tags=list(dict.fromkeys([*tags, *memory.tags, *last])),
            id_parts=(*base, k),
            key=memory.key,
            background=outcome.description,
            importance=memory.importance or heuristic_importance(memory.value),
            valid_from=memory.valid_from,
        )
        for k, memory in enumerate(outcome.memories)
    ]
