"""What :meth:`~memreader.front.memory.Memory.add` returns (:class:`AddResult`), and the
filters :meth:`~memreader.front.memory.Memory.search` passes on (:data:`SEARCH_FILTERS`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from memreader.items import TextualMemoryItem
from memreader.steps.report import ReadReport
from memreader.stores import WriteEvent
from memreader.stores.filters import FILTER_NAMES

__all__ = ["SEARCH_FILTERS", "AddResult", "add_result"]

#: The keyword filters :meth:`Memory.search` passes to the store's ``search``: the fields of
#: :class:`~memreader.stores.filters.SearchFilters` (``now`` is a keyword of its own).
SEARCH_FILTERS = frozenset(FILTER_NAMES)


@dataclass(frozen=True)
class AddResult:
    """What :meth:`Memory.add` did: the ``items`` read (all scenes, in order), one store
    ``events`` entry per item (``ADD``, ``NONE`` for one already stored, ``REINFORCE``, ...),
    the read's ``report``, and the ``session_id`` used (``session_generated``: it is the
    ``auto-`` digest of the input, see :mod:`memreader.front.inputs`). With working memory
    (:mod:`memreader.front.working`), ``working`` names the items held there, not stored yet,
    and ``events`` are what the call wrote: items reinforced, and earlier items a session's
    size pushed into the store."""

    items: list[TextualMemoryItem]
    events: list[WriteEvent]
    report: ReadReport
    session_id: str
    session_generated: bool
    type: str = "chat"
    counts: dict[str, int] = field(default_factory=dict)
    working: list[str] = field(default_factory=list)


def add_result(
    items: list[TextualMemoryItem],
    events: list[WriteEvent],
    report: ReadReport,
    session_id: str,
    generated: bool,
    kind: str,
    working: list[str] | None = None,
) -> AddResult:
    """The :class:`AddResult` of a read: ``events`` counted by kind; ``working``: the ids
    held in working memory."""
    counts: dict[str, int] = {}
    for event in events:
        counts[event.event] = counts.get(event.event, 0) + 1
    return AddResult(
        items,
        events,
        report,
        session_id,
        generated,
        kind,
        dict(sorted(counts.items())),
        list(working or []),
    )
