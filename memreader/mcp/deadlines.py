"""What bounds one MCP call in time: a deadline that stops the call's work (not only the wait
for it). Its sizes (of every argument and every answer) are :mod:`memreader.answers.sizes`,
shared with the framework adapters."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from memreader.calls.deadlines import Deadline
from memreader.errors import DeadlineExceeded

__all__ = ["DEFAULT_TIMEOUT_S", "within"]

T = TypeVar("T")

#: Seconds one call may run when the config says nothing (``service.request_timeout_s``).
DEFAULT_TIMEOUT_S = 120.0


async def within(work: Awaitable[T], deadline: Deadline) -> T:
    """``await work``; past ``deadline``, the work is cancelled (the read stops between its
    steps, a store call's thread is waited for) and :class:`DeadlineExceeded` is raised once it
    has stopped. Work that finished anyway (a write that committed just then) is returned.

    Raises:
        DeadlineExceeded: the deadline passed before the work finished.
    """
    task = asyncio.ensure_future(work)
    remaining = deadline.remaining
    try:
        await asyncio.wait([task], timeout=None if remaining == float("inf") else remaining)
    except asyncio.CancelledError:
        await _stop(task, deadline)  # the client went away: stop the work, then give up
        raise
    if not task.done():
        await _stop(task, deadline)
    if task.cancelled():
        limit = f" ({deadline.seconds:g} s)" if deadline.seconds is not None else ""
        raise DeadlineExceeded(
            f"{deadline.what} did not finish within its deadline{limit}; its work was stopped "
            "and nothing of it was stored",
            where="the MCP call",
        )
    return task.result()


async def _stop(task: asyncio.Future[T], deadline: Deadline) -> None:
    """Cancel ``deadline`` and ``task``, and wait until the task has ended (cancelled again,
    it still waits: a thread cannot be stopped, only waited for)."""
    deadline.cancel()
    task.cancel()
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError:
            continue
