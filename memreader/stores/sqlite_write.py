"""The changes of the embedded store, applied inside one open write transaction: one item's
decision (:meth:`Changes.apply`), and a source's removal (:meth:`Changes.drop_source`, for
``forget`` and ``replaces``). Every change writes its history row and bumps its owner's version.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from memreader.items import TextualMemoryItem
from memreader.stores.base import MemoryStatus
from memreader.stores.decisions import (
    Decision,
    Found,
    Support,
    already_supported,
    content_hash,
    decide,
    drop_key,
    dump_supports,
    keys_of,
    load_supports,
    merge_supports,
    sources_of,
    supports_of,
    valid_from_of,
)
from memreader.stores.events import EventKind, WriteEvent
from memreader.stores.sqlite_schema import iso, parse_time
from memreader.stores.vectors import OwnerVectors, PendingVectors, to_blob, unit

__all__ = ["Changes", "Prepared", "bump_versions", "item_json", "prepare"]


@dataclass(frozen=True)
class Prepared:
    """One item ready to write: its hash, supports, time and unit vector."""

    index: int
    item: TextualMemoryItem
    content_hash: str
    supports: list[Support]
    valid_from: datetime | None
    vector: np.ndarray | None

    @property
    def user_id(self) -> str:
        """The item's owner."""
        return self.item.metadata.user_id

    @property
    def model(self) -> str:
        """The item's embedding model ("" when unknown)."""
        return self.item.metadata.embedding_model or ""


def prepare(index: int, item: TextualMemoryItem, replace_key: str | None) -> Prepared:
    """Item ``index`` ready to write (``replace_key`` joins its supports' keys)."""
    vector = item.metadata.embedding
    return Prepared(
        index=index,
        item=item,
        content_hash=content_hash(item.memory),
        supports=supports_of(item, replace_key),
        valid_from=valid_from_of(item),
        vector=unit(vector) if vector else None,
    )


def item_json(item: TextualMemoryItem, supports: Sequence[Support]) -> str:
    """The item as stored: its sources those of ``supports``, its vector left to the blob."""
    data = item.model_dump(mode="json")
    data["metadata"]["embedding"] = None
    data["metadata"]["sources"] = sources_of(supports)
    return json.dumps(data, ensure_ascii=False)


@dataclass
class Changes:
    """The changes of one transaction on ``conn`` at time ``now``."""

    conn: sqlite3.Connection
    now: datetime
    vectors: Callable[[str], OwnerVectors]
    threshold: float
    replace_key: str | None = None
    #: Writing one part of a source (``write_part``): a reinforced memory keeps the supports
    #: ``replace_key`` gave it, since an earlier part of the same run may have written them.
    in_parts: bool = False
    touched: set[int] = field(default_factory=set)
    owners: set[str] = field(default_factory=set)
    # Vectors added in this transaction (not in the cached matrix yet).
    _pending: PendingVectors = field(default_factory=PendingVectors)
    # The items this transaction will apply (by index), and the stored rows nearest to them.
    _upcoming: dict[int, Prepared] = field(default_factory=dict)
    _stored_best: dict[int, tuple[int, float] | None] = field(default_factory=dict)
    # Memories a reconcile decision retired in this transaction (their pending vectors stay).
    _retired: set[str] = field(default_factory=set)

    def expect(self, prepared: Sequence[Prepared]) -> None:
        """The items :meth:`apply` will be given: their near duplicates among the stored
        memories are then found in one matrix product per owner, type and model (computed
        when the first of them needs it), rather than one pass over the matrix per item."""
        self._upcoming = {p.index: p for p in prepared}

    def apply(self, p: Prepared) -> WriteEvent:
        """Write one item: ``NONE``, ``REINFORCE`` or ``ADD``, or the ``UPDATE`` or
        ``SUPERSEDE`` of its reconcile decision (see :func:`decide`)."""
        meta = p.item.metadata
        by_id = self.conn.execute(
            "SELECT rowid, content_hash, status FROM memories WHERE user_id = ? AND id = ?",
            (meta.user_id, p.item.id),
        ).fetchone()
        by_hash = self.conn.execute(
            "SELECT rowid, id, status FROM memories WHERE user_id = ? AND memory_type = ? "
            "AND content_hash = ? AND status = 'active'",
            (meta.user_id, meta.memory_type.value, p.content_hash),
        ).fetchone()
        decision = decide(
            p.index,
            p.item.id,
            p.content_hash,
            same_id=Found(p.item.id, by_id[1], by_id[2]) if by_id else None,
            same_hash=Found(by_hash[1], p.content_hash, by_hash[2]) if by_hash else None,
            nearest=self._nearest(p) if by_hash is None else None,
            threshold=self.threshold,
            reconcile=meta.reconcile,
            target=self._target(meta.user_id, meta.reconcile.target_id) if meta.reconcile else None,
        )
        if decision.event == "NONE":
            self.touched.add(by_id[0])
        elif decision.event == "REINFORCE":
            if not self._reinforce(decision.memory_id, p, decision.reason, decision.reconciled):
                why = f"{decision.reason}; it already has these sources"
                return WriteEvent("NONE", decision.memory_id, p.item.id, why)
        elif decision.previous_id is not None:
            self._replace(p, decision, rowid=by_id[0] if decision.reactivate else None)
            return WriteEvent(
                decision.event, p.item.id, p.item.id, decision.reason, decision.previous_id
            )
        elif decision.reactivate:
            self._store(p, decision.reason, rowid=by_id[0])
        else:
            self._store(p, decision.reason, rowid=None)
        return WriteEvent(decision.event, decision.memory_id, p.item.id, decision.reason)

    def _nearest(self, p: Prepared) -> tuple[str, float] | None:
        if p.vector is None:
            return None
        meta = p.item.metadata
        best: tuple[str, float] | None = None
        stored = self._stored_nearest(p, p.vector)
        if stored is not None:
            row = self.conn.execute(
                "SELECT id FROM memories WHERE rowid = ? AND status = 'active'", (stored[0],)
            ).fetchone()
            best = (row[0], stored[1]) if row else None
        pending = self._pending.nearest((p.user_id, meta.memory_type.value, p.model), p.vector)
        if pending is not None and pending[0] in self._retired:
            pending = None
        if pending is not None and (best is None or pending[1] > best[1]):
            best = pending
        return best

    def _stored_nearest(self, p: Prepared, vector: np.ndarray) -> tuple[int, float] | None:
        """The active stored row most similar to ``p`` of its type and model (rowid, cosine),
        computed with the expected items of its kind that come after it."""
        if p.index not in self._stored_best:
            kind = (p.user_id, p.item.metadata.memory_type.value, p.model, len(vector))
            batch = [
                q
                for q in self._upcoming.values()
                if q.index > p.index
                and q.vector is not None
                and q.index not in self._stored_best
                and (q.user_id, q.item.metadata.memory_type.value, q.model, len(q.vector)) == kind
            ]
            batch.insert(0, p)
            group = self.vectors(p.user_id).groups.get(len(vector))
            found: list[tuple[int, float] | None] = [None] * len(batch)
            if group is not None:
                keep = group.mask(types=[kind[1]], model=p.model)
                queries = np.stack([vector, *(q.vector for q in batch[1:] if q.vector is not None)])
                found = group.best_of(queries, keep)
            self._stored_best.update(zip((q.index for q in batch), found, strict=True))
        return self._stored_best[p.index]

    def _target(self, owner: str, memory_id: str | None) -> Found | None:
        """The memory ``memory_id`` of ``owner`` a reconcile decision names, if stored."""
        row = self.conn.execute(
            "SELECT content_hash, status FROM memories WHERE user_id = ? AND id = ?",
            (owner, memory_id),
        ).fetchone()
        return Found(str(memory_id), row[0], row[1]) if row and memory_id else None

    def _replace(self, p: Prepared, decision: Decision, *, rowid: int | None) -> None:
        """Apply a reconcile ``UPDATE`` or ``SUPERSEDE``: store the item, retire its target."""
        owner, target = p.user_id, decision.previous_id
        old_rowid, old_text, supports_text, old_from = self.conn.execute(
            "SELECT rowid, memory, supports, valid_from FROM memories WHERE user_id = ? AND id = ?",
            (owner, target),
        ).fetchone()
        ends = None
        if decision.event == "UPDATE":  # the merged memory keeps the target's provenance
            earliest = min(filter(None, [old_from, iso(p.valid_from)]), default=None)
            supports = merge_supports(load_supports(supports_text), p.supports)
            p = replace(p, supports=supports, valid_from=parse_time(earliest))
        else:
            ends = iso(p.valid_from or self.now)
        self._store(p, decision.reason, rowid=rowid, event=decision.event, old=old_text)
        self.conn.execute(
            "UPDATE memories SET status = 'superseded', retired_at = ?, superseded_by = ?, "
            "valid_to = COALESCE(?, valid_to) WHERE rowid = ?",
            (iso(self.now), p.item.id, ends, old_rowid),
        )
        new = p.item.memory
        self.history(owner, str(target), decision.event, old_text, new, decision.reason, p.supports)
        self.touched.add(old_rowid)
        self._retired.add(str(target))

    def _store(
        self,
        p: Prepared,
        reason: str,
        *,
        rowid: int | None,
        event: EventKind = "ADD",
        old: str | None = None,
    ) -> None:
        meta = p.item.metadata
        values: dict[str, Any] = {
            "id": p.item.id,
            "user_id": meta.user_id,
            "session_id": meta.session_id,
            "memory_type": meta.memory_type.value,
            "memory": p.item.memory,
            "content_hash": p.content_hash,
            "valid_from": iso(p.valid_from),
            "recorded_at": iso(self.now),
            "embedding": to_blob(meta.embedding) if meta.embedding else None,
            "embedding_model": meta.embedding_model,
            "importance": meta.importance,
            "importance_reason": meta.importance_reason,
            "supports": dump_supports(p.supports),
            "item": item_json(p.item, p.supports),
        }
        if rowid is None:
            names = ", ".join(values)
            marks = ", ".join(f":{name}" for name in values)
            cursor = self.conn.execute(
                f"INSERT INTO memories ({names}, status) VALUES ({marks}, 'active')", values
            )
            assert cursor.lastrowid is not None
            rowid = cursor.lastrowid
        else:
            # Stored again after it was retired: the row comes back as written now; its first
            # recorded_at and its history stay.
            del values["recorded_at"]
            sets = ", ".join(f"{name} = :{name}" for name in values)
            self.conn.execute(
                f"UPDATE memories SET {sets}, status = 'active', retired_at = NULL, "
                "superseded_by = NULL, valid_to = NULL WHERE rowid = :rowid",
                {**values, "rowid": rowid},
            )
            self.conn.execute("DELETE FROM memories_fts WHERE rowid = ?", (rowid,))
        self.conn.execute(
            "INSERT INTO memories_fts (rowid, memory) VALUES (?, ?)", (rowid, p.item.memory)
        )
        self._set_keys(rowid, p.supports)
        self.history(meta.user_id, p.item.id, event, old, p.item.memory, reason, p.supports)
        self.touched.add(rowid)
        if p.vector is not None:
            kind = (meta.user_id, meta.memory_type.value, p.model)
            self._pending.add(kind, p.item.id, p.vector)

    def _reinforce(self, memory_id: str, p: Prepared, reason: str, once: bool = False) -> bool:
        """Reinforce ``memory_id`` with ``p``'s sources; ``once``: not when it has them all
        (then nothing changes and this returns ``False``)."""
        owner = p.user_id
        rowid, memory, supports_text, item_text, valid_from = self.conn.execute(
            "SELECT rowid, memory, supports, item, valid_from FROM memories "
            "WHERE user_id = ? AND id = ?",
            (owner, memory_id),
        ).fetchone()
        supports = load_supports(supports_text)
        if once and already_supported(supports, p.supports):
            self.touched.add(rowid)
            return False
        if self.replace_key is not None and not self.in_parts and rowid not in self.touched:
            # The source is being rewritten: what it said before is replaced by what it says now.
            supports, _ = drop_key(supports, self.replace_key)
        supports = merge_supports(supports, p.supports)
        earliest = min(filter(None, [valid_from, iso(p.valid_from)]), default=None)
        self._update_supports(rowid, item_text, supports, extra="reinforced = reinforced + 1")
        self.conn.execute("UPDATE memories SET valid_from = ? WHERE rowid = ?", (earliest, rowid))
        full = f"{reason}; written as item {p.item.id}"
        self.history(owner, memory_id, "REINFORCE", memory, memory, full, p.supports)
        self.touched.add(rowid)
        return True

    def drop_source(
        self, owner: str, key: str, *, retire_as: MemoryStatus, event: EventKind, reason: str
    ) -> list[WriteEvent]:
        """Remove the supports ``key`` names from the active memories of ``owner`` not touched
        in this transaction: those left with none become ``retire_as`` (``event``), the others
        lose those sources (``UPDATE``)."""
        rows = self.conn.execute(
            "SELECT m.rowid, m.id, m.memory, m.supports, m.item FROM memory_keys k "
            "JOIN memories m ON m.rowid = k.memory_rowid "
            "WHERE k.key = ? AND m.user_id = ? AND m.status = 'active' ORDER BY m.rowid",
            (key, owner),
        ).fetchall()
        events: list[WriteEvent] = []
        for rowid, memory_id, memory, supports_text, item_text in rows:
            if rowid in self.touched:
                continue
            kept, dropped = drop_key(load_supports(supports_text), key)
            if kept:
                why = f"{reason}; still supported by {len(kept)} other source(s)"
                self._update_supports(rowid, item_text, kept)
                self.history(owner, memory_id, "UPDATE", memory, memory, why, dropped)
                events.append(WriteEvent("UPDATE", memory_id, "", why, user_id=owner))
                continue
            self.conn.execute(
                "UPDATE memories SET status = ?, retired_at = ? WHERE rowid = ?",
                (retire_as, iso(self.now), rowid),
            )
            self.history(owner, memory_id, event, memory, None, reason, dropped)
            events.append(WriteEvent(event, memory_id, "", reason, user_id=owner))
        return events

    def _update_supports(
        self, rowid: int, item_text: str, supports: list[Support], extra: str = ""
    ) -> None:
        data = json.loads(item_text)
        data["metadata"]["sources"] = sources_of(supports)
        sets = "supports = ?, item = ?" + (f", {extra}" if extra else "")
        self.conn.execute(
            f"UPDATE memories SET {sets} WHERE rowid = ?",
            (dump_supports(supports), json.dumps(data, ensure_ascii=False), rowid),
        )
        self._set_keys(rowid, supports)

    def _set_keys(self, rowid: int, supports: Sequence[Support]) -> None:
        self.conn.execute("DELETE FROM memory_keys WHERE memory_rowid = ?", (rowid,))
        self.conn.executemany(
            "INSERT INTO memory_keys (key, memory_rowid) VALUES (?, ?)",
            [(key, rowid) for key in keys_of(supports)],
        )

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
        """Record one change (and mark ``owner``'s version for a bump)."""
        self.conn.execute(
            "INSERT INTO history (user_id, memory_id, event, old_memory, new_memory, at, "
            "reason, source_ids) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                owner,
                memory_id,
                event,
                old,
                new,
                iso(self.now),
                reason,
                json.dumps(keys_of(supports)),
            ),
        )
        self.owners.add(owner)

    def bump_versions(self) -> None:
        """Move the version of every owner changed here (cached vectors are then stale)."""
        bump_versions(self.conn, self.owners)


def bump_versions(conn: sqlite3.Connection, owners: set[str]) -> None:
    """Move the version of each of ``owners``."""
    conn.executemany(
        "INSERT INTO owner_versions (user_id, version) VALUES (?, 1) "
        "ON CONFLICT (user_id) DO UPDATE SET version = version + 1",
        [(owner,) for owner in sorted(owners)],
    )
