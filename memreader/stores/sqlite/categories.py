"""The embedded store's categories (tables ``categories`` and ``category_links`` of
:mod:`memreader.stores.sqlite.schema`): the :mod:`~memreader.stores.category_api` hooks of
:class:`~memreader.stores.sqlite.store.SQLiteStore` (bound there by name), each one transaction
under the store's lock."""

from __future__ import annotations

import sqlite3
from datetime import datetime

from memreader.errors import InputError
from memreader.stores.category_api import check_linkable, stored_category
from memreader.stores.category_types import CategoryDef, StoredCategory, SummaryKind
from memreader.stores.records import StoredMemory, readable
from memreader.stores.sqlite.handle import SQLiteHandle
from memreader.stores.sqlite.schema import MEMORY_COLUMNS, iso, memory_from_row, parse_time
from memreader.stores.sqlite.vectors import from_blob, to_blob

__all__ = [
    "categories",
    "categories_of",
    "category_memories",
    "category_rowids",
    "drop_links",
    "link_categories",
    "save_summary",
    "upsert_categories",
]

_COLUMNS = "name, description, embedding, summary, summary_kind, summary_note, updated_at"

#: A def given no vector keeps the stored one only while its description is unchanged.
_UPSERT = """
INSERT INTO categories (user_id, name, description, embedding) VALUES (?, ?, ?, ?)
ON CONFLICT (user_id, name) DO UPDATE SET
    description = excluded.description,
    embedding = CASE
        WHEN excluded.embedding IS NOT NULL THEN excluded.embedding
        WHEN categories.description = excluded.description THEN categories.embedding
    END
"""


def upsert_categories(
    store: SQLiteHandle, owner: str, pairs: list[tuple[CategoryDef, list[float] | None]]
) -> None:
    with store._transaction() as conn:
        conn.executemany(
            _UPSERT,
            [(owner, d.name, d.description, None if v is None else to_blob(v)) for d, v in pairs],
        )


def link_categories(store: SQLiteHandle, owner: str, wanted: dict[str, list[str]]) -> None:
    with store._transaction() as conn:
        rows = conn.execute("SELECT name FROM categories WHERE user_id = ?", (owner,))
        known = {r[0] for r in rows}
        present = {
            memory_id
            for memory_id in wanted
            for _ in conn.execute(
                "SELECT 1 FROM memories WHERE user_id = ? AND id = ?", (owner, memory_id)
            )
        }
        check_linkable(owner, wanted, known, present)
        for memory_id, names in wanted.items():
            conn.execute(
                "DELETE FROM category_links WHERE user_id = ? AND memory_id = ?",
                (owner, memory_id),
            )
            conn.executemany(
                "INSERT INTO category_links (user_id, name, memory_id) VALUES (?, ?, ?)",
                [(owner, name, memory_id) for name in names],
            )


def categories(store: SQLiteHandle, owner: str, name: str | None) -> list[StoredCategory]:
    params = (owner,) if name is None else (owner, name)
    with store._transaction(write=False) as conn:
        rows = conn.execute(
            f"SELECT {_COLUMNS} FROM categories WHERE user_id = ?"
            f"{'' if name is None else ' AND name = ?'} ORDER BY name",
            params,
        ).fetchall()
        members: dict[str, list[str]] = {}
        for category, memory_id in conn.execute(
            "SELECT l.name, l.memory_id FROM category_links l JOIN memories m "
            "ON m.user_id = l.user_id AND m.id = l.memory_id "
            f"WHERE l.user_id = ?{'' if name is None else ' AND l.name = ?'} "
            "AND m.status = 'active'",
            params,
        ):
            members.setdefault(category, []).append(memory_id)
    return [
        stored_category(
            owner,
            row,
            members.get(row[0], []),
            from_blob(row[2]) if row[2] is not None else None,
            parse_time(row[6]),
        )
        for row in rows
    ]


def category_memories(store: SQLiteHandle, owner: str, name: str, limit: int) -> list[StoredMemory]:
    with store._transaction(write=False) as conn:
        rows = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE user_id = ? AND status = 'active' "
            "AND id IN (SELECT memory_id FROM category_links WHERE user_id = ? AND name = ?) "
            "ORDER BY COALESCE(valid_from, recorded_at) DESC, id LIMIT ?",
            (owner, owner, name, limit),
        ).fetchall()
    return readable(memory_from_row(row) for row in rows)


def categories_of(store: SQLiteHandle, owner: str, ids: list[str]) -> dict[str, list[str]]:
    found: dict[str, list[str]] = {memory_id: [] for memory_id in ids}
    with store._transaction(write=False) as conn:
        for memory_id in ids:
            found[memory_id] = [
                r[0]
                for r in conn.execute(
                    "SELECT name FROM category_links WHERE user_id = ? AND memory_id = ? "
                    "ORDER BY name",
                    (owner, memory_id),
                )
            ]
    return found


def save_summary(
    store: SQLiteHandle,
    owner: str,
    name: str,
    summary: str,
    kind: SummaryKind,
    note: str | None,
    at: datetime,
) -> None:
    with store._transaction() as conn:
        changed = conn.execute(
            "UPDATE categories SET summary = ?, summary_kind = ?, summary_note = ?, "
            "updated_at = ? WHERE user_id = ? AND name = ?",
            (summary, kind, note, iso(at), owner, name),
        ).rowcount
        if not changed:
            raise InputError(f"owner {owner!r} has no category {name!r} to summarise")


def category_rowids(conn: sqlite3.Connection, owner: str, name: str) -> list[int]:
    """The rowids of ``owner``'s memories linked to the category ``name`` (any status)."""
    rows = conn.execute(
        "SELECT m.rowid FROM category_links l JOIN memories m "
        "ON m.user_id = l.user_id AND m.id = l.memory_id WHERE l.user_id = ? AND l.name = ?",
        (owner, name),
    )
    return [r[0] for r in rows]


def drop_links(conn: sqlite3.Connection, owner: str, memory_id: str) -> None:
    """Remove every category link of ``owner``'s memory ``memory_id`` (it is being purged)."""
    conn.execute(
        "DELETE FROM category_links WHERE user_id = ? AND memory_id = ?", (owner, memory_id)
    )
