"""Working memory: the last items of each open session, held by one
:class:`~memreader.front.memory.Memory` before they reach its store (the MemU write-up's first
tier). Opt-in: ``Memory(working_memory=N)`` (``True``: :data:`DEFAULT_WORKING_ITEMS`).

**Why opt-in.** Without it, ``add()`` writes every item to the store at once, where every other
process, the service and the CLI see it, and where it survives a crash. Items held here are seen
by this object only, and are lost if the process is killed before they are promoted: a trade a
caller should choose (a chat agent whose sessions are short and whose last turns matter most),
not one an upgrade should make for them.

**Nothing held is lost quietly.** A promotion whose write fails holds its items again and raises
(the store's typed error): nothing is lost between the tier and the store. ``close()`` whose
promotion fails raises and leaves the ``Memory`` open with its items held, so ``close()`` again
retries. A ``Memory`` dropped without ``close()`` (``del m``, garbage collection) or still open
when the interpreter exits normally promotes what it holds then, retrying a busy store
(:func:`~memreader.front.lifetime.promote_when_dropped`); if that still fails, an error is
logged naming the count and ids of the items lost. Only a killed process (SIGKILL, a SIGTERM it
does not handle, a crash) loses held items.

**What is held.** Each ``(owner, session)`` keeps its last ``N`` items read by ``add()`` (checked
as a store write checks them, so a held item can always be written). An item leaves the tier,
promoted into the store (an ordinary write: deduplicated, embedded, categorised, with history),
exactly once, when:

- its session ends: :meth:`WorkingMemory.end_session` (``Memory.end_session``), or the
  ``Memory`` is closed (every open session ends; owner by owner, so one owner's failed write
  keeps only that owner's items);
- it is **reinforced**: the same fact (same owner, type and dedup key) is added again while
  held, or it is already in the store (the store then reinforces the stored memory);
- the session holds more than ``N``: the oldest are promoted (nothing read is ever dropped);
- more than :data:`MAX_OPEN_SESSIONS` sessions are held: the longest-open one is promoted whole
  (so memory stays bounded when sessions are never ended);
- a call changes its owner's stored memories by id or source (``update``, ``delete``,
  ``forget``), or exports them (``export_markdown``): the owner's held items are promoted
  first, so the call sees them;
- a call names it by id to record something of it (``pin``, ``mark_used``): it is promoted
  first (:meth:`WorkingMemory.promote_ids`), so the pin or the use is kept.

``Memory.get`` finds a held item too (no use is recorded: it is not stored yet), and
``Memory.history`` shows it (one ``ADD`` whose reason says it is held: :mod:`memreader.front.held`).

**How it is searched.** ``search`` and ``context`` look here and in the store: the held items
of the owner that the search's filters keep, by the store's rules
(:meth:`~memreader.stores.filters.SearchFilters.matches`: types, session, ``since``/``until`` on
when the fact began to hold, else when it was held, the ``agent_id``/``task_id`` scope; a
``category`` keeps none: a held item has none yet), are scored against the query as a store
scores passages (their vectors' cosine, unless ``mode="text"``, and the query's words:
:func:`~memreader.stores.passages.scoring.score_passages`), kept when their relevance reaches
``min_score`` (the same default as the store's: none, no cut), and ranked together with the
store's hits by final score (a held item is new: its final is its relevance; first on a tie),
``k`` in all; each hit's ``tier`` says where it is (``"working"`` or ``"store"``). Every filter is
checked first, as the store checks it. Use is recorded for the store's memories only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

import numpy as np

from memreader.errors import InputError, MemReaderError
from memreader.front.held import Held, passage_set
from memreader.items import TextualMemoryItem
from memreader.stores import MemoryStore, SearchHit, WriteEvent
from memreader.stores.checks import check_k, moment
from memreader.stores.context import Context, search_context
from memreader.stores.embedding import embed
from memreader.stores.events import HistoryEntry
from memreader.stores.filters import SearchFilters
from memreader.stores.passages.scoring import score_passages
from memreader.stores.records import StoredMemory
from memreader.stores.scoring import NEUTRAL_IMPORTANCE, ScoreParts
from memreader.stores.validation import validate_items

__all__ = [
    "DEFAULT_WORKING_ITEMS",
    "MAX_WORKING_ITEMS",
    "WorkingMemory",
    "check_working_size",
]

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


class WorkingMemory:
    """The held items of one ``Memory`` (see the module docstring), in front of ``store``;
    ``size``: items per session. Thread safe (one lock)."""

    def __init__(
        self, store: MemoryStore, size: int, max_sessions: int = MAX_OPEN_SESSIONS
    ) -> None:
        self.store = store
        self.size = size
        self.max_sessions = max_sessions
        self._sessions: dict[tuple[str, str], list[Held]] = {}
        self._lock = threading.Lock()

    def _promote(self, held: list[Held]) -> list[WriteEvent]:
        """Write ``held`` to the store; if the write fails, hold them again (their sessions
        keep them for the next promotion) and raise: a failed write never loses an item."""
        if not held:
            return []
        try:
            return self.store.write([h.item for h in held])
        except BaseException:
            with self._lock:
                for entry in held:
                    self._sessions.setdefault(entry.key, []).append(entry)
            raise

    def remember(self, items: Sequence[TextualMemoryItem]) -> tuple[list[WriteEvent], list[str]]:
        """Hold ``items`` (one ``add()``'s), writing what must reach the store now: items it
        already has (reinforced there), held items added again (reinforced here: the held one
        and the new one), and what a session's size pushes out. Returns the write's events and
        the ids now held.

        Raises:
            InputError: an item a store write would refuse (nothing of the call is held).
        """
        items = validate_items(items)
        found = self._already_stored(items)
        with self._lock:
            promote: list[Held] = []
            for item, stored in zip(items, found, strict=True):
                entry = Held.of(item, datetime.now(timezone.utc))
                twin = self._take_twin(entry.key[0], entry.digest)
                if stored is not None or twin is not None:
                    promote += ([twin] if twin is not None else []) + [entry]
                    continue
                held = self._sessions.setdefault(entry.key, [])
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

    def _take_twin(self, owner: str, digest: str) -> Held | None:
        """The held item of ``owner`` with ``digest`` (type and dedup key), removed."""
        for (holder, _), held in self._sessions.items():
            for i, entry in enumerate(held):
                if holder == owner and entry.digest == digest:
                    return held.pop(i)
        return None

    def _take(self, keep: Callable[[Held], bool]) -> list[Held]:
        """The held items ``keep`` selects, removed (sessions left empty go too)."""
        with self._lock:
            taken = [h for entries in self._sessions.values() for h in entries if keep(h)]
            if taken:
                chosen = {id(h) for h in taken}
                for key in list(self._sessions):
                    rest = [h for h in self._sessions[key] if id(h) not in chosen]
                    if rest:
                        self._sessions[key] = rest
                    else:
                        del self._sessions[key]
        return taken

    def end_session(self, user_id: str, session_id: str) -> list[WriteEvent]:
        """Promote every item held for ``user_id``'s session ``session_id`` into the store
        (one write); the events (none when nothing was held: a session ends once)."""
        return self._promote(self._take(lambda h: h.key == (user_id, session_id)))

    def end_all(self) -> list[WriteEvent]:
        """Promote every held item (what closing does), one write per owner, so one owner's
        failure keeps that owner's items only; the events.

        Raises:
            MemReaderError: the first owner's write that failed, once every owner was tried
                (its items are held again, as are those of any other owner that failed).
        """
        events: list[WriteEvent] = []
        failed: MemReaderError | None = None
        for owner in sorted({key[0] for key in self.sessions()}):
            try:
                events += self.settle(owner)
            except MemReaderError as exc:
                failed = failed or exc
        if failed is not None:
            raise failed
        return events

    def settle(self, user_id: str) -> list[WriteEvent]:
        """Promote every item held for ``user_id``, before a call that changes or exports
        stored memories (``update``, ``delete``, ``forget``, ``export_markdown``) so it sees
        them; the events."""
        return self._promote(self._take(lambda h: h.key[0] == user_id))

    def promote_ids(self, user_id: str, ids: Sequence[object]) -> list[WriteEvent]:
        """Promote the items of ``user_id`` held with one of ``ids`` (before a call that
        records something of them by id: ``pin``, ``mark_used``); the events (none when none
        is held: the call then checks its arguments itself)."""
        wanted = {i for i in ids if isinstance(i, str)} if isinstance(ids, (list, tuple)) else set()
        return self._promote(self._take(lambda h: h.key[0] == user_id and h.item.id in wanted))

    def sessions(self) -> list[tuple[str, str]]:
        """The ``(owner, session)`` pairs holding items now, longest open first."""
        with self._lock:
            return list(self._sessions)

    def count(self) -> int:
        """How many items are held now."""
        with self._lock:
            return sum(len(entries) for entries in self._sessions.values())

    def held_entries(self, user_id: str | None = None) -> list[Held]:
        """What is held for ``user_id`` (``None``: every owner), oldest first per session."""
        with self._lock:
            return [
                h
                for (o, _), hs in self._sessions.items()
                if user_id is None or o == user_id
                for h in hs
            ]

    def get(self, user_id: str, memory_id: str) -> StoredMemory | None:
        """The held item ``memory_id`` of ``user_id`` as a memory, or ``None``."""
        found = next((h for h in self.held_entries(user_id) if h.item.id == memory_id), None)
        return found.as_stored() if found is not None else None

    def history(self, user_id: str, memory_id: str) -> list[HistoryEntry]:
        """The history so far of ``user_id``'s held item ``memory_id`` (none when it is not
        held): what follows the store's own entries of that id."""
        found = next((h for h in self.held_entries(user_id) if h.item.id == memory_id), None)
        return found.history() if found is not None else []

    def held(self, user_id: str) -> list[TextualMemoryItem]:
        """The items held for ``user_id``, oldest first per session."""
        return [h.item for h in self.held_entries(user_id)]

    def search(
        self,
        query: str,
        *,
        user_id: str,
        k: int = 10,
        filters: SearchFilters | Mapping[str, Any] | None = None,
        now: datetime | None = None,
        **keywords: Any,
    ) -> list[SearchHit]:
        """The held items and the store's memories matching ``query``, ranked together, ``k``
        in all (see the module docstring); ``filters`` and ``keywords`` as
        ``MemoryStore.search`` takes them.

        Raises:
            InputError: as ``MemoryStore.search`` (a bad ``k``, query or filter, checked
                first, even when the held items fill ``k``).
        """
        checked = SearchFilters.of(filters, **keywords)
        k = check_k(k)
        moment(now)  # checked as the store checks it (decay only: no filter)
        found = self._working_hits(query, user_id, checked)[:k]
        stored = self.store.search(query, user_id=user_id, k=k, filters=checked, now=now)
        # Ranked together by final score (a held item is new: its final is its relevance); a
        # held item first on a tie. sorted() is stable.
        return sorted(found + stored, key=lambda h: -h.score.final)[:k]

    def context(self, query: str, *, user_id: str, **options: Any) -> Context:
        """``MemoryStore.context`` over :meth:`search`: held items first; the use of the store's
        memories shown is recorded."""
        block = search_context(self.search, query, user_id=user_id, **options)
        held = {item.id for item in self.held(user_id)}
        shown = [p.memory_id for p in block.parts if p.memory_id not in held]
        self.store.record_use(list(dict.fromkeys(shown)), user_id=user_id)
        return block

    def _working_hits(self, query: str, owner: str, checked: SearchFilters) -> list[SearchHit]:
        if not isinstance(query, str):
            raise InputError(f"query must be a string, got {type(query).__name__}")
        mode = checked.mode
        held = [h for h in self.held_entries(owner) if checked.matches(h.as_stored())]
        if not held or not query.strip():
            return []
        embedder = getattr(self.store, "embedder", None)
        vector = None
        if embedder is not None and mode != "text":
            q = np.asarray(embed(embedder, [query])[0], dtype=np.float64)
            vector = q / norm if (norm := float(np.linalg.norm(q))) > 0 else None
        if mode == "vector" and vector is None:
            return []  # as the store: no query vector (a text-only store), no vector hits
        sets = [passage_set(i, h.item, vector) for i, h in enumerate(held)]
        scored = score_passages(query, vector, sets, lexical_weight=None)
        cut = checked.min_score or 0.0
        hits = []
        for i, entry in enumerate(held):
            best = scored[i].best or 0.0
            if best >= cut:
                window = sets[i].window_cosine
                parts = ScoreParts(best, 0.0, window, None, NEUTRAL_IMPORTANCE, 1.0, best, best)
                hits.append(SearchHit(entry.as_stored(), parts, scored[i].hits(), tier="working"))
        return sorted(hits, key=lambda h: -h.score.final)
