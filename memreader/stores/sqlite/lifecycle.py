"""The embedded store's life-cycle hooks: the SQL behind
:mod:`~memreader.stores.lifecycle.api` (pins in ``memory_pins``, the budget's
counts, facts and expiries, restores) and behind ``maintain``
(:mod:`~memreader.stores.lifecycle.maintain`: what purge would take, and the
memories whose vector is missing or another model's, embedded again). Each function is one
transaction under the store's lock, bound to
:class:`~memreader.stores.sqlite.store.SQLiteStore` as its hook of the same name."""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from memreader.items import TextualMemoryItem
from memreader.stores.direct_writes import UnknownMemoryError
from memreader.stores.events import WriteEvent
from memreader.stores.lifecycle.api import RESTORED_REASON, check_pin_limit, check_restorable
from memreader.stores.lifecycle.maintain import Unindexed
from memreader.stores.lifecycle.priority import PriorityFacts
from memreader.stores.passages.rows import PassagePlan
from memreader.stores.sqlite.handle import SQLiteHandle
from memreader.stores.sqlite.handle import changes as handle_changes
from memreader.stores.sqlite.passages import add_passages
from memreader.stores.sqlite.schema import MEMORY_COLUMNS, iso, memory_from_row, parse_time
from memreader.stores.sqlite.vectors import to_blob
from memreader.stores.sqlite.writes import bump_versions

__all__ = [
    "active_counts",
    "budget_facts",
    "expire_for_budget",
    "pinned",
    "pinned_active",
    "reindex",
    "restore",
    "retired_counts",
    "set_pins",
    "unindexed",
    "unindexed_counts",
]

#: Ids per ``IN (...)`` (well under SQLite's parameter limit).
_CHUNK = 500

_PINNED_ACTIVE = (
    "SELECT count(*) FROM memory_pins p JOIN memories m ON m.user_id = p.user_id "
    "AND m.id = p.memory_id WHERE p.user_id = ? AND m.status = 'active'"
)


def _unindexed_where(foreign: list[str]) -> tuple[str, list[Any]]:
    """What ``maintain`` repairs: no vector, one without a direction, or a ``foreign`` model's
    (``memreader_unusable_vector``: :func:`~memreader.stores.sqlite.vectors.unusable_blob`)."""
    marks = ", ".join("?" * len(foreign))
    model = f" OR COALESCE(embedding_model, '') IN ({marks})" if foreign else ""
    bad = " OR memreader_unusable_vector(embedding)"
    return f"status = 'active' AND (embedding IS NULL{model}{bad})", list(foreign)


#: The columns of :data:`MEMORY_COLUMNS` with the vector left out (it is being replaced).
_WITHOUT_VECTOR = MEMORY_COLUMNS.replace("embedding,", "NULL,", 1)


def set_pins(
    store: SQLiteHandle, owner: str, ids: list[str], on: bool, now: datetime, limit: int | None
) -> int:
    with store._transaction() as conn:
        if not on:
            return sum(
                conn.execute(
                    "DELETE FROM memory_pins WHERE user_id = ? AND memory_id = ?",
                    (owner, i),
                ).rowcount
                for i in ids
            )
        for memory_id in ids:
            found = conn.execute(
                "SELECT 1 FROM memories WHERE user_id = ? AND id = ?", (owner, memory_id)
            ).fetchone()
            if found is None:  # raised inside the transaction: nothing is pinned
                raise UnknownMemoryError(f"user {owner!r} has no memory {memory_id!r}")
        before = conn.execute(_PINNED_ACTIVE, (owner,)).fetchone()[0]
        added = sum(
            conn.execute(
                "INSERT OR IGNORE INTO memory_pins (user_id, memory_id, pinned_at) "
                "VALUES (?, ?, ?)",
                (owner, i, iso(now)),
            ).rowcount
            for i in ids
        )
        after = conn.execute(_PINNED_ACTIVE, (owner,)).fetchone()[0]
        check_pin_limit(owner, before, after, limit)  # raised: rolled back
        return added


def pinned_active(store: SQLiteHandle, owner: str) -> int:
    with store._transaction(write=False) as conn:
        return int(conn.execute(_PINNED_ACTIVE, (owner,)).fetchone()[0])


def pinned(store: SQLiteHandle, owner: str) -> list[str]:
    with store._transaction(write=False) as conn:
        rows = conn.execute(
            "SELECT memory_id FROM memory_pins WHERE user_id = ? ORDER BY memory_id",
            (owner,),
        ).fetchall()
    return [r[0] for r in rows]


def active_counts(store: SQLiteHandle, owners: Collection[str] | None) -> dict[str, int]:
    sql = "SELECT user_id, count(*) FROM memories WHERE status = 'active'"
    with store._transaction(write=False) as conn:
        if owners is None:
            rows = conn.execute(sql + " GROUP BY user_id").fetchall()
        else:  # one count per owner over the (user_id, status) index
            rows = [(o, conn.execute(sql + " AND user_id = ?", (o,)).fetchone()[1]) for o in owners]
    return {str(owner): int(n) for owner, n in rows}


def budget_facts(store: SQLiteHandle, owner: str) -> list[PriorityFacts]:
    with store._transaction(write=False) as conn:
        rows = conn.execute(
            "SELECT id, importance, reinforced, recorded_at, task_id, visibility "
            "FROM memories m WHERE user_id = ? AND status = 'active' AND NOT EXISTS "
            "(SELECT 1 FROM memory_pins p WHERE p.user_id = m.user_id AND p.memory_id = m.id)",
            (owner,),
        ).fetchall()
    out = []
    for memory_id, importance, reinforced, recorded, task, visibility in rows:
        at = parse_time(recorded)
        if at is not None:
            out.append(
                PriorityFacts(
                    memory_id, importance, reinforced, at, task_id=task, visibility=visibility
                )
            )
    return out


def expire_for_budget(
    store: SQLiteHandle, owner: str, chosen: list[tuple[str, str]], target: int, now: datetime
) -> list[WriteEvent]:
    events: list[WriteEvent] = []
    with store._transaction() as conn:
        count = conn.execute(
            "SELECT count(*) FROM memories WHERE user_id = ? AND status = 'active'", (owner,)
        ).fetchone()[0]
        changes = handle_changes(store, conn, now)
        for memory_id, reason in chosen:
            if count <= target:
                break
            pinned = conn.execute(
                "SELECT 1 FROM memory_pins WHERE user_id = ? AND memory_id = ?",
                (owner, memory_id),
            ).fetchone()
            event = (
                None if pinned else changes.delete_one(owner, memory_id, erase=False, reason=reason)
            )
            if event is not None and event.event == "EXPIRE":
                events.append(event)
                count -= 1
        changes.bump_versions()
    return events


def restore(store: SQLiteHandle, owner: str, memory_id: str, now: datetime) -> WriteEvent:
    with store._transaction() as conn:
        row = conn.execute(
            "SELECT rowid, status, memory, memory_type, content_hash FROM memories "
            "WHERE user_id = ? AND id = ?",
            (owner, memory_id),
        ).fetchone()
        last = same = None
        if row is not None:
            last = conn.execute(
                "SELECT event, reason FROM history WHERE user_id = ? AND memory_id = ? "
                "ORDER BY id DESC LIMIT 1",
                (owner, memory_id),
            ).fetchone()
            same = conn.execute(
                "SELECT id FROM memories WHERE user_id = ? AND memory_type = ? AND "
                "content_hash = ? AND status = 'active'",
                (owner, row[3], row[4]),
            ).fetchone()
        check_restorable(owner, memory_id, row, last, same)
        assert row is not None  # checked
        rowid, memory = row[0], row[2]
        conn.execute(
            "UPDATE memories SET status = 'active', retired_at = NULL WHERE rowid = ?",
            (rowid,),
        )
        changes = handle_changes(store, conn, now)
        changes.history(owner, memory_id, "ADD", None, memory, RESTORED_REASON, [])
        changes.bump_versions()
    return WriteEvent("ADD", memory_id, "", RESTORED_REASON, user_id=owner)


def retired_counts(store: SQLiteHandle, cutoff: datetime) -> dict[str, int]:
    with store._transaction(write=False) as conn:
        rows = conn.execute(
            "SELECT user_id, count(*) FROM memories WHERE status IN "
            "('expired', 'superseded') AND retired_at < ? GROUP BY user_id",
            (iso(cutoff),),
        ).fetchall()
    return {str(owner): int(n) for owner, n in rows}


def unindexed_counts(store: SQLiteHandle, foreign: list[str]) -> dict[str, int]:
    where, params = _unindexed_where(foreign)
    with store._transaction(write=False) as conn:
        rows = conn.execute(
            f"SELECT user_id, count(*) FROM memories WHERE {where} GROUP BY user_id", params
        ).fetchall()
    return {str(owner): int(n) for owner, n in rows}


def unindexed(store: SQLiteHandle, foreign: list[str], after: int, limit: int) -> list[Unindexed]:
    where, params = _unindexed_where(foreign)
    with store._transaction(write=False) as conn:
        rows = conn.execute(
            f"SELECT {_WITHOUT_VECTOR} FROM memories WHERE rowid > ? AND {where} "
            "ORDER BY rowid LIMIT ?",
            (after, *params, limit),
        ).fetchall()
    return [Unindexed(r[0], r[14], r[13], memory_from_row(r)) for r in rows]


def reindex(
    store: SQLiteHandle,
    rows: list[tuple[int, TextualMemoryItem]],
    foreign: list[str],
    plan: PassagePlan,
) -> list[str]:
    where, params = _unindexed_where(foreign)
    owners: list[str] = []
    changed_ids: set[tuple[str, str]] = set()
    with store._transaction() as conn:
        for rowid, item in rows:
            meta = item.metadata
            assert meta.embedding is not None  # given by maintain
            changed = conn.execute(
                "UPDATE memories SET embedding = ?, embedding_model = ? "
                f"WHERE rowid = ? AND {where}",
                (to_blob(meta.embedding), meta.embedding_model, rowid, *params),
            ).rowcount
            if changed:
                conn.execute("DELETE FROM memory_passages WHERE memory_rowid = ?", (rowid,))
                owners.append(meta.user_id)
                changed_ids.add((meta.user_id, item.id))
        add_passages(conn, {key: p for key, p in plan.items() if key in changed_ids})
        bump_versions(conn, set(owners))
    return owners
