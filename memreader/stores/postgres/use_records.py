"""The use records of the PostgreSQL store (:mod:`memreader.stores.usage`):
the ``_mark_used`` and ``_usage`` hooks of
:class:`~memreader.stores.postgres.store.PostgresStore` (the table and its statements:
:mod:`memreader.stores.postgres.usage`), each one transaction. Marking takes the owner's advisory
lock first, as purge and erase do, so a memory is never removed between the statement finding it
and its use row's key check."""

from __future__ import annotations

from datetime import datetime

from memreader.stores.postgres.handle import PostgresHandle
from memreader.stores.postgres.operations import Connection, lock_owners
from memreader.stores.postgres.usage import mark_used, read_usage
from memreader.stores.usage import Usage

__all__ = ["record_uses", "usage_of"]


def record_uses(store: PostgresHandle, ids: list[str], owner: str, at: datetime) -> int:
    def work(conn: Connection) -> int:
        lock_owners(conn, [owner])
        return mark_used(conn, ids, owner, at)

    return store._session.run(work, write=True)


def usage_of(store: PostgresHandle, ids: list[str], owner: str) -> dict[str, Usage]:
    return store._session.run(lambda c: read_usage(c, ids, owner), write=False)
