"""What a search reads of its ~100 candidates from the owner's cached vectors
(:class:`~memreader.stores.sqlite.vectors.OwnerVectors`): each one's cosine with the query,
and the stored importance and time it ranks them by, without a statement when every
candidate has a vector there (issue 42)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from datetime import datetime

import numpy as np

from memreader.stores.filters import SearchFilters
from memreader.stores.sqlite.vectors import OwnerVectors

__all__ = ["FilterMasks", "cosines", "ranking"]

#: What a search ranks a candidate by: rowid, stored importance, time, cosine with the query.
Ranked = tuple[int, float | None, datetime, float | None]


def cosines(owned: OwnerVectors, rowids: Sequence[int], query: np.ndarray) -> list[float | None]:
    """The cosine of each of ``rowids``' vector and the unit vector ``query`` (``None``: the
    row has no vector of that dimension), in one matrix product: a search asks for ~100
    candidates', and a product each cost more than the rest of its loop."""
    found: list[float | None] = [None] * len(rowids)
    group = owned.groups.get(len(query))
    if group is None:
        return found
    dim = len(query)
    places = [
        (i, where[1])
        for i, rowid in enumerate(rowids)
        if (where := owned.positions.get(rowid)) and where[0] == dim
    ]
    if places:
        read = group.matrix[[row for _, row in places]] @ query
        for (i, _), value in zip(places, read.tolist(), strict=True):
            found[i] = value
    return found


def ranking(
    owned: OwnerVectors, rowids: Iterable[int], query: np.ndarray | None
) -> list[Ranked] | None:
    """What a search ranks each of ``rowids`` by, rowid ascending (importance and time as the
    row holds them, the cosine as :func:`cosines` gives it; ``None`` without a query), or
    ``None`` when one of them has no vector cached (then the caller reads the rows)."""
    order = sorted(rowids)
    found = owned.positions.get
    places = [found(rowid) for rowid in order]
    if None in places:
        return None
    dims = {where[0] for where in places if where is not None}
    if len(dims) == 1:
        # The usual case, every candidate in one group: each column gathered at once, and
        # the cosines the same product :func:`cosines` makes of the same rows.
        dim = dims.pop()
        group = owned.groups[dim]
        rows = [where[1] for where in places if where is not None]
        similarities: list[float | None] = (
            (group.matrix[rows] @ query).tolist()
            if query is not None and len(query) == dim
            else [None] * len(rows)
        )
        return list(
            zip(
                order,
                group.importance[rows].tolist(),
                group.moments[rows].tolist(),
                similarities,
                strict=True,
            )
        )
    read: list[tuple[int, float | None, datetime]] = []
    for rowid, where in zip(order, places, strict=True):
        assert where is not None  # checked above
        group = owned.groups[where[0]]
        read.append((rowid, group.importance[where[1]], group.moments[where[1]]))
    if query is None:
        return [(*row, None) for row in read]
    cosine = cosines(owned, [row[0] for row in read], query)
    return [(*row, similarity) for row, similarity in zip(read, cosine, strict=True)]


class FilterMasks:
    """Which of the owner's cached rows pass a search's ``filters``, one mask per vector
    dimension (each group's :meth:`~memreader.stores.sqlite.vectors.VectorGroup.filtered`,
    with the rows of the filter's category, read once from ``category`` when first asked):
    made once a search, shared by the vector list and the full-text list's check."""

    def __init__(
        self, owned: OwnerVectors, filters: SearchFilters, category: Callable[[], Sequence[int]]
    ) -> None:
        self.owned, self.filters, self._category = owned, filters, category
        self._masks: dict[int, np.ndarray] = {}
        self._linked: Sequence[int] | None = None

    def of(self, dim: int) -> np.ndarray:
        """The mask of the group of dimension ``dim`` (which must be cached)."""
        if dim not in self._masks:
            group = self.owned.groups[dim]
            keep = group.filtered(self.filters)
            if self.filters.category is not None:
                if self._linked is None:
                    self._linked = self._category()
                keep &= np.isin(group.rowids, self._linked)
            self._masks[dim] = keep
        return self._masks[dim]

    def known(self) -> Callable[[Sequence[int]], tuple[set[int], list[int]]] | None:
        """What the cache tells of rowids without a statement: of ``rowids``, the owner's
        that pass the filters, and those not cached (another owner's, or without a vector: a
        statement checks them). ``None`` for a search by time (the statement compares the
        stored times as text; kept exactly so)."""
        if self.filters.since is not None or self.filters.until is not None:
            return None
        return self._tell

    def _tell(self, rowids: Sequence[int]) -> tuple[set[int], list[int]]:
        passing: set[int] = set()
        unknown: list[int] = []
        positions = self.owned.positions
        for rowid in rowids:
            where = positions.get(rowid)
            if where is None:
                unknown.append(rowid)
            elif self.of(where[0])[where[1]]:
                passing.add(rowid)
        return passing, unknown
