"""Working memory: the last items of each open session, held by one
:class:`~memreader.front.memory.Memory` before they reach its store (the MemU write-up's first
tier). Opt-in: ``Memory(working_memory=N)`` (``True``: :data:`DEFAULT_WORKING_ITEMS`).

**Why opt-in.** Without it, ``add()`` writes every item to the store at once, where every other
process, the service and the CLI see it, and where it survives a crash. Items held here are seen
by this object only, and are lost if the process dies before they are promoted: a trade a caller
should choose (a chat agent whose sessions are short and whose last turns matter most), not one
an upgrade should make for them. A promotion whose write fails holds its items again and
raises (the store's typed error): nothing is lost between the tier and the store.

**What is held.** Each ``(owner, session)`` keeps its last ``N`` items read by ``add()``. An
item leaves the tier, promoted into the store (an ordinary write: deduplicated, embedded,
categorised, with history), exactly once, when:

- its session ends: :meth:`WorkingMemory.end_session` (``Memory.end_session``), or the
  ``Memory`` is closed (every open session ends);
- it is **reinforced**: the same fact (same owner, type and content hash) is added again while
  held, or it is already in the store (the store then reinforces the stored memory);
- the session holds more than ``N``: the oldest are promoted (nothing read is ever dropped);
- more than :data:`MAX_OPEN_SESSIONS` sessions are held: the longest-open one is promoted whole
  (so memory stays bounded when sessions are never ended);
- a call changes its owner's stored memories by id or source (``update``, ``delete``,
  ``forget``): the owner's held items are promoted first, so the call sees them.

``Memory.get`` finds a held item too (no use is recorded: it is not stored yet).

**How it is searched.** ``search`` and ``context`` look here first: the held items of the owner
(of the session when ``session_id`` filters, of the types when ``types`` does) are scored
against the query as a store scores passages (their vectors' cosine and the query's words:
:func:`~memreader.stores.passages.scoring.score_passages`), kept when their relevance reaches
``min_score`` (:data:`~memreader.stores.scoring.RECOMMENDED_MIN_SCORE` when none is given), and
come first, best first, each hit's ``tier`` ``"working"``; the store's hits follow
(``tier`` ``"store"``) up to ``k``. A search with a ``category`` skips the tier (held items have
no category yet). Use is recorded for the store's memories only.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

import numpy as np

from memreader.errors import InputError
from memreader.items import TextualMemoryItem
from memreader.retrieval.passages import passages_of
from memreader.scopes import scope_columns, visible
from memreader.stores import MemoryStore, SearchHit, WriteEvent
from memreader.stores.checks import check_k
from memreader.stores.context import Context, search_context
from memreader.stores.embedding import embed
from memreader.stores.passages.scoring import PassageSet, score_passages, span_rows
from memreader.stores.records import StoredMemory
from memreader.stores.scoring import NEUTRAL_IMPORTANCE, RECOMMENDED_MIN_SCORE, ScoreParts
from memreader.stores.write_decisions import content_hash

__all__ = ["DEFAULT_WORKING_ITEMS", "MAX_WORKING_ITEMS", "WorkingMemory", "check_working_size"]

#: How many items a session keeps in working memory when ``working_memory=True``: about ten
#: exchanges of a chat, what an agent's next turn most often refers back to.
DEFAULT_WORKING_ITEMS = 20
#: The most a session may keep (each search scores every held item of its owner).
MAX_WORKING_ITEMS = 1000
#: The most sessions held at once: past it, the longest-open session is promoted whole, so a
#: long-running ``Memory`` whose sessions are never ended holds a bounded number of items.
MAX_OPEN_SESSIONS = 1000


def check_working_size(value: Any) -> int:
    """``working_memory`` as a number of items per session: ``True`` is
    :data:`DEFAULT_WORKING_ITEMS`, ``False``/``None``/0 is off (0).

    Raises:
        InputError: not a boolean, ``None`` or an integer in ``[0, MAX_WORKING_ITEMS]``.
    """
    if value is None or value is False:
        return 0
    if value is True:
        return DEFAULT_WORKING_ITEMS
    if not isinstance(value, int) or not 0 <= value <= MAX_WORKING_ITEMS:
        raise InputError(
            f"working_memory must be true, false or a number of items in [0, "
            f"{MAX_WORKING_ITEMS}], got {value!r}"
        )
    return value


@dataclass
class _Held:
    item: TextualMemoryItem
    hash: str
    at: datetime


class WorkingMemory:
    """The held items of one ``Memory`` (see the module docstring), in front of ``store``;
    ``size``: items per session. Thread safe (one lock)."""

    def __init__(
        self, store: MemoryStore, size: int, max_sessions: int = MAX_OPEN_SESSIONS
    ) -> None:
        self.store = store
        self.size = size
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], list[_Held]] = {}
        self._lock = threading.Lock()

    def _promote(self, held: list[_Held]) -> list[WriteEvent]:
        """Write ``held`` to the store; if the write fails, hold them again (their sessions
        keep them for the next promotion) and raise: a failed write never loses an item."""
        if not held:
            return []
        try:
            return self.store.write([h.item for h in held])
        except BaseException:
            with self._lock:
                for entry in held:
                    key = (entry.item.metadata.user_id or "", entry.item.metadata.session_id)
                    self._sessions.setdefault(key, []).append(entry)
            raise

    def remember(self, items: Sequence[TextualMemoryItem]) -> tuple[list[WriteEvent], list[str]]:
        """Hold ``items`` (one ``add()``'s), writing what must reach the store now: items it
        already has (reinforced there), held items added again (reinforced here: the held one
        and the new one), and what a session's size pushes out. Returns the write's events and
        the ids now held."""
        found = self._already_stored(items)
        with self._lock:
            promote: list[_Held] = []
            for item, stored in zip(items, found, strict=True):
                key = (item.metadata.user_id or "", item.metadata.session_id)
                entry = _Held(item, _digest(item), datetime.now(timezone.utc))
                twin = self._take_twin(key[0], entry.hash)
                if stored is not None or twin is not None:
                    promote += ([twin] if twin is not None else []) + [entry]
                    continue
                held = self._sessions.setdefault(key, [])
                held.append(entry)
                while len(held) > self.size:
                    promote.append(held.pop(0))
            while len(self._sessions) > self.max_sessions:  # the longest-open session goes
                promote += self._sessions.pop(next(iter(self._sessions)))
            kept = {h.item.id for held in self._sessions.values() for h in held}
        return self._promote(promote), [item.id for item in items if item.id in kept]

    def _already_stored(self, items: Sequence[TextualMemoryItem]) -> list[WriteEvent | None]:
        found: list[WriteEvent | None] = [None] * len(items)
        for owner in {item.metadata.user_id or "" for item in items}:
            at = [i for i, item in enumerate(items) if item.metadata.user_id == owner]
            events = self.store.lookup([items[i] for i in at], user_id=owner)
            for i, event in zip(at, events, strict=True):
                found[i] = event
        return found

    def _take_twin(self, owner: str, digest: str) -> _Held | None:
        """The held item of ``owner`` with ``digest`` (type and content hash), removed."""
        for (holder, _), held in self._sessions.items():
            for i, entry in enumerate(held):
                if holder == owner and entry.hash == digest:
                    return held.pop(i)
        return None

    def end_session(self, user_id: str, session_id: str) -> list[WriteEvent]:
        """Promote every item held for ``user_id``'s session ``session_id`` into the store
        (one write); the events (none when nothing was held: a session ends once)."""
        with self._lock:
            held = self._sessions.pop((user_id, session_id), [])
        return self._promote(held)

    def end_all(self) -> list[WriteEvent]:
        """Promote every held item (what closing does); the events."""
        with self._lock:
            held = [h for entries in self._sessions.values() for h in entries]
            self._sessions.clear()
        return self._promote(held)

    def settle(self, user_id: str) -> list[WriteEvent]:
        """Promote every item held for ``user_id``, before a call that changes stored memories
        by id or source (``update``, ``delete``, ``forget``) so it sees them; the events."""
        with self._lock:
            keys = [key for key in self._sessions if key[0] == user_id]
            held = [h for key in keys for h in self._sessions.pop(key)]
        return self._promote(held)

    def get(self, user_id: str, memory_id: str) -> StoredMemory | None:
        """The held item ``memory_id`` of ``user_id`` as a memory, or ``None``."""
        for item in self.held(user_id):
            if item.id == memory_id:
                return StoredMemory(item, "active", _digest(item), datetime.now(timezone.utc))
        return None

    def held(self, user_id: str) -> list[TextualMemoryItem]:
        """The items held for ``user_id``, oldest first per session."""
        with self._lock:
            return [h.item for (o, _), hs in self._sessions.items() if o == user_id for h in hs]

    def search(self, query: str, *, user_id: str, k: int = 10, **filters: Any) -> list[SearchHit]:
        """The held items matching ``query`` first (tier ``working``), then the store's hits
        (tier ``store``), ``k`` in all (see the module docstring).

        Raises:
            InputError: as ``MemoryStore.search`` (a bad ``k`` or query, checked first).
        """
        if not isinstance(query, str):
            raise InputError(f"query must be a string, got {type(query).__name__}")
        found = self._working_hits(query, user_id, filters)[: check_k(k)]
        rest = self.store.search(query, user_id=user_id, k=k, **filters) if len(found) < k else []
        return found + rest[: k - len(found)]

    def context(self, query: str, *, user_id: str, **options: Any) -> Context:
        """``MemoryStore.context`` over :meth:`search`: held items first; the use of the store's
        memories shown is recorded."""
        block = search_context(self.search, query, user_id=user_id, **options)
        held = {item.id for item in self.held(user_id)}
        shown = [p.memory_id for p in block.parts if p.memory_id not in held]
        self.store.record_use(list(dict.fromkeys(shown)), user_id=user_id)
        return block

    def _working_hits(self, query: str, owner: str, filters: dict[str, Any]) -> list[SearchHit]:
        items = self.held(owner)
        session, types = filters.get("session_id"), filters.get("types")
        items = [i for i in items if session is None or i.metadata.session_id == session]
        items = [i for i in items if not types or i.metadata.memory_type.value in types]
        agent, task = filters.get("agent_id"), filters.get("task_id")
        items = [
            i for i in items if visible(scope_columns(i.metadata), agent_id=agent, task_id=task)
        ]
        if not items or filters.get("category") is not None or not query.strip():
            return []
        embedder = getattr(self.store, "embedder", None)
        vector = None
        if embedder is not None and filters.get("mode") != "text":
            q = np.asarray(embed(embedder, [query])[0], dtype=np.float64)
            vector = q / norm if (norm := float(np.linalg.norm(q))) > 0 else None
        sets = [_passage_set(i, item, vector) for i, item in enumerate(items)]
        scored = score_passages(query, vector, sets, lexical_weight=None)
        cut = filters.get("min_score")
        cut = RECOMMENDED_MIN_SCORE if cut is None else cut
        hits = []
        for i, item in enumerate(items):
            best = scored[i].best or 0.0
            if best >= cut:
                parts = ScoreParts(
                    best, 0.0, sets[i].window_cosine, None, NEUTRAL_IMPORTANCE, 1.0, best, best
                )
                memory = StoredMemory(item, "active", _digest(item), datetime.now(timezone.utc))
                hits.append(SearchHit(memory, parts, scored[i].hits(), tier="working"))
        return sorted(hits, key=lambda h: -h.score.final)


def _digest(item: TextualMemoryItem) -> str:
    """What makes two items the same memory: type and content hash (the store's dedup key)."""
    return f"{item.metadata.memory_type.value}:{content_hash(item.memory)}"


def _passage_set(index: int, item: TextualMemoryItem, vector: np.ndarray | None) -> PassageSet:
    """A held item as passage scoring reads a store's candidate (its own vector's cosine)."""
    cosine = None
    own = item.metadata.embedding
    if vector is not None and own and len(own) == len(vector):
        mine = np.asarray(own, dtype=np.float64)
        cosine = float(mine @ vector / n) if (n := float(np.linalg.norm(mine))) > 0 else None
    spans = span_rows(passages_of(item))
    return PassageSet(index, item.memory, spans, None, cosine, session=item.metadata.session_id)
