"""What the PostgreSQL store's hook functions (:mod:`~memreader.stores.postgres.categories`,
:mod:`~memreader.stores.postgres.lifecycle`, :mod:`~memreader.stores.postgres.use_records`)
use of the store: its session (one transaction per call, retried on a lost connection), the
dimension of its vectors and its near-duplicate cut.
:class:`~memreader.stores.postgres.store.PostgresStore` is the one class that has them; the
functions are bound to it by name, as its hooks of
:class:`~memreader.stores.contract.StoreBackend`."""

from __future__ import annotations

from typing import Protocol

from memreader.stores.postgres.session import Session

__all__ = ["PostgresHandle"]


class PostgresHandle(Protocol):
    """The PostgreSQL store as its hook functions see it."""

    #: Runs each call's work in one transaction.
    _session: Session
    #: The dimension of the stored vectors (``None`` until the first vector is stored).
    _dimension: int | None
    #: The cosine at which a new memory reinforces a stored one.
    near_duplicate: float
