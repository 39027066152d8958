"""Which categories an item belongs to, by the cosine between its vector and each category
description's vector: fast mode's rule, the fallback of fine mode's, and the store keeper's for
items stored without categories.

>>> index = CategoryIndex.of(("work", "health"), [[1.0, 0.0], [0.0, 1.0]])
>>> pick_categories(index.names, index.cosines([0.9, 0.1]).tolist(), 0.5, 3, "other")
['work']
>>> pick_categories(["work"], [0.1], 0.3, 3, "other")
['other']
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from memreader.categories.config import CategoriesConfig

__all__ = ["CategoryIndex", "pick_categories"]


@dataclass(frozen=True)
class CategoryIndex:
    """The categories matched by similarity (the catch-all left out) and their description
    vectors, unit length, one row each."""

    names: tuple[str, ...]
    vectors: NDArray[np.float64]

    @classmethod
    def of(cls, names: Sequence[str], rows: Sequence[Sequence[float]]) -> CategoryIndex:
        """An index of ``names`` with the (not necessarily unit) vectors ``rows``."""
        if not names:
            return cls((), np.zeros((0, 0)))
        matrix = np.asarray(rows, dtype=np.float64)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        return cls(tuple(names), matrix / np.where(norms == 0, 1.0, norms))

    @classmethod
    def build(cls, config: CategoriesConfig, embedder: Any) -> CategoryIndex:
        """The descriptions of ``config``'s categories embedded with ``embedder`` (raises what
        the embedder raises)."""
        chosen = [c for c in config.all() if c.name != config.catch_all.name]
        if not chosen:
            return cls.of((), [])
        rows = embedder.embed([c.description for c in chosen])
        return cls.of([c.name for c in chosen], rows)

    def cosines(self, vector: Sequence[float]) -> NDArray[np.float64] | None:
        """The cosine between ``vector`` and each category's description, or ``None`` when
        the vector does not fit (another dimension, zero length)."""
        v = np.asarray(vector, dtype=np.float64)
        norm = float(np.linalg.norm(v))
        if not self.names or v.shape != (self.vectors.shape[1],) or norm == 0.0:
            return None
        result: NDArray[np.float64] = self.vectors @ (v / norm)
        return result

    def pick(self, vector: Sequence[float] | None, config: CategoriesConfig) -> list[str] | None:
        """``vector``'s categories under ``config`` (the catch-all when none is close enough);
        ``None`` when the vector does not fit the descriptions' (another embedder's)."""
        catch_all = config.catch_all.name
        if vector is None:
            return [catch_all]
        cosines = self.cosines(vector)
        if cosines is None:
            return None if self.names else [catch_all]
        return pick_categories(
            self.names, cosines.tolist(), config.threshold, config.max_per_item, catch_all
        )


def pick_categories(
    names: Sequence[str], cosines: Sequence[float], threshold: float, most: int, catch_all: str
) -> list[str]:
    """Every name whose cosine is at least ``threshold``, best first (ties in config order), at
    most ``most``; none, ``[catch_all]``.

    >>> pick_categories(["work", "health", "goals"], [0.31, 0.42, 0.1], 0.3, 3, "other")
    ['health', 'work']
    """
    ranked = sorted(range(len(names)), key=lambda i: -cosines[i])
    chosen = [names[i] for i in ranked if cosines[i] >= threshold][:most]
    return chosen or [catch_all]
