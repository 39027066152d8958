"""Google ADK: memreader as an ADK memory service (``pip install 'memreader-ai[google-adk]'``).

:class:`MemreaderMemoryService` is a ``google.adk.memory.BaseMemoryService``: give it to a
``Runner(memory_service=...)`` and ADK's ``load_memory`` / ``preload_memory`` tools and
``add_session_to_memory`` read and write memreader. ADK's names map onto memreader's scopes:

- ``user_id`` is the memreader user (the wall between owners);
- ``app_name`` is the agent scope (``agent_id``): an app's memories are its own unless stored
  ``shared``; with ``app_scope=False`` a user's apps share them all;
- a session's ``id`` is the memreader session, each event one message (its ``id`` the message
  id, its timestamp the chat time: :mod:`memreader.integrations.google_adk_events`).

It serves the users its constructor names (``users=["ana"]``), or any user when told so by
name (``users=ANY_USER``); ``apps=`` may also restrict the apps. A call for another user is
refused with :class:`~memreader.errors.ForbiddenUserError`, for another app with
:class:`~memreader.errors.ForbiddenScopeError`. Other bad input is ADK's
``InputValidationError``; an unknown memory id ADK's ``NotFoundError``; a failing store or a
passed deadline memreader's ``StoreError`` / ``DeadlineExceeded``.

>>> from memreader import Memory
>>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
>>> service = MemreaderMemoryService(m, users=["ana"])
>>> import asyncio
>>> asyncio.run(service.search_memory(app_name="chef", user_id="ana", query="tea")).memories
[]
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Collection, Mapping, Sequence
from contextlib import asynccontextmanager
from datetime import datetime
from typing import Any, Literal

from google.adk.errors.input_validation_error import InputValidationError
from google.adk.errors.not_found_error import NotFoundError
from google.adk.events.event import Event
from google.adk.memory import BaseMemoryService
from google.adk.memory.base_memory_service import SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.sessions.session import Session
from typing_extensions import override

from memreader.errors import ForbiddenScopeError, ForbiddenUserError, InputError, UnknownMemoryError
from memreader.front.inputs import check_user
from memreader.integrations.awaited import DEFAULT_TIMEOUT_S, Verbs
from memreader.integrations.google_adk_events import entry_of, event_message
from memreader.modes import ReadMode
from memreader.scopes import check_scope_id
from memreader.stores.paging import MAX_PAGE

__all__ = ["ANY_USER", "MEMORY_TOOLS", "MemreaderMemoryService"]

#: ADK's tools that answer memories: their calls and answers are not read again.
MEMORY_TOOLS = frozenset({"load_memory", "preload_memory"})
#: ``users=ANY_USER``: the service serves every user ADK names (said outright, never a default).
ANY_USER = "*"
_SHOWN = 200  # characters of a refused name echoed in an error


class MemreaderMemoryService(BaseMemoryService):
    """ADK's memory service over memreader (see the module docstring).

    Args:
        memory: a :class:`~memreader.front.memory.Memory` or
            :class:`~memreader.front.async_memory.AsyncMemory` (opened and closed by the caller).
        users: the user ids it serves, or :data:`ANY_USER`.
        apps: the app names it serves (``None``: any).
        app_scope: keep each app's memories in its own agent scope (``False``: shared by the
            user's apps).
        mode: how sessions are read (``fast``, or ``fine`` with the reader's LLM).
        k: how many memories a search answers.
        timeout_s: the longest one call may take (``None``: only the caller's deadline).
        skipped_tools: the tools whose calls and answers are not read (by default ADK's
            memory tools: their answers are memories already).

    Raises:
        InputError: no ``users``, a bad user or app name, ``k`` or timeout; ``memory`` is not
            a Memory or AsyncMemory.
    """

    def __init__(
        self,
        memory: Any,
        *,
        users: Collection[str] | Literal["*"],
        apps: Collection[str] | None = None,
        app_scope: bool = True,
        mode: ReadMode = "fast",
        k: int = 10,
        timeout_s: float | None = DEFAULT_TIMEOUT_S,
        skipped_tools: Collection[str] = MEMORY_TOOLS,
    ) -> None:
        where = "MemreaderMemoryService"
        self._verbs = Verbs(memory, timeout_s=timeout_s, where=where)
        self._users = None if users == ANY_USER else _names(users, f"{where}(users=...)")
        self._apps = None if apps is None else _names(apps, f"{where}(apps=...)")
        self._app_scope = app_scope
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= 100:
            raise InputError(f"{where}(k=...) must be an integer from 1 to 100, got {k!r}")
        self._mode, self._k = mode, k
        if isinstance(skipped_tools, str):
            raise InputError(f"{where}(skipped_tools=...) takes a collection of tool names")
        self._skipped_tools = frozenset(skipped_tools)

    def _scope(self, app_name: Any, user_id: Any) -> tuple[str, dict[str, str | None]]:
        """The memreader user and agent scope of ADK's ``app_name`` and ``user_id``.

        Raises:
            InputValidationError: either is not a non-empty string.
            ForbiddenUserError, ForbiddenScopeError: one this service does not serve.
        """
        if not isinstance(user_id, str) or not user_id.strip() or "\0" in user_id:
            raise InputValidationError(f"user_id must be a non-empty string, got {user_id!r}")
        try:  # an app is an agent scope: its rules (non-empty, at most 200 characters)
            agent_id = check_scope_id(app_name, "app_name")
        except InputError as exc:
            raise InputValidationError(str(exc)) from None
        if agent_id is None:
            raise InputValidationError("app_name must be a non-empty string, got None")
        if self._users is not None and user_id not in self._users:
            raise ForbiddenUserError(
                f"this memory service serves users {sorted(self._users)!r} only; user_id "
                f"{user_id[:_SHOWN]!r} is not allowed"
            )
        if self._apps is not None and app_name not in self._apps:
            raise ForbiddenScopeError(
                f"this memory service serves apps {sorted(self._apps)!r} only; app_name "
                f"{app_name[:_SHOWN]!r} is not allowed"
            )
        return user_id, {"agent_id": agent_id if self._app_scope else None}

    @override
    async def add_session_to_memory(self, session: Session) -> None:
        """Read the events of ``session`` not read before (a session may be added again as it
        grows: the events its memories already name are skipped, expired ones included)."""
        owner, scope = self._scope(session.app_name, session.user_id)
        async with _adk_errors():
            seen = await self._event_ids(owner, session.id)
            fresh = [event for event in session.events if not event.id or event.id not in seen]
            await self._read(fresh, owner, scope, session.id, None)

    @override
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[Event],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Read ``events`` (a delta of a session) into memories; ``custom_metadata`` is kept in
        each memory's ``metadata.info``."""
        owner, scope = self._scope(app_name, user_id)
        async with _adk_errors():
            await self._read(list(events), owner, scope, session_id, custom_metadata)

    @override
    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        """Keep each entry's text as one memory, as written (``Memory.add_memory``), from the
        time of its ``timestamp``; every entry is checked before any is stored."""
        owner, scope = self._scope(app_name, user_id)
        checked = [_entry_memory(entry, index) for index, entry in enumerate(memories)]
        async with _adk_errors():
            for text, valid_from, extra in checked:
                metadata = {**(custom_metadata or {}), **extra}
                await self._verbs.add_memory(
                    text, user_id=owner, valid_from=valid_from, metadata=metadata, **scope
                )

    @override
    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        """The ``k`` best memories of the user (in the app's scope) for ``query``, each an
        entry whose ``custom_metadata`` says where it came from."""
        owner, scope = self._scope(app_name, user_id)
        async with _adk_errors():
            hits = await self._verbs.search(query, user_id=owner, k=self._k, filters=scope)
        return SearchMemoryResponse(memories=[entry_of(hit) for hit in hits])

    @override
    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        """Expire the memory ``memory_id`` (its history stays: ``Memory.delete``).

        Raises:
            NotFoundError: the user has no such memory in the app's scope.
        """
        owner, scope = self._scope(app_name, user_id)
        if not isinstance(memory_id, str) or not memory_id:
            raise InputValidationError(f"delete_memory needs a memory_id, got {memory_id!r}")
        async with _adk_errors():
            if await self._verbs.get(memory_id, user_id=owner, used=False, **scope) is None:
                raise UnknownMemoryError(f"no memory {memory_id[:_SHOWN]!r} in this app's scope")
            await self._verbs.delete(memory_id, user_id=owner)

    async def _read(
        self,
        events: list[Event],
        owner: str,
        scope: dict[str, str | None],
        session_id: str | None,
        metadata: Mapping[str, object] | None,
    ) -> None:
        messages = (event_message(event, self._skipped_tools) for event in events)
        chat = [message for message in messages if message is not None]
        if chat:
            await self._verbs.add(
                chat,
                user_id=owner,
                session_id=session_id,
                mode=self._mode,
                type="chat",
                metadata=dict(metadata) if metadata else None,
                **scope,
            )

    async def _event_ids(self, owner: str, session_id: str) -> set[str]:
        """The ADK event ids the memories of ``session_id`` name already (any status)."""
        seen: set[str] = set()
        cursor: str | None = None
        while True:
            page = await self._verbs.get_all(
                user_id=owner,
                limit=MAX_PAGE,
                cursor=cursor,
                filters={"session_id": session_id, "include_inactive": True},
            )
            for stored in page:
                seen.update(s.message_id for s in stored.item.metadata.sources if s.message_id)
            cursor = page.next_cursor
            if cursor is None:
                return seen


@asynccontextmanager
async def _adk_errors() -> AsyncIterator[None]:
    """memreader's errors as ADK's where ADK has one: an unknown memory is ``NotFoundError``,
    other bad input ``InputValidationError``; walls, store failures and deadlines stay
    memreader's own."""
    try:
        yield
    except (ForbiddenUserError, ForbiddenScopeError):
        raise
    except UnknownMemoryError as exc:
        raise NotFoundError(str(exc)) from exc
    except InputError as exc:
        raise InputValidationError(str(exc)) from exc


def _entry_memory(entry: Any, index: int) -> tuple[str, datetime | None, dict[str, Any]]:
    """The text, time and metadata of memory entry ``index``.

    Raises:
        InputValidationError: it is not a ``MemoryEntry``, has no text or a bad timestamp.
    """
    if not isinstance(entry, MemoryEntry):
        raise InputValidationError(f"memories[{index}] must be a MemoryEntry, got {entry!r}")
    parts = entry.content.parts or []
    text = "\n".join(part.text for part in parts if part.text and not part.thought).strip()
    if not text:
        raise InputValidationError(f"memories[{index}] has no text to keep")
    valid_from = None
    if entry.timestamp:
        try:
            # ADK writes a local time without its zone (memory/_utils.py): read it as local.
            valid_from = datetime.fromisoformat(entry.timestamp).astimezone()
        except ValueError:
            raise InputValidationError(
                f"memories[{index}].timestamp must be ISO 8601, got {entry.timestamp[:_SHOWN]!r}"
            ) from None
    extra = {"author": entry.author} if entry.author else {}
    return text, valid_from, {**entry.custom_metadata, **extra}


def _names(given: Any, where: str) -> frozenset[str]:
    if isinstance(given, str) or not isinstance(given, Collection) or not given:
        raise InputError(f"{where} takes a non-empty collection of names (or ANY_USER for users)")
    return frozenset(check_user(name, where) for name in given)
