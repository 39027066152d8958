"""What every memory store keeps of categories (:mod:`memreader.stores.category_types`): the
category methods of :class:`~memreader.stores.base.MemoryStore` (plain functions over the
store, each bound there by name), and the checks both built-in stores run on its arguments.

The promises, beside the memory store's own:

- **Owners are walls**: every call names one ``user_id``; no call reads or changes another
  owner's categories or links, and a link joins a category and a memory of the same owner.
- **Links keep history**: a memory that is superseded or expires keeps its links
  (:func:`categories_of` still names its categories, so a keeper can tell which summaries
  cited it), but a category's ``item_ids`` lists its active memories only.
  :meth:`~memreader.stores.base.MemoryStore.purge` removes the links of what it removes.
- **The keeper runs after the commit.** A store with a ``category_keeper``
  (:attr:`~memreader.stores.contract.StoreBackend.category_keeper`) calls it once per
  ``write``, ``write_part``, ``forget`` and ``retire_unseen``, after that
  call's transaction committed (a keeper may take seconds: it may ask an LLM). The memories
  stay committed when the keeper fails; the call then raises the keeper's error (a
  :class:`~memreader.errors.MemReaderError` as it is, anything else as an
  :class:`~memreader.errors.InternalError` naming the keeper).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, cast, get_args

from memreader.errors import ConfigError, InputError, InternalError, MemReaderError
from memreader.stores.category_types import (
    CategoryDef,
    CategoryKeeper,
    StoredCategory,
    SummaryKind,
    check_category,
)
from memreader.stores.records import StoredMemory

if TYPE_CHECKING:
    from memreader.stores.contract import StoreBackend
    from memreader.stores.events import Change, WriteEvent

__all__ = [
    "SUMMARY_KINDS",
    "categories",
    "categories_of",
    "category",
    "category_memories",
    "check_category",
    "check_defs",
    "check_keeper",
    "check_linkable",
    "check_links",
    "check_memory_ids",
    "check_owner",
    "check_summary",
    "link_categories",
    "save_summary",
    "stored_category",
    "tell_category_keeper",
    "upsert_categories",
]

SUMMARY_KINDS: tuple[str, ...] = get_args(SummaryKind)


def upsert_categories(
    store: StoreBackend,
    user_id: str,
    defs: Sequence[CategoryDef],
    embeddings: Sequence[Sequence[float] | None] | None = None,
) -> None:
    """Define ``user_id``'s categories ``defs`` (one transaction): a new one is added with
    an empty summary; a known one gets its description. ``embeddings`` (one per def, in
    order; ``None`` where there is none) are the descriptions' vectors: a def given none
    keeps its stored vector while its description is unchanged, and loses it when the
    description changed (the vector was of the old text). Summaries and links are left
    alone, so calling it again with the same arguments changes nothing.

    Raises:
        InputError: a def is not a :class:`CategoryDef`, two share a name, ``embeddings``
            has another length, or a vector is empty or not finite (the message names it).
        StoreError: the store failed.
    """
    owner = check_owner(user_id)
    store._upsert_categories(owner, check_defs(defs, embeddings))


def link_categories(store: StoreBackend, user_id: str, links: Mapping[str, Sequence[str]]) -> None:
    """For each memory id of ``links``, make its categories exactly the names given (an
    empty list unlinks it), in one transaction: nothing changes when one is refused.

    Raises:
        InputError: a name is not a category of ``user_id`` (:meth:`upsert_categories`
            first), or a memory id is not a memory of ``user_id`` (whatever its status).
        StoreError: the store failed.
    """
    owner = check_owner(user_id)
    store._link_categories(owner, check_links(links))


def categories(store: StoreBackend, user_id: str) -> list[StoredCategory]:
    """Every category of ``user_id``, sorted by name, each with the sorted ids of its
    active memories (``item_ids``), its summary and its embedding."""
    return store._categories(check_owner(user_id), None)


def category(store: StoreBackend, user_id: str, name: str) -> StoredCategory | None:
    """The category ``name`` of ``user_id`` (as :meth:`categories` gives it), ``None`` if
    that owner has none of that name."""
    found = store._categories(check_owner(user_id), check_category(name, "name"))
    return found[0] if found else None


def category_memories(
    store: StoreBackend, user_id: str, name: str, *, limit: int
) -> list[StoredMemory]:
    """The newest ``limit`` active memories of ``user_id``'s category ``name``, newest
    first (by the time each began to hold, else was recorded; ties by id): what a summary
    is rebuilt from, in one bounded query however large the category grows.

    Raises:
        InputError: a bad owner, name or ``limit``.
    """
    owner = check_owner(user_id)
    checked = check_category(name, "name")
    if isinstance(limit, bool) or not isinstance(limit, int) or limit < 1:
        raise InputError(f"limit must be a positive integer, got {limit!r}")
    return store._category_memories(owner, checked, limit)


def categories_of(
    store: StoreBackend, user_id: str, memory_ids: Sequence[str]
) -> dict[str, list[str]]:
    """The sorted category names each of ``memory_ids`` is linked to, whatever the
    memory's status (a retired memory keeps its links: which summaries cited it); every id
    asked for is a key, with ``[]`` when it has none (or is not ``user_id``'s)."""
    owner = check_owner(user_id)
    return store._categories_of(owner, check_memory_ids(memory_ids))


def save_summary(
    store: StoreBackend,
    user_id: str,
    name: str,
    *,
    summary: str,
    kind: SummaryKind,
    note: str | None,
    now: datetime | None = None,
) -> None:
    """Store the summary of ``user_id``'s category ``name``: its text (sentences citing
    ``[ref:ITEM_ID]``), how it was made (``kind``), why an LLM answer was refused
    (``note``), and ``now`` (default: the current time) as its ``updated_at``.

    Raises:
        InputError: no such category, or a bad ``kind``/``summary``/``note``/``now``.
        StoreError: the store failed.
    """
    owner = check_owner(user_id)
    check_category(name, "name")
    check_summary(summary, kind, note)
    if now is None:
        at = datetime.now(timezone.utc)
    elif not isinstance(now, datetime) or now.tzinfo is None:
        raise InputError(f"now must be a timezone-aware datetime, got {now!r}")
    else:
        at = now.astimezone(timezone.utc)
    store._save_summary(owner, name, summary, kind, note, at)


def tell_category_keeper(store: StoreBackend, change: Change) -> list[WriteEvent]:
    """The last step of the after-write list (:mod:`memreader.stores.after_write`):
    ``change.events``, once the store's keeper (if any) has seen them and ``change.items``
    (the call's committed change: see the module docstring for its errors)."""
    events = change.events
    keeper = store.category_keeper
    if keeper is None:
        return events
    try:
        keeper.after_change(store, tuple(events), tuple(change.items))
    except MemReaderError:
        raise
    except Exception as exc:
        raise InternalError(
            f"the category keeper {type(keeper).__name__} failed after the memories were "
            f"committed: {type(exc).__name__}: {exc}"
        ) from exc
    return events


def check_keeper(keeper: Any) -> CategoryKeeper | None:
    """``keeper`` if it can be a store's ``category_keeper``
    (:attr:`~memreader.stores.contract.StoreBackend.category_keeper`).

    Raises:
        ConfigError: it is neither ``None`` nor has a callable ``after_change``.
    """
    if keeper is not None and not callable(getattr(keeper, "after_change", None)):
        raise ConfigError(
            f"category_keeper must have after_change(store, events, items), got "
            f"{type(keeper).__name__}"
        )
    return cast("CategoryKeeper | None", keeper)


def check_owner(user_id: Any) -> str:
    """``user_id``, a non-empty string.

    Raises:
        InputError: it is not one.
    """
    if not isinstance(user_id, str) or not user_id.strip():
        raise InputError(f"user_id must be a non-empty string, got {user_id!r}")
    return user_id


def check_defs(
    defs: Sequence[CategoryDef], embeddings: Sequence[Sequence[float] | None] | None
) -> list[tuple[CategoryDef, list[float] | None]]:
    """``defs`` paired with their vectors (see
    :meth:`~memreader.stores.base.MemoryStore.upsert_categories` for what is refused)."""
    if isinstance(defs, (str, bytes)) or not isinstance(defs, Sequence):
        raise InputError(f"defs must be a list of CategoryDef, got {type(defs).__name__}")
    vectors: Sequence[Sequence[float] | None] = (
        [None] * len(defs) if embeddings is None else embeddings
    )
    if len(vectors) != len(defs):
        raise InputError(f"{len(vectors)} embeddings for {len(defs)} category defs")
    seen: set[str] = set()
    out: list[tuple[CategoryDef, list[float] | None]] = []
    for index, (definition, vector) in enumerate(zip(defs, vectors, strict=True)):
        if not isinstance(definition, CategoryDef):
            raise InputError(f"defs[{index}] is not a CategoryDef: {type(definition).__name__}")
        if definition.name in seen:
            raise InputError(f"defs[{index}]: category {definition.name!r} is defined twice")
        seen.add(definition.name)
        out.append((definition, _vector(vector, definition.name)))
    return out


def _vector(vector: Sequence[float] | None, name: str) -> list[float] | None:
    if vector is None:
        return None
    try:
        values = [float(x) for x in vector]
    except (TypeError, ValueError):
        raise InputError(f"the embedding of category {name!r} is not a list of numbers") from None
    if not values or not all(math.isfinite(x) for x in values):
        raise InputError(f"the embedding of category {name!r} is empty or not finite")
    return values


def check_links(links: Mapping[str, Sequence[str]]) -> dict[str, list[str]]:
    """``links`` as memory id -> distinct category names (in the order given).

    Raises:
        InputError: not a mapping of memory ids to lists of category names.
    """
    if not isinstance(links, Mapping):
        raise InputError(f"links must map memory ids to category names, got {type(links)!r}")
    out: dict[str, list[str]] = {}
    for memory_id, names in links.items():
        if not isinstance(memory_id, str) or not memory_id:
            raise InputError(f"links: a memory id must be a non-empty string, got {memory_id!r}")
        if isinstance(names, (str, bytes)) or not isinstance(names, Sequence):
            raise InputError(f"links[{memory_id!r}] must be a list of category names")
        what = f"links[{memory_id!r}]"
        out[memory_id] = list(dict.fromkeys(check_category(n, what) for n in names))
    return out


def check_linkable(
    owner: str, wanted: Mapping[str, Sequence[str]], known: set[str], present: set[str]
) -> None:
    """Refuse the first link of ``wanted`` (memory id -> category names) that names a category
    not in ``known`` or a memory not in ``present`` (``owner``'s category names and memory ids).

    Raises:
        InputError: such a link (see :meth:`~memreader.stores.base.MemoryStore.link_categories`).
    """
    for memory_id, names in wanted.items():
        unknown = [n for n in names if n not in known]
        if unknown:
            raise InputError(
                f"category {unknown[0]!r} is not defined for owner {owner!r} (memory "
                f"{memory_id!r}); upsert_categories first"
            )
        if memory_id not in present:
            raise InputError(f"owner {owner!r} has no memory {memory_id!r} to link")


def check_memory_ids(memory_ids: Sequence[str]) -> list[str]:
    """``memory_ids``, distinct, in the order given.

    Raises:
        InputError: not a list of strings.
    """
    if isinstance(memory_ids, (str, bytes)) or not isinstance(memory_ids, Sequence):
        raise InputError(f"memory_ids must be a list of ids, got {type(memory_ids).__name__}")
    if not all(isinstance(m, str) for m in memory_ids):
        raise InputError("memory_ids must be strings")
    return list(dict.fromkeys(memory_ids))


def check_summary(summary: Any, kind: Any, note: Any) -> None:
    """Check :meth:`~memreader.stores.base.MemoryStore.save_summary`'s fields.

    Raises:
        InputError: ``summary`` is not a string, ``kind`` not a
            :data:`~memreader.stores.category_types.SummaryKind`, ``note`` neither a string
            nor ``None``.
    """
    if not isinstance(summary, str):
        raise InputError(f"summary must be a string, got {type(summary).__name__}")
    if kind not in SUMMARY_KINDS:
        raise InputError(f"kind must be one of {', '.join(SUMMARY_KINDS)}, got {kind!r}")
    if note is not None and not isinstance(note, str):
        raise InputError(f"note must be a string or None, got {type(note).__name__}")


def stored_category(
    user_id: str,
    row: Sequence[Any],
    item_ids: Sequence[str],
    embedding: Sequence[float] | None,
    updated_at: datetime | None,
) -> StoredCategory:
    """A :class:`StoredCategory` from a row ``name, description, <embedding>, summary,
    summary_kind, summary_note, <updated_at>`` (the two marked columns come converted, as
    ``embedding`` and ``updated_at``)."""
    return StoredCategory(
        user_id=user_id,
        name=row[0],
        description=row[1],
        summary=row[3],
        summary_kind=row[4],
        summary_note=row[5],
        item_ids=tuple(sorted(item_ids)),
        updated_at=updated_at,
        embedding=embedding,
    )
