"""Calling observers (the LLM hooks, the step interceptors): plain or ``async def`` callbacks,
that never break the call they observe.

A callback is called with its event where the event happens (in the calling thread, or on the
event loop for async calls). When it returns an awaitable (an ``async def`` callback):

* in an async call (an event loop runs in this thread), the awaitable is scheduled on that loop
  as a task, kept until it ends, and its failure logged. The async pipeline awaits the tasks
  still running before a call returns or raises (:func:`settle_observers`), so a callback of a
  cancelled call (``on_step_error`` with the ``CancelledError``) still runs to its end;
* in a sync call there is no loop to run it on: it is closed unstarted (never a "coroutine ...
  was never awaited" warning) and a warning is logged (once per callback).

A callback that raises is logged and ignored.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

__all__ = ["call_observer", "settle_observers"]

logger = logging.getLogger(__name__)

E = TypeVar("E")

#: Tasks of async callbacks still running (a task needs a strong reference to run).
_running: set[asyncio.Future[Any]] = set()
#: Async callbacks already warned about in sync calls.
_warned: set[str] = set()


def call_observer(callback: Callable[[E], object], event: E, kind: str) -> None:
    """Call ``callback(event)`` for the observer ``kind`` (``"LLM after_call hook"``, ...): its
    exception is logged, an awaitable it returns is scheduled or closed (see the module)."""
    try:
        result = callback(event)
    except Exception:
        logger.warning("%s %r raised; ignoring it", kind, _name(callback), exc_info=True)
        return
    if inspect.isawaitable(result):
        _schedule(result, callback, kind)


def _schedule(awaitable: Awaitable[object], callback: Callable[..., object], kind: str) -> None:
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        loop = None
    if loop is None or loop.is_closed():
        close = getattr(awaitable, "close", None)
        if callable(close):
            close()
        if _name(callback) not in _warned:  # once per callback, not once per call
            _warned.add(_name(callback))
            logger.warning(
                "%s %r is async: it runs only in async calls (aget_memory, ...); skipped in "
                "sync calls",
                kind,
                _name(callback),
            )
        return
    task = asyncio.ensure_future(awaitable)
    _running.add(task)
    task.add_done_callback(lambda done: _finished(done, callback, kind))


def _finished(task: asyncio.Future[Any], callback: Callable[..., object], kind: str) -> None:
    _running.discard(task)
    if not task.cancelled() and task.exception() is not None:
        logger.warning(
            "%s %r raised; ignoring it", kind, _name(callback), exc_info=task.exception()
        )


async def settle_observers() -> None:
    """Wait for the async callbacks scheduled on the running loop to end (their failures are
    logged, never raised)."""
    loop = asyncio.get_running_loop()
    while True:
        pending = [task for task in _running if task.get_loop() is loop and not task.done()]
        if not pending:
            return
        await asyncio.gather(*pending, return_exceptions=True)


def _name(callback: Callable[..., object]) -> str:
    return getattr(callback, "__qualname__", None) or type(callback).__name__
