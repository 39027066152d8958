"""Change rules, shared by both stores: what a write transaction changes once
:mod:`~memreader.stores.write_decisions` has decided what each item is. An item ready to write
(:class:`Prepared`), what one item's decision does to the rows (:meth:`ChangeRules.apply`), how a
reinforced memory's supports change, and what removing a source does to each memory it
supports (:meth:`ChangeRules.drop_source`). Each store's ``Changes`` subclass holds the SQL:
the rows read and the rows written.
"""

from __future__ import annotations

import json
from abc import abstractmethod
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Generic, TypeVar

from memreader.errors import ConflictError
from memreader.items import TextualMemoryItem
from memreader.modes import is_verbatim
from memreader.stores.erase_rules import EraseSteps, erase_one, scrub, with_session
from memreader.stores.erasure import session_after
from memreader.stores.events import EventKind, WriteEvent
from memreader.stores.records import MemoryStatus
from memreader.stores.write_decisions import (
    Decision,
    Found,
    Support,
    already_supported,
    decide,
    drop_key,
    load_supports,
    memory_hash,
    merge_supports,
    sources_of,
    supports_of,
    valid_from_of,
)

__all__ = [
    "ERASED_REASON",
    "ChangeRules",
    "Prepared",
    "item_json",
    "prepared",
    "reconcile_exactly",
    "with_sources",
]

#: Ids of the items whose reconcile decision must apply, in this thread's write: see
#: :func:`reconcile_exactly`.
_EXACT: ContextVar[frozenset[str]] = ContextVar("memreader_exact", default=frozenset())


@contextmanager
def reconcile_exactly(item_id: str) -> Iterator[None]:
    """In the block, the write of item ``item_id`` applies its reconcile decision or fails
    with :class:`~memreader.errors.ConflictError` (rolled back), instead of falling back to
    the dedup rules (an ``ADD`` beside a target retired meanwhile). A direct update needs it:
    decided on the version it read, it must supersede that version, which the write's
    transaction (the owner's lock) sees as it is.

    >>> with reconcile_exactly("m2"):
    ...     "m2" in _EXACT.get()
    True
    """
    token = _EXACT.set(_EXACT.get() | {item_id})
    try:
        yield
    finally:
        _EXACT.reset(token)


#: The form a store compares vectors in (a unit numpy vector, pgvector text).
V = TypeVar("V")


@dataclass(frozen=True)
class Prepared(Generic[V]):
    """One item ready to write: its hash, supports, time and vector (in the store's form;
    ``None`` without one)."""

    index: int
    item: TextualMemoryItem
    content_hash: str
    supports: list[Support]
    valid_from: datetime | None
    vector: V | None

    @property
    def user_id(self) -> str:
        """The item's owner."""
        return self.item.metadata.user_id

    @property
    def model(self) -> str:
        """The item's embedding model ("" when unknown)."""
        return self.item.metadata.embedding_model or ""

    @property
    def verbatim(self) -> bool:
        """Whether the item's text is its messages as read (a fast-mode window or a fine-mode
        fallback: :func:`~memreader.modes.is_verbatim`). Such an item is deduplicated by its
        exact text only, never reinforces a near duplicate: two windows of small talk can
        embed within 0.95 of each other while one of them holds a fact the other lacks, and a
        reinforced item's text is not stored, so search would never find that fact."""
        return is_verbatim(self.item.metadata.tags)


def prepared(
    index: int, item: TextualMemoryItem, replace_key: str | None, vector: V | None
) -> Prepared[V]:
    """Item ``index`` ready to write (``replace_key`` joins its supports' keys), its vector
    ``vector``."""
    return Prepared(
        index=index,
        item=item,
        content_hash=memory_hash(item),
        supports=supports_of(item, replace_key),
        valid_from=valid_from_of(item),
        vector=vector,
    )


def item_json(item: TextualMemoryItem, supports: Sequence[Support]) -> str:
    """The item as stored: its sources those of ``supports``, its vector left to its column."""
    data = item.model_dump(mode="json")
    data["metadata"]["embedding"] = None
    data["metadata"]["sources"] = sources_of(supports)
    return json.dumps(data, ensure_ascii=False)


def with_sources(item_text: str, supports: Sequence[Support]) -> str:
    """A stored item (``item_text``) with its sources those of ``supports``."""
    data = json.loads(item_text)
    data["metadata"]["sources"] = sources_of(supports)
    return json.dumps(data, ensure_ascii=False)


#: The reason of an erasure's event (it starts with ``erased``).
ERASED_REASON = (
    "erased: its row, history, text index entry, passages, links and use record were removed, "
    "and its text from its neighbours' history, its successors' sources and its categories' "
    "summaries"
)


class ChangeRules(EraseSteps, Generic[V]):
    """The decisions of one write transaction at time ``now``; subclasses read and write the
    rows. ``touched``: the rowids this transaction wrote or confirmed (a source's removal
    passes them by)."""

    now: datetime
    threshold: float
    replace_key: str | None
    #: Writing one part of a source (``write_part``): a reinforced memory keeps the supports
    #: ``replace_key`` gave it, since an earlier part of the same run may have written them.
    in_parts: bool
    touched: set[int]

    def apply(self, p: Prepared[V]) -> WriteEvent:
        """Write one item: ``NONE``, ``REINFORCE`` or ``ADD``, or the ``UPDATE`` or
        ``SUPERSEDE`` of its reconcile decision (see :func:`decide`)."""
        meta = p.item.metadata
        by_id, by_hash = self._same(p)
        decision = decide(
            p.index,
            p.item.id,
            p.content_hash,
            same_id=Found(p.item.id, by_id[1], by_id[2]) if by_id else None,
            same_hash=Found(by_hash[1], p.content_hash, by_hash[2]) if by_hash else None,
            nearest=self._nearest(p) if by_hash is None and not p.verbatim else None,
            threshold=self.threshold,
            reconcile=meta.reconcile,
            target=self._target(p, meta.reconcile.target_id) if meta.reconcile else None,
        )
        if (
            meta.reconcile is not None
            and decision.previous_id is None
            and decision.event != "NONE"
            and p.item.id in _EXACT.get()
        ):
            raise ConflictError(
                f"memory {meta.reconcile.target_id!r} changed before this change of it was "
                f"written ({decision.reason}); nothing was stored: read it again"
            )
        own_row = int(by_id[0]) if by_id is not None else None
        if decision.event == "NONE":
            assert own_row is not None  # NONE: the item's own row is stored and active
            self.touched.add(own_row)
        elif decision.event == "REINFORCE":
            # Only new evidence reinforces: the same memory read again from sources it already
            # has (the same chat read twice) changes nothing, not even its history.
            if not self._reinforce(decision.memory_id, p, decision.reason, True):
                why = f"{decision.reason}; it already has these sources"
                return WriteEvent("NONE", decision.memory_id, p.item.id, why)
        elif decision.previous_id is not None:
            self._replace(p, decision, rowid=own_row if decision.reactivate else None)
            return WriteEvent(
                decision.event, p.item.id, p.item.id, decision.reason, decision.previous_id
            )
        elif decision.reactivate:
            self._store(p, decision.reason, rowid=own_row)
        else:
            self._store(p, decision.reason, rowid=None)
        return WriteEvent(decision.event, decision.memory_id, p.item.id, decision.reason)

    def reinforced_supports(
        self, rowid: int, supports_text: str, p: Prepared[V], once: bool
    ) -> list[Support] | None:
        """The supports of the stored memory ``rowid`` (``supports_text``) once ``p``
        reinforces it; ``None`` when ``once`` and it has them all (nothing changes)."""
        supports = load_supports(supports_text)
        if once and already_supported(supports, p.supports):
            self.touched.add(rowid)
            return None
        if self.replace_key is not None and not self.in_parts and rowid not in self.touched:
            # The source is being rewritten: what it said before is replaced by what it says now.
            supports, _ = drop_key(supports, self.replace_key)
        return merge_supports(supports, p.supports)

    def drop_source(
        self,
        owner: str,
        key: str,
        *,
        retire_as: MemoryStatus,
        event: EventKind,
        reason: str,
        erase: bool = False,
    ) -> list[WriteEvent]:
        """Remove the supports ``key`` names from the active memories of ``owner`` not touched
        in this transaction: those left with none become ``retire_as`` (``event``), the others
        lose those sources (``UPDATE``; filed under a session they still have when theirs was
        ``key``'s). With ``erase``, retired memories are walked too, and those left with none
        are erased (:func:`~memreader.stores.erase_rules.erase_one`)."""
        events: list[WriteEvent] = []
        for rowid, memory_id, memory, supports_text, item_text in self._keyed(owner, key, erase):
            if rowid in self.touched:
                continue
            if erase:  # an erasure earlier in this loop may have stripped this row's sources
                fresh = self._successor(owner, memory_id)
                if fresh is None:
                    continue
                supports_text, item_text = fresh[1], fresh[2]
            kept, dropped = drop_key(load_supports(supports_text), key)
            if kept:
                why = f"{reason}; still supported by {len(kept)} other source(s)"
                self._keep(rowid, item_text, kept)
                self.history(owner, memory_id, "UPDATE", memory, memory, why, dropped)
                self.tally.rewritten["sources"] += len(dropped)
                self.tally.reduced.append(memory_id)
                events.append(WriteEvent("UPDATE", memory_id, "", why, user_id=owner))
                continue
            if erase:
                erase_one(self, rowid, owner, memory_id)
                why = f"erased: {reason}, its only source"
                events.append(WriteEvent("EXPIRE", memory_id, "", why, user_id=owner))
                continue
            self._retire(rowid, retire_as)
            scrub(self, owner, memory_id, memory)
            self.history(owner, memory_id, event, memory, None, reason, dropped)
            self.tally.expired.append(memory_id)
            events.append(WriteEvent(event, memory_id, "", reason, user_id=owner))
        return events

    def _keep(self, rowid: int, item_text: str, kept: list[Support]) -> None:
        """The memory ``rowid`` keeps only ``kept``, filed under a session they name."""
        session = json.loads(item_text)["metadata"]["session_id"]
        moved = session_after(session, kept)
        if moved != session:
            item_text = with_session(item_text, moved)
            self._set_session(rowid, moved)
            self.tally.rewritten["session_moved"] += 1
        self._update_supports(rowid, item_text, kept)

    def supersede_from(self, owner: str, key: str) -> list[WriteEvent]:
        """:meth:`drop_source` for a source written again (``replaces``, ``retire_unseen``):
        a memory left with no support is ``superseded``."""
        reason = f"{key} was written again without this memory"
        return self.drop_source(
            owner, key, retire_as="superseded", event="SUPERSEDE", reason=reason
        )

    def expire_from(self, owner: str, key: str, *, erase: bool = False) -> list[WriteEvent]:
        """:meth:`drop_source` for a forgotten source: a memory left with none is ``expired``
        (with ``erase``: erased)."""
        reason = f"{key} was forgotten"
        return self.drop_source(
            owner, key, retire_as="expired", event="EXPIRE", reason=reason, erase=erase
        )

    def delete_one(
        self, owner: str, memory_id: str, *, erase: bool, reason: str = "deleted by the caller"
    ) -> WriteEvent | None:
        """A direct delete: ``owner``'s memory ``memory_id`` becomes ``expired`` (``EXPIRE``,
        for ``reason``; ``NONE`` when already retired), or with ``erase`` it is removed from
        every place its text lives (:func:`~memreader.stores.erase_rules.erase_one`);
        ``None`` when ``owner`` has no such memory."""
        row = self._one(owner, memory_id)
        if row is None:
            return None
        rowid, status, memory, supports_text = row
        if erase:
            erase_one(self, rowid, owner, memory_id)
            return WriteEvent("EXPIRE", memory_id, "", ERASED_REASON, user_id=owner)
        if status != "active":
            return WriteEvent("NONE", memory_id, "", f"already {status}", user_id=owner)
        self._retire(rowid, "expired")
        scrub(self, owner, memory_id, memory)
        self.tally.expired.append(memory_id)
        supports = load_supports(supports_text)
        self.history(owner, memory_id, "EXPIRE", memory, None, reason, supports)
        return WriteEvent("EXPIRE", memory_id, "", reason, user_id=owner)

    @abstractmethod
    def _one(self, owner: str, memory_id: str) -> tuple[Any, ...] | None:
        """``owner``'s memory ``memory_id`` (rowid, status, memory, supports), if stored."""

    @abstractmethod
    def _same(self, p: Prepared[V]) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]:
        """The row with ``p``'s id (rowid, content hash, status) and the active row of its
        owner, type and hash (rowid, id, status), each ``None`` when not stored."""

    @abstractmethod
    def _nearest(self, p: Prepared[V]) -> tuple[str, float] | None:
        """The active memory most similar to ``p`` (id, cosine), if any."""

    @abstractmethod
    def _target(self, p: Prepared[V], memory_id: str | None) -> Found | None:
        """The memory ``memory_id`` of ``p``'s owner and scope a reconcile decision names, if
        stored (one of another scope is not: a task never retires another task's memory)."""

    @abstractmethod
    def _replace(self, p: Prepared[V], decision: Decision, *, rowid: int | None) -> None:
        """Apply a reconcile ``UPDATE`` or ``SUPERSEDE``: store the item, retire its target."""

    @abstractmethod
    def _store(self, p: Prepared[V], reason: str, *, rowid: int | None) -> None:
        """Store ``p`` as a new row (``rowid`` ``None``) or over its retired row (``ADD``)."""

    @abstractmethod
    def _reinforce(self, memory_id: str, p: Prepared[V], reason: str, once: bool) -> bool:
        """Reinforce ``memory_id`` with ``p``'s sources (see :meth:`reinforced_supports`);
        ``False`` when nothing changed."""

    @abstractmethod
    def _keyed(self, owner: str, key: str, every: bool = False) -> list[tuple[Any, ...]]:
        """``owner``'s active memories under ``key`` (``every``: whatever their status), by
        rowid: (rowid, id, memory, supports, item)."""

    @abstractmethod
    def _set_session(self, rowid: int, session_id: str) -> None:
        """File the memory ``rowid`` under ``session_id`` (its column; the caller writes its
        item)."""

    @abstractmethod
    def _retire(self, rowid: int, status: MemoryStatus) -> None:
        """Retire the memory ``rowid`` as ``status`` now."""

    @abstractmethod
    def history(
        self,
        owner: str,
        memory_id: str,
        event: EventKind,
        old: str | None,
        new: str | None,
        reason: str,
        supports: Sequence[Support],
    ) -> None:
        """Record one change."""
