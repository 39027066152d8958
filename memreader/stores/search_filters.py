"""A search's arguments checked once, for every store: what :meth:`MemoryStore.search
<memreader.stores.MemoryStore.search>` (and ``context()`` through it) hands its backend as one
:class:`~memreader.stores.checks.Filters`."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memreader.errors import InputError
from memreader.scopes import check_scope_id
from memreader.stores.category_api import check_category
from memreader.stores.checks import (
    Filters,
    aware,
    check_min_score,
    check_session,
    check_types,
)
from memreader.stores.hits import SEARCH_MODES, SearchMode
from memreader.stores.usage import check_heat_weight

__all__ = ["search_filters"]


def search_filters(
    query: object,
    mode: SearchMode,
    *,
    types: Sequence[str] | None,
    since: datetime | None,
    until: datetime | None,
    session_id: str | None,
    include_inactive: bool,
    category: str | None,
    min_score: float | None,
    agent_id: str | None,
    task_id: str | None,
    heat_weight: float,
) -> Filters:
    """The filters of a search for ``query`` in ``mode`` (``heat_weight``: the store's when
    the call gave none), each argument checked.

    Raises:
        InputError: a bad argument, named (``mode`` not one of :data:`SEARCH_MODES`, a query
            that is not a string, a type that is not a memory type's name...).
    """
    if mode not in SEARCH_MODES:
        raise InputError(f"mode must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
    if not isinstance(query, str):
        raise InputError(f"query must be a string, got {type(query).__name__}")
    if not isinstance(include_inactive, bool):
        raise InputError(f"include_inactive must be true or false, got {include_inactive!r}")
    return Filters(
        types=check_types(types),
        since=aware(since, "since") if since is not None else None,
        until=aware(until, "until") if until is not None else None,
        session_id=check_session(session_id),
        include_inactive=include_inactive,
        category=check_category(category) if category is not None else None,
        min_score=check_min_score(min_score),
        agent_id=check_scope_id(agent_id, "agent_id"),
        task_id=check_scope_id(task_id, "task_id"),
        heat_weight=check_heat_weight(heat_weight, "heat_weight", InputError),
    )
