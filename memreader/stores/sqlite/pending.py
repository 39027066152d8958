"""The vectors one write of the embedded store added so far (not in the cached matrix yet), so
an item is compared with the items before it in the same write."""

from __future__ import annotations

import numpy as np

__all__ = ["PendingVectors"]


class PendingVectors:
    """The vectors a write added so far, by (owner, type, model, dimension), so an item is
    compared with the items before it in the same write in one matrix product."""

    def __init__(self) -> None:
        self._ids: dict[tuple[object, ...], list[str]] = {}
        self._rows: dict[tuple[object, ...], np.ndarray] = {}

    def add(self, kind: tuple[str, ...], memory_id: str, vector: np.ndarray) -> None:
        """Remember ``vector`` of memory ``memory_id`` (``kind``: owner, type, model, scope)."""
        key = (*kind, len(vector))
        ids = self._ids.setdefault(key, [])
        rows = self._rows.get(key)
        if rows is None or len(rows) == len(ids):
            # Grow by doubling: adding n vectors copies O(n) rows in all.
            grown = np.zeros((max(8, 2 * len(ids)), len(vector)), dtype=np.float32)
            if rows is not None:
                grown[: len(ids)] = rows
            rows = self._rows[key] = grown
        rows[len(ids)] = vector
        ids.append(memory_id)

    def nearest(self, kind: tuple[str, ...], vector: np.ndarray) -> tuple[str, float] | None:
        """The most similar remembered vector of ``kind``: (memory id, cosine)."""
        key = (*kind, len(vector))
        ids = self._ids.get(key)
        if not ids:
            return None
        scores = self._rows[key][: len(ids)] @ vector
        best = int(np.argmax(scores))
        return ids[best], float(scores[best])
