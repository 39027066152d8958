"""The changes of the embedded store, applied inside one open write transaction: one item's
decision (:meth:`Changes.apply`), and a source's removal (:meth:`Changes.drop_source`, for
``forget`` and ``replaces``). Every change writes its history row and bumps its owner's version.
The decisions are :mod:`memreader.stores.write_decisions`' and
:mod:`memreader.stores.change_rules`',
shared with the PostgreSQL store; only the SQL (and the vector cache) is this store's.
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
from memreader.retrieval.terms import index_text
from memreader.scopes import scope_columns
from memreader.stores.change_rules import ChangeRules, item_json, prepared, with_sources
from memreader.stores.change_rules import Prepared as SharedPrepared
from memreader.stores.erasure import Tally
from memreader.stores.events import EventKind
from memreader.stores.records import MemoryStatus
from memreader.stores.sqlite import erase as erase_steps
from memreader.stores.sqlite.pending import PendingVectors
from memreader.stores.sqlite.schema import iso, parse_time
from memreader.stores.sqlite.vectors import OwnerVectors, to_blob, unit
from memreader.stores.write_decisions import (
    Decision,
    Found,
    Support,
    dump_supports,
    keys_of,
    load_supports,
    merge_supports,
)

__all__ = ["Changes", "Prepared", "bump_versions", "prepare"]


#: One item ready to write, its vector a unit numpy vector.
Prepared = SharedPrepared[np.ndarray]


def prepare(index: int, item: TextualMemoryItem, replace_key: str | None) -> Prepared:
    """Item ``index`` ready to write (``replace_key`` joins its supports' keys)."""
    vector = item.metadata.embedding
    return prepared(index, item, replace_key, unit(vector) if vector else None)


@dataclass
class Changes(ChangeRules[np.ndarray]):
    """The changes of one transaction on ``conn`` at time ``now`` (see :class:`ChangeRules`)."""

    # -- the erase steps (memreader.stores.erase_rules.EraseSteps), in erase_steps's SQL --
    _facts = erase_steps.facts
    _successor = erase_steps.successor
    _erase = erase_steps.erase
    _summaries = erase_steps.summaries
    _put_summary = erase_steps.put_summary
    _set_session = erase_steps.set_session

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
    tally: Tally = field(default_factory=Tally)
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

    def _same(self, p: Prepared) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]:
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
        return by_id, by_hash

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
        kind = (p.user_id, meta.memory_type.value, p.model, *scope_columns(meta))
        pending = self._pending.nearest(kind, p.vector)
        if pending is not None and pending[0] in self._retired:
            pending = None
        if pending is not None and (best is None or pending[1] > best[1]):
            best = pending
        return best

    def _stored_nearest(self, p: Prepared, vector: np.ndarray) -> tuple[int, float] | None:
        """The active stored row most similar to ``p`` of its type and model (rowid, cosine),
        computed with the expected items of its kind that come after it."""
        if p.index not in self._stored_best:
            kind = _kind(p, len(vector))
            batch = [
                q
                for q in self._upcoming.values()
                if q.index > p.index
                and q.vector is not None
                and q.index not in self._stored_best
                and _kind(q, len(q.vector)) == kind
            ]
            batch.insert(0, p)
            group = self.vectors(p.user_id).groups.get(len(vector))
            found: list[tuple[int, float] | None] = [None] * len(batch)
            if group is not None:
                keep = group.mask(types=[kind[1]], model=p.model, scope=kind[3])
                queries = np.stack([vector, *(q.vector for q in batch[1:] if q.vector is not None)])
                found = group.best_of(queries, keep)
            self._stored_best.update(zip((q.index for q in batch), found, strict=True))
        return self._stored_best[p.index]

    def _target(self, p: Prepared, memory_id: str | None) -> Found | None:
        """The memory ``memory_id`` of ``p``'s owner and scope a reconcile decision names, if
        stored (one of another scope is not: a task never retires another task's memory)."""
        row = self.conn.execute(
            "SELECT content_hash, status FROM memories WHERE user_id = ? AND id = ? "
            "AND agent_id = ? AND task_id = ? AND visibility = ?",
            (p.user_id, memory_id, *scope_columns(p.item.metadata)),
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
            "agent_id": meta.agent_id or "",
            "task_id": meta.task_id or "",
            "visibility": meta.visibility,
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
            self.conn.execute("DELETE FROM memories_terms WHERE rowid = ?", (rowid,))
        self.conn.execute(
            "INSERT INTO memories_terms (rowid, terms) VALUES (?, ?)",
            (rowid, index_text(p.item.memory)),
        )
        self._set_keys(rowid, p.supports)
        self.history(meta.user_id, p.item.id, event, old, p.item.memory, reason, p.supports)
        self.touched.add(rowid)
        if p.vector is not None:
            kind = (meta.user_id, meta.memory_type.value, p.model, *scope_columns(meta))
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
        supports = self.reinforced_supports(rowid, supports_text, p, once)
        if supports is None:
            return False
        earliest = min(filter(None, [valid_from, iso(p.valid_from)]), default=None)
        self._update_supports(rowid, item_text, supports, extra="reinforced = reinforced + 1")
        self.conn.execute("UPDATE memories SET valid_from = ? WHERE rowid = ?", (earliest, rowid))
        full = f"{reason}; written as item {p.item.id}"
        self.history(owner, memory_id, "REINFORCE", memory, memory, full, p.supports)
        self.touched.add(rowid)
        return True

    def _one(self, owner: str, memory_id: str) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(
            "SELECT rowid, status, memory, supports FROM memories WHERE user_id = ? AND id = ?",
            (owner, memory_id),
        ).fetchone()
        return row

    def _keyed(self, owner: str, key: str, every: bool = False) -> list[tuple[Any, ...]]:
        status = "" if every else " AND m.status = 'active'"
        return self.conn.execute(
            "SELECT m.rowid, m.id, m.memory, m.supports, m.item FROM memory_keys k "
            "JOIN memories m ON m.rowid = k.memory_rowid "
            f"WHERE k.key = ? AND m.user_id = ?{status} ORDER BY m.rowid",
            (key, owner),
        ).fetchall()

    def _retire(self, rowid: int, status: MemoryStatus) -> None:
        self.conn.execute(
            "UPDATE memories SET status = ?, retired_at = ? WHERE rowid = ?",
            (status, iso(self.now), rowid),
        )

    def _update_supports(
        self, rowid: int, item_text: str, supports: list[Support], extra: str = ""
    ) -> None:
        sets = "supports = ?, item = ?" + (f", {extra}" if extra else "")
        self.conn.execute(
            f"UPDATE memories SET {sets} WHERE rowid = ?",
            (dump_supports(supports), with_sources(item_text, supports), rowid),
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


def _kind(p: Prepared, dim: int) -> tuple[str, str, str, tuple[str, str, str], int]:
    """What an item's near duplicates share: owner, type, model, scope and dimension."""
    meta = p.item.metadata
    return (p.user_id, meta.memory_type.value, p.model, scope_columns(meta), dim)


def bump_versions(conn: sqlite3.Connection, owners: set[str]) -> None:
    """Move the version of each of ``owners``."""
    conn.executemany(
        "INSERT INTO owner_versions (user_id, version) VALUES (?, 1) "
        "ON CONFLICT (user_id) DO UPDATE SET version = version + 1",
        [(owner,) for owner in sorted(owners)],
    )
