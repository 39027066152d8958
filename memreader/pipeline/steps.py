"""The built-in steps of a read, each over the whole call (all scenes, all windows).

=============  ===========================================  ===================  ============
step           requires                                     produces             modes
=============  ===========================================  ===================  ============
normalize      scene_data, type                             scenes               fast, fine
parse          scenes                                       units                fast, fine
window         scenes, units                                windows              fast, fine
fast_items     windows, info, custom_tags                   items, emitted       fast
prepare_fine   windows, info, custom_tags                   fine_windows         fine
refine_input   stored_items, type, custom_tags              fine_windows         refine
extract        fine_windows                                 outcomes             fine, refine
filter         fine_windows, outcomes                       outcomes             fine, refine
rewrite        fine_windows, outcomes                       outcomes             fine, refine
fine_items     fine_windows, outcomes                       items, emitted       fine, refine
embed          emitted                                      items                all
=============  ===========================================  ===================  ============

One window's failure is that window's result: the LLM passes turn an unexpected exception into
that window's fallback (``internal_error``) or a failed pass, item building falls back to the
raw window, and a failed embedding batch leaves only its items without vectors.
"""

from __future__ import annotations

import logging
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from memreader.documents import normalize_doc
from memreader.emit import (
    fine_window_items,
    make_item,
    memory_type_for,
    scene_digest,
    window_sources,
)
from memreader.errors import EmbeddingError, InputError
from memreader.extraction import (
    PassStatus,
    WindowInput,
    WindowOutcome,
    extract_plan,
    failed_outcome,
    filter_plan,
    rewrite_plan,
    short_error,
)
from memreader.extraction.driver import arun_plans, run_plans
from memreader.extraction.fine import Plan
from memreader.items import TextualMemoryItem
from memreader.llms import UsageMeter
from memreader.parsers import line_prefix, scene_units
from memreader.pipeline.runtime import ReaderRuntime
from memreader.pipeline.state import MODES, FineWindow, ReadState, WindowedScene
from memreader.pipeline.step import Step
from memreader.registry import Registry
from memreader.report import WindowReport
from memreader.scene import check_text, normalize_chat

__all__ = [
    "STEPS",
    "Embed",
    "Extract",
    "FastItems",
    "Filter",
    "FineItems",
    "LLMPass",
    "Normalize",
    "Parse",
    "PrepareFine",
    "RefineInput",
    "Rewrite",
    "WindowStep",
    "default_steps",
]

logger = logging.getLogger(__name__)

SCENE_MODES = frozenset({"fast", "fine"})
LLM_MODES = frozenset({"fine", "refine"})

#: Steps by name, for pipelines declared in YAML: each entry builds a step from its ``config``.
STEPS: Registry[Any] = Registry(
    "pipeline step",
    lazy={"redact": "memreader.pipeline.redact", "min_length": "memreader.pipeline.filters"},
)


@STEPS.register("normalize")
class Normalize(Step):
    """The caller's input as typed scenes (chat messages, or documents read within limits)."""

    name = "normalize"
    requires = ("scene_data", "type")
    produces = ("scenes",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        if state.type == "chat":
            state.scenes = normalize_chat(state.scene_data)
        else:
            state.scenes = normalize_doc(state.scene_data, **runtime.config.document_options())


@STEPS.register("parse")
class Parse(Step):
    """Each scene's parts as units of text, one parser per part type."""

    name = "parse"
    requires = ("scenes",)
    produces = ("units",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        state.units = [scene_units(scene) for scene in state.scenes]


@STEPS.register("window")
class WindowStep(Step):
    """Token-bounded, overlapping windows over each scene's units; one report entry each."""

    name = "window"
    requires = ("scenes", "units")
    produces = ("windows",)
    modes = SCENE_MODES

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        windowed = []
        for scene, units in zip(state.scenes, state.units, strict=True):
            windows = runtime.windower.windows(units)
            reports = [WindowReport(scene.index, w.index) for w in windows]
            state.report.windows.extend(reports)
            windowed.append(
                WindowedScene(scene, units, windows, scene_digest(scene.type, units), reports)
            )
        state.windows = windowed
        logger.debug(
            "%d scenes, %d windows", len(windowed), sum(len(ws.windows) for ws in windowed)
        )


@STEPS.register("fast_items")
class FastItems(Step):
    """Fast mode: each window becomes one item, its text."""

    name = "fast_items"
    requires = ("windows", "info", "custom_tags")
    produces = ("items", "emitted")
    modes = frozenset({"fast"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        tags = ["mode:fast", *state.custom_tags]
        result: list[list[TextualMemoryItem]] = []
        for ws in state.windows:
            items = []
            for window, entry in zip(ws.windows, ws.reports, strict=True):
                try:
                    sources = window_sources(window, ws.units, ws.scene)
                    item = make_item(
                        memory=window.text,
                        info=state.info,
                        sources=sources,
                        memory_type=memory_type_for(sources),
                        tags=list(tags),
                        id_parts=(ws.scene.type, "fast", ws.digest, window.index),
                    )
                except Exception as exc:  # one window's failure is that window's record
                    record_window_error(entry, exc)
                    continue
                entry.items = 1
                items.append(item)
                state.emitted.append((item, entry))
            result.append(items)
        state.items = result


@STEPS.register("prepare_fine")
class PrepareFine(Step):
    """Fine mode: each window's numbered lines, roles, sources and prompt language."""

    name = "prepare_fine"
    requires = ("windows", "info", "custom_tags")
    produces = ("fine_windows",)
    modes = frozenset({"fine"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        tags = tuple(state.custom_tags)
        fine_windows = []
        for position, ws in enumerate(state.windows):
            for window, entry in zip(ws.windows, ws.reports, strict=True):
                sources = window_sources(window, ws.units, ws.scene)
                lines = [(i + 1, s.line) for i, s in enumerate(window.segments)]
                roles = {i + 1: source.role for i, source in enumerate(sources)}
                entry.language = runtime.language(window.text)
                fine_windows.append(
                    FineWindow(
                        position=position,
                        input=WindowInput(lines, roles, entry.language, tags),
                        sources=sources,
                        memory_text=window.text,
                        id_base=(ws.scene.type, "fine", ws.digest, window.index),
                        report=entry,
                        custom_tags=list(tags),
                        info=state.info,
                    )
                )
        state.fine_windows = fine_windows


@STEPS.register("refine_input")
class RefineInput(Step):
    """Refinement: one window per stored item, rebuilt from its text and sources."""

    name = "refine_input"
    requires = ("stored_items", "type", "custom_tags")
    produces = ("fine_windows",)
    modes = frozenset({"refine"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        fine_windows = []
        for position, item in enumerate(state.stored_items):
            sources = list(item.metadata.sources)
            if not sources:
                raise InputError(f"item {position} ({item.id}) has no sources to refine from")
            for k, source in enumerate(sources):
                check_text(source.content, f"item {position}, source {k}", error=InputError)
            lines = [
                (i + 1, line_prefix(s.role, s.chat_time) + s.content) for i, s in enumerate(sources)
            ]
            roles = {i + 1: s.role for i, s in enumerate(sources)}
            language = runtime.language(item.memory)
            info = {
                **item.metadata.info,
                "user_id": item.metadata.user_id,
                "session_id": item.metadata.session_id,
            }
            kept = [t for t in item.metadata.tags if not t.startswith(("mode:", "fallback:"))]
            tags = list(dict.fromkeys([*kept, *state.custom_tags]))
            entry = WindowReport(sources[0].scene_index, position, language=language)
            state.report.windows.append(entry)
            fine_windows.append(
                FineWindow(
                    position=position,
                    input=WindowInput(lines, roles, language, tuple(tags)),
                    sources=sources,
                    memory_text=item.memory,
                    id_base=(state.type, "refine", item.id),
                    report=entry,
                    custom_tags=tags,
                    info=info,
                )
            )
        state.fine_windows = fine_windows


class LLMPass(Step):
    """A step that runs one plan of LLM calls per window, all windows at once, on threads (sync)
    or tasks (async), within the reader's LLM budget; the call's usage goes into the report.

    Subclasses say which windows take part (:meth:`plans`), what a plan's result does
    (:meth:`apply`) and what stands in when a plan raises (:meth:`failed`).
    """

    modes = LLM_MODES

    @abstractmethod
    def plans(self, state: ReadState, runtime: ReaderRuntime) -> list[tuple[int, Plan]]:
        """(window index, plan) for each window this pass works on."""

    @abstractmethod
    def apply(self, state: ReadState, index: int, result: Any) -> None:
        """Record a plan's result for window ``index``."""

    @abstractmethod
    def failed(self, state: ReadState, index: int, error: Exception) -> Any:
        """What stands in for window ``index`` when its plan raised ``error``."""

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        work = self.plans(state, runtime)
        if not work:
            return
        meter = _call_meter(state, runtime)
        results = run_plans(
            [plan for _, plan in work],
            runtime.llm,
            meter=meter,
            workers=runtime.config.llm_max_concurrency,
            on_error=lambda k, exc: self._unexpected(state, work[k][0], exc),
        )
        self._finish(state, work, results, meter)

    async def arun(self, state: ReadState, runtime: ReaderRuntime) -> None:
        work = self.plans(state, runtime)
        if not work:
            return
        meter = _call_meter(state, runtime)
        results = await arun_plans(
            [plan for _, plan in work],
            runtime.llm,
            meter=meter,
            on_error=lambda k, exc: self._unexpected(state, work[k][0], exc),
        )
        self._finish(state, work, results, meter)

    def _unexpected(self, state: ReadState, index: int, error: Exception) -> Any:
        # Not an LLM failure (those end inside the plan): a bug, or a plugin or SDK raising
        # something untyped. It is this window's result; the other windows go on.
        report = state.fine_windows[index].report
        logger.error(
            "scene %d, window %d: unexpected error in the %s pass",
            report.scene_index,
            report.window_index,
            self.name,
            exc_info=error,
        )
        return self.failed(state, index, error)

    def _finish(
        self,
        state: ReadState,
        work: Sequence[tuple[int, Plan]],
        results: Sequence[Any],
        meter: UsageMeter,
    ) -> None:
        for (index, _), result in zip(work, results, strict=True):
            self.apply(state, index, result)
        state.report.usage = meter.snapshot()


def _call_meter(state: ReadState, runtime: ReaderRuntime) -> UsageMeter:
    """The usage meter of this call (one for all its passes)."""
    if state.meter is None:
        state.meter = runtime.llm.meter.child()
    return state.meter


@STEPS.register("extract")
class Extract(LLMPass):
    """The LLM extracts memories from each window; a failure keeps the raw window."""

    name = "extract"
    requires = ("fine_windows",)
    produces = ("outcomes",)

    def plans(self, state: ReadState, runtime: ReaderRuntime) -> list[tuple[int, Plan]]:
        state.outcomes = [WindowOutcome(None) for _ in state.fine_windows]
        return [(i, extract_plan(fw.input)) for i, fw in enumerate(state.fine_windows)]

    def apply(self, state: ReadState, index: int, result: Any) -> None:
        state.outcomes[index] = result

    def failed(self, state: ReadState, index: int, error: Exception) -> Any:
        return failed_outcome(error)


class _CheckPass(LLMPass):
    """A pass over the windows that have memories; a failure keeps them as they are."""

    requires = ("fine_windows", "outcomes")
    produces = ("outcomes",)

    def apply(self, state: ReadState, index: int, result: Any) -> None:
        setattr(state.outcomes[index], self.name, result)

    def failed(self, state: ReadState, index: int, error: Exception) -> Any:
        return PassStatus("failed", short_error(error))


@STEPS.register("filter")
class Filter(_CheckPass):
    """The hallucination filter: drops memories the LLM marks unsupported by the messages."""

    name = "filter"

    def plans(self, state: ReadState, runtime: ReaderRuntime) -> list[tuple[int, Plan]]:
        return [
            (i, filter_plan(fw.input, outcome))
            for i, (fw, outcome) in enumerate(zip(state.fine_windows, state.outcomes, strict=True))
            if outcome.memories
        ]


@STEPS.register("rewrite")
class Rewrite(_CheckPass):
    """The rewrite: names for pronouns, absolute dates (``user_only``: the user's messages are
    the only evidence)."""

    name = "rewrite"

    def __init__(self, user_only: bool = False) -> None:
        self.user_only = user_only

    def plans(self, state: ReadState, runtime: ReaderRuntime) -> list[tuple[int, Plan]]:
        return [
            (i, rewrite_plan(fw.input, outcome, user_only=self.user_only))
            for i, (fw, outcome) in enumerate(zip(state.fine_windows, state.outcomes, strict=True))
            if outcome.memories
        ]


@STEPS.register("fine_items")
class FineItems(Step):
    """Fine mode's items from each window's outcome (fallback items for failed windows)."""

    name = "fine_items"
    requires = ("fine_windows", "outcomes")
    produces = ("items", "emitted")
    modes = LLM_MODES

    def __init__(self, keep_empty: bool = True) -> None:
        self.keep_empty = keep_empty

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        size = len(state.stored_items) if state.mode == "refine" else len(state.windows)
        result: list[list[TextualMemoryItem]] = [[] for _ in range(size)]
        for fw, outcome in zip(state.fine_windows, state.outcomes, strict=True):
            items = self._items(fw, outcome)
            result[fw.position].extend(items)
            state.emitted.extend((item, fw.report) for item in items)
        state.items = result
        fallbacks = sum(1 for fw in state.fine_windows if fw.report.status == "fallback")
        if fallbacks:
            logger.warning(
                "%d of %d windows fell back to raw items", fallbacks, len(state.fine_windows)
            )

    def _items(self, fw: FineWindow, outcome: WindowOutcome) -> list[TextualMemoryItem]:
        """A window's items; whatever fails falls back to the raw window, and if even that
        fails, the window is an error record."""
        try:
            return self._build(fw, outcome)
        except Exception as exc:  # one window's failure is that window's result
            logger.exception(
                "scene %d, window %d: building items failed, keeping the raw window",
                fw.report.scene_index,
                fw.report.window_index,
            )
            fallback = failed_outcome(exc)
        try:
            return self._build(fw, fallback)
        except Exception as exc:  # not even the raw window: an error record, never a raise
            record_window_error(fw.report, exc)
            return []

    def _build(self, fw: FineWindow, outcome: WindowOutcome) -> list[TextualMemoryItem]:
        return fine_window_items(
            outcome,
            fw.sources,
            memory_text=fw.memory_text,
            info=fw.info,
            custom_tags=fw.custom_tags,
            id_base=fw.id_base,
            keep_empty=self.keep_empty,
            report=fw.report,
        )


@STEPS.register("embed")
class Embed(Step):
    """Every item's memory embedded, in batched, cached calls. A batch that fails leaves its
    items without a vector, tagged ``embedding:failed``, and says so in their windows' reports;
    the other batches keep theirs."""

    name = "embed"
    requires = ("emitted",)
    produces = ("items",)
    modes = frozenset(MODES)

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        made = state.emitted
        if not made or not runtime.embeds:
            return
        embedder = runtime.embedder
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


def record_window_error(entry: WindowReport, error: BaseException) -> None:
    """Mark a window whose items could not be made at all (logged with the traceback)."""
    logger.error(
        "scene %d, window %d: no item could be made: %s",
        entry.scene_index,
        entry.window_index,
        short_error(error),
        exc_info=error,
    )
    entry.status, entry.error, entry.items = "error", short_error(error), 0


def default_steps(
    *, hallucination_filter: bool = True, rewrite: str = "all", empty_window: str = "fallback"
) -> list[Step]:
    """The steps of the simple reader, for these fine-mode settings."""
    steps: list[Step] = [
        Normalize(),
        Parse(),
        WindowStep(),
        FastItems(),
        PrepareFine(),
        RefineInput(),
        Extract(),
    ]
    if hallucination_filter:
        steps.append(Filter())
    if rewrite != "off":
        steps.append(Rewrite(user_only=rewrite == "user_only"))
    steps += [FineItems(keep_empty=empty_window == "fallback"), Embed()]
    return steps
