"""What a store holds of one memory: :class:`StoredMemory` and its :data:`MemoryStatus` (a
leaf: the stores, the category keeper, the Markdown export and the service take them from
here)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from memreader.items import TextualMemoryItem

__all__ = ["MemoryStatus", "StoredMemory"]

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
