"""The life-cycle calls of :class:`~memreader.front.memory.Memory` (:class:`LifecycleCalls`): pin
and unpin memories, restore one the budget expired, and run ``maintain`` (see
:mod:`memreader.stores.lifecycle`). The budget itself is the reader config's ``lifecycle:``
section, given to the store when ``Memory`` opens it::

    m = Memory({"config": {"lifecycle": {"max_active": 10000}}})
    m.pin([memory_id], user_id="ana")  # never expired by the budget
    report = m.maintain(dry_run=True)  # what a maintain run would do
    m.index_health().unindexed  # memories the vector search cannot find (checked on open too)
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from memreader.front.call_deadline import answered_in_time, current
from memreader.front.working import WorkingMemory
from memreader.stores import IndexHealth, MaintainReport, MemoryStore, WriteEvent

__all__ = ["LifecycleCalls"]


class LifecycleCalls:
    """Pins, restores and ``maintain`` on a ``Memory``'s store."""

    store: MemoryStore
    working: WorkingMemory | None

    def _owner(self, user_id: Any, call: str) -> str:
        raise NotImplementedError  # Memory's

    def pin(self, ids: Sequence[str], *, user_id: str | None = None) -> int:
        """Pin ``user_id``'s memories ``ids`` (the budget never expires them); how many were
        not pinned before; a named item held in working memory is promoted first. See
        :meth:`memreader.stores.MemoryStore.pin` (with a budget, at most its ``pin_limit``
        active memories are pinned).

        >>> from memreader import Memory
        >>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
        >>> added = m.add_memory("I live in Porto.", user_id="ana")
        >>> m.pin([added.memory_id], user_id="ana"), m.unpin([added.memory_id], user_id="ana")
        (1, 1)

        Raises:
            UnknownMemoryError: the owner has no memory of one of the ids (nothing pinned).
            InputError: no ``user_id``, bad ``ids``, or past the budget's ``pin_limit``.
        """
        owner = self._owner(user_id, "pin()")
        if self.working is not None:  # a held item named is promoted: the pin needs its row
            self.working.promote_ids(owner, ids)
        return self.store.pin(ids, user_id=owner)

    def unpin(self, ids: Sequence[str], *, user_id: str | None = None) -> int:
        """Unpin ``user_id``'s memories ``ids``; how many were pinned."""
        return self.store.unpin(ids, user_id=self._owner(user_id, "unpin()"))

    def pinned(self, *, user_id: str | None = None) -> list[str]:
        """The ids of ``user_id``'s pinned memories."""
        owner = self._owner(user_id, "pinned()")
        return answered_in_time(self.store.pinned(user_id=owner), "pinned()")

    def restore(self, memory_id: str, *, user_id: str | None = None) -> WriteEvent:
        """Bring back a memory the budget expired (until it is purged). See
        :meth:`memreader.stores.MemoryStore.restore`.

        Raises:
            UnknownMemoryError: the owner has no such memory.
            InputError: it was not expired by the budget, or its text is active again.
        """
        return self.store.restore(memory_id, user_id=self._owner(user_id, "restore()"))

    def maintain(self, *, dry_run: bool = False, now: datetime | None = None) -> MaintainReport:
        """Purge what expired more than ``purge_after_days`` ago, enforce every owner's
        budget and embed again what has no vector or another model's (see
        :mod:`memreader.stores.lifecycle.maintain`); ``dry_run``: only count. Within
        ``Memory.within``, the run stops at the deadline (what it committed stays)."""
        return self.store.maintain(dry_run=dry_run, now=now, deadline=current())

    def index_health(self) -> IndexHealth:
        """Count, now, the active memories the vector search cannot find: without a vector,
        or with another model's than this ``Memory``'s embedder (what ``Memory`` checks when
        it opens its store, as the config's ``index:`` says, and :meth:`maintain` repairs).
        See :mod:`memreader.stores.lifecycle.index_check`.

        >>> from memreader import Memory
        >>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
        >>> _ = m.add_memory("I live in Porto.", user_id="ana")
        >>> health = m.index_health()
        >>> health.active, health.unindexed, health.command
        (1, 0, 'memreader maintain --store sqlite://:memory: --config READER.yaml')

        Raises:
            StoreError: the store failed.
        """
        return answered_in_time(self.store.index_health(), "index_health()")
