"""Direct writes, the same in every store: a memory given as text (:func:`add_memory`),
replaced by a new version (:func:`update`) or deleted (:func:`delete`), and what a source said
forgotten (:func:`forget`), each a method of :class:`~memreader.stores.base.MemoryStore`;
``erase=True`` makes a delete or
a forget an erasure, which returns an :class:`~memreader.stores.erasure.EraseReceipt`.

``add_memory`` and ``update`` build a :class:`~memreader.items.TextualMemoryItem` and write it
through :meth:`~memreader.stores.base.MemoryStore.write`, so a direct write is embedded,
deduplicated, categorised (the store's keeper) and traced exactly as a read item is. ``update``
is a reconcile ``UPDATE`` (the old row ``superseded``, never edited); only ``delete`` and
``forget`` need SQL of their own (each backend's ``_delete`` and ``_forget``).

An id that the owner does not have (unknown, or another owner's: the two are not told apart)
raises :class:`UnknownMemoryError`, never a silent no-op.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, overload

from pydantic import ValidationError

from memreader.errors import ConflictError, InputError, UnknownMemoryError
from memreader.items import MEMORY_TYPES, MemoryType, Reconciliation, TextualMemoryItem
from memreader.items import TextualMemoryItemMetadata as Metadata
from memreader.scopes import info_scope, scope_columns, scoped_hash
from memreader.stores.change_rules import reconcile_exactly
from memreader.stores.checks import SourceSelector, check_memory_id, check_owner, moment
from memreader.stores.erasure import EraseReceipt
from memreader.stores.events import WriteEvent
from memreader.stores.records import StoredMemory
from memreader.stores.write_decisions import content_hash, selector_key

if TYPE_CHECKING:
    from memreader.stores.contract import StoreBackend

__all__ = [
    "DIRECT_SESSION",
    "UnknownMemoryError",
    "add_memory",
    "delete",
    "direct_id",
    "forget",
    "update",
]

#: The session a direct write is filed under when it names none (``forget`` of
#: ``SourceSelector(session_id="direct")`` forgets them all).
DIRECT_SESSION = "direct"

# Namespace of direct-write ids: uuid5 over what makes the memory (owner, session, type, text).
_NAMESPACE = uuid.UUID("5b0c3f8e-2d47-4c1e-9a55-6f1d2e7a9c31")


def direct_id(*parts: object) -> str:
    """The deterministic id of a direct write made of ``parts``: the same memory written twice
    gets one id (the second write is then ``NONE``).

    >>> direct_id("u1", "s", "LongTermMemory", "x") == direct_id("u1", "s", "LongTermMemory", "x")
    True
    """
    return str(uuid.uuid5(_NAMESPACE, json.dumps(parts, ensure_ascii=False, default=str)))


def _text(text: Any) -> str:
    if not isinstance(text, str) or not text.strip():
        raise InputError(f"a memory's text must be a non-empty string, got {text!r}")
    return text


def _metadata(fields: dict[str, Any]) -> Metadata:
    try:
        return Metadata(**fields)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(map(str, e['loc'])) or 'metadata'}: {e['msg']}" for e in exc.errors()
        )
        raise InputError(f"invalid memory: {problems}") from exc


def add_memory(
    store: StoreBackend,
    text: str,
    *,
    user_id: str,
    session_id: str | None = None,
    memory_type: str = MemoryType.LONG_TERM.value,
    importance: float | None = None,
    valid_from: datetime | None = None,
    metadata: Mapping[str, Any] | None = None,
    tags: Sequence[str] | None = None,
    now: datetime | None = None,
    agent_id: str | None = None,
    task_id: str | None = None,
    visibility: str | None = None,
) -> WriteEvent:
    """Store ``text`` as one memory of ``user_id`` and return what the write did (``ADD``;
    ``REINFORCE`` when the owner has it already, from another session; ``NONE`` when this
    very memory is stored).

    ``session_id`` defaults to :data:`DIRECT_SESSION`; ``memory_type`` is one of
    :data:`~memreader.items.MEMORY_TYPES`; ``importance`` is in [0, 1]; ``valid_from``
    (timezone-aware) is when the fact began to hold; ``metadata`` is kept as the item's
    ``info``; ``agent_id``, ``task_id`` and ``visibility`` are its scope
    (:mod:`memreader.scopes`). Example::

        event = store.add_memory("Ana is vegetarian", user_id="u1", importance=0.9)
        store.get(event.memory_id, user_id="u1").item.memory  # 'Ana is vegetarian'

    Raises:
        InputError: an argument is invalid (the message names it).
        StoreError: the store failed.
    """
    owner, body = check_owner(user_id), _text(text)
    session = DIRECT_SESSION if session_id is None else session_id
    if memory_type not in MEMORY_TYPES:
        raise InputError(f"memory_type must be one of {', '.join(MEMORY_TYPES)}")
    if metadata is not None and not isinstance(metadata, Mapping):
        raise InputError(f"metadata must be a mapping, got {type(metadata).__name__}")
    at = moment(now)
    given = {"agent_id": agent_id, "task_id": task_id, "visibility": visibility}
    scope = info_scope(given, where="")
    meta = _metadata(
        {
            **scope,
            "user_id": owner,
            "session_id": session,
            "memory_type": memory_type,
            "importance": importance,
            "importance_reason": None if importance is None else "given by the caller",
            "valid_from": valid_from,
            "info": dict(metadata or {}),
            "tags": list(tags or []),
            "created_at": at,
        }
    )
    digest = scoped_hash(content_hash(body), scope_columns(meta))
    new_id = direct_id(owner, session, memory_type, digest)
    item = TextualMemoryItem(id=new_id, memory=body, metadata=meta)
    return store.write([item], user_id=owner, now=at)[0]


def update(
    store: StoreBackend,
    memory_id: str,
    text: str,
    *,
    user_id: str,
    reason: str | None = None,
    now: datetime | None = None,
) -> WriteEvent:
    """Replace the active memory ``memory_id`` of ``user_id`` with a new version holding
    ``text``: the new memory (a new id, the event's ``memory_id``) keeps the old one's type,
    sources, metadata and importance; the old row becomes ``superseded`` (``superseded_by``
    the new one) and both get an ``UPDATE`` history row. Nothing is edited in place.
    ``text`` equal to the memory's own (once normalised) changes nothing (``NONE``).
    Example::

        new = store.update(event.memory_id, "Ana is vegan", user_id="u1")
        store.get(event.memory_id, user_id="u1").status  # 'superseded'

    Concurrent updates of one memory give it one successor: the first to commit wins,
    each other raises :class:`~memreader.errors.ConflictError` (nothing of it stored). The
    same update made again once applied (a retry whose answer was lost) is ``NONE``,
    naming the version it made.

    Raises:
        UnknownMemoryError: ``user_id`` has no memory ``memory_id``.
        ConflictError: another change superseded (or expired) the memory first.
        InputError: the memory is expired, or ``text`` is empty or already another active
            memory of the owner (delete this one instead).
        StoreError: the store failed.
    """
    owner, body = check_owner(user_id), _text(text)
    old = _stored(store, memory_id, owner)
    digest = scoped_hash(content_hash(body), scope_columns(old.item.metadata))
    new_id = direct_id(owner, old.id, digest)
    if old.status != "active":
        if old.superseded_by == new_id:  # this very update, applied before: a retry
            why = f"this update of {old.id} was applied already"
            return WriteEvent("NONE", new_id, new_id, why, old.id)
        if old.superseded_by:
            raise ConflictError(
                f"memory {memory_id!r} was superseded by {old.superseded_by!r} (another "
                "change); nothing was stored: read that version and update it instead"
            )
        raise InputError(f"memory {memory_id!r} is {old.status}; update an active one")
    if digest == old.content_hash:
        return WriteEvent("NONE", old.id, old.id, "the text is unchanged")
    why = reason or "updated by the caller"
    meta = old.item.metadata.model_copy(
        update={
            "embedding": None,
            "embedding_model": None,
            "created_at": moment(now),
            "reconcile": Reconciliation(event="UPDATE", target_id=old.id, reason=why),
        }
    )
    item = TextualMemoryItem(id=new_id, memory=body, metadata=meta)
    found = store.lookup([item], user_id=owner)[0]
    if found is not None and found.event == "REINFORCE":
        raise InputError(
            f"{body!r} is already stored as memory {found.memory_id!r}; delete "
            f"{memory_id!r} instead of updating it"
        )
    # The old version may change between the look above and the write's transaction (an
    # update or a delete racing this one): inside it, this one must supersede the old
    # version or fail, never be added beside it (one successor per version).
    with reconcile_exactly(new_id):
        return store.write([item], user_id=owner, now=now)[0]


@overload
def delete(
    store: StoreBackend,
    memory_id: str,
    *,
    user_id: str,
    erase: Literal[False] = False,
    now: datetime | None = None,
) -> WriteEvent: ...


@overload
def delete(
    store: StoreBackend,
    memory_id: str,
    *,
    user_id: str,
    erase: Literal[True],
    now: datetime | None = None,
) -> EraseReceipt: ...


@overload
def delete(
    store: StoreBackend, memory_id: str, *, user_id: str, erase: bool, now: datetime | None = None
) -> WriteEvent | EraseReceipt: ...


def delete(
    store: StoreBackend,
    memory_id: str,
    *,
    user_id: str,
    erase: bool = False,
    now: datetime | None = None,
) -> WriteEvent | EraseReceipt:
    """Delete the memory ``memory_id`` of ``user_id``: it becomes ``expired`` now (event
    ``EXPIRE``, a history row; its row stays, as every retired memory's does; one already
    retired: ``NONE``); the lines of its category summaries that cite it are taken out.

    ``erase=True`` removes it from every place its text lives instead
    (:mod:`memreader.stores.erasure`: its row, text index entry, passages, history,
    category links and use record; its text from its neighbours' history, the sources its
    later versions inherited from it and its categories' summaries; then the backend's
    file-level steps) in one transaction, and returns the
    :class:`~memreader.stores.erasure.EraseReceipt` (its event: ``EXPIRE``, reason
    ``erased: ...``): **irreversible**, for erasure requests. A ``superseded_by`` naming
    it stays. Example::

        store.delete(event.memory_id, user_id="u1")  # expired, history kept
        receipt = store.delete(event.memory_id, user_id="u1", erase=True)  # gone
        receipt.removed  # {'memories': 1, 'text_index': 1, 'history': 2, ...}

    Raises:
        UnknownMemoryError: ``user_id`` has no memory ``memory_id``.
        InputError: ``erase`` is not true or false.
        StoreError: the store failed.
    """
    if not isinstance(erase, bool):
        raise InputError(f"erase must be true or false, got {erase!r}")
    owner, checked = check_owner(user_id), check_memory_id(memory_id)
    done = store._delete(checked, owner, erase=erase, now=moment(now))
    if done is None:
        raise _unknown(checked, owner)
    event, tally = done
    store._after_change([event], [])
    if not erase:
        return event
    return tally.receipt(owner, f"memory:{checked}", [event], store.erase_residue)


def forget(
    store: StoreBackend,
    source: SourceSelector,
    *,
    user_id: str,
    now: datetime | None = None,
    erase: bool = False,
) -> EraseReceipt:
    """Forget what ``source`` said (one transaction): memories supported only by it
    become ``expired`` (their rows and history stay); memories also supported by other
    sources lose its sources (the messages it said leave their provenance) and, when they
    were filed under its session, are filed under one they still have.

    ``erase=True`` makes it an erasure: the memories only ``source`` supports, whatever
    their status, are removed from every place their text lives, as
    :meth:`~memreader.stores.base.MemoryStore.delete` with ``erase`` removes
    one (:mod:`memreader.stores.erasure`); **irreversible**. Example::

        receipt = store.forget(SourceSelector(session_id="s1"), user_id="u1", erase=True)
        receipt.erased, receipt.removed  # ('m1',), {'memories': 1, 'history': 2, ...}

    Returns the :class:`~memreader.stores.erasure.EraseReceipt` (it iterates over the
    events, one per memory changed).

    Raises:
        InputError: ``source`` is not a :class:`SourceSelector`, ``erase`` not a bool.
        StoreError: the store failed.
    """
    if not isinstance(source, SourceSelector):
        raise InputError(f"source must be a SourceSelector, got {type(source).__name__}")
    if not isinstance(erase, bool):
        raise InputError(f"erase must be true or false, got {erase!r}")
    owner = check_owner(user_id)
    events, tally = store._forget(source, owner, now, erase)
    store._after_change(events, [])
    return tally.receipt(owner, selector_key(source), events, store.erase_residue)


def _stored(store: StoreBackend, memory_id: str, owner: str) -> StoredMemory:
    stored = store.get(memory_id, user_id=owner)
    if stored is None:
        raise _unknown(memory_id, owner)
    return stored


def _unknown(memory_id: str, owner: str) -> UnknownMemoryError:
    return UnknownMemoryError(f"user {owner!r} has no memory {memory_id!r}")
