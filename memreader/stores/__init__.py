"""Memory stores: where memory items are written, searched, traced and forgotten.

Open one by URL; the scheme picks the store (``sqlite`` built in, ``postgresql`` planned, a
plugin registers its own with :func:`register_store`)::

    from memreader.stores import SourceSelector, open_store

    with open_store("sqlite:///memories.db", embedder=embedder) as store:
        events = store.write(items)
        hits = store.search("where does Ana live?", user_id="u1")
        store.forget(SourceSelector(doc_path="notes.md"), user_id="u1")

A store is opened with the embedder its memories were embedded with (search embeds the query
with it), or with ``text_only=True`` to search by words only on purpose: opened with neither,
it refuses (:class:`~memreader.errors.MissingEmbedderError`), since a forgotten embedder would
otherwise turn vector search off silently (:mod:`memreader.stores.embedder_rules`).

See :mod:`memreader.stores.base` for what every store promises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memreader.errors import ConfigError, MissingEmbedderError
from memreader.registry import Registry
from memreader.stores.base import (
    SEARCH_MODES,
    HistoryEntry,
    MemoryPage,
    MemoryStore,
    QueryEmbedder,
    ScoreParts,
    SearchFilters,
    SearchHit,
    SearchMode,
    SourceSelector,
    UnknownMemoryError,
)
from memreader.stores.category_api import check_keeper
from memreader.stores.category_types import CategoryDef, CategoryKeeper, StoredCategory
from memreader.stores.checks import check_url
from memreader.stores.context import Context, ContextPart
from memreader.stores.contract import StoreBackend
from memreader.stores.embedder_rules import store_embedder
from memreader.stores.erasure import EraseReceipt
from memreader.stores.events import EventKind, WriteEvent
from memreader.stores.lifecycle import (
    IndexConfig,
    IndexHealth,
    LifecycleConfig,
    MaintainReport,
    check_lifecycle,
)
from memreader.stores.records import MemoryStatus, StoredMemory
from memreader.stores.urls import public_url

#: The categories were a mixin of :class:`MemoryStore`; they are its own methods now. The
#: name stays for code that annotated a store with it.
CategoryStorage = MemoryStore

__all__ = [
    "SEARCH_MODES",
    "STORES",
    "CategoryDef",
    "CategoryKeeper",
    "CategoryStorage",
    "Context",
    "ContextPart",
    "EraseReceipt",
    "EventKind",
    "HistoryEntry",
    "IndexConfig",
    "IndexHealth",
    "LifecycleConfig",
    "MaintainReport",
    "MemoryPage",
    "MemoryStatus",
    "MemoryStore",
    "MissingEmbedderError",
    "QueryEmbedder",
    "ScoreParts",
    "SearchFilters",
    "SearchHit",
    "SearchMode",
    "SourceSelector",
    "StoreBackend",
    "StoredCategory",
    "StoredMemory",
    "UnknownMemoryError",
    "WriteEvent",
    "open_store",
    "register_store",
]

#: Store classes by URL scheme. Built-ins are imported on first use (the embedded store needs
#: numpy, the PostgreSQL one psycopg).
STORES: Registry[type[MemoryStore]] = Registry(
    "memory store",
    lazy={
        "sqlite": "memreader.stores.sqlite.store",
        "postgresql": "memreader.stores.postgres.store",
    },
)

StoreClass = type[MemoryStore]


def register_store(scheme: str) -> Callable[[StoreClass], StoreClass]:
    """A class decorator registering a :class:`MemoryStore` for URLs ``scheme://...``; the
    class's :meth:`~MemoryStore.from_url` opens them.

    Raises:
        RegistryError: ``scheme`` is taken by another class.
    """
    return STORES.register(scheme)


def open_store(
    url: str,
    *,
    embedder: QueryEmbedder | None = None,
    text_only: bool = False,
    category_keeper: CategoryKeeper | None = None,
    lifecycle: Any = None,
    **options: Any,
) -> MemoryStore:
    """Open the store ``url`` names (``sqlite:///memories.db``).

    >>> with open_store("sqlite://:memory:", text_only=True) as store:
    ...     store.embedding_models(user_id="ana")
    {}

    Args:
        url: ``scheme://...``; the scheme picks the store.
        embedder: embeds queries (and items written without vectors): the embedder the
            store's memories were embedded with (a reader's ``embedder``). Required unless
            ``text_only``.
        text_only: open without an embedder on purpose: search is full text only, items
            written without a vector are stored without one (a reader config's
            ``embedder: null``; a command that never searches).
        category_keeper: called after each change (the store's
            :attr:`~memreader.stores.contract.StoreBackend.category_keeper`, which may
            also be set on the open store); ``None``: categories change only when asked.
        lifecycle: the budget and purge settings (a
            :class:`~memreader.stores.lifecycle.config.LifecycleConfig` or its mapping; the
            store's :attr:`~memreader.stores.contract.StoreBackend.lifecycle`);
            ``None``: no budget.
        options: the store's own options (for ``sqlite``: ``near_duplicate``, ``gamma``,
            ``importance_weight``, ``timeout``).

    Raises:
        MissingEmbedderError: no ``embedder`` and not ``text_only`` (a
            :class:`~memreader.errors.ConfigError`: the message says how to fix it).
        ConfigError: the URL has no scheme, or one no store handles (the message lists the
            known ones), or holds a control character (a NUL), or the store's module cannot be
            imported, or an option (or the keeper) is invalid.
        StoreError: the store cannot be opened.
    """
    if not isinstance(url, str) or "://" not in url:
        raise ConfigError(f"a store URL looks like sqlite:///memories.db, got {url!r}")
    check_url(url)
    scheme = url.partition("://")[0]
    try:
        store_class = STORES.get(scheme)
    except ImportError as exc:
        raise ConfigError(
            f"the {scheme!r} memory store is not available here ({exc}); "
            f"known: {', '.join(STORES.names())}"
        ) from None
    store_embedder(embedder, text_only, f"the store {public_url(url)}")
    keeper = check_keeper(category_keeper)
    settings = check_lifecycle(lifecycle)
    store = store_class.from_url(url, embedder=embedder, text_only=text_only, **options)
    store.category_keeper = keeper
    store.lifecycle = settings
    store.opened_from = public_url(url)  # what its index check names (no password)
    return store
