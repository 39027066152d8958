"""What the PostgreSQL store finds stored before it writes (:mod:`memreader.stores.known`):
which items are not stored yet (:func:`unstored`, the ones worth embedding) and what writing
each would find (:func:`lookup`), by index lookups only.

Each id or hash is looked up by its own index probe (``unnest`` joined ``LATERAL``; ``LIMIT 1``,
true of both unique indexes, keeps the planner from flattening the join): given a list
(``content_hash = ANY(...)``), or a join it may flatten, the planner without fresh statistics
matched the hashes as a filter over every active row of the owner.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import psycopg

from memreader.items import TextualMemoryItem
from memreader.stores.events import WriteEvent
from memreader.stores.known import known_rows, unstored_positions
from memreader.stores.write_decisions import looked_up, memory_hash

__all__ = ["LOOKUP_CHUNK", "lookup", "unstored"]

#: Ids (or hashes) per query.
LOOKUP_CHUNK = 1000

_COLUMNS = "m.user_id, m.id, m.memory_type, m.content_hash, m.status"

Connection = psycopg.Connection[Any]


def unstored(conn: Connection, items: Sequence[TextualMemoryItem]) -> list[int]:
    """The positions of ``items`` whose id is not stored active and whose content is not
    active for their owner and type: the ones worth embedding (a retired memory written again
    comes back as written now, with a vector)."""
    hashes = [memory_hash(item) for item in items]
    return unstored_positions(items, hashes, _known(conn, items, hashes))


def lookup(
    conn: Connection, owner: str, items: Sequence[TextualMemoryItem]
) -> list[WriteEvent | None]:
    """What writing each of ``owner``'s ``items`` would find stored (see
    :meth:`MemoryStore.lookup`)."""
    hashes = [memory_hash(item) for item in items]
    return looked_up(0, items, hashes, [row[1:] for row in _known(conn, items, hashes)])


def _known(conn: Connection, items: Sequence[TextualMemoryItem], hashes: list[str]) -> list[Any]:
    def by_ids(owner: str, ids: list[str]) -> list[Any]:
        return conn.execute(
            f"SELECT {_COLUMNS} FROM unnest(%s::text[]) AS w(id) CROSS JOIN LATERAL "
            "(SELECT * FROM memreader_memories m WHERE m.user_id = %s AND m.id = w.id LIMIT 1) m",
            (ids, owner),
        ).fetchall()

    def by_hashes(owner: str, memory_type: str, digests: list[str]) -> list[Any]:
        return conn.execute(
            f"SELECT {_COLUMNS} FROM unnest(%s::text[]) AS w(digest) CROSS JOIN LATERAL "
            "(SELECT * FROM memreader_memories m WHERE m.user_id = %s AND m.memory_type = %s "
            "AND m.content_hash = w.digest AND m.status = 'active' LIMIT 1) m",
            (digests, owner, memory_type),
        ).fetchall()

    return known_rows(items, hashes, by_ids, by_hashes, LOOKUP_CHUNK)
