"""What a write or a forget did: one :class:`WriteEvent` per memory, and one
:class:`HistoryEntry` per change a memory's history keeps (a leaf: the stores, the category
keeper and the CLI all take them from here), and the :class:`Change` a committed call hands to
the after-write list (:mod:`memreader.stores.after_write`)."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from memreader.items import TextualMemoryItem

__all__ = ["Change", "EventKind", "HistoryEntry", "WriteEvent"]

#: What a write or a forget did to one memory: ``ADD`` (a new row), ``UPDATE`` (the old memory
#: superseded by a merged one), ``SUPERSEDE`` (a contradiction: the old one's ``valid_to`` set
#: to the new one's ``valid_from``), ``REINFORCE`` (seen again: no new row), ``NONE`` (already
#: stored exactly so), ``EXPIRE`` (its sources were forgotten). ``UPDATE`` also names a memory
#: that lost some of its sources (a forget, or a ``replaces`` write) but is still supported by
#: others: its text is unchanged, its provenance smaller.
EventKind = Literal["ADD", "UPDATE", "SUPERSEDE", "REINFORCE", "NONE", "EXPIRE"]


@dataclass(frozen=True)
class WriteEvent:
    """What one call did to one memory, and why.

    ``item_id`` is the item that was written (empty for a forget); ``memory_id`` the stored
    memory the event changed or found; ``previous_id`` the memory it replaced (``UPDATE``,
    ``SUPERSEDE``); ``user_id`` its owner where no item says it (forget, retire).
    """

    event: EventKind
    memory_id: str
    item_id: str
    reason: str
    previous_id: str | None = None
    user_id: str | None = None


@dataclass(frozen=True)
class HistoryEntry:
    """One change of one memory: the event, the memory text before and after, when, the source
    ids involved and the reason."""

    memory_id: str
    event: EventKind
    old_memory: str | None
    new_memory: str | None
    at: datetime
    reason: str
    source_ids: tuple[str, ...] = ()


@dataclass(frozen=True)
class Change:
    """One committed change: its events (in the order the call reports them), the items it
    wrote (``()``: a retirement), the ids the budget must spare (a restore's) and the time
    the budget measures to (``None``: now)."""

    events: list[WriteEvent]
    items: Sequence[TextualMemoryItem] = ()
    keep: Collection[str] = ()
    now: datetime | None = None
