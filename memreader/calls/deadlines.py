"""A deadline that stops the work, not only the wait for it.

A :class:`Deadline` is a point in time (on the monotonic clock) and a cancel flag. Pass it to
a read (``get_memory(..., deadline=d)`` and its twins) or a store write
(``store.write(items, deadline=d)``): the work checks it between pipeline steps, between the
windows of per-window steps, before each LLM call, between embedding batches and right before
a store commits, and stops with :class:`~memreader.errors.DeadlineExceeded` once it has passed
or was cancelled. A write stopped this way rolls back: nothing of it is stored.

>>> d = Deadline.after(60, what="the read")
>>> d.expired, d.remaining > 59
(False, True)
>>> d.cancel()
>>> d.check("before the embed step")
Traceback (most recent call last):
memreader.errors.DeadlineExceeded: the read was cancelled; stopped before the embed step

A cancel is seen by the next check, from any thread: a caller that gives up (a server whose
request timed out) cancels, then waits for the work to end, and knows what it did.
"""

from __future__ import annotations

import asyncio
import contextvars
import functools
import math
import time
from collections.abc import Callable
from concurrent.futures import Executor
from typing import TypeVar

from memreader.errors import DeadlineExceeded, InputError

__all__ = ["Deadline", "DeadlineExceeded", "check_deadline", "in_thread"]

T = TypeVar("T")


class Deadline:
    """When some work must stop (see the module docstring).

    Args:
        seconds: how long from now the work may run; ``None`` for no time limit (only
            :meth:`cancel` stops it).
        what: what the work is, for messages (``"the read"``).
        parent: a deadline this one is part of: it expires with it too (cancelling this one
            leaves the parent as it is).
    """

    def __init__(
        self,
        seconds: float | None = None,
        *,
        what: str = "the call",
        parent: Deadline | None = None,
    ) -> None:
        if seconds is not None and (
            isinstance(seconds, bool)
            or not isinstance(seconds, int | float)
            or math.isnan(seconds)
            or seconds < 0
        ):
            raise InputError(f"a deadline's seconds must be a number >= 0, got {seconds!r}")
        self.seconds = None if seconds is None else float(seconds)
        self.what = what
        self._at = math.inf if seconds is None else time.monotonic() + float(seconds)
        # A flag, not a threading.Event: nothing waits on it, and every request of the
        # service makes a deadline (an Event is a lock and a condition to build). Setting an
        # attribute is atomic, and seen by the next check in any thread.
        self._cancelled = False
        self.parent = parent

    @classmethod
    def after(cls, seconds: float, *, what: str = "the call") -> Deadline:
        """A deadline ``seconds`` from now."""
        return cls(seconds, what=what)

    @classmethod
    def within(cls, parent: Deadline | None, *, what: str = "the call") -> Deadline:
        """A deadline of its own (to cancel one call's work) that also ends with ``parent``."""
        return cls(None, what=parent.what if parent is not None else what, parent=parent)

    def cancel(self) -> None:
        """Stop the work at its next check (thread-safe; cancelling twice is a no-op)."""
        self._cancelled = True

    @property
    def cancelled(self) -> bool:
        """Whether :meth:`cancel` was called (on this deadline or its parent)."""
        return self._cancelled or (self.parent is not None and self.parent.cancelled)

    @property
    def expired(self) -> bool:
        """Whether the work must stop: cancelled, or its time (or its parent's) is up."""
        if self._cancelled or time.monotonic() >= self._at:
            return True
        return self.parent is not None and self.parent.expired

    @property
    def remaining(self) -> float:
        """Seconds left (0 once expired or cancelled; ``inf`` without a time limit)."""
        if self._cancelled:
            return 0.0
        own = max(0.0, self._at - time.monotonic())
        return own if self.parent is None else min(own, self.parent.remaining)

    def check(self, where: str) -> None:
        """Return while the work may go on; else raise.

        Raises:
            DeadlineExceeded: the deadline passed or was cancelled; the message says what was
                stopped and ``where``.
        """
        if not self.expired:
            return
        if self.parent is not None and not self._cancelled and self.parent.expired:
            self.parent.check(where)  # the parent's time or cancel: its message
        cancelled = self._cancelled
        why = "was cancelled" if cancelled else f"passed its deadline ({self.seconds:g} s)"
        raise DeadlineExceeded(
            f"{self.what} {why}; stopped {where}", where=where, cancelled=cancelled
        )

    def __repr__(self) -> str:
        state = "cancelled" if self.cancelled else f"{self.remaining:.3f} s left"
        return f"Deadline({self.what!r}, {state})"


def check_deadline(deadline: Deadline | None, where: str) -> None:
    """``deadline.check(where)``, when there is a deadline.

    Raises:
        InputError: ``deadline`` is not a :class:`Deadline`.
        DeadlineExceeded: it passed or was cancelled.
    """
    if deadline is None:
        return
    if not isinstance(deadline, Deadline):
        raise InputError(f"deadline must be a memreader.calls.deadlines.Deadline, got {deadline!r}")
    deadline.check(where)


def checked_deadline(deadline: object) -> Deadline | None:
    """``deadline`` when it is ``None`` or a :class:`Deadline`.

    Raises:
        InputError: it is anything else (a number of seconds is not a deadline: say
            ``Deadline.after(seconds)``).
    """
    if deadline is None or isinstance(deadline, Deadline):
        return deadline
    raise InputError(
        "deadline must be a memreader.calls.deadlines.Deadline (Deadline.after(seconds)), "
        f"got {type(deadline).__name__}"
    )


async def in_thread(
    fn: Callable[..., T],
    *args: object,
    executor: Executor | None = None,
    keep_result: bool = False,
    on_cancel: Callable[[], object] | None = None,
) -> T:
    """``fn(*args)`` in a worker thread of ``executor`` (the loop's default one when
    ``None``), with the caller's context variables.

    Unlike :func:`asyncio.to_thread`, a cancelled caller does not leave the thread running
    behind its back: the cancellation waits until the thread has ended (a deadline the thread
    checks makes that soon), then goes on. So whoever awaits the caller knows the work stopped.
    With ``keep_result``, a thread that still ended with a result returns it instead (its
    work is done and must be reported: a store write that committed). ``on_cancel`` is called
    first when the caller is cancelled (to cancel the deadline the thread checks).
    """
    loop = asyncio.get_running_loop()
    call = functools.partial(contextvars.copy_context().run, fn, *args)
    future = loop.run_in_executor(executor, call)
    try:
        return await asyncio.shield(future)
    except asyncio.CancelledError:
        if on_cancel is not None:
            on_cancel()
        while not future.done():
            try:
                await asyncio.wait([future])
            except asyncio.CancelledError:
                continue  # cancelled again: still the thread must end first
        if future.cancelled():
            raise
        error = future.exception()  # retrieved either way: never "never retrieved"
        if keep_result and error is None:
            return future.result()
        raise
