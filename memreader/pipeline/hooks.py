"""Step interceptors: callbacks around every step of a read, beside the LLM hooks.

``before_step`` gets a :class:`StepEvent` before a step runs, ``after_step`` after it ends, and
``on_step_error`` when it raises (the error then propagates as usual). Each event carries the
step's name, the mode, the seconds it took and the sizes of what the call has made so far. A
callback that raises is logged and ignored: observing a read never breaks it. A callback may be
``async def``: in async calls it runs on the event loop and has ended before the call returns
or raises (a cancelled call included); in sync calls it is skipped with a warning
(:mod:`memreader.calls.observers`).

>>> seen = []
>>> hooks = StepHooks(after_step=[lambda e: seen.append((e.step, e.counts["windows"]))])
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from memreader.calls.observers import call_observer
from memreader.modes import Mode

__all__ = ["StepEvent", "StepHook", "StepHooks"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class StepEvent:
    """What an interceptor is told about one step.

    Attributes:
        step: the step's name.
        mode: the call's mode (``fast``, ``fine`` or ``refine``).
        elapsed_s: seconds the step took (0 in ``before_step``).
        counts: ``scenes``, ``windows`` and ``items`` made so far (after the step, in
            ``after_step`` and ``on_step_error``).
        error: the exception, in ``on_step_error``.
    """

    step: str
    mode: Mode
    elapsed_s: float = 0.0
    counts: Mapping[str, int] = field(default_factory=dict)
    error: BaseException | None = None


StepHook = Callable[[StepEvent], object]


@dataclass
class StepHooks:
    """Lists of step interceptors; append to them at any time."""

    before_step: list[StepHook] = field(default_factory=list)
    after_step: list[StepHook] = field(default_factory=list)
    on_step_error: list[StepHook] = field(default_factory=list)

    def emit(self, which: str, event: StepEvent) -> None:
        """Call every callback of ``which`` (``before_step``, ...) with ``event``."""
        for callback in list(getattr(self, which)):
            # An interceptor never breaks a read: it is logged; an async one is scheduled.
            call_observer(callback, event, f"{which} interceptor (step {event.step!r})")
