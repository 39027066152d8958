"""The changes of the PostgreSQL store, applied inside one open write transaction that holds
the advisory locks of the owners it changes: one item's decision (:meth:`Changes.apply`), and a
source's removal (:meth:`Changes.drop_source`, for ``forget`` and ``replaces``). Every change
writes its history row. The decisions are :mod:`memreader.stores.write_decisions`' and
:mod:`memreader.stores.change_rules`', shared with the embedded store; only the SQL differs.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from memreader.items import TextualMemoryItem
from memreader.retrieval.terms import index_text
from memreader.scopes import scope_columns
from memreader.stores.change_rules import ChangeRules, item_json, prepared, with_sources
from memreader.stores.change_rules import Prepared as SharedPrepared
from memreader.stores.erasure import Tally
from memreader.stores.events import EventKind
from memreader.stores.postgres import erase as erase_steps
from memreader.stores.postgres.operations import Connection, nearest
from memreader.stores.postgres.schema import vector_text
from memreader.stores.records import MemoryStatus
from memreader.stores.write_decisions import (
    Decision,
    Found,
    Support,
    dump_supports,
    keys_of,
    load_supports,
    merge_supports,
)

__all__ = ["Changes", "Prepared", "prepare"]


#: One item ready to write, its vector pgvector text (``None`` without a vector, or for a zero
#: vector, which has no direction to compare).
Prepared = SharedPrepared[str]


def prepare(index: int, item: TextualMemoryItem, replace_key: str | None) -> Prepared:
    """Item ``index`` ready to write (``replace_key`` joins its supports' keys)."""
    vector = item.metadata.embedding
    text = vector_text(vector) if vector and any(vector) else None
    return prepared(index, item, replace_key, text)


@dataclass
class Changes(ChangeRules[str]):
    """The changes of one transaction on ``conn`` at time ``now`` (see :class:`ChangeRules`)."""

    # -- the erase steps (memreader.stores.erase_rules.EraseSteps), in erase_steps's SQL --
    _facts = erase_steps.facts
    _successor = erase_steps.successor
    _erase = erase_steps.erase
    _summaries = erase_steps.summaries
    _put_summary = erase_steps.put_summary
    _set_session = erase_steps.set_session

    conn: Connection
    now: datetime
    threshold: float
    replace_key: str | None = None
    #: Writing one part of a source (``write_part``): a reinforced memory keeps the supports
    #: ``replace_key`` gave it, since an earlier part of the same run may have written them.
    in_parts: bool = False
    touched: set[int] = field(default_factory=set)
    tally: Tally = field(default_factory=Tally)

    def _same(self, p: Prepared) -> tuple[tuple[Any, ...] | None, tuple[Any, ...] | None]:
        meta = p.item.metadata
        by_id = self.conn.execute(
            "SELECT rowid, content_hash, status FROM memreader_memories "
            "WHERE user_id = %s AND id = %s",
            (meta.user_id, p.item.id),
        ).fetchone()
        by_hash = self.conn.execute(
            "SELECT rowid, id, status FROM memreader_memories WHERE user_id = %s "
            "AND memory_type = %s AND content_hash = %s AND status = 'active'",
            (meta.user_id, meta.memory_type.value, p.content_hash),
        ).fetchone()
        return by_id, by_hash

    def _nearest(self, p: Prepared) -> tuple[str, float] | None:
        """The most similar active memory of the item's owner, type and model (rows written
        earlier in this transaction included: PostgreSQL shows a transaction its own rows)."""
        if p.vector is None:
            return None
        where = " AND m.status = 'active' AND m.memory_type = %s "
        where += "AND COALESCE(m.embedding_model, '') = %s "
        where += "AND m.agent_id = %s AND m.task_id = %s AND m.visibility = %s"
        params = (p.item.metadata.memory_type.value, p.model, *scope_columns(p.item.metadata))
        found = nearest(self.conn, p.user_id, where, params, p.vector, 1, index_first=True)
        return (found[0][1], found[0][2]) if found else None

    def _target(self, p: Prepared, memory_id: str | None) -> Found | None:
        """The memory ``memory_id`` of ``p``'s owner and scope a reconcile decision names, if
        stored (one of another scope is not: a task never retires another task's memory)."""
        row = self.conn.execute(
            "SELECT content_hash, status FROM memreader_memories WHERE user_id = %s AND id = %s "
            "AND agent_id = %s AND task_id = %s AND visibility = %s",
            (p.user_id, memory_id, *scope_columns(p.item.metadata)),
        ).fetchone()
        return Found(str(memory_id), row[0], row[1]) if row and memory_id else None

    def _replace(self, p: Prepared, decision: Decision, *, rowid: int | None) -> None:
        """Apply a reconcile ``UPDATE`` or ``SUPERSEDE``: store the item, retire its target."""
        owner, target = p.user_id, decision.previous_id
        row = self.conn.execute(
            "SELECT rowid, memory, supports, valid_from FROM memreader_memories "
            "WHERE user_id = %s AND id = %s FOR UPDATE",
            (owner, target),
        ).fetchone()
        assert row is not None  # decide() found it active under this owner's lock
        old_rowid, old_text, supports_text, old_from = row
        ends = None
        if decision.event == "UPDATE":  # the merged memory keeps the target's provenance
            earliest = min(filter(None, [old_from, p.valid_from]), default=None)
            supports = merge_supports(load_supports(supports_text), p.supports)
            p = replace(p, supports=supports, valid_from=earliest)
        else:
            ends = p.valid_from or self.now
        self._store(p, decision.reason, rowid=rowid, event=decision.event, old=old_text)
        self.conn.execute(
            "UPDATE memreader_memories SET status = 'superseded', retired_at = %s, "
            "superseded_by = %s, valid_to = COALESCE(%s, valid_to) WHERE rowid = %s",
            (self.now, p.item.id, ends, old_rowid),
        )
        new = p.item.memory
        self.history(owner, str(target), decision.event, old_text, new, decision.reason, p.supports)
        self.touched.add(int(old_rowid))

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
            "valid_from": p.valid_from,
            "recorded_at": self.now,
            "embedding": vector_text(meta.embedding) if meta.embedding else None,
            "embedding_model": meta.embedding_model,
            "importance": meta.importance,
            "importance_reason": meta.importance_reason,
            "supports": dump_supports(p.supports),
            "item": item_json(p.item, p.supports),
        }
        values["fts"] = index_text(p.item.memory)  # its terms, not its raw text (schema.py)
        marks = {name: f"%({name})s" for name in values}
        marks["embedding"] = "%(embedding)s::vector"
        marks["fts"] = "to_tsvector('simple', %(fts)s)"
        if rowid is None:
            names = ", ".join(values)
            row = self.conn.execute(
                f"INSERT INTO memreader_memories ({names}, status) "
                f"VALUES ({', '.join(marks.values())}, 'active') RETURNING rowid",
                values,
            ).fetchone()
            assert row is not None
            rowid = int(row[0])
        else:
            # Stored again after it was retired: the row comes back as written now; its first
            # recorded_at and its history stay.
            del values["recorded_at"], marks["recorded_at"]
            sets = ", ".join(f"{name} = {marks[name]}" for name in values)
            self.conn.execute(
                f"UPDATE memreader_memories SET {sets}, status = 'active', retired_at = NULL, "
                "superseded_by = NULL, valid_to = NULL WHERE rowid = %(rowid)s",
                {**values, "rowid": rowid},
            )
        self._set_keys(rowid, p.supports)
        self.history(meta.user_id, p.item.id, event, old, p.item.memory, reason, p.supports)
        self.touched.add(rowid)

    def _reinforce(self, memory_id: str, p: Prepared, reason: str, once: bool = False) -> bool:
        """Reinforce ``memory_id`` with ``p``'s sources; ``once``: not when it has them all
        (then nothing changes and this returns ``False``)."""
        owner = p.user_id
        row = self.conn.execute(
            "SELECT rowid, memory, supports, item, valid_from FROM memreader_memories "
            "WHERE user_id = %s AND id = %s FOR UPDATE",
            (owner, memory_id),
        ).fetchone()
        assert row is not None  # decide() found it under this owner's lock
        rowid, memory, supports_text, item_text, valid_from = row
        supports = self.reinforced_supports(rowid, supports_text, p, once)
        if supports is None:
            return False
        earliest = min(filter(None, [valid_from, p.valid_from]), default=None)
        self._update_supports(rowid, item_text, supports, extra="reinforced = reinforced + 1")
        self.conn.execute(
            "UPDATE memreader_memories SET valid_from = %s WHERE rowid = %s", (earliest, rowid)
        )
        full = f"{reason}; written as item {p.item.id}"
        self.history(owner, memory_id, "REINFORCE", memory, memory, full, p.supports)
        self.touched.add(rowid)
        return True

    def _one(self, owner: str, memory_id: str) -> tuple[Any, ...] | None:
        row: tuple[Any, ...] | None = self.conn.execute(
            "SELECT rowid, status, memory, supports FROM memreader_memories "
            "WHERE user_id = %s AND id = %s",
            (owner, memory_id),
        ).fetchone()
        return row

    def _keyed(self, owner: str, key: str, every: bool = False) -> list[tuple[Any, ...]]:
        status = "" if every else " AND m.status = 'active'"
        return self.conn.execute(
            "SELECT m.rowid, m.id, m.memory, m.supports, m.item FROM memreader_keys k "
            "JOIN memreader_memories m ON m.rowid = k.memory_rowid "
            f"WHERE k.key = %s AND m.user_id = %s{status} ORDER BY m.rowid",
            (key, owner),
        ).fetchall()

    def _retire(self, rowid: int, status: MemoryStatus) -> None:
        self.conn.execute(
            "UPDATE memreader_memories SET status = %s, retired_at = %s WHERE rowid = %s",
            (status, self.now, rowid),
        )

    def _update_supports(
        self, rowid: int, item_text: str, supports: list[Support], extra: str = ""
    ) -> None:
        sets = "supports = %s, item = %s" + (f", {extra}" if extra else "")
        self.conn.execute(
            f"UPDATE memreader_memories SET {sets} WHERE rowid = %s",
            (dump_supports(supports), with_sources(item_text, supports), rowid),
        )
        self._set_keys(rowid, supports)

    def _set_keys(self, rowid: int, supports: Sequence[Support]) -> None:
        self.conn.execute("DELETE FROM memreader_keys WHERE memory_rowid = %s", (rowid,))
        self.conn.execute(
            "INSERT INTO memreader_keys (key, memory_rowid) SELECT unnest(%s::text[]), %s",
            (keys_of(supports), rowid),
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
        """Record one change."""
        self.conn.execute(
            "INSERT INTO memreader_history (user_id, memory_id, event, old_memory, new_memory, "
            "at, reason, source_ids) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (owner, memory_id, event, old, new, self.now, reason, json.dumps(keys_of(supports))),
        )
