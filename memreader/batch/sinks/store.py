"""The ``store`` sink: a job's items written into a memory store (``output: {store:
sqlite:///m.db}``; see :mod:`memreader.stores`).

Each input is written as it is read, :data:`PART_ITEMS` items at a time
(:meth:`~memreader.stores.MemoryStore.write_part`, each support keyed by the input:
``input:<key>``), so memory stays bounded however large the input. :meth:`StoreInputWriter.commit`
then makes the input's memories exactly what this run read
(:meth:`~memreader.stores.MemoryStore.retire_unseen`): a memory supported only by this input
and not written in this run becomes ``superseded``; one also supported by other sources only
loses this input's. So a rerun of a killed job gives the same rows (what the killed run wrote is
found again: ``NONE``), and a changed input replaces its memories instead of adding to them.

**A failed input** (:meth:`StoreInputWriter.discard`) retires nothing: what earlier runs
committed stays as it was. The parts written before the failure stay too (a store has no
"uncommitted" rows across transactions): new memories tagged with the input's key, active
beside the old ones, until the input is read again and committed (its commit retires what that
run did not write). The manifest records the input as failed, so the next run reads it again.

The reader of a job with a store output looks its items up in the same store before embedding
(the ``dedup`` step; the job sets the reader's ``store``), so re-ingesting what is stored costs
no embedding. The store URL's password never reaches a message, a log, the manifest or a repr:
they show :func:`~memreader.stores.urls.public_url`.
"""

from __future__ import annotations

import logging
from collections import Counter
from typing import TYPE_CHECKING, Any

from memreader.batch.sinks.base import InputWriter, Sink, register_sink
from memreader.errors import ConfigError, MemReaderError, SinkError, StoreError
from memreader.items import TextualMemoryItem
from memreader.stores.base import MemoryStore, SourceSelector
from memreader.stores.urls import public_url

if TYPE_CHECKING:
    from memreader.batch.job import OutputSpec
    from memreader.batch.places.base import OutputFolder
    from memreader.factory import MemReaderConfigFactory
    from memreader.front import Memory
    from memreader.readers import BaseMemReader

__all__ = ["PART_ITEMS", "StoreInputWriter", "StoreSink"]

logger = logging.getLogger(__name__)

#: Items per store transaction while an input is read.
PART_ITEMS = 256


class StoreInputWriter(InputWriter):
    """One input's items into ``store``, in parts, tagged with the input's key ``key``
    (``where`` names the store in messages, without secrets)."""

    def __init__(self, store: MemoryStore, key: str, where: str) -> None:
        super().__init__()
        self.store = store
        self.source = SourceSelector(input_key=key)
        self.where = where
        self.events: Counter[str] = Counter()
        """How many of each write event this input's writes gave (``ADD``, ``NONE``, ...)."""
        self._pending: list[TextualMemoryItem] = []
        self._seen: dict[str, set[str]] = {}
        self._state = "open"

    def _check_open(self) -> None:
        if self._state != "open":
            raise ValueError(f"this input's writer was {self._state}")

    def write(self, item: dict[str, Any]) -> None:
        """Queue one item; every :data:`PART_ITEMS` items are written in one transaction."""
        self._check_open()
        try:
            parsed = TextualMemoryItem.from_dict(item)
        except ValueError as exc:
            raise SinkError(f"{self.where}: not a memory item: {exc}") from None
        self._pending.append(parsed)
        self.items += 1
        if len(self._pending) >= PART_ITEMS:
            self._flush()

    def _flush(self) -> None:
        if not self._pending:
            return
        part, self._pending = self._pending, []
        try:
            events = self.store.write_part(part, source=self.source)
        except MemReaderError as exc:
            raise SinkError(f"writing into {self.where}: {exc}") from exc
        self.kept += len(part)
        for item, event in zip(part, events, strict=False):
            self._seen.setdefault(item.metadata.user_id, set()).add(event.memory_id)
            self.events[event.event] += 1

    def commit(self) -> list[str]:
        """Write what is queued, then retire what this input no longer supports."""
        self._check_open()
        try:
            self._flush()
            try:
                retired = self.store.retire_unseen(self.source, seen=self._seen)
            except MemReaderError as exc:
                raise SinkError(f"committing into {self.where}: {exc}") from exc
        except BaseException:
            self.discard()
            raise
        self.events.update(event.event for event in retired)
        self.owners = set(self._seen)
        self._state = "committed"
        logger.info(
            "%s: %s into %s",
            self.source.input_key,
            ", ".join(f"{name} {n}" for name, n in sorted(self.events.items())) or "nothing",
            self.where,
        )
        return [f"{self.where} (input:{self.source.input_key})"]

    def discard(self) -> None:
        """Drop what is queued; see the module docstring for what written parts leave."""
        if self._state == "open":
            self._pending = []
            self._seen = {}
            self._state = "discarded"


#: The Memory a store sink holds before a worker hands it its reader config (the job's driver:
#: the store is checked at once and the ``markdown`` sink reads it at the end): it never reads,
#: searches or embeds, so no embedder, and no category keeper.
_STORE_ONLY: dict[str, Any] = {"config": {"embedder": None, "categories": {"enabled": False}}}


@register_sink("store")
class StoreSink(Sink):
    """Items into the memory store ``output.store`` names (see the module docstring); the
    manifest, errors and summary go to ``output.path``. The sink holds a
    :class:`~memreader.Memory` on the store, opened when the sink is built, so a bad URL or an
    unusable store fails the job before any input is read; a worker's reader is that Memory's
    (:meth:`reader_for`), so the reader's ``dedup`` looks items up in this very store and the
    Memory keeps the categories (and the budget) as the job's reader config says."""

    @classmethod
    def check(cls, spec: OutputSpec) -> None:
        """Refuse a spec without ``store``."""
        if spec.store is None:
            raise ConfigError("format: store needs output.store (a store URL, sqlite:///m.db)")

    def __init__(self, spec: OutputSpec, folder: OutputFolder) -> None:
        super().__init__(spec, folder)
        assert spec.store is not None  # check() refused it
        self.url = spec.store.get_secret_value()
        self.where = public_url(self.url)
        self.memory = self._memory(_STORE_ONLY)

    @property
    def store(self) -> MemoryStore:
        """The store the items go into (the Memory's)."""
        return self.memory.store

    def reader_for(self, config: MemReaderConfigFactory) -> BaseMemReader:
        """The reader of a Memory on this store built with ``config`` (it replaces the sink's
        store-only one): its steps read this store, and the Memory keeps the categories of
        what is written as the config says (none when it turns them off)."""
        memory = self._memory(config)
        self.memory.close()
        self.memory = memory
        return memory.reader

    def _memory(self, config: Any) -> Memory:
        from memreader.front import Memory

        try:
            return Memory(config, store=self.url)
        except StoreError as exc:
            raise SinkError(f"cannot open {self.where}: {exc}") from None

    def open_input(self, key: str) -> StoreInputWriter:
        """A writer of the input ``key``'s items."""
        return StoreInputWriter(self.store, key, self.where)

    def close(self) -> None:
        """Close the Memory (its store and reader), then the folder."""
        try:
            self.memory.close()
        finally:
            super().close()

    def __repr__(self) -> str:
        return f"StoreSink({self.where!r})"
