"""The store backend contract: every hook a backend (SQLite, PostgreSQL, a new one) implements,
in one place, grouped by what it serves.

:class:`~memreader.stores.base.MemoryStore` is written once on top of these hooks: it checks
every argument (a hook gets them checked: ``owner`` a non-empty string, ids distinct, times
aware), runs the after-write list (:mod:`memreader.stores.after_write`) once a change is
committed, and holds the shared rules (:mod:`~memreader.stores.category_api`,
:mod:`~memreader.stores.direct_writes`, :mod:`~memreader.stores.usage`,
:mod:`~memreader.stores.embedder_rules`, :mod:`~memreader.stores.lifecycle`) as plain
functions over the store. A backend is one class, ``class MyStore(MemoryStore)``, that
implements the abstract hooks below (and may override the few with a default).

The rules every hook keeps:

- **One transaction per hook** unless it says otherwise: a hook that changes rows commits all
  of its change or none of it; a hook that only reads may read a snapshot.
- **Owners are walls**: a hook given ``owner`` reads and changes that owner's rows only.
- **Errors**: a database failure (a lock held past the timeout too) is a
  :class:`~memreader.errors.StoreError` naming the store and what failed; a refusal the caller
  can act on is the :class:`~memreader.errors.InputError` the hook's docstring names. A hook
  never returns an empty answer for a failure.
- **Nothing runs after the commit here**: the budget and the category keeper are the
  after-write list's, which the store runs; a hook never calls them itself.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memreader.errors import StoreError
from memreader.stores.checks import check_memory_id, check_owner
from memreader.stores.events import WriteEvent

if TYPE_CHECKING:
    from typing_extensions import Self

    from memreader.calls.deadlines import Deadline
    from memreader.items import TextualMemoryItem
    from memreader.stores.category_types import (
        CategoryDef,
        CategoryKeeper,
        StoredCategory,
        SummaryKind,
    )
    from memreader.stores.checks import SourceSelector
    from memreader.stores.embedding import QueryEmbedder
    from memreader.stores.erasure import Tally
    from memreader.stores.events import HistoryEntry
    from memreader.stores.filters import SearchFilters
    from memreader.stores.hits import SearchHit, SearchMode
    from memreader.stores.lifecycle.config import LifecycleConfig
    from memreader.stores.lifecycle.priority import PriorityFacts
    from memreader.stores.passages.rows import PassagePlan
    from memreader.stores.records import StoredMemory, Unindexed, Usage

__all__ = ["HOOKS", "StoreBackend"]


class StoreBackend(ABC):
    """The hooks a memory store's backend implements (see the module docstring), and the
    settings every store holds. Abstract hooks must be written; a hook with a body is a
    default a backend may replace (one that refuses raises :class:`StoreError` naming the
    store)."""

    # -- settings (set by the backend's constructor or on the open store) --------------------

    #: Embeds queries and items written without a vector; ``None``: the store is text only.
    embedder: QueryEmbedder | None = None
    #: Called by the after-write list after each committed change; ``None``: nobody is. Set it
    #: with ``open_store(url, category_keeper=...)`` or on an open store.
    category_keeper: CategoryKeeper | None = None
    #: The store's life-cycle settings (``open_store(url, lifecycle=...)``, or set on the open
    #: store); ``None``: no budget, and ``maintain`` purges after the default delay.
    lifecycle: LifecycleConfig | None = None
    #: The store's heat weight (option ``heat_weight``, set by the backend's constructor; by
    #: default :data:`~memreader.stores.usage.DEFAULT_HEAT_WEIGHT`); a search may name another.
    heat_weight: float = 0.0
    #: Where an erasure's bytes may remain out of the store's reach (the receipt's ``residue``).
    erase_residue: tuple[str, ...] = ()

    if TYPE_CHECKING:  # MemoryStore's own calls, which the shared rules call back (not hooks)

        def write(
            self,
            items: Sequence[TextualMemoryItem],
            *,
            replaces: SourceSelector | None = None,
            user_id: str | None = None,
            now: datetime | None = None,
            deadline: Deadline | None = None,
        ) -> list[WriteEvent]: ...

        def get(self, memory_id: str, *, user_id: str) -> StoredMemory | None: ...

        def _after_change(
            self,
            events: list[WriteEvent],
            items: Sequence[TextualMemoryItem],
            *,
            keep: Collection[str] = (),
            now: datetime | None = None,
        ) -> list[WriteEvent]: ...

    # -- opening and closing -----------------------------------------------------------------

    @classmethod
    @abstractmethod
    def from_url(
        cls,
        url: str,
        *,
        embedder: QueryEmbedder | None = None,
        text_only: bool = False,
        **options: Any,
    ) -> Self:
        """Open the store ``url`` names (what :func:`~memreader.stores.open_store` calls), with
        ``embedder``, or with none when ``text_only``
        (:func:`~memreader.stores.embedder_rules.store_embedder`).

        Raises:
            MissingEmbedderError: no ``embedder`` and not ``text_only``.
            ConfigError: the URL or an option is invalid (the message names it).
            StoreError: the store cannot be opened.
        """

    @abstractmethod
    def close(self) -> None:
        """Close the store's connections (idempotent)."""

    # -- memories: writes, reads, search -----------------------------------------------------

    @abstractmethod
    def _write(
        self,
        items: Sequence[TextualMemoryItem],
        source: SourceSelector | None,
        user_id: str | None,
        now: datetime | None,
        *,
        in_parts: bool,
        deadline: Deadline | None = None,
    ) -> list[WriteEvent]:
        """What ``write`` (``in_parts=False``: ``source`` is ``replaces``) and ``write_part``
        (``in_parts=True``) do, their arguments checked; one transaction. ``deadline`` is
        checked right before the commit (past it, the transaction rolls back and
        :class:`~memreader.errors.DeadlineExceeded` is raised). Raises the
        :class:`~memreader.errors.InputError` of an invalid item (naming its index)."""

    def _retire_unseen(
        self, source: SourceSelector, seen: Mapping[str, Collection[str]], now: datetime | None
    ) -> list[WriteEvent]:
        """What ``retire_unseen`` does, its arguments checked; one transaction (by default:
        refused, the store cannot write in parts)."""
        raise StoreError(f"{type(self).__name__} cannot write a source in parts")

    def lookup(
        self, items: Sequence[TextualMemoryItem], *, user_id: str
    ) -> list[WriteEvent | None]:
        """What writing each of ``items`` (all of ``user_id``) would find already stored,
        without writing anything: ``NONE`` (``memory_id`` = the item's id) when the item's id
        is stored active with its content hash; ``REINFORCE`` (``memory_id`` = the stored one)
        when another active memory of the item's type has its content hash; else ``None``
        (writing it adds it, reactivates it, or reinforces a near duplicate, which needs its
        vector; an id stored with other text is ``None`` too: ``write`` refuses it).

        An item with an event here may be written without a vector (the store keeps its own).
        Backends answer in one query per few hundred items; this default finds only ``NONE``.

        Raises:
            InputError: ``items`` are not memory items of ``user_id``.
            StoreError: the store failed.
        """
        owner = check_owner(user_id)
        found: list[WriteEvent | None] = []
        for item in items:
            stored = self._get(check_memory_id(item.id), owner)
            same = (
                stored is not None
                and stored.status == "active"
                and stored.item.memory == item.memory
            )
            found.append(WriteEvent("NONE", item.id, item.id, "already stored") if same else None)
        return found

    @abstractmethod
    def _get(self, memory_id: str, owner: str) -> StoredMemory | None:
        """``owner``'s memory ``memory_id`` whatever its status; ``None`` when there is none
        or its row cannot be read (a warning names it)."""

    @abstractmethod
    def _search(
        self,
        query: str,
        user_id: str,
        k: int,
        filters: SearchFilters,
        now: datetime,
        mode: SearchMode,
    ) -> list[SearchHit]:
        """The ``k`` best hits of ``user_id`` for ``query`` (see ``search``), its arguments
        checked and ``now`` given; a read, never a write (a search records no use)."""

    @abstractmethod
    def _list_memories(
        self, owner: str, filters: SearchFilters, limit: int, before: int | None
    ) -> list[tuple[int, StoredMemory | None]]:
        """At most ``limit`` (rowid, memory or ``None`` if unreadable) of ``owner`` that
        ``filters`` keep, rowid descending, each below ``before`` when given; a read."""

    @abstractmethod
    def _history(self, memory_id: str, owner: str) -> list[HistoryEntry]:
        """Every change of ``owner``'s ``memory_id``, oldest first (``[]``: none)."""

    @abstractmethod
    def purge(self, *, older_than: datetime) -> int:
        """Remove expired and superseded rows retired before ``older_than`` (with their
        history, keys, text index, passages, category links and pins), one transaction;
        returns how many memories were removed."""

    # -- direct deletes and forgetting -------------------------------------------------------

    @abstractmethod
    def _delete(
        self, memory_id: str, owner: str, *, erase: bool, now: datetime
    ) -> tuple[WriteEvent, Tally] | None:
        """Retire (``erase``: remove from every place its text lives) ``owner``'s
        ``memory_id``, one transaction: its event and what was removed; ``None`` when
        ``owner`` has no ``memory_id``."""

    @abstractmethod
    def _forget(
        self, source: SourceSelector, user_id: str, now: datetime | None, erase: bool
    ) -> tuple[list[WriteEvent], Tally]:
        """What ``forget`` does, ``source`` checked, one transaction: its events and what it
        removed (``erase``: the memories only ``source`` supports, removed)."""

    # -- categories ---------------------------------------------------------------------------

    @abstractmethod
    def _upsert_categories(
        self, owner: str, pairs: list[tuple[CategoryDef, list[float] | None]]
    ) -> None:
        """Define ``owner``'s categories (each def with its vector, checked), one transaction:
        a new one with an empty summary, a known one gets its description; a def given no
        vector keeps the stored one while its description is unchanged."""

    @abstractmethod
    def _link_categories(self, owner: str, wanted: dict[str, list[str]]) -> None:
        """Make each memory's categories exactly ``wanted[memory id]``, one transaction.

        Raises:
            InputError: an unknown category name or memory of ``owner``
                (:func:`~memreader.stores.category_api.check_linkable`): nothing changes.
        """

    @abstractmethod
    def _categories(self, owner: str, name: str | None) -> list[StoredCategory]:
        """``owner``'s categories sorted by name, each with its active memories' ids; only
        the one named ``name`` (if it exists) when ``name`` is not ``None``."""

    @abstractmethod
    def _category_memories(self, owner: str, name: str, limit: int) -> list[StoredMemory]:
        """The newest ``limit`` active memories of ``owner``'s category ``name``, newest
        first (valid_from, else recorded_at; ties by id), in one bounded query."""

    @abstractmethod
    def _categories_of(self, owner: str, ids: list[str]) -> dict[str, list[str]]:
        """The sorted category names each of ``ids`` (distinct) is linked to, whatever its
        status; every id a key (``[]``: none)."""

    @abstractmethod
    def _save_summary(
        self,
        owner: str,
        name: str,
        summary: str,
        kind: SummaryKind,
        note: str | None,
        at: datetime,
    ) -> None:
        """Store the summary of ``owner``'s category ``name`` (``at`` in UTC), one
        transaction.

        Raises:
            InputError: ``owner`` has no category ``name``.
        """

    # -- use records --------------------------------------------------------------------------

    @abstractmethod
    def _mark_used(self, ids: list[str], owner: str, at: datetime) -> int:
        """Count one use of each of ``owner``'s ``ids`` at ``at`` (``last_accessed_at`` never
        moves back); how many memories were marked. One statement per
        :data:`~memreader.stores.usage.CHUNK` ids; a write that leaves the search caches as
        they are (it changes no memory)."""

    @abstractmethod
    def _usage(self, ids: list[str], owner: str) -> dict[str, Usage]:
        """The recorded use of ``owner``'s ``ids``; a memory never used is absent."""

    # -- the models of the stored vectors ----------------------------------------------------

    def _embedding_models(self, owner: str | None) -> Mapping[str, int]:
        """Model name -> how many active memories of ``owner`` (every owner: ``None``) have
        a vector from it (``""``: stored without a name), in one aggregate query (by default:
        refused)."""
        raise StoreError(f"{type(self).__name__} cannot list the models of its vectors")

    def _watched_models(self, owner: str) -> Mapping[str, int]:
        """What the first search of ``owner`` compares with the embedder's model
        (:func:`~memreader.stores.embedder_rules.watch_models`): by default
        :meth:`_embedding_models`; a store that holds the owner's vectors anyway may count
        them there instead."""
        return self._embedding_models(owner)

    # -- budgets, pins and restores (rules: memreader.stores.lifecycle.api) ------------------

    def _set_pins(
        self, owner: str, ids: list[str], on: bool, now: datetime, limit: int | None
    ) -> int:
        """Pin (``on``) or unpin ``owner``'s ``ids`` in one transaction; how many changed.

        Raises:
            UnknownMemoryError: ``owner`` has no memory of one of the ids (nothing changes).
            InputError: pinning would pass ``limit``
                (:func:`~memreader.stores.lifecycle.api.check_pin_limit`, in the transaction).
        """
        raise StoreError(f"{type(self).__name__} cannot pin memories")

    def _pinned_active(self, owner: str) -> int:
        """How many of ``owner``'s active memories are pinned."""
        raise StoreError(f"{type(self).__name__} cannot pin memories")

    def _pinned(self, owner: str) -> list[str]:
        """``owner``'s pinned ids, sorted."""
        raise StoreError(f"{type(self).__name__} cannot pin memories")

    def _active_counts(self, owners: Collection[str] | None) -> dict[str, int]:
        """How many active memories each owner of ``owners`` (every owner: ``None``) has;
        owners with none may be left out."""
        raise StoreError(f"{type(self).__name__} has no budget")

    def _budget_facts(self, owner: str) -> list[PriorityFacts]:
        """The priority facts of ``owner``'s unpinned active memories (without usage)."""
        raise StoreError(f"{type(self).__name__} has no budget")

    def _expire_for_budget(
        self, owner: str, chosen: list[tuple[str, str]], target: int, now: datetime
    ) -> list[WriteEvent]:
        """One transaction: of ``chosen`` (id, reason), in order, expire those still active
        and unpinned while ``owner`` has more than ``target`` active memories (counted again
        inside the transaction, so two processes never expire past the target)."""
        raise StoreError(f"{type(self).__name__} has no budget")

    def _restore(self, owner: str, memory_id: str, now: datetime) -> WriteEvent:
        """Make ``owner``'s budget-expired ``memory_id`` active again, one transaction.

        Raises:
            UnknownMemoryError: no such memory.
            InputError: the budget did not expire it, or an active memory has its text
                (:func:`~memreader.stores.lifecycle.api.check_restorable`).
        """
        raise StoreError(f"{type(self).__name__} cannot restore memories")

    # -- maintain's purge and repair (rules: memreader.stores.lifecycle.maintain) ------------

    def _retired_counts(self, cutoff: datetime) -> dict[str, int]:
        """Per owner, the memories expired or superseded before ``cutoff`` (what purge takes)."""
        raise StoreError(f"{type(self).__name__} cannot purge")

    def _unindexed_counts(self, foreign: list[str]) -> dict[str, int]:
        """Per owner, the active memories without a usable vector (none, or one without a
        direction: a NaN, an infinity, all zeros) or with one of ``foreign`` models (``""``:
        stored without a model name)."""
        raise StoreError(f"{type(self).__name__} cannot repair its index")

    def _unindexed(self, foreign: list[str], after: int, limit: int) -> list[Unindexed]:
        """Up to ``limit`` of the memories :meth:`_unindexed_counts` counts, past rowid
        ``after``, by rowid, each read without its vector (unreadable ones too)."""
        raise StoreError(f"{type(self).__name__} cannot repair its index")

    def _reindex(
        self, rows: list[tuple[int, TextualMemoryItem]], foreign: list[str], plan: PassagePlan
    ) -> list[str]:
        """One transaction: each row (rowid, item with its new vector) still active and still
        unindexed gets the item's vector and the passages ``plan`` holds for it; returns the
        owner of each row changed."""
        raise StoreError(f"{type(self).__name__} cannot repair its index")


#: Every hook of the contract, by name (what a backend implements or may replace).
HOOKS: frozenset[str] = frozenset(
    name
    for name, value in vars(StoreBackend).items()
    if callable(value) or isinstance(value, classmethod)
    if not name.startswith("__")
)
