"""What a store holds of one memory: :class:`StoredMemory` and its :data:`MemoryStatus` (a
leaf: the stores, the category keeper, the Markdown export and the service take them from
here)."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal, NamedTuple, TypeVar

from memreader.items import TextualMemoryItem

__all__ = [
    "MemoryStatus",
    "StoredMemory",
    "Unindexed",
    "Usage",
    "item_from_json",
    "item_with_vector",
    "readable",
    "unless_broken",
]

logger = logging.getLogger(__name__)
T = TypeVar("T")

#: ``active``: true now; ``superseded``: replaced by a newer memory (``superseded_by``);
#: ``expired``: every source it came from was forgotten.
MemoryStatus = Literal["active", "superseded", "expired"]


@dataclass(frozen=True)
class StoredMemory:
    """One memory as a store keeps it: the item (id, memory, sources with exact spans,
    embedding, owner, type, tags) and what the store knows of it.

    Attributes:
        item: the memory item, its sources being every source that supports it.
        status: see :data:`MemoryStatus`.
        content_hash: the hash dedup compares (of the normalised memory text).
        valid_from: when the fact began to hold (from the chat times of what it cites), if known.
        valid_to: when it stopped holding (set when superseded by a contradiction), if known.
        recorded_at: when the store learned it.
        retired_at: when the store superseded or expired it.
        superseded_by: the id of the memory that replaced it.
        importance: 0..1, with ``importance_reason``; ``None`` when nothing scored it.
        reinforced: how many times it was written again after it was added.
    """

    item: TextualMemoryItem
    status: MemoryStatus
    content_hash: str
    recorded_at: datetime
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    retired_at: datetime | None = None
    superseded_by: str | None = None
    importance: float | None = None
    importance_reason: str | None = None
    reinforced: int = 0

    @property
    def id(self) -> str:
        """The memory's id (its item's)."""
        return self.item.id


def item_with_vector(data: dict[str, Any], vector: list[float] | None) -> TextualMemoryItem:
    """The item stored as ``data`` (its JSON, read), with ``vector`` (the store's column) as
    its embedding when there is one.

    The vector is set once the item is validated: checking its few hundred floats one by one
    cost more than the rest of the item (a search reads ten such rows; issue 31). They are
    floats already, read from the store's own column; the item is the same.
    """
    if vector is None:
        return TextualMemoryItem.model_validate(data)
    data["metadata"]["embedding"] = None
    item = TextualMemoryItem.model_validate(data)
    item.metadata.embedding = vector
    return item


def item_from_json(text: str | bytes, vector: list[float] | None) -> TextualMemoryItem:
    """The item stored as the JSON ``text``, with ``vector`` (the store's column) as its
    embedding when there is one: :func:`item_with_vector` for a store that reads the JSON as
    text. pydantic validates it straight from the JSON, a third of the cost of parsing it
    with :mod:`json` and validating the dict (a search reads ten such rows; issue 42)."""
    item = TextualMemoryItem.model_validate_json(text)
    if vector is not None:
        item.metadata.embedding = vector
    return item


def unless_broken(what: str, owner: object, memory_id: object, build: Callable[[], T]) -> T | None:
    """``build()``, the conversion of one stored row, or ``None`` when the row cannot be read
    (written by an older memreader, edited by hand: its JSON, a field or a time is not what an
    item holds). Such a row is that row's problem, not its owner's: reads pass it over, and a
    warning names it (``what``: "memory", "history entry")."""
    try:
        return build()
    except (ValueError, TypeError, KeyError, AttributeError, AssertionError) as exc:
        # pydantic's ValidationError and json's JSONDecodeError are ValueErrors.
        detail = " ".join(str(exc).split())[:300]
        logger.warning(
            "skipped the %s %.200r of owner %.200r: its stored row cannot be read (%s: %s)",
            what,
            memory_id,
            owner,
            type(exc).__name__,
            detail,
        )
        return None


def readable(rows: Iterable[T | None]) -> list[T]:
    """The rows :func:`unless_broken` could read, in order."""
    return [row for row in rows if row is not None]


@dataclass(frozen=True)
class Usage:
    """How often a memory was handed to an agent (``access_count``) and when last
    (``last_accessed_at``; ``None`` when never)."""

    access_count: int
    last_accessed_at: datetime | None


class Unindexed(NamedTuple):
    """A row the repair reads: its rowid, owner and id, and the memory (read without its
    vector, which is replaced), ``None`` when the row cannot be read."""

    rowid: int
    owner: str
    memory_id: str
    memory: StoredMemory | None
