"""Fine mode: each window prepared, the LLM passes (extract, filter, rewrite), and the items.

============  ===========================  ==============  ============
step          requires                     produces        modes
============  ===========================  ==============  ============
prepare_fine  windows, info, custom_tags   fine_windows    fine
extract       fine_windows                 outcomes        fine, refine
filter        fine_windows, outcomes       outcomes        fine, refine
rewrite       fine_windows, outcomes       outcomes        fine, refine
fine_items    fine_windows, outcomes       items, emitted  fine, refine
============  ===========================  ==============  ============

Each works on one window at a time, so consecutive ones run chained per window, all windows at
once, within the reader's LLM budget (:mod:`memreader.steps.chain`); one window's failure is
that window's result (a fallback, or a failed pass that keeps the memories). ``extract``,
``filter`` and ``rewrite`` are fine passes (:mod:`memreader.extraction.passes`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

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
from memreader.extraction.fine import PassPlan
from memreader.extraction.language import Language
from memreader.items import TextualMemoryItem
from memreader.modes import LLM_MODES
from memreader.steps.categorize import category_menu
from memreader.steps.chain import PerWindowStep, WindowWork, count_pass
from memreader.steps.items import fine_window_items
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import FineWindow, ReadState

__all__ = [
    "CheckPass",
    "Extract",
    "Filter",
    "FineItems",
    "PrepareFine",
    "Rewrite",
    "extraction_slot",
]

logger = logging.getLogger(__name__)


@STEPS.register("prepare_fine")
class PrepareFine(PerWindowStep):
    """Fine mode: each window's numbered lines, roles, sources and prompt language (prepared
    per window, chained with the LLM passes that follow)."""

    name = "prepare_fine"
    requires = ("windows", "info", "custom_tags")
    produces = ("fine_windows",)
    modes = frozenset({"fine"})

    def begin(self, state: ReadState, runtime: ReaderRuntime) -> None:
        tags = list(state.custom_tags)
        fine_windows = []
        for position, ws in enumerate(state.windows):
            for window, entry in zip(ws.windows, ws.reports, strict=True):
                fine_windows.append(
                    FineWindow(
                        position=position,
                        memory_text=window.text,
                        id_base=(ws.scene.type, "fine", ws.digest, window.index),
                        report=entry,
                        custom_tags=tags,
                        info=state.info,
                        origin=(ws, window),
                    )
                )
        state.fine_windows = fine_windows

    def window(self, state: ReadState, runtime: ReaderRuntime, index: int) -> WindowWork:
        fw = state.fine_windows[index]
        assert fw.origin is not None  # begin() set it on every window it made
        ws, window = fw.origin
        fw.sources = ws.sources(window)
        lines = [(i + 1, s.line) for i, s in enumerate(window.segments)]
        roles = {i + 1: source.role for i, source in enumerate(fw.sources)}
        fw.report.language = runtime.language(window.text)
        menu = category_menu(runtime.config.categories)
        slot = extraction_slot(runtime, ws.scene.type)
        fw.input = WindowInput(
            lines, roles, fw.report.language, tuple(fw.custom_tags), menu, slot=slot
        )
        return
        yield  # a generator that asks no LLM

    def failed(self, state: ReadState, index: int, error: Exception) -> None:
        # Without its prepared lines the window cannot be asked about: it falls back whole.
        state.fine_windows[index].report.record_error(error)


def extraction_slot(runtime: ReaderRuntime, scene_type: str) -> str:
    """The LLM slot that extracts from a window of a ``scene_type`` scene: a document's goes to
    ``document_parser_llm`` when that slot is set (as MemOS does), everything else to ``llm``
    (an unset ``document_parser_llm`` does not fall back to ``general_llm`` here: documents
    stay with the extraction model)."""
    if scene_type == "doc" and runtime.config.document_parser_llm is not None:
        return "document_parser_llm"
    return "llm"


@STEPS.register("extract")
class Extract(PerWindowStep):
    """The LLM extracts memories from each window; a failure keeps the raw window. ``prompts``
    replaces the system prompt (the strategy reader's attributes each memory to its speaker)."""

    name = "extract"
    requires = ("fine_windows",)
    produces = ("outcomes",)
    modes = LLM_MODES

    def __init__(self, prompts: Mapping[Language, str] | None = None) -> None:
        self.prompts = prompts

    def begin(self, state: ReadState, runtime: ReaderRuntime) -> None:
        state.outcomes = [WindowOutcome(None) for _ in state.fine_windows]

    def window(self, state: ReadState, runtime: ReaderRuntime, index: int) -> WindowWork:
        window = state.fine_windows[index].input
        state.outcomes[index] = yield from extract_plan(window, self.prompts)

    def failed(self, state: ReadState, index: int, error: Exception) -> None:
        state.outcomes[index] = failed_outcome(error)


class CheckPass(PerWindowStep):
    """A pass over the windows that have memories, which records its status in the window's
    outcome (:meth:`record`); a failure keeps the memories as they are."""

    requires = ("fine_windows", "outcomes")
    produces = ("outcomes",)
    modes = LLM_MODES

    def window(self, state: ReadState, runtime: ReaderRuntime, index: int) -> WindowWork:
        outcome = state.outcomes[index]
        if outcome.memories:
            status = yield from self.plan(state.fine_windows[index], outcome, runtime)
            self.record(outcome, status)

    def plan(self, fw: FineWindow, outcome: WindowOutcome, runtime: ReaderRuntime) -> PassPlan:
        """The pass's plan for one window that has memories."""
        raise NotImplementedError

    def record(self, outcome: WindowOutcome, status: PassStatus) -> None:
        """Put the pass's status for one window in that window's outcome."""
        raise NotImplementedError

    def failed(self, state: ReadState, index: int, error: Exception) -> None:
        self.record(state.outcomes[index], PassStatus("failed", short_error(error)))


@STEPS.register("filter")
class Filter(CheckPass):
    """The hallucination filter: drops memories the LLM marks unsupported by the messages they
    cite (:func:`~memreader.extraction.fine.evidence_lines`)."""

    name = "filter"

    def plan(self, fw: FineWindow, outcome: WindowOutcome, runtime: ReaderRuntime) -> PassPlan:
        return filter_plan(fw.input, outcome)

    def record(self, outcome: WindowOutcome, status: PassStatus) -> None:
        outcome.filter = status


@STEPS.register("rewrite")
class Rewrite(CheckPass):
    """The rewrite: names for pronouns, absolute dates (``user_only``: the user's messages are
    the only evidence; ``None``, the default: as the reader's ``fine.rewrite`` says)."""

    name = "rewrite"

    def __init__(self, user_only: bool | None = None) -> None:
        self.user_only = user_only

    def plan(self, fw: FineWindow, outcome: WindowOutcome, runtime: ReaderRuntime) -> PassPlan:
        user_only = self.user_only
        if user_only is None:
            user_only = runtime.config.fine.rewrite == "user_only"
        return rewrite_plan(fw.input, outcome, user_only=user_only)

    def record(self, outcome: WindowOutcome, status: PassStatus) -> None:
        outcome.rewrite = status


def _count_outcomes(state: ReadState) -> None:
    """What extract, filter and rewrite made of each window, in ``report.passes``."""
    for outcome in state.outcomes:
        memories = len(outcome.memories or ())
        count_pass(
            state,
            "extract",
            windows=1,
            items=memories if outcome.fallback_reason is None else 0,
            failed=int(outcome.fallback_reason is not None),
        )
        for name, status in (("filter", outcome.filter), ("rewrite", outcome.rewrite)):
            if status.status != "skipped" and name in state.report.passes:
                count_pass(state, name, windows=1, failed=int(status.status == "failed"))


@STEPS.register("fine_items")
class FineItems(PerWindowStep):
    """Fine mode's items from each window's outcome (fallback items for failed windows), built
    as each window is done, emitted in window order."""

    name = "fine_items"
    requires = ("fine_windows", "outcomes")
    produces = ("items", "emitted")
    modes = LLM_MODES

    def __init__(self, keep_empty: bool = True) -> None:
        self.keep_empty = keep_empty

    def window(self, state: ReadState, runtime: ReaderRuntime, index: int) -> WindowWork:
        fw = state.fine_windows[index]
        fw.built = self._items(fw, state.outcomes[index])
        return
        yield  # a generator that asks no LLM

    def failed(self, state: ReadState, index: int, error: Exception) -> None:
        state.fine_windows[index].report.record_error(error)

    def end(self, state: ReadState, runtime: ReaderRuntime) -> None:
        size = len(state.stored_items) if state.mode == "refine" else len(state.windows)
        result: list[list[TextualMemoryItem]] = [[] for _ in range(size)]
        for fw in state.fine_windows:
            for item in fw.built:
                item.metadata.refined_from = fw.refined_from
            result[fw.position].extend(fw.built)
            state.emitted.extend((item, fw.report) for item in fw.built)
        state.items = result
        _count_outcomes(state)
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
            fw.report.record_error(exc)
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
