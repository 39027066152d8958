"""What :class:`~memreader.front.memory.Memory` hands to an agent and when its session ends:
:class:`UseCalls`, its ``get`` (a use), ``history`` (an audit), ``mark_used`` and
``end_session`` (working memory's promotion: :mod:`memreader.front.working`)."""

from __future__ import annotations

from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from memreader.errors import InputError
from memreader.front.call_deadline import answered_in_time
from memreader.front.working import WorkingMemory
from memreader.scopes import seen_in
from memreader.stores import HistoryEntry, MemoryStore, WriteEvent
from memreader.stores.records import StoredMemory

__all__ = ["UseCalls"]


class UseCalls:
    """The use and session calls of :class:`~memreader.front.memory.Memory` (its ``store``
    and ``working`` memory, owners checked by its ``_owner``)."""

    store: MemoryStore
    working: WorkingMemory | None

    @abstractmethod
    def _owner(self, user_id: Any, call: str) -> str:
        """``user_id`` checked for ``call`` (the Memory open)."""

    def get(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        used: bool = True,
        **scope: str | None,
    ) -> StoredMemory | None:
        """The memory ``memory_id`` of ``user_id`` (any status), or ``None``; also ``None``
        when ``scope`` (``agent_id``, ``task_id``) does not see it (:mod:`memreader.scopes`).
        Found, it is recorded as used (handed to the caller) unless ``used=False`` (an audit,
        a check). An item held in working memory is found there."""
        owner = self._owner(user_id, "get()")
        held = self.working.get(owner, memory_id) if self.working is not None else None
        if held is not None:  # the newest version: a stored one with its id is retired
            return held if seen_in(held, scope) else None
        found = self.store.get(memory_id, user_id=owner)
        if not seen_in(found, scope) or found is None:  # seen_in checks the scope's names
            return None
        if used is not False:
            self.store.record_use([found.id], user_id=owner)
        return answered_in_time(found, "get()")

    def history(self, memory_id: str, *, user_id: str | None = None) -> list[HistoryEntry]:
        """Every change of ``memory_id`` (of ``user_id``), oldest first; a memory held in
        working memory ends with an ``ADD`` saying so (an audit: no use is recorded)."""
        owner = self._owner(user_id, "history()")
        entries = self.store.history(memory_id, user_id=owner)
        held = self.working.history(owner, memory_id) if self.working else []
        return answered_in_time(entries + held, "history()")

    def mark_used(self, ids: Sequence[str], *, user_id: str | None = None) -> int:
        """Record that ``user_id``'s memories ``ids`` were handed to an agent (one use each):
        how many were marked (see :meth:`memreader.stores.MemoryStore.mark_used`).
        ``context()`` and :meth:`get` record their own; a search never does. A named item
        held in working memory is promoted first, so its use is recorded.

        Raises:
            InputError: no ``user_id``, or ``ids`` not a list of non-empty strings.
        """
        owner = self._owner(user_id, "mark_used()")
        if self.working is not None:  # a held item named is promoted: its use is kept
            self.working.promote_ids(owner, ids)
        return self.store.mark_used(ids, user_id=owner)

    def end_session(self, session_id: str, *, user_id: str | None = None) -> list[WriteEvent]:
        """Promote the items working memory holds for ``user_id``'s session ``session_id``
        into the store, once (see :mod:`memreader.front.working`); the write's events (none
        without working memory, or when nothing is held).

        Raises:
            InputError: no ``user_id``, or ``session_id`` not a non-empty string.
        """
        owner = self._owner(user_id, "end_session()")
        if not isinstance(session_id, str) or not session_id:
            raise InputError(
                f"end_session(): session_id must be a non-empty string, got {session_id!r}"
            )
        return self.working.end_session(owner, session_id) if self.working is not None else []
