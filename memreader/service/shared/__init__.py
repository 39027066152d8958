"""Where a service keeps what its workers and replicas share (per-key slots, ``Idempotency-Key``
answers, jobs and their progress): :func:`open_shared_state` picks the place from a URL.

- ``memory``: this process only (one worker).
- ``sqlite:///FILE``: a state file; every worker on the machine opens the same one.
- ``postgresql://...``: tables in a PostgreSQL database; replicas on many machines share it.

:func:`state_url_for` says which a service uses by default: the store's own place (a SQLite
store's state file beside it, ``STORE.service-state``; a PostgreSQL store's database), else
memory.

>>> state_url_for("sqlite:////data/memories.db")
'sqlite:////data/memories.db.service-state'
>>> state_url_for("postgresql://db/mem"), state_url_for(None)
('postgresql://db/mem', 'memory')
"""

from __future__ import annotations

from memreader.errors import ConfigError
from memreader.service.shared.base import IdemVerdict, JobRecord, SharedState, StoredAnswer
from memreader.stores.urls import public_url

__all__ = [
    "IdemVerdict",
    "JobRecord",
    "SharedState",
    "StoredAnswer",
    "open_shared_state",
    "state_url_for",
]

#: The environment variable ``memreader serve --workers N`` sets for its workers when the
#: store gives no shared place (no store, or an in-memory one): a state file of its own.
STATE_ENV = "MEMREADER_SERVICE_STATE"


def state_url_for(store_url: str | None) -> str:
    """The default shared-state URL of a service whose store is ``store_url``."""
    from memreader.stores.urls import sqlite_file

    if store_url is None:
        return "memory"
    file = sqlite_file(store_url)
    if file is not None:
        return f"sqlite:///{file}.service-state"
    if store_url.partition("://")[0].lower() in ("postgresql", "postgres"):
        return store_url
    return "memory"


def open_shared_state(url: str) -> SharedState:
    """The shared state at ``url`` (see the module docstring), started (its heartbeat runs).

    Raises:
        ConfigError: an unknown scheme.
        StoreError: the place cannot be opened.
    """
    scheme = url.partition("://")[0].lower()
    if url == "memory":
        from memreader.service.shared.sqlite import SqliteSharedState

        return SqliteSharedState(":memory:").start()
    if scheme == "sqlite":
        from memreader.service.shared.sqlite import SqliteSharedState
        from memreader.stores.urls import sqlite_file

        file = sqlite_file(url)
        if file is None:
            return SqliteSharedState(":memory:").start()
        return SqliteSharedState(file).start()
    if scheme in ("postgresql", "postgres"):
        from memreader.service.shared.postgres import PostgresSharedState

        return PostgresSharedState(url).start()
    raise ConfigError(
        f"service.state: {public_url(url)!r} is not a shared-state URL (memory, "
        "sqlite:///FILE or postgresql://...)"
    )
