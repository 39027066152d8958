"""Finding a LangGraph store's items among a user's memories: one key's memory
(:func:`find_key`), a search under a namespace prefix, ranked by a query or listed newest
first (:func:`search_items`), and the namespaces a user's items are in
(:func:`namespaces_of`). Each is a ``Memory`` call (``get_all``, ``search``) and a check of
what LangGraph put (:mod:`~memreader.integrations.langgraph.records`)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import Any

from langgraph.store.base import Item, SearchOp

from memreader.front.memory import Memory
from memreader.integrations.langgraph.records import (
    SESSION_PREFIX,
    item_of,
    key_task,
    namespace_session,
    stored_entry,
)
from memreader.integrations.langgraph.values import matches
from memreader.stores.checks import MAX_K
from memreader.stores.paging import MAX_PAGE
from memreader.stores.records import StoredMemory

__all__ = ["find_key", "namespaces_of", "search_items"]

logger = logging.getLogger(__name__)

#: The first search of a query asks for this many times the hits wanted: the prefix and the
#: filter are kept afterwards, so some hits are other memories of the user.
_OVERFETCH = 4


def find_key(memory: Memory, owner: str, namespace: Sequence[str], key: str) -> StoredMemory | None:
    """The active memory holding ``key`` of ``namespace`` (the newest, should a failed put
    have left two), or ``None``."""
    filters = {"session_id": namespace_session(namespace), "task_id": key_task(namespace, key)}
    page = memory.get_all(user_id=owner, filters=filters, limit=MAX_PAGE)
    found = [stored for stored in page if _is_key(stored, namespace, key)]
    return max(found, key=lambda stored: stored.recorded_at) if found else None


def _is_key(stored: StoredMemory, namespace: Sequence[str], key: str) -> bool:
    entry = stored_entry(stored)
    return entry is not None and entry["key"] == key and entry["namespace"] == list(namespace)


def _under(entry: dict[str, Any], prefix: Sequence[str]) -> bool:
    return bool(entry["namespace"][: len(prefix)] == list(prefix))


def _store_items(memory: Memory, owner: str) -> Iterator[StoredMemory]:
    """The user's active store items, newest first (a page at a time)."""
    cursor: str | None = None
    while True:
        page = memory.get_all(user_id=owner, limit=MAX_PAGE, cursor=cursor)
        for stored in page:
            session = stored.item.metadata.session_id or ""
            if session.startswith(SESSION_PREFIX) and stored_entry(stored) is not None:
                yield stored
        cursor = page.next_cursor
        if cursor is None:
            return


def search_items(memory: Memory, owners: Sequence[str], op: SearchOp) -> list[Item]:
    """The items of ``owners`` under ``op``'s prefix that pass its filter: ranked by its query
    (best first, with memreader's score; an item put with ``index=False`` is not ranked) or,
    without one, the most recently put first; ``op.offset`` skipped, at most ``op.limit``."""
    wanted = op.offset + op.limit
    if wanted <= 0:
        return []
    found: list[Item] = []
    for owner in owners:
        if op.query:
            found.extend(_ranked(memory, owner, op, wanted))
        else:
            found.extend(_listed(memory, owner, op, wanted))
    if op.query:
        found.sort(key=lambda item: -(getattr(item, "score", 0.0) or 0.0))
    else:
        found.sort(key=lambda item: item.updated_at, reverse=True)
    return found[op.offset : wanted]


def _keeps(entry: dict[str, Any] | None, op: SearchOp) -> bool:
    return (
        entry is not None
        and _under(entry, op.namespace_prefix)
        and matches(entry["value"], op.filter)
    )


def _ranks(entry: dict[str, Any] | None) -> bool:
    """Whether a query ranks the item (not one put with ``index=False``)."""
    return entry is not None and entry.get("index") is not False


def _listed(memory: Memory, owner: str, op: SearchOp, wanted: int) -> list[Item]:
    """The ``wanted`` most recently put items: all are read, since a value put again with
    the same text is its old row stored again, which ``get_all`` lists by its first time."""
    kept = [
        item_of(s, ranked=True) for s in _store_items(memory, owner) if _keeps(stored_entry(s), op)
    ]
    kept.sort(key=lambda item: item.updated_at, reverse=True)
    return kept[:wanted]


def _ranked(memory: Memory, owner: str, op: SearchOp, wanted: int) -> list[Item]:
    """The ``wanted`` best items for the query: memreader's hits with the others passed over,
    asked again for more while too few are kept and more exist (up to ``MAX_K`` hits)."""
    k = min(MAX_K, max(wanted * _OVERFETCH, 20))
    while True:
        hits = memory.search(str(op.query), user_id=owner, k=k)
        kept = [
            item_of(hit.memory, hit.score.final, ranked=True)
            for hit in hits
            if _keeps(entry := stored_entry(hit.memory), op) and _ranks(entry)
        ]
        if len(kept) >= wanted or len(hits) < k:
            return kept[:wanted]
        if k == MAX_K:
            logger.warning(
                "search of %r: %d of the %d items asked for are among user %r's %d best "
                "memories; the rest rank lower and are not returned",
                list(op.namespace_prefix),
                len(kept),
                wanted,
                owner,
                MAX_K,
            )
            return kept
        k = min(MAX_K, k * 4)


def namespaces_of(memory: Memory, owner: str) -> set[tuple[str, ...]]:
    """Every namespace ``owner`` has an item in."""
    found = set()
    for stored in _store_items(memory, owner):
        entry = stored_entry(stored)
        if entry is not None:
            found.add(tuple(entry["namespace"]))
    return found
