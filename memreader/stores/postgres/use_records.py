"""The use records of the PostgreSQL store (:mod:`memreader.stores.usage`):
:class:`PostgresUse`, the :class:`~memreader.stores.base.MemoryStore` methods of
:class:`~memreader.stores.postgres.store.PostgresStore` (the table and its statements:
:mod:`memreader.stores.postgres.usage`)."""

from __future__ import annotations

from datetime import datetime

from memreader.stores.base import MemoryStore
from memreader.stores.postgres.operations import Connection, lock_owners
from memreader.stores.postgres.session import Session
from memreader.stores.postgres.usage import mark_used, read_usage
from memreader.stores.usage import Usage

__all__ = ["PostgresUse"]


class PostgresUse(MemoryStore):
    """The use records of the PostgreSQL store, each call one transaction. Marking takes the
    owner's advisory lock first, as purge and erase do, so a memory is never removed between
    the statement finding it and its use row's key check."""

    _session: Session

    def _mark_used(self, ids: list[str], owner: str, at: datetime) -> int:
        def work(conn: Connection) -> int:
            lock_owners(conn, [owner])
            return mark_used(conn, ids, owner, at)

        return self._session.run(work, write=True)

    def _usage(self, ids: list[str], owner: str) -> dict[str, Usage]:
        return self._session.run(lambda c: read_usage(c, ids, owner), write=False)
