"""The ``dedup`` step: items already in the reader's memory store are not embedded again.

=====  ========  ========  ==================
step   requires  produces  modes
=====  ========  ========  ==================
dedup  emitted   emitted   fast, fine, refine
=====  ========  ========  ==================

With a store (the one a :class:`~memreader.Memory` hands its reader, else the reader config's
``store`` URL; a batch job with a store output sets it: see
:meth:`~memreader.steps.runtime.ReaderRuntime.store`), the call's items are looked up there
before ``embed``, one query per owner (:meth:`~memreader.stores.MemoryStore.lookup`): an item
whose id is stored active with the same text (``NONE``), or whose text is an active memory of
its owner and type (``REINFORCE``), is taken out of ``emitted`` (what the embed step embeds), so
it gets no vector; it stays in the call's items, in its place, with its id. Its window's report
gets a note (``item <id>: already stored: NONE``) and the report's ``resources`` count it
(``already_stored``). Writing such an item into the store needs no vector: the store keeps the
one it has. Without a store the step does nothing; ``pipeline.remove: [dedup]`` removes it.

A store opened from the URL is opened once per reader (on first use) and closed with it. A
lookup that fails (the store is locked past its timeout, a server is gone) costs only the
saving: every item is embedded, with one warning.

Items that skip embedding carry no vector in the call's result: what is written elsewhere
beside the store (``memreader read --store ... -o items.jsonl``) has none for them.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from memreader.errors import MemReaderError
from memreader.modes import ALL_MODES
from memreader.pipeline import Step
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState

if TYPE_CHECKING:
    from memreader.stores import WriteEvent

__all__ = ["Dedup"]

logger = logging.getLogger(__name__)


@STEPS.register("dedup")
class Dedup(Step):
    """Takes the items already in the reader's store out of ``emitted``, so ``embed`` skips
    them (see the module docstring)."""

    name = "dedup"
    requires = ("emitted",)
    produces = ("emitted",)
    modes = frozenset(ALL_MODES)

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        if not state.emitted or not runtime.has_store or not runtime.embeds:
            return
        store = runtime.store()
        if store is None:
            return
        by_owner: dict[str, list[int]] = {}
        for position, (item, _) in enumerate(state.emitted):
            if item.metadata.user_id.strip() and item.metadata.embedding is None:
                by_owner.setdefault(item.metadata.user_id, []).append(position)
        found: dict[int, WriteEvent] = {}
        try:
            for owner, positions in by_owner.items():
                events = store.lookup([state.emitted[p][0] for p in positions], user_id=owner)
                found.update((p, e) for p, e in zip(positions, events, strict=True) if e)
        except MemReaderError as exc:
            logger.warning("dedup: the store lookup failed, embedding every item: %s", exc)
            return
        if not found:
            return
        for position, event in found.items():
            item, entry = state.emitted[position]
            stored_as = "" if event.memory_id == item.id else f" as {event.memory_id}"
            entry.notes.append(f"item {item.id}: already stored{stored_as}: {event.event}")
        state.report.count("already_stored", len(found))
        state.emitted = [pair for p, pair in enumerate(state.emitted) if p not in found]
