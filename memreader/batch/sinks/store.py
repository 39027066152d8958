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
import os
from collections import Counter
from typing import TYPE_CHECKING, Any

from memreader.batch.job import sqlite_file
from memreader.batch.sinks.base import InputWriter, Sink, register_sink
from memreader.errors import ConfigError, MemReaderError, SinkError
from memreader.items import TextualMemoryItem
from memreader.stores.base import MemoryStore, SourceSelector
from memreader.stores.urls import public_url

if TYPE_CHECKING:
    from memreader.batch.job import OutputSpec
    from memreader.batch.places.base import OutputFolder

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


@register_sink("store")
class StoreSink(Sink):
    """Items into the memory store ``output.store`` names (see the module docstring); the
    manifest, errors and summary go to ``output.path``. The store is opened when the sink is
    built, so a bad URL or an unusable store fails the job before any input is read."""

    @classmethod
    def check(cls, spec: OutputSpec) -> None:
        """Refuse a spec without ``store``."""
        if spec.store is None:
            raise ConfigError("format: store needs output.store (a store URL, sqlite:///m.db)")

    def __init__(self, spec: OutputSpec, folder: OutputFolder) -> None:
        super().__init__(spec, folder)
        from memreader.stores import open_store

        assert spec.store is not None  # check() refused it
        url = spec.store.get_secret_value()
        self.where = public_url(url)
        file = sqlite_file(url)
        if file is not None and os.path.dirname(file):
            try:
                os.makedirs(os.path.dirname(file), exist_ok=True)
            except OSError as exc:
                raise SinkError(f"cannot create the folder of {self.where}: {exc}") from None
        # A sink writes items that carry their vectors and never searches: no embedder.
        self.store = open_store(url, text_only=True)

    def keep_categories(self, reader: Any) -> None:
        """Keep the categories of the owners written (see :mod:`memreader.categories`), as
        the reader's config says (none when it turns them off)."""
        from memreader.categories.maintainer import maintainer_for

        self.store.category_keeper = maintainer_for(reader)

    def open_input(self, key: str) -> StoreInputWriter:
        """A writer of the input ``key``'s items."""
        return StoreInputWriter(self.store, key, self.where)

    def close(self) -> None:
        """Close the store, then the folder."""
        try:
            self.store.close()
        finally:
            super().close()

    def __repr__(self) -> str:
        return f"StoreSink({self.where!r})"
