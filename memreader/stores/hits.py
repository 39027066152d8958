"""What a search returns: :class:`SearchHit` (a stored memory, its score in parts and the
passages of its text that matched), and the modes a search ranks by (:data:`SearchMode`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from memreader.retrieval.passages import PassageHit
from memreader.stores.records import StoredMemory
from memreader.stores.scoring import ScoreParts

__all__ = ["SEARCH_MODES", "Reranked", "SearchHit", "SearchMode", "Tier"]

#: Where a hit was found: the store, or a ``Memory``'s working memory.
Tier = Literal["working", "store"]

#: What a search ranks by: ``hybrid`` (the default) fuses the vector list and the full-text
#: list; ``vector`` uses the vector list only, ``text`` the full-text list only (the query is
#: then not embedded).
SearchMode = Literal["hybrid", "vector", "text"]
SEARCH_MODES: tuple[SearchMode, ...] = ("hybrid", "vector", "text")


@dataclass(frozen=True)
class Reranked:
    """How an LLM rerank (``search(..., rerank=True)``: :mod:`memreader.front.rerank`) placed
    a hit: ``rank``, its place in the LLM's order (1 = first; ``None`` when the LLM left it
    out: it follows the ranked hits, in the store's order), ``store_rank``, its place in the
    store's order (its ``score`` is the store's, kept), and ``fallback``, why the store's
    order stands for the whole call (the LLM failed or answered what could not be used;
    ``None`` when the LLM's order was applied)."""

    rank: int | None
    store_rank: int
    fallback: str | None = None


@dataclass(frozen=True)
class SearchHit:
    """One search result: the stored memory and its score, in parts; ``passages``, the parts of
    the memory's text that matched the query, best first (empty when the store scored the
    memory whole); ``tier``: where it was found, ``"store"``, or ``"working"`` for an item a
    ``Memory`` holds in working memory, not stored yet (:mod:`memreader.front.working`);
    ``rerank``: how an LLM rerank placed it (``None``: no rerank was asked)."""

    memory: StoredMemory
    score: ScoreParts
    passages: tuple[PassageHit, ...] = ()
    tier: Tier = "store"
    rerank: Reranked | None = None

    # What a hit is to a caller who wants the memory itself (mem0's shape): read-only views.
    @property
    def id(self) -> str:
        """The memory's id (``hit.memory.id``)."""
        return self.memory.id

    @property
    def text(self) -> str:
        """The memory's text (``hit.memory.item.memory``)."""
        return self.memory.item.memory

    @property
    def memory_type(self) -> str:
        """The memory's type, e.g. ``"LongTermMemory"``."""
        return self.memory.item.metadata.memory_type.value

    @property
    def session_id(self) -> str:
        """The session the memory was read from (``"direct"`` for one added as text)."""
        return self.memory.item.metadata.session_id
