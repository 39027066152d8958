"""What a memory store is: the :class:`MemoryStore` interface, what it keeps of each memory
(:class:`StoredMemory`), and what its calls return (:class:`WriteEvent`, :class:`SearchHit`,
:class:`HistoryEntry`).

The promises every store keeps:

- **Owners are walls.** Every read and every change names one ``user_id``; nothing reads,
  deduplicates against, supersedes or forgets another owner's memories.
- **Scopes stay apart inside an owner** (:mod:`memreader.scopes`): a search for a task never
  sees another task's private memories, and no write merges, reinforces or retires a memory of
  another agent, task or visibility.
- **Nothing is deleted by a decision.** A memory that stops being true is ``superseded`` (by a
  newer one) or ``expired`` (its sources were forgotten); its row and its history stay. Only
  :meth:`MemoryStore.purge` removes rows, and only expired or superseded ones retired before a
  given time.
- **Writes are idempotent.** Writing the same items again changes nothing (events ``NONE``);
  the same memory (same owner, type and content hash, or a near duplicate) seen again from
  sources it does not have yet is ``REINFORCE``: no new row, ``reinforced`` counts it and its
  sources join the old memory's; from sources it already has, ``NONE`` (no history row).
- **What is stored is valid**: every item is validated again on write; a row that cannot be
  read anyway is passed over by reads (a warning names it), never failing its owner's.
- **Every change is history**: one :class:`HistoryEntry` per event that changed a row.
- **A store says why**: each :class:`WriteEvent` carries a one-line reason, each
  :class:`SearchHit` the parts of its score.

A memory's *support* is what it was read from: each of its sources, keyed by the document, the
session, the message and the batch input it came from (see :mod:`memreader.stores.write_decisions`).
Forgetting a source removes the supports it keyed; a memory left with none is ``expired``.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Any

from memreader.calls.deadlines import Deadline, check_deadline, checked_deadline
from memreader.errors import InputError
from memreader.items import TextualMemoryItem
from memreader.stores import category_api, direct_writes, embedder_rules
from memreader.stores import usage as use_records
from memreader.stores.after_write import after_change
from memreader.stores.checks import (
    SourceSelector,
    check_k,
    check_memory_id,
    check_owner,
    check_seen,
    moment,
)
from memreader.stores.context import Context, search_context
from memreader.stores.contract import StoreBackend
from memreader.stores.direct_writes import UnknownMemoryError
from memreader.stores.embedder_rules import QueryEmbedder
from memreader.stores.events import HistoryEntry, WriteEvent
from memreader.stores.filters import SearchFilters
from memreader.stores.hits import SEARCH_MODES, SearchHit, SearchMode
from memreader.stores.lifecycle import api as lifecycle_api
from memreader.stores.lifecycle import index_check
from memreader.stores.lifecycle import maintain as lifecycle_maintain
from memreader.stores.paging import (
    DEFAULT_PAGE,
    MemoryPage,
    check_page_limit,
    page_of,
    read_cursor,
)
from memreader.stores.records import StoredMemory
from memreader.stores.scoring import ScoreParts

__all__ = [
    "SEARCH_MODES",
    "HistoryEntry",
    "MemoryPage",
    "MemoryStore",
    "QueryEmbedder",
    "ScoreParts",
    "SearchFilters",
    "SearchHit",
    "SearchMode",
    "SourceSelector",
    "UnknownMemoryError",
]


class MemoryStore(StoreBackend):
    """Where memories are written, searched, traced and forgotten (see the module docstring).

    The public API, written once over the backend's hooks
    (:class:`~memreader.stores.contract.StoreBackend`): the core calls below; categories
    (:mod:`~memreader.stores.category_api`), memories given as text added, updated and
    deleted (:mod:`~memreader.stores.direct_writes`), the models its vectors came from
    (:mod:`~memreader.stores.embedder_rules`), how often each memory was used
    (:mod:`~memreader.stores.usage`), each owner's budget, pins and restores
    (:mod:`~memreader.stores.lifecycle.api`) and ``maintain``
    (:mod:`~memreader.stores.lifecycle.maintain`) are plain functions of those modules, each
    bound here by name. After each committed change, the store runs the after-write list
    (:mod:`~memreader.stores.after_write`: the budget, then the category keeper).

    Stores are registered by URL scheme and opened with
    :func:`memreader.stores.open_store` (``sqlite:///memories.db``, ``postgresql://...``).
    """

    #: The URL :func:`~memreader.stores.open_store` opened it from, password masked (what
    #: :meth:`index_health`'s command names); ``None`` when opened otherwise.
    opened_from: str | None = None

    # -- categories ---------------------------------------------------------------------------
    upsert_categories = category_api.upsert_categories
    link_categories = category_api.link_categories
    categories = category_api.categories
    category = category_api.category
    category_memories = category_api.category_memories
    categories_of = category_api.categories_of
    save_summary = category_api.save_summary
    # -- memories given as text -----------------------------------------------------------------
    add_memory = direct_writes.add_memory
    update = direct_writes.update
    delete = direct_writes.delete
    forget = direct_writes.forget
    # -- what its vectors are and how memories are used ---------------------------------------
    embedding_models = embedder_rules.embedding_models
    mark_used = use_records.mark_used
    usage = use_records.usage
    record_use = use_records.record_use
    # -- budgets, pins, restores and maintenance ----------------------------------------------
    pin = lifecycle_api.pin
    unpin = lifecycle_api.unpin
    pinned = lifecycle_api.pinned
    restore = lifecycle_api.restore
    enforce_budget = lifecycle_api.enforce_budget
    maintain = lifecycle_maintain.maintain
    repair_index = lifecycle_maintain.repair_index
    index_health = index_check.index_health

    def write(
        self,
        items: Sequence[TextualMemoryItem],
        *,
        replaces: SourceSelector | None = None,
        user_id: str | None = None,
        now: datetime | None = None,
        deadline: Deadline | None = None,
    ) -> list[WriteEvent]:
        """Store ``items`` (one transaction) and return one event per item, in order, then
        one event per memory that ``replaces`` retired or reduced.

        ``deadline`` (:class:`~memreader.calls.deadlines.Deadline`) is checked before the write
        starts and right before it commits: past it (or cancelled), the write rolls back
        entirely (nothing of it is stored) and raises
        :class:`~memreader.errors.DeadlineExceeded`.

        ``replaces``: these items are now everything that ``replaces`` (a re-read document, a
        re-run batch input) supports: they are written with its key, and active memories of
        the same owner that it supported and that are not among ``items`` lose its sources;
        those left with none become ``superseded`` (event ``SUPERSEDE``), the others
        ``UPDATE``. ``user_id`` names the owner when ``items`` is empty (a document that now
        yields nothing); when given, every item must belong to it.

        An item's reconcile decision (``metadata.reconcile``) is applied when its target is an
        active memory of the item's owner (``UPDATE``/``SUPERSEDE``: the target superseded by
        the item, ``previous_id``; ``NONE``: the target reinforced), else the item follows the
        dedup rules, the reason saying why: :func:`memreader.stores.write_decisions.reconciled`.

        Raises:
            InputError: an item is not a memory item, has no owner, or reuses a stored id for
                different text (the message names the item's index).
            StoreError: the store failed or stayed locked past its timeout.
        """
        if replaces is not None and not isinstance(replaces, SourceSelector):
            raise InputError(f"replaces must be a SourceSelector, got {type(replaces).__name__}")
        checked = checked_deadline(deadline)
        check_deadline(checked, "before the store write")
        events = self._write(items, replaces, user_id, now, in_parts=False, deadline=checked)
        return self._after_change(events, items)

    def get(self, memory_id: str, *, user_id: str) -> StoredMemory | None:
        """The memory ``memory_id`` of ``user_id``, whatever its status; ``None`` if that owner
        has no such memory (or its row cannot be read: a warning names it).

        Raises:
            InputError: ``memory_id`` or ``user_id`` is not a non-empty string.
        """
        return self._get(check_memory_id(memory_id), check_owner(user_id))

    def search(
        self,
        query: str,
        *,
        user_id: str,
        k: int = 10,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        now: datetime | None = None,
        **keywords: Any,
    ) -> list[SearchHit]:
        """The ``k`` best memories of ``user_id`` for ``query``, best first.

        ``filters`` (a :class:`~memreader.stores.filters.SearchFilters`, or a dict of its
        fields) and ``keywords`` of the same names say what the search keeps and how it ranks
        (see :class:`~memreader.stores.filters.SearchFilters`): ``agent_id``/``task_id`` are hard
        scope filters (:mod:`memreader.scopes`: a task never sees another task's private
        memories); ``category`` keeps the memories linked to that category of the owner
        (:meth:`link_categories`); ``min_score`` (``None``, the default on every surface: no
        cut) drops hits less relevant than it. ``now``: the time decay is measured to. The
        owner's first vector search warns when its vectors came from another model
        (:mod:`~memreader.stores.embedder_rules`).

        Each hit's ``score`` (:class:`ScoreParts`) says why it ranked: ``relevance`` is how
        well its best passage matches the query (0: nothing of it, 1: a near paraphrase),
        ``final`` (what hits are sorted by, in [0, 1]) that times a small importance factor,
        the age decay and recent use (``heat_weight``); ``passages`` name the spans of its
        text that matched, best first. A search never records use.

        Raises:
            InputError: a bad argument (``k`` not in [1, MAX_K]; an unknown filter; a bad value).
        """
        checked = SearchFilters.of(filters, **keywords)
        if not isinstance(query, str):
            raise InputError(f"query must be a string, got {type(query).__name__}")
        if checked.heat_weight is None:  # the store's own
            checked = SearchFilters.of(checked, heat_weight=self.heat_weight)
        owner, k = check_owner(user_id), check_k(k)
        if checked.mode != "text":
            embedder_rules.watch_models(self, owner)
        return self._search(query, owner, k, checked, moment(now), checked.mode)

    def get_all(
        self,
        *,
        user_id: str,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        limit: int = DEFAULT_PAGE,
        cursor: str | None = None,
        **keywords: Any,
    ) -> MemoryPage:
        """``user_id``'s memories that ``filters`` keep (:meth:`search`'s, but those that rank),
        without a query: a page of at most ``limit``, the most recently stored first, whose
        ``next_cursor`` is the ``cursor`` of the next page (``None``: the last); walls hold.

        Raises:
            InputError: a bad filter, ``limit`` or cursor (``InvalidCursorError``).
        """
        checked = SearchFilters.of(filters, call="get_all()", **keywords).listing("get_all()")
        owner, limit = check_owner(user_id), check_page_limit(limit)
        after = read_cursor(cursor)
        rows = self._list_memories(owner, checked, limit + 1, after)
        return page_of(rows, limit)

    def history(self, memory_id: str, *, user_id: str) -> list[HistoryEntry]:
        """Every change of ``memory_id`` (of ``user_id``), oldest first.

        Raises:
            InputError: ``memory_id`` or ``user_id`` is not a non-empty string.
        """
        return self._history(check_memory_id(memory_id), check_owner(user_id))

    def write_part(
        self,
        items: Sequence[TextualMemoryItem],
        *,
        source: SourceSelector,
        now: datetime | None = None,
    ) -> list[WriteEvent]:
        """Store ``items`` as one part of everything ``source`` now supports (a batch input
        written as it is read, a few hundred items at a time), in one transaction; one event
        per item, in order.

        Like :meth:`write` with each new support also keyed by ``source``, except that nothing
        is retired and a memory reinforced here keeps the supports ``source`` gave it before
        (an earlier part of the same run may have written them). When every part is written,
        :meth:`retire_unseen` retires what ``source`` no longer supports; until then (or when
        the run fails) the memories of earlier runs of ``source`` stay as they were, beside
        the new ones.

        Raises:
            InputError: as :meth:`write`.
            StoreError: the store failed.
        """
        if not isinstance(source, SourceSelector):
            raise InputError(f"source must be a SourceSelector, got {type(source).__name__}")
        return self._after_change(self._write(items, source, None, now, in_parts=True), items)

    def retire_unseen(
        self,
        source: SourceSelector,
        *,
        seen: Mapping[str, Collection[str]],
        now: datetime | None = None,
    ) -> list[WriteEvent]:
        """End a write of ``source`` in parts (:meth:`write_part`): every active memory of
        an owner named in ``seen`` that ``source`` supports and whose id is not in
        ``seen[its owner]`` (the ``memory_id`` of every event the parts returned, by owner)
        loses the supports ``source`` keys; one left with none becomes ``superseded`` (event
        ``SUPERSEDE``), the others ``UPDATE``. One transaction; returns the events.

        Only the owners ``seen`` names are touched, except for a batch input
        (``SourceSelector(input_key=...)``): an input belongs to the job, not to one owner, so
        an owner whose memories came from an earlier version of the input and who is absent
        from this one is retired too. A session, document or message id is each owner's own
        (two owners may both have a session ``s1``), so another owner's memories are never
        touched by one. It changes nothing ``source`` does not support.

        Raises:
            InputError: ``source`` is not a :class:`SourceSelector`, or ``seen`` is not a
                mapping of owners to memory ids.
            StoreError: the store failed, or cannot write in parts.
        """
        if not isinstance(source, SourceSelector):
            raise InputError(f"source must be a SourceSelector, got {type(source).__name__}")
        return self._after_change(self._retire_unseen(source, check_seen(seen), now), [])

    def __enter__(self) -> MemoryStore:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def context(self, query: str, *, user_id: str, **options: Any) -> Context:
        """The best text of ``user_id``'s active memories for ``query`` within a token budget,
        as one block for a prompt, and its parts as data: see
        :func:`memreader.stores.context.search_context` (``options``: ``max_tokens``,
        ``tokenizer``, ``k``, ``order`` and :meth:`search`'s filters). The memories it shows
        are handed to an agent: their use is recorded in one statement
        (:func:`~memreader.stores.usage.record_use`: a store that cannot write
        still answers, with a warning)."""
        found = search_context(self.search, query, user_id=user_id, **options)
        self.record_use(list(dict.fromkeys(p.memory_id for p in found.parts)), user_id=user_id)
        return found

    def _after_change(
        self,
        events: list[WriteEvent],
        items: Sequence[TextualMemoryItem],
        *,
        keep: Collection[str] = (),
        now: datetime | None = None,
    ) -> list[WriteEvent]:
        """``events`` of a committed change once the after-write list ran over it
        (:func:`~memreader.stores.after_write.after_change`)."""
        return after_change(self, events, items, keep=keep, now=now)
