"""The one place that wires a reader, its store, the category keeper and the budget.

``Memory`` (and through it ``AsyncMemory``, the service, the CLI, MCP and batch's store sink)
builds its parts here: the reader from its config, the store opened with the reader's embedder
(or text only when the config says ``embedder: null``), the keeper of the reader's categories
and the config's lifecycle, then hands that open store to the reader's runtime so its ``dedup``
and ``reconcile`` steps read the very store it writes to, never a second one opened by URL.
A store it opens has its index checked (the config's ``index:`` section:
:mod:`memreader.stores.lifecycle.index_check`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from memreader.errors import InputError
from memreader.factory import MemReaderConfigFactory
from memreader.front.config import ConfigLike, reader_config
from memreader.readers import BaseMemReader
from memreader.stores import MemoryStore

__all__ = ["Wired", "wire"]

#: What the reader's config decides about the store, never ``store_options``.
_CONFIG_OWNS = frozenset({"embedder", "text_only", "category_keeper", "lifecycle"})


@dataclass(frozen=True)
class Wired:
    """A reader and its store, wired (see the module docstring)."""

    config: MemReaderConfigFactory  # what the reader was built from
    store_url: str
    reader: BaseMemReader
    store: MemoryStore


def wire(
    config: ConfigLike,
    store: str | MemoryStore | None,
    store_options: Mapping[str, Any] | None,
    reader: BaseMemReader | None,
) -> Wired:
    """The reader ``config`` names (or ``reader``, built from it already) and its store: the
    URL ``store`` (it wins over the config's; neither: the home store), or ``store`` itself
    when it is open already (its owner wired it).

    Raises:
        InputError: ``store_options`` set what the config decides, or go with an open store.
        ConfigError: an invalid config or store URL.
        StoreError: the store cannot be opened.
    """
    from memreader.categories.maintainer import maintainer_for
    from memreader.stores import open_store
    from memreader.stores.lifecycle.index_check import check_on_open

    options = dict(store_options or {})
    owned = sorted(_CONFIG_OWNS & set(options))
    if owned:
        raise InputError(
            f"Memory(store_options=...) cannot set {', '.join(owned)}: the reader's config "
            "does (its embedder, or `embedder: null` for text-only search; its categories; its "
            "lifecycle)"
        )
    opened, url = (store, None) if isinstance(store, MemoryStore) else (None, store)
    if opened is not None and options:
        raise InputError("Memory(store=<an open store>) takes no store_options")
    factory, store_url = reader_config(config, url)
    built = reader if reader is not None else factory.build()
    # The reader's embedder, or text only when its config says `embedder: null`.
    memories = opened or open_store(
        store_url,
        **built.runtime.store_embedding(),
        category_keeper=maintainer_for(built),
        lifecycle=factory.config.lifecycle,
        **options,
    )
    check_on_open(memories, factory.config.index)
    # The reader's dedup and reconcile steps read this very store, never a reopened one.
    built.runtime.use_store(memories)
    return Wired(factory, store_url, built, memories)
