"""One item held in working memory (:class:`Held`) and what working memory shows of it: the
memory a store would hold (:func:`Held.as_stored`), its history so far
(:func:`Held.history`), and the passages
its search scores (:func:`passage_set`); whether a search keeps it is
:meth:`SearchFilters.matches <memreader.stores.filters.SearchFilters.matches>` of
:meth:`Held.as_stored`. See :mod:`memreader.front.working`.

>>> from datetime import timezone
>>> from memreader.items import TextualMemoryItemMetadata
>>> at = datetime(2026, 5, 1, tzinfo=timezone.utc)
>>> item = TextualMemoryItem(id="m1", memory="I live in Porto.",
...     metadata=TextualMemoryItemMetadata(user_id="ana", session_id="s1"))
>>> held = Held.of(item, at)
>>> from memreader.stores.filters import SearchFilters
>>> keeps = lambda **f: SearchFilters(**f).matches(held.as_stored())
>>> keeps(since=at), keeps(until=at.replace(month=4))
(True, False)
>>> [(e.event, e.reason) for e in held.history()]
[('ADD', 'held in working memory (session s1): not in the store yet')]
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

import numpy as np

from memreader.items import TextualMemoryItem
from memreader.retrieval.passages import passages_of
from memreader.stores.events import HistoryEntry
from memreader.stores.passages.scoring import PassageSet, span_rows
from memreader.stores.records import StoredMemory
from memreader.stores.write_decisions import memory_hash, valid_from_of

__all__ = ["Held", "passage_set"]


@dataclass(frozen=True)
class Held:
    """An item held in working memory since ``at``: ``digest`` is what makes two items the
    same memory (type and the store's dedup key), ``time`` what ``since``/``until`` compare
    (the store's rule: when the fact began to hold, else when it was recorded: held)."""

    item: TextualMemoryItem
    digest: str
    at: datetime
    time: datetime

    @classmethod
    def of(cls, item: TextualMemoryItem, at: datetime) -> Held:
        """``item``, held from ``at``."""
        digest = f"{item.metadata.memory_type.value}:{memory_hash(item)}"
        return cls(item, digest, at, valid_from_of(item) or at)

    @property
    def key(self) -> tuple[str, str]:
        """Its owner and session: the session that holds it."""
        return (self.item.metadata.user_id or "", self.item.metadata.session_id)

    def as_stored(self) -> StoredMemory:
        """The held item as the active memory a store will hold (``recorded_at``: when it
        was held)."""
        return StoredMemory(
            self.item,
            "active",
            memory_hash(self.item),
            self.at,
            valid_from=valid_from_of(self.item),
            importance=self.item.metadata.importance,
            importance_reason=self.item.metadata.importance_reason,
        )

    def history(self) -> list[HistoryEntry]:
        """Its history so far: one ``ADD`` at the time it was held, whose reason says it is
        not in the store yet (its promotion writes the store's own)."""
        sources = tuple(s.message_id for s in self.item.metadata.sources if s.message_id)
        reason = (
            f"held in working memory (session {self.item.metadata.session_id}): "
            "not in the store yet"
        )
        return [HistoryEntry(self.item.id, "ADD", None, self.item.memory, self.at, reason, sources)]


def passage_set(index: int, item: TextualMemoryItem, vector: np.ndarray | None) -> PassageSet:
    """A held item as passage scoring reads a store's candidate (its own vector's cosine)."""
    cosine = None
    own = item.metadata.embedding
    if vector is not None and own and len(own) == len(vector):
        mine = np.asarray(own, dtype=np.float64)
        cosine = float(mine @ vector / n) if (n := float(np.linalg.norm(mine))) > 0 else None
    spans = span_rows(passages_of(item))
    return PassageSet(index, item.memory, spans, None, cosine, session=item.metadata.session_id)
