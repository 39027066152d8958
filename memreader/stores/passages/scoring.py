"""How a search scores the passages of its candidates (both stores): each passage of each
candidate memory by the cosine of its stored vector with the query's, the better of two where
it has two (the message alone, and the mean over the texts that read it with its neighbours:
:mod:`memreader.stores.passages.rows`; the memory's vector when the passage has none, a memory
written before passages were stored) and by how much of the query's rarer words it holds; a
memory's match is its best passage's.

A window of ~780 tokens holds a dozen messages; its one vector (read by a model that sees the
first 256 tokens) is the blur of them all, so a question about one message ranks the window by
the blur. Scoring the window's messages one by one finds the message, and says which it is.

>>> scored = score_passages(
...     "where did Ana move?",
...     None,
...     [PassageSet(1, "user: I moved to Porto.\\nuser: Ana moved to Lisbon.",
...                 span_rows([Passage(0, 22, 0), Passage(23, 49, 1)]), None, None)],
... )
>>> [(p.start, p.end, round(p.score, 2)) for p in scored[1].hits()]
[(23, 49, 0.16), (0, 22, 0.0)]
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

import numpy as np

from memreader.retrieval.passages import Passage, PassageHit
from memreader.retrieval.terms import fold, is_cjk, text_terms
from memreader.stores.scoring import Candidate, ScoreParts, rank_candidates

__all__ = [
    "COSINE_FLOOR",
    "COSINE_FULL",
    "LEXICAL_WEIGHT",
    "PassageSet",
    "ScoredPassages",
    "calibrated",
    "rank_by_passages",
    "score_passages",
    "span_rows",
]

#: The cosine below which a vector match counts for nothing, and (:data:`COSINE_FULL`) the one
#: at which it counts fully: a linear map onto [0, 1] between them. Measured with MiniLM
#: (benchmarks/RESULTS.md, "passage-level hits"): the best passage of an owner's ~32 windows
#: scores a cosine of 0.3-0.8 (median 0.52) with a paraphrased question about one of them, and
#: 0.1-0.47 (median 0.19) with a question about something never said. The map keeps order, so
#: it changes no ranking; it makes the number readable: 0 unrelated, 1 a near paraphrase.
COSINE_FLOOR = 0.15
COSINE_FULL = 0.75

#: How much the share of the query's words a passage holds (rarer words weighing more) counts
#: against its vector match: ``(1 - w) * vector + w * words``. Measured (RESULTS.md): 0 ranks
#: paraphrased questions best, 0.5 costs recall@10 0.15 there; 0.2 keeps names, dates and rare
#: words (which a small model's vector blurs) deciding between passages of near-equal meaning
#: at a cost of 0-0.025 recall@3.
LEXICAL_WEIGHT = 0.2


def _whole_at(text: str, at: int, end: int) -> bool:
    """Whether ``text[at:end]`` is a whole word (no letter or digit glued to either end)."""
    return (at == 0 or not _in_word(text[at - 1])) and (end == len(text) or not _in_word(text[end]))


def _holds(text: str, term: str, whole: bool) -> bool:
    """Whether folded ``text`` holds ``term`` (a whole word unless a CJK bigram): ``str.find``
    and a look at both ends, far cheaper than a regular expression with lookarounds."""
    at = text.find(term)
    if not whole:
        return at >= 0
    while at >= 0:
        if _whole_at(text, at, at + len(term)):
            return True
        at = text.find(term, at + 1)
    return False


def _in_word(char: str) -> bool:
    """Whether ``char`` continues a word (a term next to it is part of a longer word)."""
    return char.isalnum() and (char.isascii() or not is_cjk(char))


def _folded(text: str) -> str:
    """:func:`~memreader.retrieval.terms.fold`, with a fast path: ASCII text only lowers."""
    return text.lower() if text.isascii() else fold(text)


#: Below this many candidates, no term is too common to count (there is no "most" of them).
_FEW = 4


@dataclass(frozen=True)
class PassageSet:
    """One candidate memory as passage scoring reads it: its rowid, text and passages (exact
    spans of the text, as :func:`span_rows`), the passages' vectors (one row per passage of one
    vector or two side by side, norm at most 1, see :mod:`~memreader.stores.passages.rows`;
    ``None`` when they have none stored) and the memory's own cosine with the query (``None``
    without vectors)."""

    rowid: int
    text: str
    spans: np.ndarray
    vectors: np.ndarray | None
    window_cosine: float | None


def span_rows(passages: Sequence[Passage]) -> np.ndarray:
    """``passages`` as an int array, one row each: start, end, source index (-1: none)."""
    flat = [(p.start, p.end, -1 if p.source_index is None else p.source_index) for p in passages]
    return np.asarray(flat, dtype=np.int64).reshape(-1, 3)


def calibrated(cosine: float) -> float:
    """``cosine`` mapped onto [0, 1] (see :data:`COSINE_FLOOR`).

    >>> calibrated(0.1), round(calibrated(0.45), 3), calibrated(0.9)
    (0.0, 0.5, 1.0)
    """
    return min(1.0, max(0.0, (cosine - COSINE_FLOOR) / (COSINE_FULL - COSINE_FLOOR)))


class _Terms:
    """The query's terms, weighed by their rarity among the candidate memories, and which of
    them each passage holds."""

    def __init__(self, query: str, folded: Sequence[str]) -> None:
        terms = text_terms(query)
        n = len(folded)
        self.whole = {t: not any(is_cjk(c) for c in t) for t in terms}
        held = {t: sum(1 for text in folded if _holds(text, t, self.whole[t])) for t in terms}
        # A term in most of several candidates says little about any of them (the, what, my):
        # it is left out of the match, which also keeps the matching to the few rarer words.
        self.weight = {
            t: math.log(1.0 + n / (1.0 + count))
            for t, count in held.items()
            if n < _FEW or count <= n / 2
        }
        self.total = sum(self.weight.values())
        self.whole = {t: self.whole[t] for t in self.weight}

    def found(self, folded: str) -> list[tuple[int, str]]:
        """Where the terms occur in ``folded`` text: (offset, term). A CJK bigram matches
        anywhere (CJK text has no spaces to mark its words), another term whole words only
        (``str.find`` then a look at both ends: far cheaper than a regular expression)."""
        places: list[tuple[int, str]] = []
        for term, whole in self.whole.items():
            at = folded.find(term)
            while at >= 0:
                if not whole or _whole_at(folded, at, at + len(term)):
                    places.append((at, term))
                at = folded.find(term, at + 1)
        return places

    def coverage(self, text: str, folded: str, spans: np.ndarray) -> np.ndarray:
        """Per passage (``spans``: rows of start, end, source): the weight of the terms it
        holds over the weight of all (0 when no term is rare enough to count)."""
        covered = np.zeros(len(spans), dtype=np.float64)
        if not self.total:
            return covered
        held: dict[int, set[str]] = {}
        if len(folded) == len(text):  # folding kept every offset: one pass over the text
            starts = spans[:, 0].tolist()
            for at, term in self.found(folded):
                i = bisect.bisect_right(starts, at) - 1
                if i >= 0 and at + len(term) <= spans[i, 1]:
                    held.setdefault(i, set()).add(term)
        else:
            for i, (start, end) in enumerate(spans[:, :2].tolist()):
                held[i] = {term for _, term in self.found(_folded(text[start:end]))}
        for i, terms in held.items():
            covered[i] = sum(self.weight[t] for t in terms) / self.total
        return covered


@dataclass(frozen=True)
class ScoredPassages:
    """One candidate's passages and their scores (in [0, 1], one per passage, in order)."""

    spans: np.ndarray
    scores: np.ndarray

    @property
    def best(self) -> float | None:
        """The best passage's score (``None``: the memory has no passage)."""
        return float(self.scores.max()) if len(self.scores) else None

    def hits(self) -> tuple[PassageHit, ...]:
        """The passages as :class:`PassageHit`\\ s, best first (ties: earlier first)."""
        order = np.lexsort((np.arange(len(self.scores)), -self.scores)).tolist()
        rows, scores = self.spans.tolist(), self.scores.tolist()
        return tuple(
            PassageHit(rows[i][0], rows[i][1], scores[i], None if rows[i][2] < 0 else rows[i][2])
            for i in order
        )


def score_passages(
    query: str,
    vector: np.ndarray | None,
    candidates: Sequence[PassageSet],
    *,
    lexical_weight: float | None = None,
) -> dict[int, ScoredPassages]:
    """Each candidate's passages scored for ``query`` (``vector``: its unit vector, ``None`` for
    a text-only search), keyed by rowid. A passage's score is
    ``max((1 - w) * calibrated(cosine) + w * coverage, coverage ** 2)`` with ``w`` the
    ``lexical_weight`` (:data:`LEXICAL_WEIGHT` when ``None``) and the cosine the passage's own
    (else its memory's); without any vector, the coverage alone. The square lets a passage
    holding all of the query's rarer words (a name searched for) match whatever a small
    model's vector says, while a partial match (half the words: 0.25) does not outweigh
    meaning. Scores lie in [0, 1] and compare across the candidates of one query."""
    weight = LEXICAL_WEIGHT if lexical_weight is None else lexical_weight
    folded = [_folded(c.text) for c in candidates]
    terms = _Terms(query, folded)
    bounds = np.cumsum([0, *(len(c.spans) for c in candidates)]).tolist()
    words = np.zeros(bounds[-1], dtype=np.float64)
    for i, (c, text) in enumerate(zip(candidates, folded, strict=True)):
        if terms.total and any(t in text for t in terms.weight):
            words[bounds[i] : bounds[i + 1]] = terms.coverage(c.text, text, c.spans)
    scores = words
    if vector is not None:
        # One matrix product per width for every passage vector of every candidate (NaN: no
        # vector, and no memory vector either; then the words alone count). A row of two
        # vectors (the passage alone, and read with its neighbours) counts the better match.
        cosines = np.full(bounds[-1], np.nan)
        for reads in (1, 2):
            own = [
                i
                for i, c in enumerate(candidates)
                if c.vectors is not None and c.vectors.shape[1:] == (reads * len(vector),)
            ]
            if own:
                rows = np.concatenate([candidates[i].vectors for i in own])
                stacked = (rows.reshape(len(rows), reads, len(vector)) @ vector).max(axis=1)
                at = np.concatenate([np.arange(bounds[i], bounds[i + 1]) for i in own])
                cosines[at] = stacked
        # How many passages of each candidate have a cosine: counted once for all (a look
        # per candidate cost a few numpy calls each, for ~100 candidates a search).
        had = np.concatenate(([0], np.cumsum(~np.isnan(cosines)))).tolist()
        for i, c in enumerate(candidates):
            if c.window_cosine is not None and had[bounds[i + 1]] == had[bounds[i]]:
                cosines[bounds[i] : bounds[i + 1]] = c.window_cosine
        part = np.clip((cosines - COSINE_FLOOR) / (COSINE_FULL - COSINE_FLOOR), 0.0, 1.0)
        blend = np.maximum((1.0 - weight) * part + weight * words, words**2)
        scores = np.where(np.isnan(cosines), words, blend)
    scores = np.clip(scores, 0.0, 1.0)
    return {
        c.rowid: ScoredPassages(c.spans, scores[bounds[i] : bounds[i + 1]])
        for i, c in enumerate(candidates)
    }


def rank_by_passages(
    query: str,
    vector: np.ndarray | None,
    sets: Sequence[PassageSet],
    lists: tuple[Sequence[Candidate], Mapping[int, Sequence[int]], Mapping[int, int]],
    ranking: tuple[datetime, float, float],
    min_score: float | None,
    limit: int | None = None,
    heat: tuple[Mapping[int, float], float] | None = None,
) -> tuple[list[tuple[int, ScoreParts]], dict[int, ScoredPassages]]:
    """What both stores do once they have read their candidates: score the passages
    (``query`` empty in vector mode: words then do not count), rank the candidates by their
    best passage (``lists``: the candidates, their ranks in each list and in the full-text
    list; ``ranking``: now, gamma and the importance weight, see
    :func:`~memreader.stores.scoring.rank_candidates`; ``heat``: the used candidates' heat and
    its weight), and drop those whose relevance is below ``min_score``, then keep the first
    ``limit``. Returns the ranked candidates and their scored passages."""
    passages = score_passages(query, vector, sets, lexical_weight=None if query else 0.0)
    matches = _best_of_each(passages)
    scored = rank_candidates(*lists, *ranking, matches, heat, min_relevance=min_score, limit=limit)
    return scored, passages


def _best_of_each(passages: Mapping[int, ScoredPassages]) -> dict[int, float | None]:
    """Each candidate's :attr:`ScoredPassages.best`, with one numpy call for all of them."""
    found = list(passages.items())
    lengths = [len(scored.scores) for _, scored in found]
    best: dict[int, float | None] = {rowid: None for rowid, _ in found}
    if not any(lengths):
        return best
    nonempty = [i for i, n in enumerate(lengths) if n]
    # Each segment of the concatenation runs to the next nonempty one: exactly its own scores.
    tops = np.maximum.reduceat(
        np.concatenate([found[i][1].scores for i in nonempty]),
        np.cumsum([0, *(lengths[i] for i in nonempty[:-1])]),
    ).tolist()
    for i, top in zip(nonempty, tops, strict=True):
        best[found[i][0]] = float(top)
    return best
