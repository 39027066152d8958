""":class:`MemreaderSession`: an OpenAI Agents SDK session whose items are kept exactly and
also read into one user's memories.

Give it to ``Runner.run(agent, text, session=...)`` as any SDK session: the runner reads the
conversation back with ``get_items`` and hands each turn's items to ``add_items``. Each batch
is read into memories by :meth:`AsyncMemory.add <memreader.front.async_memory.AsyncMemory.add>`
(one chat, fast mode unless told otherwise; which items are read: :mod:`.items`), then kept.

Where the items live (:mod:`.kept`): memreader's stores have no table for raw transcripts, so
the session keeps them with the SDK's own ``SQLiteSession``, in two tables of their own: in the
store's own file when the Memory's store is a SQLite file, in memory (gone with this object)
when it is ``sqlite://:memory:``, and in the SQLite file ``items_db`` names otherwise (a
PostgreSQL store needs one). Items are keyed by user and session id together: one user's
session never shows another user's items, whatever its id.

What removing items does to memories, by default: ``pop_item`` forgets what the popped item
alone supports (``on_pop="forget"``: those memories expire, their history stays; a memory
other messages support too loses the popped one from its sources), ``clear_session`` keeps the
memories (``on_clear="keep"``: what was learnt outlives the transcript; ``"forget"`` or
``"erase"`` forget or erase the session's memories; ``"erase"`` also empties the items' file's
write-ahead log).

An erasure through the memory reaches the kept items while this session is open (it is the
memory's transcript keeper: :mod:`memreader.front.transcripts`): ``forget("session:ID",
erase=True)`` for its user removes all its items, ``forget("message:ID", erase=True)`` the item
that message id names, each counted in the receipt's ``removed["transcripts"]``. A ``forget``
without ``erase``, ``delete`` of one memory, and an erasure made while no session object for
those items is open leave the items: ``clear_session`` (``on_clear="erase"``) removes them.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from agents.items import TResponseInputItem
from agents.memory.session import SessionABC
from agents.memory.session_settings import (
    SessionSettings,
    coerce_session_settings,
    resolve_session_limit,
)

from memreader.errors import InputError, InvalidMessageError
from memreader.front.async_memory import AsyncMemory
from memreader.front.memory import Memory
from memreader.front.results import AddResult
from memreader.integrations.openai_agents.binding import (
    DEFAULT_TIMEOUT_S,
    AgentsMemoryError,
    async_face,
    check_id,
    check_mode,
    check_scope,
    check_timeout,
)
from memreader.integrations.openai_agents.items import (
    checked_items,
    message_id,
    readable,
    reading,
)
from memreader.integrations.openai_agents.kept import KeptItems, items_file, scrub, scrub_now
from memreader.modes import ReadMode
from memreader.stores import SourceSelector

__all__ = ["MemreaderSession", "ReadOutcome", "Removal", "UnreadItem"]

_log = logging.getLogger(__name__)

#: What removing items does to the memories read from them.
Removal = Literal["keep", "forget", "erase"]
_REMOVALS = ("keep", "forget", "erase")


@dataclass(frozen=True)
class UnreadItem:
    """An item kept but not read into memories: its position in the session and why."""

    position: int
    reason: str


@dataclass
class ReadOutcome:
    """What the last ``add_items`` read: memreader's
    :class:`~memreader.front.results.AddResult` of each read (none when no item was read; one
    per item when a refusal named no item and each was read alone) and the items kept without
    being read."""

    results: list[AddResult] = field(default_factory=list)
    unread: list[UnreadItem] = field(default_factory=list)


class MemreaderSession(SessionABC):
    """An Agents SDK session (``SessionABC``) bound to one user of a memreader memory (see the
    module docstring).

    Args:
        session_id: the conversation's id (memories read from it carry it as their
            ``session_id``).
        memory: a :class:`~memreader.front.memory.Memory` or
            :class:`~memreader.front.async_memory.AsyncMemory`; the caller keeps owning it.
        user_id: whose memories the items become; the session never reads or changes another's.
        items_db: the SQLite file the items are kept in (default: see the module docstring).
        session_settings: the SDK's settings (``limit``: how many of the newest items
            ``get_items()`` returns).
        mode: how items are read (``"fast"``, or ``"fine"`` with an LLM in the config).
        roles: the roles of the messages read (default ``user`` and ``assistant``).
        read_tools: also read function calls and their outputs (off by default: this
            adapter's own recall answers would come back as new memories).
        on_pop, on_clear: what removing items does to their memories (``"keep"``,
            ``"forget"``, ``"erase"``, irreversible).
        agent_id, task_id: the scope the memories are read into (:mod:`memreader.scopes`).
        timeout_s: the deadline of each call's memory work.

    Raises:
        AgentsMemoryError: an argument of the wrong type or value (the message names it).
    """

    def __init__(
        self,
        session_id: str,
        memory: Memory | AsyncMemory,
        *,
        user_id: str,
        items_db: str | os.PathLike[str] | None = None,
        session_settings: SessionSettings | dict[str, Any] | None = None,
        mode: ReadMode = "fast",
        roles: Collection[str] = ("user", "assistant"),
        read_tools: bool = False,
        on_pop: Removal = "forget",
        on_clear: Removal = "keep",
        agent_id: str | None = None,
        task_id: str | None = None,
        timeout_s: float = DEFAULT_TIMEOUT_S,
    ) -> None:
        self.session_id = check_id(session_id, "session_id")
        self.user_id = check_id(user_id, "user_id")
        self.memory = async_face(memory)
        for name, value in (("on_pop", on_pop), ("on_clear", on_clear)):
            if value not in _REMOVALS:
                raise AgentsMemoryError(f"{name} must be one of {_REMOVALS}, got {value!r}")
        if isinstance(roles, str) or not all(isinstance(role, str) for role in roles):
            raise AgentsMemoryError(f"roles must be a collection of role names, got {roles!r}")
        self.roles, self.read_tools = frozenset(roles), bool(read_tools)
        self.mode = check_mode(self.memory, mode)
        self.on_pop, self.on_clear = on_pop, on_clear
        # Checked here: a bad scope is the caller's error, not a refusal of each item.
        self.agent_id = check_scope(agent_id, "agent_id")
        self.task_id = check_scope(task_id, "task_id")
        self.timeout_s = check_timeout(timeout_s)
        self.session_settings = (
            coerce_session_settings(session_settings)
            if session_settings is not None
            else SessionSettings()
        )
        #: What the last ``add_items`` read (``None`` before the first).
        self.last_read: ReadOutcome | None = None
        self.items_db = items_file(self.memory, items_db)
        # The user is part of the key: two users' sessions of one id stay apart.
        key = json.dumps([self.user_id, self.session_id], ensure_ascii=False)
        self._kept = KeptItems(key, self.items_db)
        # One change at a time: an item's position is counted before it is kept.
        self._lock = asyncio.Lock()
        # While this session forgets through the memory, it removes the items itself after.
        self._removing = False
        self.memory.memory.keep_transcripts(self)

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        """The session's items, oldest first; with ``limit`` (or ``session_settings.limit``)
        the newest ``limit`` of them, as the SDK's ``SQLiteSession`` returns them."""
        return await self._kept.get_items(resolve_session_limit(limit, self.session_settings))

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        """Read ``items`` into the user's memories, then keep them (a failed read keeps
        nothing: the SDK's retry of the write reads them again, which changes nothing twice).
        An item memreader refuses to read is kept unread (``last_read.unread`` says why; a
        warning is logged).

        Raises:
            AgentsMemoryError: ``items`` is not a list of JSON dicts (nothing is kept).
            StoreError, DeadlineExceeded: the memory failed or took longer than
                ``timeout_s`` (nothing is kept).
        """
        checked = checked_items(items)
        if not checked:
            await self._kept.add_items([])  # the SDK session's closed check
            return
        async with self._lock:
            start = len(await self._kept.get_items(None))
            with self.memory.within(self.timeout_s):
                outcome = await self._read(checked, start)
            await self._kept.add_items(cast("list[TResponseInputItem]", checked))
            self.last_read = outcome

    async def pop_item(self) -> TResponseInputItem | None:
        """Remove the newest item and return it (``None``: the session is empty); its memories
        as ``on_pop`` says (forgotten first, so a failure leaves the item in place)."""
        async with self._lock:
            kept = await self._kept.get_items(None)
            if not kept:
                return None
            if self.on_pop != "keep":
                source = SourceSelector(
                    message_id=message_id(self.session_id, len(kept) - 1, kept[-1])
                )
                await self._forget(source, self.on_pop)
            popped = await self._kept.pop_item()
            if self.on_pop == "erase":
                await scrub(self.items_db)
            return popped

    async def clear_session(self) -> None:
        """Remove every item of the session; its memories as ``on_clear`` says."""
        async with self._lock:
            if self.on_clear != "keep":
                await self._forget(SourceSelector(session_id=self.session_id), self.on_clear)
            await self._kept.clear_session()
            if self.on_clear == "erase":
                await scrub(self.items_db)

    def close(self) -> None:
        """Close the kept items' database (the memory stays open: its owner closes it)."""
        self._kept.close()

    async def _forget(self, source: SourceSelector, how: Removal) -> None:
        self._removing = True
        try:
            with self.memory.within(self.timeout_s):
                await self.memory.forget(source, user_id=self.user_id, erase=how == "erase")
        finally:
            self._removing = False

    def erase_source(self, owner: str, source: SourceSelector) -> int:
        """Erase what ``source`` said from this session's kept items, when ``owner`` is its
        user (the memory calls this in an erasing ``forget``: see the module); how many items
        were removed."""
        if owner != self.user_id or self._removing:
            return 0
        if source.session_id == self.session_id:
            removed = self._kept.erase_all()
        elif source.message_id and source.message_id.startswith(f"{self.session_id}#"):
            position, _, digest = source.message_id[len(self.session_id) + 1 :].partition(":")
            if not position.isdigit() or not digest:
                return 0
            removed = self._kept.erase_item(int(position), digest)
        else:
            return 0
        if removed:
            scrub_now(self.items_db)
        return removed

    async def _read(self, items: list[dict[str, Any]], start: int) -> ReadOutcome:
        """Read the items the session reads (positions from ``start``) as one chat. An item
        memreader refuses is left out with the reason and the rest read again; a refusal that
        names no item has each item read alone, so only the refused ones are left out."""
        outcome = ReadOutcome()
        chosen: list[tuple[int, dict[str, Any]]] = []
        for offset, item in enumerate(items):
            position = start + offset
            why = reading(item, self.roles, read_tools=self.read_tools)
            if why is None:
                chosen.append((position, readable(item, self.session_id, position)))
            else:
                outcome.unread.append(UnreadItem(position, why))
        while chosen:
            try:
                outcome.results.append(await self._add([message for _, message in chosen]))
                break
            except InputError as exc:
                index = exc.message_index if isinstance(exc, InvalidMessageError) else None
                if index is not None and 0 <= index < len(chosen):
                    self._refused(outcome, chosen.pop(index)[0], exc)
                    continue
                if len(chosen) == 1:
                    self._refused(outcome, chosen[0][0], exc)
                    break
                await self._read_alone(chosen, outcome)
                break
        outcome.unread.sort(key=lambda unread: unread.position)
        return outcome

    async def _read_alone(
        self, chosen: list[tuple[int, dict[str, Any]]], outcome: ReadOutcome
    ) -> None:
        """Read each of ``chosen`` alone: one refused leaves the others read."""
        for position, message in chosen:
            try:
                outcome.results.append(await self._add([message]))
            except InputError as exc:
                self._refused(outcome, position, exc)

    async def _add(self, messages: list[dict[str, Any]]) -> AddResult:
        return await self.memory.add(
            messages,
            user_id=self.user_id,
            session_id=self.session_id,
            mode=self.mode,
            type="chat",
            agent_id=self.agent_id,
            task_id=self.task_id,
        )

    def _refused(self, outcome: ReadOutcome, position: int, error: InputError) -> None:
        reason = error.reason[:500]
        _log.warning("session %r: item %d kept, not read: %s", self.session_id, position, reason)
        outcome.unread.append(UnreadItem(position, f"memreader cannot read it: {reason}"))

    def __repr__(self) -> str:
        return f"MemreaderSession(session_id={self.session_id!r}, user_id={self.user_id!r})"
