"""How ``context()`` scores the passages of search hits (see :mod:`memreader.stores.context`):
each passage of each hit, as a :class:`Candidate` with a score in ``[0, 1]``.

A passage's score is the one search gave it (``SearchHit.passages``: its meaning, its words
and the speaker and date hints, :mod:`memreader.stores.passages.scoring`), so ``context()``
packs by exactly the ranking search uses, across all hits: the best messages of a conversation
come first whichever window holds them. A hit without passage scores (a hit made by hand, a
store that scores memories whole) has its passages scored here by the same function, by their
words alone (nothing is embedded at packing time).

Measured on real conversations (LoCoMo conversations 4-10, benchmarks/RESULTS.md, "issue 40"):
packing by the search's passage scores instead of re-scoring passages at packing time (the mean
of the query's term share, each passage's cosine embedded anew, and the store's score, each
weighed by its hit's relevance) lifted the share of questions whose block holds an evidence
message and cut the time ``context()`` takes by the embedding it no longer does.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from memreader.retrieval.passages import Passage, passages_of
from memreader.stores.passages.scoring import PassageSet, score_passages, span_rows

if TYPE_CHECKING:
    from memreader.retrieval.passages import PassageHit
    from memreader.stores.records import StoredMemory
    from memreader.stores.scoring import ScoreParts

__all__ = ["Candidate", "HitLike", "candidates"]


class HitLike(Protocol):
    """What scoring reads of a hit (:class:`memreader.stores.base.SearchHit` fits; this module
    sits below ``base``, which calls it)."""

    @property
    def memory(self) -> StoredMemory: ...

    @property
    def score(self) -> ScoreParts: ...

    @property
    def passages(self) -> tuple[PassageHit, ...]: ...


@dataclass
class Candidate:
    """Passage ``index`` of hit ``hit``: its span and score (see the module)."""

    hit: int
    index: int
    passage: Passage
    score: float


def candidates(query: str, hits: Sequence[HitLike]) -> list[list[Candidate]]:
    """Every passage of every hit, scored (see the module), one list per hit, in text order."""
    found: list[list[Candidate]] = [[] for _ in hits]
    unscored: list[tuple[int, list[Passage]]] = []
    for h, hit in enumerate(hits):
        if hit.passages:  # the store scored every passage of the memory
            ordered = sorted(hit.passages, key=lambda p: p.start)
            found[h] = [
                Candidate(h, i, Passage(p.start, p.end, p.source_index), _unit(p.score))
                for i, p in enumerate(ordered)
            ]
        elif cut := passages_of(hit.memory.item):
            unscored.append((h, cut))
    if unscored:
        sets = [
            PassageSet(h, hits[h].memory.item.memory, span_rows(cut), None, None)
            for h, cut in unscored
        ]
        scored = score_passages(query, None, sets)
        for h, cut in unscored:
            found[h] = [
                Candidate(h, i, passage, _unit(float(score)))
                for i, (passage, score) in enumerate(zip(cut, scored[h].scores, strict=True))
            ]
    return found


def _unit(score: float) -> float:
    return min(1.0, max(0.0, score))
