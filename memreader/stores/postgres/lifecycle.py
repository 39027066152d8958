"""The PostgreSQL store's life-cycle hooks: the SQL behind
:mod:`~memreader.stores.lifecycle.api` (pins in ``memreader_memory_pins``,
the budget's counts, facts and expiries, restores) and behind ``maintain``
(:mod:`~memreader.stores.lifecycle.maintain`), bound to
:class:`~memreader.stores.postgres.store.PostgresStore` by name. Each is one transaction; a
change takes the owners' advisory locks first, as a memory write does."""

from __future__ import annotations

import json
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
from memreader.stores.postgres.handle import PostgresHandle
from memreader.stores.postgres.operations import Connection, lock_owners
from memreader.stores.postgres.passages import add_passages
from memreader.stores.postgres.schema import MEMORY_COLUMNS, memory_from_row, vector_text
from memreader.stores.postgres.session import check_dimensions
from memreader.stores.postgres.writes import Changes
from memreader.stores.write_decisions import keys_of, load_supports

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

#: What ``maintain`` repairs: no vector, one without a direction (all zeros: pgvector refuses NaN
#: and infinities, but a norm past float8 is infinite), or a foreign model's (``""``: unnamed).
_UNINDEXED = (
    "status = 'active' AND (embedding IS NULL OR COALESCE(embedding_model, '') = ANY(%s) "
    "OR NOT (vector_norm(embedding) > 0 AND vector_norm(embedding) < 'Infinity'::float8))"
)
#: The columns of :data:`MEMORY_COLUMNS` with the vector left out (it is being replaced).
_WITHOUT_VECTOR = MEMORY_COLUMNS.replace("embedding::text", "NULL", 1)
_PINNED_ACTIVE = (
    "SELECT count(*) FROM memreader_memory_pins p JOIN memreader_memories m ON m.user_id = "
    "p.user_id AND m.id = p.memory_id WHERE p.user_id = %s AND m.status = 'active'"
)
#: :data:`_UNINDEXED` over the alias ``m`` (in an ``UPDATE ... FROM`` its columns are ambiguous).
_UNINDEXED_M = _UNINDEXED.replace("status", "m.status").replace("embedding", "m.embedding")


def set_pins(
    store: PostgresHandle, owner: str, ids: list[str], on: bool, now: datetime, limit: int | None
) -> int:
    def count(conn: Connection) -> int:
        row = conn.execute(_PINNED_ACTIVE, (owner,)).fetchone()
        return int(row[0]) if row else 0

    def work(conn: Connection) -> int:
        lock_owners(conn, [owner])
        if not on:
            cursor = conn.execute(
                "DELETE FROM memreader_memory_pins WHERE user_id = %s AND memory_id = ANY(%s)",
                (owner, ids),
            )
            return max(cursor.rowcount, 0)
        found = {
            r[0]
            for r in conn.execute(
                "SELECT id FROM memreader_memories WHERE user_id = %s AND id = ANY(%s)",
                (owner, ids),
            )
        }
        missing = [i for i in ids if i not in found]
        if missing:
            raise UnknownMemoryError(f"user {owner!r} has no memory {missing[0]!r}")
        before = count(conn)
        cursor = conn.execute(
            "INSERT INTO memreader_memory_pins (user_id, memory_id, pinned_at) "
            "SELECT %s, unnest(%s::text[]), %s ON CONFLICT DO NOTHING",
            (owner, ids, now),
        )
        check_pin_limit(owner, before, count(conn), limit)  # raised: rolled back
        return max(cursor.rowcount, 0)

    return store._session.run(work, write=True)


def pinned_active(store: PostgresHandle, owner: str) -> int:
    row = store._session.run(lambda c: c.execute(_PINNED_ACTIVE, (owner,)).fetchone(), write=False)
    return int(row[0]) if row else 0


def pinned(store: PostgresHandle, owner: str) -> list[str]:
    rows = store._session.run(
        lambda c: c.execute(
            "SELECT memory_id FROM memreader_memory_pins WHERE user_id = %s ORDER BY memory_id",
            (owner,),
        ).fetchall(),
        write=False,
    )
    return [r[0] for r in rows]


def active_counts(store: PostgresHandle, owners: Collection[str] | None) -> dict[str, int]:
    sql = "SELECT user_id, count(*) FROM memreader_memories WHERE status = 'active'"
    params: tuple[Any, ...] = ()
    if owners is None:
        query = sql + " GROUP BY user_id"
    else:
        query, params = sql + " AND user_id = ANY(%s) GROUP BY user_id", (list(owners),)
    rows = store._session.run(lambda c: c.execute(query, params).fetchall(), write=False)
    return {str(owner): int(n) for owner, n in rows}


def budget_facts(store: PostgresHandle, owner: str) -> list[PriorityFacts]:
    rows = store._session.run(
        lambda c: c.execute(
            "SELECT id, importance, reinforced, recorded_at, task_id, visibility "
            "FROM memreader_memories m WHERE user_id = %s AND status = 'active' AND NOT "
            "EXISTS (SELECT 1 FROM memreader_memory_pins p WHERE p.user_id = m.user_id "
            "AND p.memory_id = m.id)",
            (owner,),
        ).fetchall(),
        write=False,
    )
    return [
        PriorityFacts(i, imp, n, at, task_id=task, visibility=seen)
        for i, imp, n, at, task, seen in rows
    ]


def expire_for_budget(
    store: PostgresHandle, owner: str, chosen: list[tuple[str, str]], target: int, now: datetime
) -> list[WriteEvent]:
    # delete_one's expiry, batched: a few statements per batch, not a few per memory (a
    # round trip each: 30,000 expiries took minutes one by one).
    def work(conn: Connection) -> list[WriteEvent]:
        lock_owners(conn, [owner])
        row = conn.execute(
            "SELECT count(*) FROM memreader_memories WHERE user_id = %s AND status = 'active'",
            (owner,),
        ).fetchone()
        allowed = max(0, (int(row[0]) if row else 0) - target)
        ids = [i for i, _ in chosen]
        open_ = {
            r[0]
            for r in conn.execute(
                "SELECT id FROM memreader_memories m WHERE user_id = %s AND id = ANY(%s) "
                "AND status = 'active' AND NOT EXISTS (SELECT 1 FROM memreader_memory_pins "
                "p WHERE p.user_id = m.user_id AND p.memory_id = m.id)",
                (owner, ids),
            )
        }
        why = dict(chosen)
        expire = [i for i in ids if i in open_][:allowed]
        rows = conn.execute(
            "UPDATE memreader_memories SET status = 'expired', retired_at = %s "
            "WHERE user_id = %s AND id = ANY(%s) AND status = 'active' "
            "RETURNING id, memory, supports",
            (now, owner, expire),
        ).fetchall()
        conn.execute(
            "INSERT INTO memreader_history (user_id, memory_id, event, old_memory, "
            "new_memory, at, reason, source_ids) SELECT %s, i, 'EXPIRE', m, NULL, %s, r, s "
            "FROM unnest(%s::text[], %s::text[], %s::text[], %s::text[]) AS t(i, m, r, s)",
            (
                owner,
                now,
                [r[0] for r in rows],
                [r[1] for r in rows],
                [why[r[0]] for r in rows],
                [json.dumps(keys_of(load_supports(r[2]))) for r in rows],
            ),
        )
        return [WriteEvent("EXPIRE", r[0], "", why[r[0]], user_id=owner) for r in rows]

    return store._session.run(work, write=True)


def restore(store: PostgresHandle, owner: str, memory_id: str, now: datetime) -> WriteEvent:
    def work(conn: Connection) -> WriteEvent:
        lock_owners(conn, [owner])
        row = conn.execute(
            "SELECT rowid, status, memory, memory_type, content_hash FROM "
            "memreader_memories WHERE user_id = %s AND id = %s",
            (owner, memory_id),
        ).fetchone()
        last = same = None
        if row is not None:
            last = conn.execute(
                "SELECT event, reason FROM memreader_history WHERE user_id = %s AND "
                "memory_id = %s ORDER BY id DESC LIMIT 1",
                (owner, memory_id),
            ).fetchone()
            same = conn.execute(
                "SELECT id FROM memreader_memories WHERE user_id = %s AND memory_type = %s "
                "AND content_hash = %s AND status = 'active'",
                (owner, row[3], row[4]),
            ).fetchone()
        check_restorable(owner, memory_id, row, last, same)
        assert row is not None  # checked
        rowid, memory = row[0], row[2]
        conn.execute(
            "UPDATE memreader_memories SET status = 'active', retired_at = NULL WHERE rowid = %s",
            (rowid,),
        )
        changes = Changes(conn, now, store.near_duplicate)
        changes.history(owner, memory_id, "ADD", None, memory, RESTORED_REASON, [])
        return WriteEvent("ADD", memory_id, "", RESTORED_REASON, user_id=owner)

    return store._session.run(work, write=True)


def retired_counts(store: PostgresHandle, cutoff: datetime) -> dict[str, int]:
    rows = store._session.run(
        lambda c: c.execute(
            "SELECT user_id, count(*) FROM memreader_memories WHERE status IN "
            "('expired', 'superseded') AND retired_at < %s GROUP BY user_id",
            (cutoff,),
        ).fetchall(),
        write=False,
    )
    return {str(owner): int(n) for owner, n in rows}


def unindexed_counts(store: PostgresHandle, foreign: list[str]) -> dict[str, int]:
    rows = store._session.run(
        lambda c: c.execute(
            f"SELECT user_id, count(*) FROM memreader_memories WHERE {_UNINDEXED} GROUP BY user_id",
            (foreign,),
        ).fetchall(),
        write=False,
    )
    return {str(owner): int(n) for owner, n in rows}


def unindexed(store: PostgresHandle, foreign: list[str], after: int, limit: int) -> list[Unindexed]:
    rows = store._session.run(
        lambda c: c.execute(
            f"SELECT {_WITHOUT_VECTOR} FROM memreader_memories WHERE rowid > %s AND "
            f"{_UNINDEXED} ORDER BY rowid LIMIT %s",
            (after, foreign, limit),
        ).fetchall(),
        write=False,
    )
    return [Unindexed(int(r[0]), r[14], r[13], memory_from_row(r)) for r in rows]


def reindex(
    store: PostgresHandle,
    rows: list[tuple[int, TextualMemoryItem]],
    foreign: list[str],
    plan: PassagePlan,
) -> list[str]:
    items = [item for _, item in rows]

    def work(conn: Connection) -> tuple[list[str], int | None]:
        dimension = check_dimensions(conn, items, store._dimension)
        lock_owners(conn, {i.metadata.user_id for i in items})
        # One statement for the batch: the rows still unindexed get their new vector.
        changed = conn.execute(
            "UPDATE memreader_memories m SET embedding = v.e::vector, embedding_model = v.n "
            "FROM unnest(%s::bigint[], %s::text[], %s::text[]) AS v(r, e, n) "
            f"WHERE m.rowid = v.r AND {_UNINDEXED_M} RETURNING m.rowid, m.user_id, m.id",
            (
                [rowid for rowid, _ in rows],
                [vector_text(i.metadata.embedding or []) for i in items],
                [i.metadata.embedding_model for i in items],
                foreign,
            ),
        ).fetchall()
        conn.execute(
            "DELETE FROM memreader_passages WHERE memory_rowid = ANY(%s)",
            ([r[0] for r in changed],),
        )
        keys = {(r[1], r[2]) for r in changed}
        add_passages(conn, {key: p for key, p in plan.items() if key in keys})
        return [r[1] for r in changed], dimension

    owners, store._dimension = store._session.run(work, write=True)
    return owners
