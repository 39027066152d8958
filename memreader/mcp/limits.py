"""What bounds one MCP call: the size of every argument and of every answer, and a deadline
that stops the call's work (not only the wait for it).

Arguments are checked by the tools' argument models (:mod:`memreader.mcp.arguments`) against the
sizes here; answers are bounded by construction (at most :data:`MAX_K` hits, each memory's text
and each quoted source clipped with a marker saying how much was cut, at most
:data:`MAX_LISTED` events, categories or history entries, a Markdown file at most
:data:`MAX_RESOURCE_CHARS`).

>>> clipped("tea" * 20, 40)
'teateatea… [clipped 51 of 60 characters]'
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TypeVar

from memreader.calls.deadlines import Deadline
from memreader.errors import DeadlineExceeded
from memreader.scenes.clipping import clip

__all__ = [
    "DEFAULT_TIMEOUT_S",
    "MAX_CONTENT_CHARS",
    "MAX_ID_CHARS",
    "MAX_K",
    "MAX_LISTED",
    "MAX_MEMORY_CHARS",
    "MAX_MESSAGES",
    "MAX_QUERY_CHARS",
    "MAX_QUOTE_CHARS",
    "MAX_RESOURCE_CHARS",
    "MAX_SOURCES",
    "MAX_TEXT_CHARS",
    "MAX_TOKENS",
    "clipped",
    "within",
]

T = TypeVar("T")

#: One text argument (a fact, a message, a new text), in characters.
MAX_TEXT_CHARS = 100_000
#: All the text of one ``remember`` call, in characters.
MAX_CONTENT_CHARS = 1_000_000
#: Messages in one ``remember`` call.
MAX_MESSAGES = 500
#: A query, in characters.
MAX_QUERY_CHARS = 2_000
#: An id, a session, a document path, a reason or a user id, in characters.
MAX_ID_CHARS = 1_000
#: Memories one ``recall`` returns.
MAX_K = 50
#: The token budget ``context`` may be given.
MAX_TOKENS = 32_000
#: A memory's text in an answer, in characters (longer: clipped with a marker).
MAX_MEMORY_CHARS = 4_000
#: A quoted source in an answer, in characters.
MAX_QUOTE_CHARS = 500
#: Sources shown per memory (``sources_total`` says how many it has).
MAX_SOURCES = 10
#: Events, history entries or categories in one answer (the total is given beside them).
MAX_LISTED = 200
#: A Markdown resource, in characters (a category of thousands of memories: clipped, marked).
MAX_RESOURCE_CHARS = 1_000_000
#: Seconds one call may run when the config says nothing (``service.request_timeout_s``).
DEFAULT_TIMEOUT_S = 120.0


def clipped(text: str, limit: int = MAX_MEMORY_CHARS) -> str:
    """``text``, or its first characters and a marker counting what was cut."""
    return clip(text, limit).text


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
