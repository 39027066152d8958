"""One typed value for a search's arguments: :class:`SearchFilters`, from every surface
(``Memory.search``, the HTTP body, MCP, the CLI's flags) to each store's SQL and the working
tier's :meth:`SearchFilters.matches`. A new filter is one field here, its check in
``__post_init__``, its clause in each backend's ``filter_sql`` and its test in ``matches``.

>>> from datetime import datetime, timezone
>>> since = datetime(2030, 1, 1, tzinfo=timezone.utc)
>>> f = SearchFilters.of({"types": ["LongTermMemory"]}, since=since)
>>> f.types, f.since.year, f.min_score
(('LongTermMemory',), 2030, None)
>>> SearchFilters(mode="fuzzy")
Traceback (most recent call last):
memreader.errors.InputError: mode must be one of hybrid, vector, text, got 'fuzzy'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from typing import Any

from memreader.errors import InputError
from memreader.scopes import check_scope_id, scope_columns, visible
from memreader.stores.category_types import check_category
from memreader.stores.checks import (
    aware,
    check_heat_weight,
    check_min_score,
    check_session,
    check_types,
)
from memreader.stores.hits import SEARCH_MODES, SearchMode
from memreader.stores.records import StoredMemory

__all__ = ["DEFAULT_MIN_SCORE", "FILTER_NAMES", "SearchFilters"]

#: The ``min_score`` every surface uses when a call names none (Python, HTTP, MCP, the CLI,
#: the service's page, the working tier): no cut. A caller asking for the 10 best gets 10 when
#: there are 10 (as mem0's ``threshold=None``); a caller who wants "nothing rather than
#: something unrelated" passes :data:`~memreader.stores.scoring.RECOMMENDED_MIN_SCORE`, whose
#: scale is the bundled model's.
DEFAULT_MIN_SCORE: float | None = None


@dataclass(frozen=True)
class SearchFilters:
    """What a search keeps and how it ranks, checked on construction (a bad value raises
    :class:`~memreader.errors.InputError` naming it).

    Attributes:
        types: memory type names (``None``: every type).
        since, until: a time range (timezone-aware) on when the fact began to hold, else
            when it was recorded.
        session_id: only the memories of this session.
        category: only the memories linked to this category of the owner.
        agent_id, task_id: the scope searched (:func:`memreader.scopes.visible`; ``None``: the
            owner's every memory).
        include_inactive: superseded and expired memories count too.
        min_score: the least relevance a hit keeps, in [0, 1] (``None``: no cut,
            :data:`DEFAULT_MIN_SCORE`).
        heat_weight: how much recorded use lifts a hit, in [0, 1] (``None``: the store's).
        mode: which lists are fused (:data:`~memreader.stores.hits.SEARCH_MODES`).
    """

    types: tuple[str, ...] | None = None
    since: datetime | None = None
    until: datetime | None = None
    session_id: str | None = None
    category: str | None = None
    agent_id: str | None = None
    task_id: str | None = None
    include_inactive: bool = False
    min_score: float | None = DEFAULT_MIN_SCORE
    heat_weight: float | None = None
    mode: SearchMode = "hybrid"

    def __post_init__(self) -> None:
        if self.mode not in SEARCH_MODES:
            raise InputError(f"mode must be one of {', '.join(SEARCH_MODES)}, got {self.mode!r}")
        if not isinstance(self.include_inactive, bool):
            raise InputError(
                f"include_inactive must be true or false, got {self.include_inactive!r}"
            )
        heat = self.heat_weight
        checked = {
            "types": check_types(self.types),
            "since": aware(self.since, "since") if self.since is not None else None,
            "until": aware(self.until, "until") if self.until is not None else None,
            "session_id": check_session(self.session_id),
            "category": check_category(self.category) if self.category is not None else None,
            "agent_id": check_scope_id(self.agent_id, "agent_id"),
            "task_id": check_scope_id(self.task_id, "task_id"),
            "min_score": check_min_score(self.min_score),
            "heat_weight": (
                None if heat is None else check_heat_weight(heat, "heat_weight", InputError)
            ),
        }
        for name, value in checked.items():  # normalised: a list of types becomes a tuple
            object.__setattr__(self, name, value)

    @classmethod
    def of(
        cls,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        /,
        *,
        call: str = "search()",
        **keywords: Any,
    ) -> SearchFilters:
        """The filters of a call that takes ``filters=`` (a :class:`SearchFilters` or, as
        mem0 users write it, a dict of its fields) and keywords of the same names: keywords
        win over a :class:`SearchFilters`; a name given both in a dict and as a keyword is
        refused (``call`` names the call in the message).

        >>> SearchFilters.of(SearchFilters(session_id="s1"), mode="text").mode
        'text'
        >>> SearchFilters.of({"sesion_id": "s1"})  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        memreader.errors.InputError: search() has no filter 'sesion_id'; known: agent_id, ...

        Raises:
            InputError: an unknown name, a name given twice, or a bad value.
        """
        if filters is None:
            given: dict[str, Any] = {}
        elif isinstance(filters, SearchFilters):
            return dataclasses.replace(filters, **_known(keywords, call)) if keywords else filters
        elif isinstance(filters, Mapping):
            given = _known(dict(filters), call)
        else:
            raise InputError(
                f"{call} filters must be a SearchFilters or a mapping, got {type(filters).__name__}"
            )
        twice = sorted(set(given) & set(keywords))
        if twice:
            raise InputError(f"{call} got {twice[0]!r} both in filters and as a keyword")
        return cls(**given, **_known(keywords, call))

    @property
    def heat(self) -> float:
        """How much use lifts a hit in this search: ``heat_weight`` (a store sets its own
        when the call gave none), 0 when unset."""
        return self.heat_weight or 0.0

    def scope(self) -> list[tuple[str, str]]:
        """The scope columns a search filters on, with the value asked for."""
        pairs = (("agent_id", self.agent_id), ("task_id", self.task_id))
        return [(column, value) for column, value in pairs if value is not None]

    def matches(self, memory: StoredMemory, categories: Collection[str] = ()) -> bool:
        """Whether these filters keep ``memory`` (linked to ``categories``), by the rule each
        store's SQL applies: what the working tier asks of a held item. ``min_score``,
        ``heat_weight`` and ``mode`` rank rather than filter: not checked here.

        >>> from datetime import timezone
        >>> from memreader.items import TextualMemoryItem, TextualMemoryItemMetadata
        >>> meta = TextualMemoryItemMetadata(user_id="ana", session_id="s1")
        >>> item = TextualMemoryItem(id="m1", memory="I live in Porto.", metadata=meta)
        >>> held = StoredMemory(item, "active", "h", datetime(2024, 5, 1, tzinfo=timezone.utc))
        >>> SearchFilters(since=datetime(2030, 1, 1, tzinfo=timezone.utc)).matches(held)
        False
        """
        meta = memory.item.metadata
        when = memory.valid_from or memory.recorded_at
        return (
            (self.include_inactive or memory.status == "active")
            and (self.types is None or meta.memory_type.value in self.types)
            and (self.session_id is None or meta.session_id == self.session_id)
            and (self.since is None or when >= self.since)
            and (self.until is None or when <= self.until)
            and (self.category is None or self.category in categories)
            and visible(scope_columns(meta), agent_id=self.agent_id, task_id=self.task_id)
        )

    def listing(self, call: str) -> SearchFilters:
        """These filters for a listing (``get_all``), which scores nothing.

        Raises:
            InputError: a ranking argument was given (``min_score``, ``heat_weight``,
                ``mode``): ``call`` names the call.
        """
        ranking = {"min_score": DEFAULT_MIN_SCORE, "heat_weight": None, "mode": "hybrid"}
        for name, default in ranking.items():
            if getattr(self, name) != default:
                raise InputError(f"{call} takes no {name}: a listing scores nothing")
        return self


#: The names :class:`SearchFilters` takes, which every surface accepts.
FILTER_NAMES: tuple[str, ...] = tuple(f.name for f in fields(SearchFilters))


def _known(given: dict[str, Any], call: str) -> dict[str, Any]:
    unknown = sorted(set(given) - set(FILTER_NAMES))
    if unknown:
        known = ", ".join(sorted(FILTER_NAMES))
        raise InputError(f"{call} has no filter {unknown[0]!r}; known: {known}")
    return given
