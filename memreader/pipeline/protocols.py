"""What the engine asks of the state and the runtime it carries through a pipeline.

The engine knows no built-in field: a pipeline runs over any state that can say its mode, check
and cancel its deadline, count what it has made, get and set values by name and record how long
each step took, and over any runtime that holds the step interceptors. The built-in steps' state
and runtime (:class:`memreader.steps.state.ReadState`,
:class:`memreader.steps.runtime.ReaderRuntime`) are such a pair.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from memreader.modes import Mode
from memreader.pipeline.hooks import StepHooks

__all__ = ["StepRuntime", "StepState"]


class StepState(Protocol):
    """The state of one call, as the run loop uses it."""

    @property
    def mode(self) -> Mode:
        """The call's mode: which of the pipeline's steps run."""

    def check_deadline(self, where: str) -> None:
        """Return while the call may go on; raise ``DeadlineExceeded`` otherwise."""

    def cancel(self) -> None:
        """Stop the call's work at its next deadline check."""

    def counts(self) -> Mapping[str, int]:
        """Sizes of what has been made, for the interceptors' events."""

    def get(self, name: str) -> Any:
        """The value a step produced under ``name``."""

    def set(self, name: str, value: Any) -> None:
        """Set the value ``name`` (a step's product)."""

    def record_step(self, name: str, seconds: float) -> None:
        """Add ``seconds`` to the time step ``name`` took in this call."""


class StepRuntime(Protocol):
    """The parts of a reader that outlive a call, as the run loop uses them."""

    @property
    def step_hooks(self) -> StepHooks:
        """The callbacks around every step."""
