"""Per-window steps, and how consecutive ones run: chained per window, all windows at once.

Fine mode's steps from preparing a window to building its items (prepare, extract, filter,
rewrite, items) each work on one window at a time, independently of the others. When such
steps follow each other in a pipeline, each window goes through all of them as soon as it can,
as one plan of LLM calls: window 1's filter starts while window 9 is still being extracted, and
its items are built while other windows wait for the model. So the pipeline keeps its named,
checked steps without a barrier between them, and the LLM budget stays full. A step of any
other kind between two per-window steps ends the chain there (the pipeline then runs the chain,
the step, and the next chain in order).

Sync calls run the chains on threads and async calls as tasks, within the reader's LLM budget.
One window's failure is that window's result: an exception inside one step's work on one window
(a bug, a plugin or SDK raising something untyped) is handed to that step's :meth:`failed` for
that window, and the window goes on to the next step. The call's deadline is not one window's:
it is checked before each window enters each step and before each LLM request, and
:class:`~memreader.errors.DeadlineExceeded` stops every window of the call.

Each step's entry in ``report.steps`` is its span: from the moment the first window entered it
to the moment the last one left it (spans of chained steps overlap).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections.abc import Generator, Mapping, Sequence
from typing import Any

from memreader.errors import DeadlineExceeded, LLMRequiredError
from memreader.extraction import LLMRequest
from memreader.extraction.driver import arun_plans, run_plans
from memreader.llms import LLMError, LLMResponse, LLMRouter, Usage, UsageMeter
from memreader.pipeline.step import Step
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState

__all__ = [
    "PER_WINDOW",
    "PerWindowStep",
    "WindowWork",
    "arun_chain",
    "call_router",
    "count_pass",
    "run_chain",
]

logger = logging.getLogger(__name__)

#: One step's work on one window: may yield LLM requests (and receive their answers).
WindowWork = Generator[LLMRequest, LLMResponse, None]


class _PerWindowChains:
    """The pipeline's group of consecutive per-window steps: one chain per window (the
    :class:`~memreader.pipeline.step.StepGroup` that :class:`PerWindowStep` runs with)."""

    def run(
        self, steps: Sequence[Step], state: ReadState, runtime: ReaderRuntime
    ) -> Mapping[str, float]:
        """Run ``steps`` chained per window (:func:`run_chain`)."""
        return run_chain(_per_window(steps), state, runtime)

    async def arun(
        self, steps: Sequence[Step], state: ReadState, runtime: ReaderRuntime
    ) -> Mapping[str, float]:
        """The async twin of :meth:`run` (:func:`arun_chain`)."""
        return await arun_chain(_per_window(steps), state, runtime)


#: How consecutive per-window steps run in a pipeline: chained per window.
PER_WINDOW = _PerWindowChains()


def _per_window(steps: Sequence[Step]) -> list[PerWindowStep]:
    return [s for s in steps if isinstance(s, PerWindowStep)]


class PerWindowStep(Step[ReadState, ReaderRuntime]):
    """A step whose work is independent per window (see the module docstring).

    Subclasses implement :meth:`window` (the work on one window, a generator that may yield
    LLM requests) and :meth:`failed` (what stands in when that work raises), and may implement
    :meth:`begin` and :meth:`end` (once per call, before the first window and after the last).
    The windows are the call's ``fine_windows``; one whose report says ``status="error"`` (not
    even its raw text can be made into an item) leaves the chain.
    """

    runs_with = PER_WINDOW

    def begin(self, state: ReadState, runtime: ReaderRuntime) -> None:
        """Once per call, before any window."""

    def end(self, state: ReadState, runtime: ReaderRuntime) -> None:
        """Once per call, after every window."""

    def window(self, state: ReadState, runtime: ReaderRuntime, index: int) -> WindowWork:
        """The work on window ``index``."""
        raise NotImplementedError(f"step {self.name!r} has no window()")
        yield  # pragma: no cover - makes this a generator

    def failed(self, state: ReadState, index: int, error: Exception) -> None:
        """Record what stands in for window ``index`` when its work raised ``error``."""
        raise NotImplementedError(f"step {self.name!r} has no failed()")

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        """This step alone, over every window (see :func:`run_chain`)."""
        run_chain([self], state, runtime)

    async def arun(self, state: ReadState, runtime: ReaderRuntime) -> None:
        """The async twin of :meth:`run`."""
        await arun_chain([self], state, runtime)


class _Spans:
    """When each step of a chain was first entered and last left."""

    def __init__(self, steps: Sequence[PerWindowStep]) -> None:
        self.first = {s.name: float("inf") for s in steps}
        self.last = {s.name: float("-inf") for s in steps}

    def enter(self, name: str) -> None:
        now = time.perf_counter()
        if now < self.first[name]:
            self.first[name] = now

    def leave(self, name: str) -> None:
        now = time.perf_counter()
        if now > self.last[name]:
            self.last[name] = now

    def seconds(self, name: str) -> float:
        return max(0.0, self.last[name] - self.first[name])


def _chains(
    steps: Sequence[PerWindowStep], state: ReadState, runtime: ReaderRuntime, spans: _Spans
) -> list[Generator[LLMRequest, LLMResponse, None]]:
    for s in steps:
        s.begin(state, runtime)
    size = len(state.fine_windows)
    profiles = runtime.config.fine.pass_profiles  # the profile each pass picked, if any

    def chain(index: int) -> Generator[LLMRequest, LLMResponse, None]:
        for s in steps:
            if state.fine_windows[index].report.status == "error":
                return  # not even the raw window can be made into an item: recorded, done
            where = f"window {index} of step {s.name!r}"
            state.check_deadline(f"before {where}")
            spans.enter(s.name)
            try:
                work = _counted(s.window(state, runtime, index), state, s.name, where)
                yield from _with_profile(work, profiles.get(s.name))
            except DeadlineExceeded:
                raise  # the whole call stops: not this window's fallback
            except Exception as exc:  # one window's failure is that window's result
                logger.error("window %d: unexpected error in step %r", index, s.name, exc_info=exc)
                s.failed(state, index, exc)
            spans.leave(s.name)

    return [chain(i) for i in range(size)]


def _with_profile(work: WindowWork, profile: str | None) -> WindowWork:
    """``work``, its LLM requests answered by the LLM profile ``profile`` (``None``: as they
    are, by their slot)."""
    if profile is None:
        return (yield from work)
    try:
        request = next(work)
    except StopIteration:
        return
    while True:
        try:
            response = yield dataclasses.replace(request, profile=profile)
        except Exception as exc:  # handed on to the work, which knows what it means
            try:
                request = work.throw(exc)
            except StopIteration:
                return
        else:
            try:
                request = work.send(response)
            except StopIteration:
                return


# Pass stats are updated from the threads that run the windows.
_STATS_LOCK = threading.Lock()


def _counted(work: WindowWork, state: ReadState, name: str, where: str) -> WindowWork:
    """``work``, with its LLM requests, their attempts and tokens, and their failures counted
    in ``report.passes[name]`` (a step that asks nothing leaves no entry); the call's deadline
    is checked before each request is sent."""
    try:
        request = next(work)
    except StopIteration:
        return
    while True:
        state.check_deadline(f"before an LLM call in {where}")
        try:
            response = yield request
        except Exception as exc:  # counted, then handed to the work, which knows what it means
            if isinstance(exc, LLMError):
                _count(state, name, exc.usage, exc.attempts, True)
            else:
                _count(state, name, None, 1, True)
            try:
                request = work.throw(exc)
            except StopIteration:
                return
        else:
            _count(state, name, response.usage, response.attempts, False)
            try:
                request = work.send(response)
            except StopIteration:
                return


def _count(state: ReadState, name: str, usage: Usage | None, attempts: int, failed: bool) -> None:
    with _STATS_LOCK:
        stats = state.report.pass_stats(name)
        stats.calls += 1
        stats.attempts += attempts if attempts > 0 else 1
        stats.failed_calls += int(failed)
        if usage is not None:
            stats.prompt_tokens += usage.prompt_tokens
            stats.completion_tokens += usage.completion_tokens


def count_pass(
    state: ReadState, name: str, *, windows: int = 0, items: int = 0, failed: int = 0
) -> None:
    """Add to pass ``name``'s window, item and failure counts (thread-safe)."""
    with _STATS_LOCK:
        stats = state.report.pass_stats(name)
        stats.windows += windows
        stats.items += items
        stats.failed_windows += failed


def _finish(
    steps: Sequence[PerWindowStep], state: ReadState, runtime: ReaderRuntime, spans: _Spans
) -> None:
    for s in steps:
        s.end(state, runtime)
    if state.meter is not None:
        state.report.usage = state.meter.snapshot()


def call_router(
    state: ReadState, runtime: ReaderRuntime
) -> tuple[LLMRouter | None, UsageMeter | None]:
    """The reader's LLM router and this call's usage meter, or none when no LLM is set (a chain
    that then asks for one fails its windows with :class:`LLMRequiredError`)."""
    try:
        router = runtime.llm
    except LLMRequiredError:
        return None, None
    if state.meter is None:
        state.meter = router.meter.child()
    return router, state.meter


def _backstop(state: ReadState, steps: Sequence[PerWindowStep]) -> Any:
    def on_error(index: int, error: Exception) -> None:
        if isinstance(error, DeadlineExceeded):
            raise error  # the call's deadline stops every window, not just this one
        # Only the chain's own code could get here (each step's work is guarded): record it on
        # the window's last step rather than lose the other windows.
        logger.error("window %d: the chain failed", index, exc_info=error)
        steps[-1].failed(state, index, error)

    return on_error


def run_chain(
    steps: Sequence[PerWindowStep], state: ReadState, runtime: ReaderRuntime
) -> dict[str, float]:
    """Run ``steps`` chained per window over every window, on threads; returns each step's
    span in seconds."""
    spans = _Spans(steps)
    chains = _chains(steps, state, runtime, spans)
    router, meter = call_router(state, runtime)
    run_plans(
        chains,
        router,
        meter=meter,
        workers=runtime.config.llm_max_concurrency,
        on_error=_backstop(state, steps),
        deadline=state.deadline,
    )
    _finish(steps, state, runtime, spans)
    return {s.name: spans.seconds(s.name) for s in steps}


async def arun_chain(
    steps: Sequence[PerWindowStep], state: ReadState, runtime: ReaderRuntime
) -> dict[str, float]:
    """The async twin of :func:`run_chain`: one task per window."""
    spans = _Spans(steps)
    chains = _chains(steps, state, runtime, spans)
    router, meter = call_router(state, runtime)
    await arun_plans(
        chains, router, meter=meter, on_error=_backstop(state, steps), deadline=state.deadline
    )
    _finish(steps, state, runtime, spans)
    return {s.name: spans.seconds(s.name) for s in steps}
