"""Keeping an owner's categories up to date as memories change: the
:class:`~memreader.stores.category_types.CategoryKeeper` a store calls after each write or
forget.

After a change it (1) makes sure the owner has the configured categories, (2) links each new
or newly active memory to its categories (the item's own, as the ``categorize`` step set them;
else by its vector; else the catch-all), and (3) rewrites the summary of every category whose
items changed: a new item linked, or an item it covered superseded or forgotten (its citations
leave the summary in the same call). Summaries are deterministic unless an LLM is given and the
mode says so (:class:`~memreader.categories.config.SummarySettings`).
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections import defaultdict
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memreader.categories.assign import CategoryIndex
from memreader.categories.config import CategoriesConfig
from memreader.categories.llm_summary import LLMSummary, llm_summary
from memreader.categories.summaries import deterministic_summary, newest_first, parse
from memreader.errors import MemReaderError
from memreader.items import TextualMemoryItem
from memreader.stores.base import MemoryStore
from memreader.stores.category_types import StoredCategory
from memreader.stores.erase_rules import SCRUB_NOTE
from memreader.stores.events import WriteEvent
from memreader.stores.records import StoredMemory

__all__ = ["CategoryMaintainer", "SummaryUpdate", "maintainer_for"]

logger = logging.getLogger(__name__)

#: Events after which a memory may be newly active or newly retired.
_CHANGES = frozenset({"ADD", "UPDATE", "SUPERSEDE", "EXPIRE", "REINFORCE", "NONE"})
_FINE_TAGS = frozenset({"mode:fine", "mode:refine"})


@dataclass(frozen=True)
class SummaryUpdate:
    """One category summary rewritten: whose, which, how (``llm`` or ``deterministic``), why
    an LLM answer was repaired or refused (``note``), its items, and the LLM's cost."""

    user_id: str
    category: str
    kind: str
    note: str | None
    items: int
    llm_calls: int = 0
    prompt_chars: int = 0


OnUpdate = Callable[[SummaryUpdate], None]


class CategoryMaintainer:
    """Keeps categories after each store change (see the module docstring).

    Args:
        config: the reader config's ``categories``.
        embedder: embeds the category descriptions (for items that carry no categories); none:
            such items go to the catch-all.
        llm: an LLM router with a ``general_llm`` (or ``llm``) slot, for LLM summaries.
        on_update: called with each :class:`SummaryUpdate` (logging, metrics, reports).
    """

    def __init__(
        self,
        config: CategoriesConfig,
        *,
        embedder: Any = None,
        llm: Any = None,
        on_update: OnUpdate | None = None,
    ) -> None:
        self.config = config
        self.embedder = embedder
        self.llm = llm
        self.on_update = on_update
        self.defs = config.all()
        self._category_index: CategoryIndex | None = None
        # Owners whose categories a store has (a store that is closed and collected drops out).
        self._ready: weakref.WeakKeyDictionary[MemoryStore, set[str]] = weakref.WeakKeyDictionary()
        self._locks: dict[str, threading.Lock] = defaultdict(threading.Lock)
        self._guard = threading.Lock()

    def after_change(
        self,
        store: MemoryStore,
        events: Sequence[WriteEvent],
        items: Sequence[TextualMemoryItem],
    ) -> list[SummaryUpdate]:
        """Link and summarise after ``events`` (see the module docstring); the updates made."""
        by_item = {item.id: item for item in items}
        touched: dict[str, set[str]] = defaultdict(set)
        for event in events:
            if event.event not in _CHANGES:
                continue
            owner = _owner(event, by_item)
            if owner is None:
                continue
            touched[owner].add(event.memory_id)
            if event.previous_id:
                touched[owner].add(event.previous_id)
        updates: list[SummaryUpdate] = []
        for owner, memory_ids in sorted(touched.items()):
            with self._owner_lock(owner):
                updates.extend(
                    self._update_owner(store, owner, sorted(memory_ids), events, by_item)
                )
        return updates

    # -- one owner ------------------------------------------------------------------------------

    def _update_owner(
        self,
        store: MemoryStore,
        owner: str,
        memory_ids: list[str],
        events: Sequence[WriteEvent],
        by_item: dict[str, TextualMemoryItem],
    ) -> list[SummaryUpdate]:
        self._ensure_categories(store, owner)
        linked = store.categories_of(owner, memory_ids)
        fine_ids = {e.memory_id for e in events if _is_fine(by_item.get(e.item_id))}
        new_links: dict[str, list[str]] = {}
        changed: set[str] = set()
        for memory_id in memory_ids:
            memory = store.get(memory_id, user_id=owner)
            if memory is None:  # erased: the store took its lines out of the summaries, which
                # are written again so they hold what fits (read only after an erasure)
                changed.update(
                    c.name for c in store.categories(owner) if c.summary_note == SCRUB_NOTE
                )
                continue
            if memory.status != "active":
                changed.update(linked.get(memory_id, []))  # its citations must leave
            elif not linked.get(memory_id):
                names = self._categories_for(memory, by_item)
                new_links[memory_id] = names
                changed.update(names)
        if new_links:
            store.link_categories(owner, new_links)
        fine_categories = {name for memory_id in fine_ids for name in new_links.get(memory_id, ())}
        return [
            self._summarise(store, owner, name, name in fine_categories) for name in sorted(changed)
        ]

    def _categories_for(
        self, memory: StoredMemory, by_item: dict[str, TextualMemoryItem]
    ) -> list[str]:
        """The item's own categories (known names only), else by its vector."""
        known = {c.name for c in self.defs}
        item = by_item.get(memory.id, memory.item)
        own = [name for name in item.metadata.categories if name in known]
        if own:
            return own[: self.config.max_per_item]
        vector = item.metadata.embedding or memory.item.metadata.embedding
        picked = self._index().pick(vector, self.config)
        return picked if picked is not None else [self.config.catch_all.name]

    def _summarise(
        self, store: MemoryStore, owner: str, name: str, from_fine: bool
    ) -> SummaryUpdate:
        category = store.category(owner, name)
        if category is None:  # pragma: no cover - upserted above
            raise LookupError(name)
        settings = self.config.summaries
        # Only the newest items a summary can hold are read (a list line is at least ~40
        # characters with its citation), however large the category has grown.
        limit = max(settings.max_items, settings.max_chars // 40 + 1)
        newest = store.category_memories(owner, name, limit=limit)
        use_llm = (
            self.llm is not None
            and newest
            and (settings.mode == "llm" or (settings.mode == "auto" and from_fine))
        )
        if use_llm:
            result = self._llm_summary(store, category, newest[: settings.max_items])
        else:
            result = LLMSummary(
                deterministic_summary(newest, settings.max_chars),
                "deterministic" if newest else "empty",
            )
        note = "; ".join(result.notes) or None
        store.save_summary(owner, name, summary=result.summary, kind=result.kind, note=note)
        update = SummaryUpdate(
            owner,
            name,
            result.kind,
            note,
            len(category.item_ids),
            result.calls,
            result.prompt_chars,
        )
        if note is not None:
            logger.info("category %s of %s: %s", name, owner, note)
        if self.on_update is not None:
            self.on_update(update)
        return update

    def _llm_summary(
        self, store: MemoryStore, category: StoredCategory, newest: list[StoredMemory]
    ) -> LLMSummary:
        """The LLM's summary from ``newest`` and the items the old summary cites that still
        hold (read one by one: a summary cites at most a few dozen)."""
        active = set(category.item_ids)
        old = [
            replace(s, refs=tuple(r for r in s.refs if r in active))
            for s in parse(category.summary)
        ]
        old = [s for s in old if s.refs]
        shown = {m.id: m for m in newest}
        for memory_id in sorted({r for s in old for r in s.refs} - set(shown)):
            memory = store.get(memory_id, user_id=category.user_id)
            if memory is not None and memory.status == "active":
                shown[memory_id] = memory
        old = [
            replace(s, refs=kept) for s in old if (kept := tuple(r for r in s.refs if r in shown))
        ]
        return llm_summary(
            self.llm,
            category,
            newest_first(shown.values()),
            old,
            max_chars=self.config.summaries.max_chars,
        )

    # -- shared state -----------------------------------------------------------------------------

    def _owner_lock(self, owner: str) -> threading.Lock:
        with self._guard:
            return self._locks[owner]

    def _ensure_categories(self, store: MemoryStore, owner: str) -> None:
        with self._guard:
            ready = self._ready.setdefault(store, set())
        if owner in ready:
            return
        index = self._index()
        rows = dict(zip(index.names, index.vectors.tolist(), strict=True))
        store.upsert_categories(owner, self.defs, [rows.get(c.name) for c in self.defs])
        ready.add(owner)

    def _index(self) -> CategoryIndex:
        """The embedded descriptions (none without an embedder: items then go by their own
        categories, else to the catch-all)."""
        with self._guard:
            if self._category_index is None:
                self._category_index = CategoryIndex.of((), [])
                if self.embedder is not None:
                    try:
                        self._category_index = CategoryIndex.build(self.config, self.embedder)
                    except MemReaderError as exc:  # items without categories go to the catch-all
                        logger.warning("categories: the descriptions cannot be embedded: %s", exc)
            return self._category_index


def _owner(event: WriteEvent, by_item: dict[str, TextualMemoryItem]) -> str | None:
    owner = getattr(event, "user_id", None)
    if owner:
        return str(owner)
    item = by_item.get(event.item_id)
    return item.metadata.user_id if item is not None else None


def _is_fine(item: TextualMemoryItem | None) -> bool:
    return item is not None and bool(_FINE_TAGS & set(item.metadata.tags))


def maintainer_for(reader: Any, on_update: OnUpdate | None = None) -> CategoryMaintainer | None:
    """The maintainer of ``reader``'s categories (its embedder for descriptions; its LLM, when
    one is configured, for summaries), or ``None`` when its config turns categories off.

    :class:`~memreader.Memory` is the one place that gives it to a store (its
    ``category_keeper``), so every write through any surface keeps the categories; a CLI
    command, a batch job's store sink, the MCP server and the service each hold a Memory.
    """
    config = reader.config.categories
    if not config.enabled:
        return None
    llm = reader.runtime.llm if reader.config.resolve("general_llm") is not None else None
    embedder = reader.embedder if reader.config.embedder is not None else None
    return CategoryMaintainer(config, embedder=embedder, llm=llm, on_update=on_update)
