"""What every reader is: a config, a runtime (windower, embedder, LLM router, hooks) and a
pipeline of named steps; and the reader registry.

A reader class names its config class and its default pipeline; everything else, the whole
public API (sync, async, refinement, closing), is here and runs the pipeline.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, ClassVar

from memreader.calls.deadlines import Deadline, checked_deadline
from memreader.config import BaseReaderConfig
from memreader.errors import (
    InputError,
    InternalError,
    MemReaderError,
    UnsupportedModeError,
)
from memreader.extraction import short_error
from memreader.items import TextualMemoryItem
from memreader.llms.hooks import LLMHooks
from memreader.modes import READ_MODES, ReadMode
from memreader.pipeline import Pipeline, StepHooks
from memreader.registry import Registry
from memreader.scenes.scene import validate_info
from memreader.scenes.text_checks import check_text
from memreader.steps.report import ReadReport
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.spec import apply_spec
from memreader.steps.state import ReadState

__all__ = ["READERS", "BaseMemReader", "register_reader"]

#: Reader classes by backend name (``MemReaderConfigFactory.backend``).
READERS: Registry[type[BaseMemReader]] = Registry("reader backend")
#: Register a reader class under a name: ``@register_reader("my_reader")``.
register_reader = READERS.register

SCENE_TYPES = ("chat", "doc")


class BaseMemReader(ABC):
    """A reader: ``get_memory`` and friends run :attr:`pipeline` over the call's input.

    Args:
        config: the reader's settings (default: the config class's defaults).
        embedder: an embedder to use instead of building the configured one.
        hooks: callbacks around every LLM call (also reachable as ``reader.hooks``).
        step_hooks: callbacks around every step (``reader.step_hooks``).

    ``reader.pipeline`` is this reader's own copy of its steps: change it with
    ``insert_before``, ``insert_after``, ``replace`` and ``remove`` (``print(reader.pipeline)``
    lists them); the config's ``pipeline`` section is applied when the reader is built.
    """

    config_class: ClassVar[type[BaseReaderConfig]]

    def __init__(
        self,
        config: BaseReaderConfig | None = None,
        *,
        embedder: Any = None,
        hooks: LLMHooks | None = None,
        step_hooks: StepHooks | None = None,
    ) -> None:
        self.config = config if config is not None else self.config_class()
        self.runtime = ReaderRuntime(
            self.config, embedder=embedder, hooks=hooks, step_hooks=step_hooks
        )
        pipeline = self.default_pipeline(self.config)
        apply_spec(pipeline, self.config.pipeline)
        self.pipeline = pipeline

    @classmethod
    @abstractmethod
    def default_pipeline(cls, config: BaseReaderConfig) -> Pipeline:
        """The steps this reader runs for ``config``, before the config's ``pipeline`` changes."""

    # -- shared parts ---------------------------------------------------------------------------

    @property
    def hooks(self) -> LLMHooks:
        """Callbacks around every LLM call: append to ``before_call``, ``after_call``,
        ``on_error``."""
        return self.runtime.hooks

    @property
    def llm_interceptors(self) -> list[object]:
        """Interceptors that act on every LLM call (change, block or reject it): append
        :class:`~memreader.llms.interceptors.LLMInterceptor` objects; they run in order, before
        those the config's ``llm_interceptors`` names."""
        return self.runtime.hooks.interceptors

    @property
    def step_hooks(self) -> StepHooks:
        """Callbacks around every step: append to ``before_step``, ``after_step``,
        ``on_step_error``."""
        return self.runtime.step_hooks

    @property
    def embedder(self) -> Any:
        """The embedder (built on first use)."""
        return self.runtime.embedder

    @property
    def llm(self) -> Any:
        """The LLM router of the reader's slots (built on first use)."""
        return self.runtime.llm

    # -- the API --------------------------------------------------------------------------------

    def get_memory(
        self,
        scene_data: Any,
        type: str = "chat",
        info: Mapping[str, Any] | None = None,
        mode: ReadMode = "fast",
        *,
        custom_tags: Sequence[str] | None = None,
        report: ReadReport | None = None,
        deadline: Deadline | None = None,
    ) -> list[list[TextualMemoryItem]]:
        """Turn ``scene_data`` into memory items: one inner list per scene, in input order.

        ``info`` must hold string ``user_id`` and ``session_id``; its other keys are kept in
        each item's ``metadata.info``. Items are deterministic: the same input and config give
        the same ids in the same order. Pass ``report=ReadReport()`` to get per-window status,
        LLM usage and the time of each step.

        ``deadline`` (a :class:`~memreader.calls.deadlines.Deadline`) stops the call once it passes
        or is cancelled: it is checked between steps, between windows, before each LLM call
        and between embedding batches, and the call raises
        :class:`~memreader.errors.DeadlineExceeded` (never one window's fallback).
        """
        with typed_errors("get_memory"):
            state = self._state(scene_data, type, info, mode, custom_tags, report)
            state.deadline = checked_deadline(deadline)
            self.pipeline.run(state, self.runtime)
            return state.items

    async def aget_memory(
        self,
        scene_data: Any,
        type: str = "chat",
        info: Mapping[str, Any] | None = None,
        mode: ReadMode = "fast",
        *,
        custom_tags: Sequence[str] | None = None,
        report: ReadReport | None = None,
        deadline: Deadline | None = None,
    ) -> list[list[TextualMemoryItem]]:
        """The async twin of :meth:`get_memory` (same items, same ids). Cancelled, it stops
        its work at the next deadline check and returns once it has stopped."""
        with typed_errors("aget_memory"):
            state = self._state(scene_data, type, info, mode, custom_tags, report)
            # A token of this call's own: cancelling the call cancels it, not the caller's.
            state.deadline = Deadline.within(checked_deadline(deadline), what="aget_memory")
            await self.pipeline.arun(state, self.runtime)
            return state.items

    def fine_transfer_simple_mem(
        self,
        items: Sequence[TextualMemoryItem | Mapping[str, Any]],
        type: str = "chat",
        *,
        custom_tags: Sequence[str] | None = None,
        report: ReadReport | None = None,
        deadline: Deadline | None = None,
    ) -> list[list[TextualMemoryItem]]:
        """Refine stored fast items into fine items: one inner list per input item.

        Each item's text and sources are sent through fine extraction; the new items keep the
        original user, session, info and provenance (the sources they cite). Idempotent: the
        same items give the same ids. ``deadline`` stops it as in :meth:`get_memory`.
        """
        with typed_errors("fine_transfer_simple_mem"):
            state = self._refine_state(items, type, custom_tags, report)
            state.deadline = checked_deadline(deadline)
            self.pipeline.run(state, self.runtime)
            return state.items

    async def afine_transfer_simple_mem(
        self,
        items: Sequence[TextualMemoryItem | Mapping[str, Any]],
        type: str = "chat",
        *,
        custom_tags: Sequence[str] | None = None,
        report: ReadReport | None = None,
        deadline: Deadline | None = None,
    ) -> list[list[TextualMemoryItem]]:
        """The async twin of :meth:`fine_transfer_simple_mem`."""
        with typed_errors("afine_transfer_simple_mem"):
            state = self._refine_state(items, type, custom_tags, report)
            state.deadline = Deadline.within(
                checked_deadline(deadline), what="afine_transfer_simple_mem"
            )
            await self.pipeline.arun(state, self.runtime)
            return state.items

    def close(self) -> None:
        """Close the LLM clients' connections."""
        self.runtime.close()

    async def aclose(self) -> None:
        """Close the LLM clients' connections, the running loop's async ones included."""
        await self.runtime.aclose()

    # -- call state -----------------------------------------------------------------------------

    def _state(
        self,
        scene_data: Any,
        type: str,
        info: Mapping[str, Any] | None,
        mode: ReadMode,
        custom_tags: Sequence[str] | None,
        report: ReadReport | None,
    ) -> ReadState:
        if mode not in READ_MODES:
            raise UnsupportedModeError(f"unknown mode {mode!r}; expected one of {READ_MODES}")
        _check_type(type)
        checked = validate_info(info)
        tags = _check_tags(custom_tags)
        if mode == "fine":
            _ = self.runtime.llm  # fail before any work when no LLM is configured
        report = report if report is not None else ReadReport()
        report.mode = mode
        return ReadState(
            mode=mode,
            type=type,
            info=checked,
            custom_tags=tags,
            report=report,
            scene_data=scene_data,
        )

    def _refine_state(
        self,
        items: Sequence[TextualMemoryItem | Mapping[str, Any]],
        type: str,
        custom_tags: Sequence[str] | None,
        report: ReadReport | None,
    ) -> ReadState:
        _check_type(type)
        tags = _check_tags(custom_tags)
        _ = self.runtime.llm  # fail before any work when no LLM is configured
        if isinstance(items, str | bytes) or not isinstance(items, Sequence):
            raise InputError(f"items must be a list of memory items, got {_type_name(items)}")
        report = report if report is not None else ReadReport()
        report.mode = "refine"
        return ReadState(
            mode="refine",
            type=type,
            custom_tags=tags,
            report=report,
            stored_items=[_as_item(raw, i) for i, raw in enumerate(items)],
        )


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


def _as_item(
    raw: TextualMemoryItem | Mapping[str, Any], position: int
) -> TextualMemoryItem | InputError:
    """The stored item ``raw``, or the error that says why it is not one (that item's record:
    the other items are refined all the same)."""
    if isinstance(raw, TextualMemoryItem):
        return raw
    dump = getattr(raw, "model_dump", None)
    if not isinstance(raw, Mapping) and callable(dump):  # a MemOS item object: read its dict
        raw = dump(mode="json")
    if isinstance(raw, Mapping):
        try:
            return TextualMemoryItem.from_dict(dict(raw))
        except (ValueError, TypeError, RecursionError) as exc:
            return InputError(f"item {position} is not a valid memory item: {short_error(exc)}")
    return InputError(
        f"item {position} must be a TextualMemoryItem or its dict, got {_type_name(raw)}"
    )


def _type_name(value: object) -> str:
    return type(value).__name__


def _check_type(type: str) -> None:
    if type not in SCENE_TYPES:
        raise UnsupportedModeError(f"unknown input type {type!r}; expected one of {SCENE_TYPES}")


def _check_tags(custom_tags: Sequence[str] | None) -> list[str]:
    if custom_tags is None:
        return []
    if isinstance(custom_tags, str) or not all(isinstance(t, str) for t in custom_tags):
        raise InputError("custom_tags must be a list of strings")
    return [check_text(t, f"custom_tags[{i}]", error=InputError) for i, t in enumerate(custom_tags)]
