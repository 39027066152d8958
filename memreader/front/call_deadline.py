"""Per-call deadlines of :class:`~memreader.front.memory.Memory`: ``with memory.within(d):``
bounds every call made in the block by one :class:`~memreader.calls.deadlines.Deadline` (or a
number of seconds from now).

The deadline is the one the reader and the store already check (between pipeline steps, before
each LLM call, between embedding batches, right before a store commits), so it stops the work,
not only the wait for it. A call made in the block:

- raises :class:`~memreader.errors.DeadlineExceeded` before it starts once the deadline passed
  (nothing of it ran);
- ``add()`` hands it to its read and its store write (stopped, the write rolls back: nothing
  of the call is stored);
- a read (``search``, ``context``, ``get``, ``history``, ``categories``...) that ends past it
  raises instead of answering late (it changed nothing that matters: its answer is dropped);
- a write that committed is returned, however late (what is stored is always reported).

It is held in a :mod:`contextvars` variable: a call in the block sees it from any function it
calls, and :func:`~memreader.calls.deadlines.in_thread` (``AsyncMemory``'s worker threads, the
HTTP service's store threads) carries it to the thread.

>>> from memreader import Memory
>>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
>>> with m.within(30):  # seconds, or a Deadline
...     m.add("I live in Porto.", user_id="ana").counts
{'ADD': 1}
>>> with m.within(0):
...     m.search("Porto", user_id="ana")
Traceback (most recent call last):
memreader.errors.DeadlineExceeded: the call passed its deadline (0 s); stopped before search()

``AsyncMemory.within`` is the same block around awaited calls (their threads see it). The
functions below are what ``Memory`` calls:

>>> from memreader.calls.deadlines import Deadline
>>> current() is None
True
>>> with bounded(Deadline.after(0, what="the search")):
...     check_in_time("search()")
Traceback (most recent call last):
memreader.errors.DeadlineExceeded: the search passed its deadline (0 s); stopped before search()
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import TypeVar

from memreader.calls.deadlines import Deadline, check_deadline
from memreader.errors import DeadlineExceeded, InputError

__all__ = ["answered_in_time", "as_deadline", "bounded", "check_in_time", "current"]

T = TypeVar("T")

_CALL_DEADLINE: ContextVar[Deadline | None] = ContextVar("memreader_call_deadline", default=None)


def as_deadline(deadline: Deadline | float) -> Deadline:
    """``deadline`` as a :class:`Deadline`: a number is seconds from now.

    >>> as_deadline(2.5).seconds
    2.5

    Raises:
        InputError: neither a Deadline nor a number of seconds >= 0.
    """
    if isinstance(deadline, Deadline):
        return deadline
    if isinstance(deadline, bool) or not isinstance(deadline, int | float):
        raise InputError(
            "within() takes a memreader.calls.deadlines.Deadline or a number of seconds, "
            f"got {type(deadline).__name__}"
        )
    return Deadline.after(deadline, what="the call")


@contextmanager
def bounded(deadline: Deadline | float) -> Iterator[Deadline]:
    """Bound every ``Memory`` call of the block by ``deadline`` (see the module docstring);
    yields it as a :class:`Deadline`. Blocks nest: the inner one holds inside it.

    Raises:
        InputError: ``deadline`` is neither a Deadline nor a number of seconds >= 0.
    """
    checked = as_deadline(deadline)
    token = _CALL_DEADLINE.set(checked)
    try:
        yield checked
    finally:
        _CALL_DEADLINE.reset(token)


def current() -> Deadline | None:
    """The deadline of the calls made here (``None``: unbounded)."""
    return _CALL_DEADLINE.get()


def check_in_time(call: str) -> None:
    """Return while ``call`` may start.

    Raises:
        DeadlineExceeded: the current deadline passed or was cancelled.
    """
    check_deadline(_CALL_DEADLINE.get(), f"before {call}")


def answered_in_time(answer: T, call: str) -> T:
    """``answer`` of the read ``call``, unless it came past the current deadline.

    Raises:
        DeadlineExceeded: the deadline passed while ``call`` ran (its answer is dropped).
    """
    deadline = _CALL_DEADLINE.get()
    if deadline is not None and deadline.expired:
        limit = f" ({deadline.seconds:g} s)" if deadline.seconds is not None else ""
        why = "was cancelled" if deadline.cancelled else f"passed its deadline{limit}"
        raise DeadlineExceeded(
            f"{deadline.what} {why} while {call} ran; it changed nothing and its late answer "
            "was dropped",
            where=f"after {call}",
            cancelled=deadline.cancelled,
        )
    return answer
