"""``AsyncMemory``: :class:`~memreader.front.memory.Memory` as coroutines.

The same arguments, checks, results and errors: each method is the sync one's work, the read
awaited on the reader's ``aget_memory`` and each store call run in a worker thread
(:func:`~memreader.calls.deadlines.in_thread`: a cancelled caller waits for the thread to end,
and a write that committed is still returned)::

    from memreader import AsyncMemory

    async with AsyncMemory() as m:
        await m.add("I moved to Lisbon.", user_id="emily")
        with m.within(5):  # every call of the block stops at its deadline
            hits = await m.search("where does she live?", user_id="emily")
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, overload

from memreader.calls.deadlines import Deadline, in_thread
from memreader.front.call_deadline import bounded, current
from memreader.front.config import ConfigLike, memory_arguments
from memreader.front.memory import Memory
from memreader.front.recall import TIERS, RecallResult, TierName
from memreader.front.resources import is_resource
from memreader.front.results import AddResult, add_result
from memreader.items import TextualMemoryItem
from memreader.modes import ReadMode
from memreader.readers import BaseMemReader
from memreader.steps.report import ReadReport
from memreader.stores import (
    EraseReceipt,
    HistoryEntry,
    IndexHealth,
    MaintainReport,
    MemoryStore,
    SearchHit,
    StoredCategory,
    WriteEvent,
)
from memreader.stores.context import (
    DEFAULT_CONTEXT_K,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_TOKENIZER,
    Context,
    ContextOrder,
)
from memreader.stores.filters import SearchFilters
from memreader.stores.paging import DEFAULT_PAGE, MemoryPage
from memreader.stores.records import StoredMemory

if TYPE_CHECKING:
    from memreader.categories.markdown import MarkdownLayout

__all__ = ["AsyncMemory"]


class AsyncMemory:
    """:class:`~memreader.front.memory.Memory` with coroutine methods (see the module
    docstring); built the same way (``AsyncMemory(config, store=..., store_options=...)``).
    ``memory`` is the sync object it runs (its ``reader``, ``store`` and ``store_url``)."""

    def __init__(
        self,
        config: ConfigLike = None,
        *,
        store: str | MemoryStore | None = None,
        store_options: Mapping[str, Any] | None = None,
        working_memory: int | bool = 0,
        reader: BaseMemReader | None = None,
    ) -> None:
        self.memory = Memory(
            config,
            store=store,
            store_options=store_options,
            working_memory=working_memory,
            reader=reader,
        )

    @classmethod
    def from_config(cls, config: ConfigLike) -> AsyncMemory:
        """:meth:`Memory.from_config <memreader.front.memory.Memory.from_config>`: a flat dict
        as mem0 users write it, or what ``AsyncMemory(config)`` takes."""
        nested, arguments = memory_arguments(config)
        return cls(nested, **arguments)

    def within(self, deadline: Deadline | float) -> AbstractContextManager[Deadline]:
        """:meth:`Memory.within <memreader.front.memory.Memory.within>`: a plain ``with``
        block around awaited calls (their reads and worker threads check the deadline)."""
        return bounded(deadline)

    async def add(
        self,
        data: Any,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        mode: ReadMode = "fast",
        type: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        agent_id: str | None = None,
        task_id: str | None = None,
        visibility: str | None = None,
    ) -> AddResult:
        """:meth:`Memory.add <memreader.front.memory.Memory.add>`, awaited.

        >>> import asyncio
        >>> async def main():
        ...     async with AsyncMemory({"config": {"embedder": {"backend": "hash"}}},
        ...                            store="sqlite://:memory:") as m:
        ...         return (await m.add("I live in Porto.", user_id="ana")).counts
        >>> asyncio.run(main())
        {'ADD': 1}
        """
        memory = self.memory
        scope = {"agent_id": agent_id, "task_id": task_id, "visibility": visibility}
        prepare = functools.partial(
            memory._prepare, data, user_id, session_id, type, metadata, scope
        )
        # A path or URL is read or fetched first: in a worker thread, off the event loop.
        prepared = await in_thread(prepare) if is_resource(data) else prepare()
        kind, scenes, info, generated = prepared
        report = ReadReport()
        groups = await memory.reader.aget_memory(
            scenes, kind, info, mode, report=report, deadline=current()
        )
        items = [item for group in groups for item in group]
        events, held = await in_thread(functools.partial(memory._write, items), keep_result=True)
        return add_result(items, events, report, info["session_id"], generated, kind, held)

    async def write(self, items: Sequence[TextualMemoryItem]) -> list[WriteEvent]:
        """:meth:`Memory.write <memreader.front.memory.Memory.write>`, awaited."""
        return await in_thread(functools.partial(self.memory.write, items), keep_result=True)

    async def add_memory(
        self,
        text: str,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        memory_type: str = "LongTermMemory",
        importance: float | None = None,
        valid_from: datetime | None = None,
        metadata: Mapping[str, Any] | None = None,
        tags: Sequence[str] | None = None,
        agent_id: str | None = None,
        task_id: str | None = None,
        visibility: str | None = None,
    ) -> WriteEvent:
        """:meth:`Memory.add_memory <memreader.front.memory.Memory.add_memory>`, awaited."""
        call = functools.partial(
            self.memory.add_memory,
            text,
            user_id=user_id,
            session_id=session_id,
            memory_type=memory_type,
            importance=importance,
            valid_from=valid_from,
            metadata=metadata,
            tags=tags,
            agent_id=agent_id,
            task_id=task_id,
            visibility=visibility,
        )
        return await in_thread(call, keep_result=True)

    async def update(
        self, memory_id: str, text: str, *, user_id: str | None = None, reason: str | None = None
    ) -> WriteEvent:
        """:meth:`Memory.update <memreader.front.memory.Memory.update>`, awaited."""
        call = functools.partial(
            self.memory.update, memory_id, text, user_id=user_id, reason=reason
        )
        return await in_thread(call, keep_result=True)

    @overload
    async def delete(
        self, memory_id: str, *, user_id: str | None = None, erase: Literal[False] = False
    ) -> WriteEvent: ...

    @overload
    async def delete(
        self, memory_id: str, *, user_id: str | None = None, erase: Literal[True]
    ) -> EraseReceipt: ...

    @overload
    async def delete(
        self, memory_id: str, *, user_id: str | None = None, erase: bool
    ) -> WriteEvent | EraseReceipt: ...

    async def delete(
        self, memory_id: str, *, user_id: str | None = None, erase: bool = False
    ) -> WriteEvent | EraseReceipt:
        """:meth:`Memory.delete <memreader.front.removal.RemovalCalls.delete>`, awaited (with
        ``erase``: the receipt)."""
        call = functools.partial(self.memory.delete, memory_id, user_id=user_id, erase=erase)
        return await in_thread(call, keep_result=True)

    async def search(
        self,
        query: str,
        *,
        user_id: str | None = None,
        k: int = 10,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        rerank: bool = False,
        **keywords: Any,
    ) -> list[SearchHit]:
        """:meth:`Memory.search <memreader.front.memory.Memory.search>`, awaited."""
        options: dict[str, Any] = {"user_id": user_id, "k": k, "filters": filters}
        options["rerank"] = rerank
        return await in_thread(functools.partial(self.memory.search, query, **options, **keywords))

    async def recall(
        self,
        query: str,
        *,
        user_id: str | None = None,
        k: int = 10,
        tiers: Sequence[TierName] = TIERS,
        sufficiency: bool = True,
        rerank: bool = False,
        filters: SearchFilters | Mapping[str, Any] | None = None,
    ) -> RecallResult:
        """:meth:`Memory.recall <memreader.front.memory.Memory.recall>`, awaited."""
        options: dict[str, Any] = {"user_id": user_id, "k": k, "tiers": tiers}
        options |= {"sufficiency": sufficiency, "rerank": rerank, "filters": filters}
        return await in_thread(functools.partial(self.memory.recall, query, **options))

    async def get_all(
        self,
        *,
        user_id: str | None = None,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: str | None = None,
        **keywords: Any,
    ) -> MemoryPage:
        """:meth:`Memory.get_all <memreader.front.memory.Memory.get_all>`, awaited."""
        call = functools.partial(
            self.memory.get_all,
            user_id=user_id,
            filters=filters,
            limit=limit,
            cursor=cursor,
            **keywords,
        )
        return await in_thread(call)

    async def context(
        self,
        query: str,
        *,
        user_id: str | None = None,
        max_tokens: int = DEFAULT_CONTEXT_TOKENS,
        tokenizer: str = DEFAULT_TOKENIZER,
        k: int = DEFAULT_CONTEXT_K,
        order: ContextOrder = "time",
        rerank: bool = False,
        **filters: Any,
    ) -> Context:
        """:meth:`Memory.context <memreader.front.memory.Memory.context>`, awaited."""
        call = functools.partial(
            self.memory.context,
            query,
            user_id=user_id,
            max_tokens=max_tokens,
            tokenizer=tokenizer,
            k=k,
            order=order,
            rerank=rerank,
            **filters,
        )
        return await in_thread(call)

    async def get(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        used: bool = True,
        **scope: str | None,
    ) -> StoredMemory | None:
        """:meth:`Memory.get <memreader.front.memory.Memory.get>`, awaited."""
        call = functools.partial(self.memory.get, memory_id, user_id=user_id, used=used, **scope)
        return await in_thread(call)

    async def mark_used(self, ids: Sequence[str], *, user_id: str | None = None) -> int:
        """:meth:`Memory.mark_used <memreader.front.memory.Memory.mark_used>`, awaited."""
        return await in_thread(functools.partial(self.memory.mark_used, ids, user_id=user_id))

    async def history(self, memory_id: str, *, user_id: str | None = None) -> list[HistoryEntry]:
        """:meth:`Memory.history <memreader.front.memory.Memory.history>`, awaited."""
        call = functools.partial(self.memory.history, memory_id, user_id=user_id)
        return await in_thread(call)

    async def forget(
        self, source: Any, *, user_id: str | None = None, erase: bool = False
    ) -> EraseReceipt:
        """:meth:`Memory.forget <memreader.front.removal.RemovalCalls.forget>`, awaited (a
        forget that committed is returned even if the caller was cancelled)."""
        call = functools.partial(self.memory.forget, source, user_id=user_id, erase=erase)
        return await in_thread(call, keep_result=True)

    async def pin(self, ids: Sequence[str], *, user_id: str | None = None) -> int:
        """:meth:`Memory.pin <memreader.front.lifecycle.LifecycleCalls.pin>`, awaited."""
        call = functools.partial(self.memory.pin, ids, user_id=user_id)
        return await in_thread(call, keep_result=True)

    async def unpin(self, ids: Sequence[str], *, user_id: str | None = None) -> int:
        """:meth:`Memory.unpin <memreader.front.lifecycle.LifecycleCalls.unpin>`, awaited."""
        call = functools.partial(self.memory.unpin, ids, user_id=user_id)
        return await in_thread(call, keep_result=True)

    async def pinned(self, *, user_id: str | None = None) -> list[str]:
        """:meth:`Memory.pinned <memreader.front.lifecycle.LifecycleCalls.pinned>`, awaited."""
        return await in_thread(functools.partial(self.memory.pinned, user_id=user_id))

    async def restore(self, memory_id: str, *, user_id: str | None = None) -> WriteEvent:
        """:meth:`Memory.restore <memreader.front.lifecycle.LifecycleCalls.restore>`, awaited."""
        call = functools.partial(self.memory.restore, memory_id, user_id=user_id)
        return await in_thread(call, keep_result=True)

    async def maintain(self, *, dry_run: bool = False) -> MaintainReport:
        """:meth:`Memory.maintain <memreader.front.lifecycle.LifecycleCalls.maintain>`,
        awaited (what a run committed stays, even if the caller was cancelled)."""
        return await in_thread(functools.partial(self.memory.maintain, dry_run=dry_run))

    async def index_health(self) -> IndexHealth:
        """:meth:`Memory.index_health <memreader.front.lifecycle.LifecycleCalls.index_health>`,
        awaited."""
        return await in_thread(self.memory.index_health)

    async def categories(self, user_id: str | None = None) -> list[StoredCategory]:
        """:meth:`Memory.categories <memreader.front.memory.Memory.categories>`, awaited."""
        return await in_thread(functools.partial(self.memory.categories, user_id))

    async def markdown_file(
        self, file_name: str, *, user_id: str | None = None, layout: MarkdownLayout = "flat"
    ) -> bytes | None:
        """:meth:`Memory.markdown_file <memreader.front.categories.CategoryCalls.markdown_file>`,
        awaited."""
        call = functools.partial(
            self.memory.markdown_file, file_name, user_id=user_id, layout=layout
        )
        return await in_thread(call)

    async def export_markdown(
        self,
        folder: str | os.PathLike[str],
        *,
        user_id: str | Sequence[str] | None = None,
        allow_foreign_files: bool = False,
        layout: MarkdownLayout = "flat",
    ) -> list[str]:
        """:meth:`Memory.export_markdown <memreader.front.memory.Memory.export_markdown>`,
        awaited."""
        call = functools.partial(
            self.memory.export_markdown,
            folder,
            user_id=user_id,
            allow_foreign_files=allow_foreign_files,
            layout=layout,
        )
        return await in_thread(call, keep_result=True)

    async def end_session(self, session_id: str, *, user_id: str | None = None) -> list[WriteEvent]:
        """:meth:`Memory.end_session <memreader.front.memory.Memory.end_session>`, awaited."""
        call = functools.partial(self.memory.end_session, session_id, user_id=user_id)
        return await in_thread(call, keep_result=True)

    async def aclose(self) -> None:
        """Promote what working memory holds, close the store (in a thread) and the reader's
        clients, async ones included. As :meth:`Memory.close
        <memreader.front.memory.Memory.close>`, a promotion that fails raises and leaves it
        open with its items held: ``aclose()`` again retries."""
        memory = self.memory
        if memory._closed:
            return
        if memory.working is not None:  # failed: it stays open, its items held (retry)
            await in_thread(memory.working.end_all, keep_result=True)
        memory._mark_closed()
        try:
            await in_thread(memory.store.close)
        finally:
            await memory.reader.aclose()

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    def __repr__(self) -> str:
        return "Async" + repr(self.memory)
