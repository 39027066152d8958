"""What a store does after each committed change, in this order: the after-write list.

Every call that commits a change of memories (``write``, ``write_part``, ``retire_unseen``,
``delete``, ``forget``, ``restore``, ``enforce_budget``) hands it to :func:`after_change`
once its transaction committed. Each step gets the store and the change, and returns the
events the caller reports (a step may add events: the budget's ``EXPIRE``):

1. :func:`~memreader.stores.lifecycle.api.expire_over_budget`: an owner the change took past
   the watermark is brought down to the target;
2. :func:`~memreader.stores.category_api.tell_category_keeper`: the store's category keeper
   sees every event, the budget's included.

A new step is one entry of :data:`AFTER_WRITE`, not a class in a chain.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, TypeAlias

from memreader.items import TextualMemoryItem
from memreader.stores.category_api import tell_category_keeper
from memreader.stores.events import Change, WriteEvent
from memreader.stores.lifecycle.api import expire_over_budget

if TYPE_CHECKING:
    from memreader.stores.contract import StoreBackend

__all__ = ["AFTER_WRITE", "AfterWrite", "Change", "after_change"]


#: A step of the list: the events after it.
AfterWrite: TypeAlias = "Callable[[StoreBackend, Change], list[WriteEvent]]"

#: The steps, in order: the budget first, so the keeper sees what it expired.
AFTER_WRITE: tuple[AfterWrite, ...] = (expire_over_budget, tell_category_keeper)


def after_change(
    store: StoreBackend,
    events: list[WriteEvent],
    items: Sequence[TextualMemoryItem],
    *,
    keep: Collection[str] = (),
    now: datetime | None = None,
) -> list[WriteEvent]:
    """Run :data:`AFTER_WRITE` over the change ``events``/``items`` of ``store``; the events
    the caller returns.

    Raises:
        MemReaderError: a step's error (the change stays committed): the keeper's as it is,
            or an :class:`~memreader.errors.InternalError` naming it.
    """
    change = Change(list(events), tuple(items), keep, now)
    for step in AFTER_WRITE:
        change = replace(change, events=step(store, change))
    return change.events
