"""The verbs an adapter calls, awaited the same way on a :class:`~memreader.front.memory.Memory`
or an :class:`~memreader.front.async_memory.AsyncMemory`, each bounded by a deadline.

The async frameworks (Pydantic AI's tools, LlamaIndex's memory blocks, ADK's memory service)
await their memory; a user may hand them either face. An ``AsyncMemory``'s own coroutines are
awaited; a ``Memory``'s call runs in a worker thread
(:func:`~memreader.calls.deadlines.in_thread`, as ``AsyncMemory`` runs it), so the event loop
never waits on the store. Every call is bounded (``timeout_s``, within any deadline the caller's
``memory.within(...)`` block set already): past it the work stops with
:class:`~memreader.errors.DeadlineExceeded`, never hangs.

>>> import asyncio
>>> from memreader import Memory
>>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
>>> verbs = Verbs(m, timeout_s=30)
>>> asyncio.run(verbs.add_memory("Ana is vegetarian.", user_id="ana")).event
'ADD'
>>> [hit.text for hit in asyncio.run(verbs.search("vegetarian", user_id="ana", k=3))]
['Ana is vegetarian.']
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from memreader.calls.deadlines import Deadline, in_thread
from memreader.errors import InputError
from memreader.front.async_memory import AsyncMemory
from memreader.front.call_deadline import bounded, current
from memreader.front.memory import AddResult, Memory
from memreader.stores import SearchHit, WriteEvent
from memreader.stores.context import Context
from memreader.stores.paging import MemoryPage
from memreader.stores.records import StoredMemory

__all__ = ["DEFAULT_TIMEOUT_S", "MemoryLike", "Verbs", "check_memory", "check_timeout"]

T = TypeVar("T")

#: How long one adapter call may take by default, in seconds (a fine-mode read calls an LLM).
DEFAULT_TIMEOUT_S = 60.0

MemoryLike = Memory | AsyncMemory


def check_memory(memory: Any, where: str) -> MemoryLike:
    """``memory`` when it is a ``Memory`` or an ``AsyncMemory``.

    Raises:
        InputError: anything else (``where`` names the adapter).
    """
    if isinstance(memory, (Memory, AsyncMemory)):
        return memory
    raise InputError(
        f"{where} takes a memreader Memory or AsyncMemory (it never opens a store itself), "
        f"got {type(memory).__name__}"
    )


def check_timeout(timeout_s: Any, where: str) -> float | None:
    """``timeout_s`` as seconds (``None``: only the caller's own deadline bounds a call).

    Raises:
        InputError: not ``None`` nor a number > 0.
    """
    if timeout_s is None:
        return None
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or timeout_s <= 0:
        raise InputError(f"{where}: timeout_s must be a number of seconds > 0, got {timeout_s!r}")
    return float(timeout_s)


class Verbs:
    """``memory``'s verbs as coroutines, each within ``timeout_s`` (see the module docstring).

    Raises:
        InputError: ``memory`` is neither a ``Memory`` nor an ``AsyncMemory``; a bad timeout.
    """

    def __init__(
        self, memory: Any, *, timeout_s: float | None = DEFAULT_TIMEOUT_S, where: str = "adapter"
    ) -> None:
        self.memory = check_memory(memory, where)
        self.timeout_s = check_timeout(timeout_s, where)
        self.where = where

    @contextmanager
    def _bounded(self) -> Iterator[None]:
        if self.timeout_s is None:
            yield
            return
        # The caller's own deadline (memory.within) still holds: this one ends with it too.
        deadline = Deadline(self.timeout_s, what=f"the {self.where} call", parent=current())
        with bounded(deadline):
            yield

    async def _run(self, verb: str, keep: bool, *args: Any, **keywords: Any) -> Any:
        with self._bounded():
            if isinstance(self.memory, AsyncMemory):
                return await getattr(self.memory, verb)(*args, **keywords)
            call: Callable[[], Any] = functools.partial(
                getattr(self.memory, verb), *args, **keywords
            )
            # A write that committed is reported even if the caller was cancelled meanwhile.
            return await in_thread(call, keep_result=keep)

    async def add(self, data: Any, **keywords: Any) -> AddResult:
        """:meth:`Memory.add <memreader.front.memory.Memory.add>`, awaited."""
        result: AddResult = await self._run("add", True, data, **keywords)
        return result

    async def add_memory(self, text: str, **keywords: Any) -> WriteEvent:
        """:meth:`Memory.add_memory <memreader.front.memory.Memory.add_memory>`, awaited."""
        event: WriteEvent = await self._run("add_memory", True, text, **keywords)
        return event

    async def search(self, query: str, **keywords: Any) -> list[SearchHit]:
        """:meth:`Memory.search <memreader.front.memory.Memory.search>`, awaited."""
        hits: list[SearchHit] = await self._run("search", False, query, **keywords)
        return hits

    async def get_all(self, **keywords: Any) -> MemoryPage:
        """:meth:`Memory.get_all <memreader.front.memory.Memory.get_all>`, awaited."""
        page: MemoryPage = await self._run("get_all", False, **keywords)
        return page

    async def context(self, query: str, **keywords: Any) -> Context:
        """:meth:`Memory.context <memreader.front.memory.Memory.context>`, awaited."""
        block: Context = await self._run("context", False, query, **keywords)
        return block

    async def get(self, memory_id: str, **keywords: Any) -> StoredMemory | None:
        """:meth:`Memory.get <memreader.front.memory.Memory.get>`, awaited."""
        found: StoredMemory | None = await self._run("get", False, memory_id, **keywords)
        return found

    async def delete(self, memory_id: str, **keywords: Any) -> WriteEvent:
        """:meth:`Memory.delete <memreader.front.removal.RemovalCalls.delete>` (it expires;
        its history stays), awaited."""
        event: WriteEvent = await self._run("delete", True, memory_id, **keywords)
        return event
