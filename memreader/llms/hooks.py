"""Observability hooks: callbacks around every request, without patching clients.

``before_call`` runs before each request (each attempt), ``on_error`` after each failed attempt
(transport error, or an answer that had to be re-asked) and ``after_call`` once, when a call
succeeds. Callbacks run synchronously in the calling thread (or on the event loop for
``acomplete``), so keep them quick. A callback may be ``async def``: in async calls it is
scheduled on the event loop, in sync calls skipped with a warning
(:mod:`memreader.calls.observers`). A callback that raises is logged and ignored: hooks can never
break a call.

``interceptors`` is where the interceptors that *act* on a call are registered (they can change,
block or reject it: :mod:`memreader.llms.interceptors`); the reader exposes the list as
``reader.llm_interceptors``.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from memreader.calls.observers import call_observer
from memreader.llms.usage import Usage

if TYPE_CHECKING:
    from memreader.llms.types import LLMResponse

__all__ = ["AfterCallEvent", "BeforeCallEvent", "ErrorEvent", "LLMHooks"]

logger = logging.getLogger(__name__)

Messages = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class BeforeCallEvent:
    """A request is about to be sent (``attempt`` counts from 1)."""

    slot: str
    model: str
    backend: str
    attempt: int
    messages: Messages


@dataclass(frozen=True)
class AfterCallEvent:
    """A call succeeded. ``elapsed_s`` is the last attempt; ``total_elapsed_s`` the whole call
    (retries and waits included). ``usage`` sums all attempts."""

    slot: str
    model: str
    backend: str
    attempt: int
    messages: Messages
    response: LLMResponse
    usage: Usage
    elapsed_s: float
    total_elapsed_s: float


@dataclass(frozen=True)
class ErrorEvent:
    """An attempt failed. ``will_retry`` says whether the call goes on (after a wait for
    transport errors, at once with a re-ask for unusable answers)."""

    slot: str
    model: str
    backend: str
    attempt: int
    messages: Messages
    error: BaseException
    usage: Usage
    elapsed_s: float
    will_retry: bool


E = TypeVar("E")


@dataclass
class LLMHooks:
    """Lists of callbacks; append to them or pass lists at construction."""

    before_call: list[Callable[[BeforeCallEvent], object]] = field(default_factory=list)
    after_call: list[Callable[[AfterCallEvent], object]] = field(default_factory=list)
    on_error: list[Callable[[ErrorEvent], object]] = field(default_factory=list)
    #: Interceptors that act on each request and answer, run in order.
    interceptors: list[object] = field(default_factory=list)
    #: The interceptors the config names, run after :attr:`interceptors` (set by the router).
    configured: tuple[object, ...] = ()

    def with_configured(self, configured: tuple[object, ...]) -> LLMHooks:
        """These hooks (the same lists: what is appended later counts) with the config's
        interceptors ``configured``."""
        return LLMHooks(
            self.before_call, self.after_call, self.on_error, self.interceptors, configured
        )

    def active_interceptors(self) -> tuple[object, ...]:
        """The interceptors of a call starting now: the registered ones, then the config's."""
        return (*self.interceptors, *self.configured)

    def emit_before(self, event: BeforeCallEvent) -> None:
        """Run the ``before_call`` callbacks."""
        _run(self.before_call, event, "before_call")

    def emit_after(self, event: AfterCallEvent) -> None:
        """Run the ``after_call`` callbacks."""
        _run(self.after_call, event, "after_call")

    def emit_error(self, event: ErrorEvent) -> None:
        """Run the ``on_error`` callbacks."""
        _run(self.on_error, event, "on_error")


def _run(callbacks: list[Callable[[E], object]], event: E, kind: str) -> None:
    for callback in list(callbacks):
        call_observer(callback, event, f"LLM {kind} hook")
