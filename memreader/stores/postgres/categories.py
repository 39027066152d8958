"""The PostgreSQL store's categories (tables ``memreader_categories`` and
``memreader_category_links`` of :mod:`memreader.stores.postgres.schema`):
the :mod:`~memreader.stores.category_api` hooks of
:class:`~memreader.stores.postgres.store.PostgresStore` (bound there by name). Each call is one
transaction; a change takes the owner's advisory lock first, as a memory write does, so two
keepers of one owner take turns."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from memreader.errors import InputError
from memreader.stores.category_api import check_linkable, stored_category
from memreader.stores.category_types import CategoryDef, StoredCategory, SummaryKind
from memreader.stores.postgres.handle import PostgresHandle
from memreader.stores.postgres.operations import Connection, lock_owners
from memreader.stores.postgres.schema import MEMORY_COLUMNS, memory_from_row
from memreader.stores.records import StoredMemory, readable

__all__ = [
    "categories",
    "categories_of",
    "category_memories",
    "link_categories",
    "save_summary",
    "upsert_categories",
]

_COLUMNS = "name, description, embedding, summary, summary_kind, summary_note, updated_at"

#: A def given no vector keeps the stored one only while its description is unchanged.
_UPSERT = """
INSERT INTO memreader_categories AS c (user_id, name, description, embedding)
VALUES (%s, %s, %s, %s::real[])
ON CONFLICT (user_id, name) DO UPDATE SET
    description = EXCLUDED.description,
    embedding = CASE
        WHEN EXCLUDED.embedding IS NOT NULL THEN EXCLUDED.embedding
        WHEN c.description = EXCLUDED.description THEN c.embedding
    END
"""


def upsert_categories(
    store: PostgresHandle, owner: str, pairs: list[tuple[CategoryDef, list[float] | None]]
) -> None:
    rows = [(owner, d.name, d.description, v) for d, v in pairs]

    def work(conn: Connection) -> None:
        lock_owners(conn, [owner])
        with conn.cursor() as cursor:
            cursor.executemany(_UPSERT, rows)

    store._session.run(work, write=True)


def link_categories(store: PostgresHandle, owner: str, wanted: dict[str, list[str]]) -> None:
    def work(conn: Connection) -> None:
        lock_owners(conn, [owner])
        rows = conn.execute(
            "SELECT name FROM memreader_categories WHERE user_id = %s", (owner,)
        ).fetchall()
        known = {r[0] for r in rows}
        stored = conn.execute(
            "SELECT id FROM memreader_memories WHERE user_id = %s AND id = ANY(%s)",
            (owner, list(wanted)),
        ).fetchall()
        present = {r[0] for r in stored}
        check_linkable(owner, wanted, known, present)
        conn.execute(
            "DELETE FROM memreader_category_links WHERE user_id = %s AND memory_id = ANY(%s)",
            (owner, list(wanted)),
        )
        pairs = [(memory_id, name) for memory_id, names in wanted.items() for name in names]
        if pairs:
            conn.execute(
                "INSERT INTO memreader_category_links (user_id, name, memory_id) "
                "SELECT %s, n, i FROM unnest(%s::text[], %s::text[]) AS p(n, i)",
                (owner, [p[1] for p in pairs], [p[0] for p in pairs]),
            )

    store._session.run(work, write=True)


def categories(store: PostgresHandle, owner: str, name: str | None) -> list[StoredCategory]:
    def work(conn: Connection) -> tuple[list[tuple[Any, ...]], list[tuple[Any, ...]]]:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM memreader_categories WHERE user_id = %s "
            "AND (%s::text IS NULL OR name = %s) ORDER BY name",
            (owner, name, name),
        ).fetchall()
        links = conn.execute(
            "SELECT l.name, l.memory_id FROM memreader_category_links l "
            "JOIN memreader_memories m ON m.user_id = l.user_id AND m.id = l.memory_id "
            "WHERE l.user_id = %s AND (%s::text IS NULL OR l.name = %s) "
            "AND m.status = 'active'",
            (owner, name, name),
        ).fetchall()
        return rows, links

    rows, links = store._session.run(work, write=False)
    members: dict[str, list[str]] = {}
    for category, memory_id in links:
        members.setdefault(category, []).append(memory_id)
    return [
        stored_category(
            owner,
            row,
            members.get(row[0], []),
            [float(x) for x in row[2]] if row[2] is not None else None,
            row[6].astimezone(timezone.utc) if row[6] is not None else None,
        )
        for row in rows
    ]


def category_memories(
    store: PostgresHandle, owner: str, name: str, limit: int
) -> list[StoredMemory]:
    rows = store._session.run(
        lambda c: c.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memreader_memories WHERE user_id = %s "
            "AND status = 'active' AND id IN (SELECT memory_id FROM "
            "memreader_category_links WHERE user_id = %s AND name = %s) "
            "ORDER BY COALESCE(valid_from, recorded_at) DESC, id LIMIT %s",
            (owner, owner, name, limit),
        ).fetchall(),
        write=False,
    )
    return readable(memory_from_row(row) for row in rows)


def categories_of(store: PostgresHandle, owner: str, ids: list[str]) -> dict[str, list[str]]:
    rows = store._session.run(
        lambda c: c.execute(
            "SELECT memory_id, name FROM memreader_category_links "
            "WHERE user_id = %s AND memory_id = ANY(%s) ORDER BY memory_id, name",
            (owner, ids),
        ).fetchall(),
        write=False,
    )
    found: dict[str, list[str]] = {memory_id: [] for memory_id in ids}
    for memory_id, name in rows:
        found[memory_id].append(name)
    return found


def save_summary(
    store: PostgresHandle,
    owner: str,
    name: str,
    summary: str,
    kind: SummaryKind,
    note: str | None,
    at: datetime,
) -> None:
    def work(conn: Connection) -> None:
        lock_owners(conn, [owner])
        changed = conn.execute(
            "UPDATE memreader_categories SET summary = %s, summary_kind = %s, "
            "summary_note = %s, updated_at = %s WHERE user_id = %s AND name = %s",
            (summary, kind, note, at, owner, name),
        ).rowcount
        if not changed:
            raise InputError(f"owner {owner!r} has no category {name!r} to summarise")

    store._session.run(work, write=True)
