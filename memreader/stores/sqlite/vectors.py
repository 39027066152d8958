"""Exact vector search in process, with numpy: one owner's vectors as one matrix per dimension,
kept between calls, patched in place with this process's own writes, and reloaded when another
process moved the owner's version.

Exact search is what the embedded store does instead of loading a vector extension (some
CPython builds cannot load SQLite extensions): a float32 matrix product over 100k vectors of
384 dimensions takes a few milliseconds.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from datetime import datetime

from memreader.errors import ConfigError
from memreader.stores.filters import SearchFilters

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
    "unusable_blob",
]

#: One stored vector and what searches filter and rank it by: rowid, the float32 blob, status,
#: memory type, session id, time (epoch seconds), embedding model ("" when unknown), scope
#: (agent id, task id, visibility: :data:`~memreader.scopes.ScopeColumns`), and the stored
#: importance and time as a search ranks them (:func:`~memreader.stores.sqlite.candidates.ranking`).
VectorRow = tuple[
    int, bytes, str, str, str, float, str, tuple[str, str, str], float | None, datetime | None
]

#: The most scores one matrix product of :meth:`VectorGroup.best_of` holds (64 MiB of float32).
BATCH_CELLS = 16_000_000


#: The per-row arrays of a :class:`VectorGroup` (grown together).
_COLUMNS = (
    "_matrix",
    "_rowids",
    "_active",
    "_types",
    "_sessions",
    "_times",
    "_models",
    "_agents",
    "_tasks",
    "_shared",
    "importance",
    "moments",
)


def to_blob(vector: Sequence[float]) -> bytes:
    """``vector`` as little-endian float32 bytes."""
    return np.asarray(vector, dtype="<f4").tobytes()


def from_blob(blob: bytes) -> list[float]:
    """A vector back from :func:`to_blob` (float32 precision; ``tolist``: the floats of
    ``float()`` of each, a fifth of its cost at 384 dimensions, issue 42)."""
    values: list[float] = np.frombuffer(blob, dtype="<f4").tolist()
    return values


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


def unusable_blob(blob: bytes | None) -> bool:
    """Whether a stored vector has no direction (:func:`unit` finds none) or is not float32
    bytes at all: what ``maintain`` embeds again (SQL function ``memreader_unusable_vector``)."""
    if blob is None:
        return False
    try:
        return unit(bytes(blob)) is None
    except ValueError:  # not a whole number of float32 values
        return True


class VectorGroup:
    """One owner's vectors of one dimension, with the columns searches filter by. Rows are
    added and changed in place (:meth:`put`); the arrays grow by doubling, and the public
    attributes are views of the first :attr:`size` rows."""

    def __init__(self, dim: int, capacity: int = 8) -> None:
        self.dim = dim
        self.size = 0
        self._matrix = np.zeros((capacity, dim), dtype=np.float32)
        self._rowids = np.zeros(capacity, dtype=np.int64)
        self._active = np.zeros(capacity, dtype=bool)
        self._types = np.empty(capacity, dtype=object)
        self._sessions = np.empty(capacity, dtype=object)
        self._times = np.zeros(capacity, dtype=np.float64)
        self._models = np.empty(capacity, dtype=object)
        self._agents = np.empty(capacity, dtype=object)
        self._tasks = np.empty(capacity, dtype=object)
        self._shared = np.zeros(capacity, dtype=bool)
        #: Each row's stored importance and time, as a search ranks it (first :attr:`size`).
        self.importance = np.empty(capacity, dtype=object)
        self.moments = np.empty(capacity, dtype=object)

    @property
    def rowids(self) -> np.ndarray:
        """The rows' rowids."""
        return self._rowids[: self.size]

    @property
    def matrix(self) -> np.ndarray:
        """The rows' unit vectors (float32)."""
        return self._matrix[: self.size]

    @property
    def active(self) -> np.ndarray:
        """Which rows are active."""
        return self._active[: self.size]

    @property
    def types(self) -> np.ndarray:
        """The rows' memory types."""
        return self._types[: self.size]

    @property
    def sessions(self) -> np.ndarray:
        """The rows' session ids."""
        return self._sessions[: self.size]

    @property
    def times(self) -> np.ndarray:
        """The rows' times (epoch seconds)."""
        return self._times[: self.size]

    @property
    def models(self) -> np.ndarray:
        """The rows' embedding models."""
        return self._models[: self.size]

    def reserve(self, extra: int) -> None:
        """Room for ``extra`` more rows."""
        need = self.size + extra
        if need <= len(self._rowids):
            return
        capacity = max(need, 2 * len(self._rowids))
        for name in _COLUMNS:
            old = getattr(self, name)
            grown = np.zeros((capacity, *old.shape[1:]), dtype=old.dtype)
            grown[: self.size] = old[: self.size]
            setattr(self, name, grown)

    def put(self, index: int, rows: Sequence[VectorRow], vectors: np.ndarray) -> None:
        """Write ``rows`` (their unit ``vectors``) at ``index`` onwards (``index == size``
        appends; call :meth:`reserve` first)."""
        end = index + len(rows)
        self._matrix[index:end] = vectors
        self._rowids[index:end] = [r[0] for r in rows]
        self._active[index:end] = [r[2] == "active" for r in rows]
        self._types[index:end] = [r[3] for r in rows]
        self._sessions[index:end] = [r[4] for r in rows]
        self._times[index:end] = [r[5] for r in rows]
        self._models[index:end] = [r[6] for r in rows]
        self._agents[index:end] = [r[7][0] for r in rows]
        self._tasks[index:end] = [r[7][1] for r in rows]
        self._shared[index:end] = [r[7][2] == "shared" for r in rows]
        self.importance[index:end] = [r[8] for r in rows]
        self.moments[index:end] = [r[9] for r in rows]
        self.size = max(self.size, end)

    def mask(
        self,
        *,
        include_inactive: bool = False,
        types: Sequence[str] | None = None,
        session_id: str | None = None,
        since: float | None = None,
        until: float | None = None,
        model: str | None = None,
        agent_id: str | None = None,
        task_id: str | None = None,
        scope: tuple[str, str, str] | None = None,
    ) -> np.ndarray:
        """Which rows pass the filters: ``agent_id`` and ``task_id`` as a search sees them
        (:func:`memreader.scopes.visible`), ``scope`` exactly (dedup: one scope's rows)."""
        keep = np.ones(self.size, dtype=bool) if include_inactive else self.active.copy()
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
        n = self.size
        for column, wanted in ((self._agents, agent_id), (self._tasks, task_id)):
            if wanted is not None:
                keep &= (column[:n] == "") | (column[:n] == wanted) | self._shared[:n]
        if scope is not None:
            keep &= (self._agents[:n] == scope[0]) & (self._tasks[:n] == scope[1])
            keep &= self._shared[:n] == (scope[2] == "shared")
        return keep

    def filtered(self, filters: SearchFilters) -> np.ndarray:
        """Which rows pass a search's ``filters`` (all but its category: SQL keeps that)."""
        return self.mask(
            include_inactive=filters.include_inactive,
            types=filters.types,
            session_id=filters.session_id,
            since=filters.since.timestamp() if filters.since else None,
            until=filters.until.timestamp() if filters.until else None,
            agent_id=filters.agent_id,
            task_id=filters.task_id,
        )

    def top(self, query: np.ndarray, keep: np.ndarray, n: int) -> list[tuple[int, float]]:
        """The ``n`` rows most similar to the unit vector ``query`` among ``keep``: (rowid,
        cosine), best first."""
        if n <= 0 or not keep.any():
            return []
        scores = self.matrix @ query
        scores[~keep] = -np.inf
        n = min(n, int(keep.sum()))
        best = np.argpartition(-scores, n - 1)[:n]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [(int(self.rowids[i]), float(scores[i])) for i in best]

    def best_of(self, queries: np.ndarray, keep: np.ndarray) -> list[tuple[int, float] | None]:
        """For each row of ``queries`` (unit vectors) the most similar row among ``keep``:
        (rowid, cosine), in matrix products of at most :data:`BATCH_CELLS` scores."""
        if not keep.any():
            return [None] * len(queries)
        penalty = np.where(keep, np.float32(0.0), np.float32(-np.inf))
        step = max(1, BATCH_CELLS // max(1, self.size))
        found: list[tuple[int, float] | None] = []
        for start in range(0, len(queries), step):
            scores = queries[start : start + step] @ self.matrix.T
            scores += penalty
            best = np.argmax(scores, axis=1)
            found += [
                (int(self.rowids[i]), float(scores[r, i])) for r, i in enumerate(best.tolist())
            ]
        return found


class OwnerVectors:
    """Every stored vector of one owner, by dimension, as of ``version``; :meth:`update`
    patches rows in place (a write this process committed)."""

    def __init__(self, version: int) -> None:
        self.version = version
        self.groups: dict[int, VectorGroup] = {}
        self.positions: dict[int, tuple[int, int]] = {}

    def update(self, rows: Iterable[VectorRow]) -> bool:
        """Add or change ``rows`` (read as the loader reads them); ``False`` when a row cannot
        be patched in place (its vector went away or changed dimension: reload instead)."""
        for block, matrix in _unit_blocks(rows):
            if matrix is None:
                if any(row[0] in self.positions for row in block):
                    return False
                continue
            dim = matrix.shape[1]
            new: list[int] = []
            for j, row in enumerate(block):
                where = self.positions.get(row[0])
                if where is None:
                    new.append(j)
                elif where[0] != dim:
                    return False
                else:
                    self.groups[dim].put(where[1], [row], matrix[j : j + 1])
            if new:
                group = self.groups.setdefault(dim, VectorGroup(dim))
                group.reserve(len(new))
                start = group.size
                group.put(start, [block[j] for j in new], matrix[new])
                self.positions.update({block[j][0]: (dim, start + i) for i, j in enumerate(new)})
        return True


def _unit_blocks(
    rows: Iterable[VectorRow], size: int = 4096
) -> Iterator[tuple[list[VectorRow], np.ndarray | None]]:
    """``rows`` in blocks, each with its unit vectors as one float32 matrix (normalised in
    numpy, not row by row); the rows with no usable vector (none, a zero or non-finite one)
    come in blocks of their own, with ``None``."""
    batch: list[VectorRow] = []
    for row in rows:
        batch.append(row)
        if len(batch) == size:
            yield from _unit_batch(batch)
            batch = []
    yield from _unit_batch(batch)


def _unit_batch(rows: list[VectorRow]) -> Iterator[tuple[list[VectorRow], np.ndarray | None]]:
    by_size: dict[int, list[VectorRow]] = {}
    for row in rows:
        by_size.setdefault(len(row[1]) if row[1] else 0, []).append(row)
    for size, members in by_size.items():
        if size == 0 or size % 4:
            yield members, None
            continue
        matrix = np.frombuffer(b"".join(r[1] for r in members), dtype="<f4")
        matrix = matrix.reshape(len(members), size // 4).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1)
        usable = np.isfinite(norms) & (norms > 0)
        if usable.all():
            yield members, matrix / norms[:, None]
            continue
        yield [m for m, ok in zip(members, usable, strict=True) if not ok], None
        if usable.any():
            kept = [m for m, ok in zip(members, usable, strict=True) if ok]
            yield kept, matrix[usable] / norms[usable, None]


def build(version: int, rows: Iterable[VectorRow]) -> OwnerVectors:
    """An :class:`OwnerVectors` of ``rows`` (those without a usable vector left out)."""
    owned = OwnerVectors(version)
    owned.update(rows)
    return owned


class VectorCache:
    """Per-owner :class:`OwnerVectors`, rebuilt when the owner's version moved (any write by
    any process bumps it in the same transaction, so a stale matrix is never searched), and
    patched in place with the writes of this process (:meth:`patch`), so a write does not
    cost the next search a reload."""

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

    def version_of(self, user_id: str) -> int | None:
        """The version ``user_id``'s vectors are cached at, if they are."""
        with self._lock:
            cached = self._owners.get(user_id)
        return None if cached is None else cached.version

    def patch(self, user_id: str, before: int, after: int, rows: Iterable[VectorRow]) -> None:
        """``user_id`` moved from version ``before`` to ``after`` by changing ``rows`` (each
        as the loader reads it; a deleted row passed as ``(rowid, b"", ...)``): patch the
        cached vectors if they are at ``before``, else (or when a row cannot be patched)
        forget them."""
        with self._lock:
            cached = self._owners.get(user_id)
            if cached is None:
                return
            if cached.version == before and cached.update(rows):
                cached.version = after
            else:
                del self._owners[user_id]

    def clear(self) -> None:
        """Forget every owner's vectors."""
        with self._lock:
            self._owners.clear()
