"""Exact vector search in process, with numpy: one owner's vectors as one matrix per dimension,
kept between calls and reloaded when the owner's version changes.

Exact search is what the embedded store does instead of loading a vector extension (some
CPython builds cannot load SQLite extensions): a float32 matrix product over 100k vectors of
384 dimensions takes a few milliseconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from memreader.errors import ConfigError

try:
    import numpy as np
except ImportError as exc:  # pragma: no cover - numpy comes with memreader's dependencies
    raise ConfigError(
        "the embedded memory store needs numpy for vector search: pip install numpy"
    ) from exc

__all__ = [
    "OwnerVectors",
    "VectorCache",
    "VectorGroup",
    "VectorRow",
    "from_blob",
    "to_blob",
    "unit",
]

#: One stored vector and what searches filter it by: rowid, the float32 blob, status, memory
#: type, session id, time (epoch seconds) and embedding model ("" when unknown).
VectorRow = tuple[int, bytes, str, str, str, float, str]


def to_blob(vector: Sequence[float]) -> bytes:
    """``vector`` as little-endian float32 bytes."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> list[float]:
    """A vector back from :func:`to_blob` (float32 precision)."""
    return [float(x) for x in np.frombuffer(blob, dtype="<f4")]


def unit(vector: Sequence[float] | bytes) -> np.ndarray | None:
    """``vector`` scaled to length 1 (float32); ``None`` for a zero or non-finite vector,
    which has no direction to compare."""
    if isinstance(vector, bytes):
        array = np.frombuffer(vector, dtype="<f4").astype(np.float32)
    else:
        array = np.asarray(vector, dtype=np.float32)
    norm = float(np.linalg.norm(array))
    if not np.isfinite(norm) or norm == 0.0:
        return None
    return array / norm


@dataclass(frozen=True)
class VectorGroup:
    """One owner's vectors of one dimension, with the columns searches filter by."""

    rowids: np.ndarray
    matrix: np.ndarray
    active: np.ndarray
    types: np.ndarray
    sessions: np.ndarray
    times: np.ndarray
    models: np.ndarray

    def mask(
        self,
        *,
        include_inactive: bool = False,
        types: Sequence[str] | None = None,
        session_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
        model: str | None = None,
    ) -> np.ndarray:
        """Which rows pass the filters."""
        keep = np.ones(len(self.rowids), dtype=bool) if include_inactive else self.active.copy()
        if types is not None:
            keep &= np.isin(self.types, list(types))
        if session_id is not None:
            keep &= self.sessions == session_id
        if since is not None:
            keep &= self.times >= since
        if until is not None:
            keep &= self.times <= until
        if model is not None:
            keep &= self.models == model
        return keep

    def top(self, query: np.ndarray, keep: np.ndarray, n: int) -> list[tuple[int, float]]:
        """The ``n`` rows most similar to the unit vector ``query`` among ``keep``: (rowid,
        cosine), best first."""
        if n <= 0 or not keep.any():
            return []
        scores = self.matrix @ query
        scores = np.where(keep, scores, -np.inf)
        n = min(n, int(keep.sum()))
        best = np.argpartition(-scores, n - 1)[:n]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(self.rowids[i]), float(scores[i])) for i in best]


@dataclass(frozen=True)
class OwnerVectors:
    """Every stored vector of one owner, by dimension, as of ``version``."""

    version: int
    groups: dict[int, VectorGroup]
    positions: dict[int, tuple[int, int]]

    def cosine(self, rowid: int, query: np.ndarray) -> float | None:
        """The cosine of row ``rowid``'s vector and the unit vector ``query``; ``None`` when
        the row has no vector of that dimension."""
        where = self.positions.get(rowid)
        if where is None or where[0] != len(query):
            return None
        return float(self.groups[where[0]].matrix[where[1]] @ query)


def build(version: int, rows: Iterable[VectorRow]) -> OwnerVectors:
    """An :class:`OwnerVectors` of ``rows`` (those without a usable vector left out)."""
    by_dim: dict[int, list[tuple[VectorRow, np.ndarray]]] = {}
    for row in rows:
        vector = unit(row[1])
        if vector is not None:
            by_dim.setdefault(len(vector), []).append((row, vector))
    groups: dict[int, VectorGroup] = {}
    positions: dict[int, tuple[int, int]] = {}
    for dim, members in by_dim.items():
        groups[dim] = VectorGroup(
            rowids=np.array([r[0] for r, _ in members], dtype=np.int64),
            matrix=np.stack([v for _, v in members]).astype(np.float32, copy=False),
            active=np.array([r[2] == "active" for r, _ in members], dtype=bool),
            types=np.array([r[3] for r, _ in members], dtype=object),
            sessions=np.array([r[4] for r, _ in members], dtype=object),
            times=np.array([r[5] for r, _ in members], dtype=np.float64),
            models=np.array([r[6] for r, _ in members], dtype=object),
        )
        positions.update({r[0]: (dim, i) for i, (r, _) in enumerate(members)})
    return OwnerVectors(version, groups, positions)


class VectorCache:
    """Per-owner :class:`OwnerVectors`, rebuilt when the owner's version moved (any write by
    any process bumps it in the same transaction, so a stale matrix is never searched)."""

    def __init__(self) -> None:
        self._owners: dict[str, OwnerVectors] = {}
        self._lock = threading.Lock()

    def get(
        self, user_id: str, version: int, load: Callable[[], Iterable[VectorRow]]
    ) -> OwnerVectors:
        """The vectors of ``user_id`` at ``version`` (``load`` reads them when not cached)."""
        with self._lock:
            cached = self._owners.get(user_id)
        if cached is not None and cached.version == version:
            return cached
        fresh = build(version, load())
        with self._lock:
            self._owners[user_id] = fresh
        return fresh

    def clear(self) -> None:
        """Forget every owner's vectors."""
        with self._lock:
            self._owners.clear()


class PendingVectors:
    """The vectors a write added so far, by (owner, type, model, dimension), so an item is
    compared with the items before it in the same write in one matrix product."""

    def __init__(self) -> None:
        self._ids: dict[tuple[str, str, str, int], list[str]] = {}
        self._rows: dict[tuple[str, str, str, int], np.ndarray] = {}

    def add(self, kind: tuple[str, str, str], memory_id: str, vector: np.ndarray) -> None:
        """Remember ``vector`` of memory ``memory_id`` (``kind``: owner, type, model)."""
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

    def nearest(self, kind: tuple[str, str, str], vector: np.ndarray) -> tuple[str, float] | None:
        """The most similar remembered vector of ``kind``: (memory id, cosine)."""
        key = (*kind, len(vector))
        ids = self._ids.get(key)
        if not ids:
            return None
        scores = self._rows[key][: len(ids)] @ vector
        best = int(np.argmax(scores))
        return ids[best], float(scores[best])
