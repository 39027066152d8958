"""How a search scores the passages of its candidates (both stores), each in [0, 1]: a
memory's match is its best passage's, and ``context()`` packs passages by these scores.

A window of ~780 tokens holds a dozen messages; its one vector (read by a model that sees the
first 256 tokens) is the blur of them all, so a question about one message ranks the window by
the blur. Scoring the window's messages one by one finds the message, and says which it is.

A passage's score blends two matches and adds three hints:

- **meaning**: the cosine of its stored vectors with the query's, calibrated onto [0, 1]
  (:func:`calibrated`); a chat message has two (``Name: content`` alone, and read with the
  messages next to it: :mod:`memreader.stores.passages.rows`), blended
  :data:`OWN_VECTOR` : ``1 - OWN_VECTOR``; a passage without vectors takes its memory's
  cosine (a memory written before passages were stored);
- **words**: BM25 over the candidates' passages, by their ranking terms
  (:func:`~memreader.retrieval.rank_terms.rank_terms`: stemmed, without English function
  words), a chat message's words counted alone and, at :data:`NEIGHBOUR_WORDS`, with its
  neighbours' (the answer after "Which gym did you pick?" holds no word of a question about the
  gym); scaled so that the best passage's is the share of the query's term weight (by rarity)
  it holds: a query that shares one common word with the store scores low, as it should;
- **who**: when the query names exactly one speaker of the candidates' messages (a capitalised
  word that is a speaker's first name: "What did Melanie paint?"), that speaker's messages gain
  :data:`SPEAKER_WEIGHT`; the speakers' names are not searched as words (the other speaker's
  "Wow, Melanie!" holds the name, not the answer);
- **when**: when the query names a date (:func:`~memreader.retrieval.query_dates.query_period`:
  "on 4 December 2023", "in May 2023"), the messages said in its period gain
  :data:`DATE_WEIGHT` (a chat message says "yesterday"; its date is only its time);
- **where**: then each passage gains :data:`SESSION_WEIGHT` of the best score in its session
  (a topic is told over several messages: the session where one matches well is likelier to
  hold the others).

``match = max((1 - w) * meaning + w * words, words ** 2)`` with ``w`` :data:`LEXICAL_WEIGHT`
(words alone without vectors): the square lets a passage holding all of the query's rarer
words (a name searched for) match whatever a small model's vector says, while a partial match
(half the words: 0.25) does not outweigh meaning. ``hinted = (match + who + when) / (1 + the
weights of the hints that apply)``, and ``score = (hinted + SESSION_WEIGHT * best hinted of
the session) / (1 + SESSION_WEIGHT)``: every score lies in [0, 1].

Measured on real conversations (LoCoMo conversations 4-10, 1,153 questions;
benchmarks/RESULTS.md, "issue 40"): the share of questions whose evidence is among the ten
best single messages, 0.626 for BM25 and MiniLM fused by reciprocal rank (the issue's simple
baseline), 0.719 stemmed words without function words blended with meaning, 0.833 with the
neighbours' words and vector and the speaker hint, 0.849 with the date hint, 0.863 with the
session's.

>>> text = "user: I moved to Porto.\\nuser: Ana moved to Lisbon."
>>> scored = score_passages(
...     "where did Ana move?", None,
...     [PassageSet(1, text, span_rows([Passage(0, 22, 0), Passage(23, 49, 1)]), None, None)],
... )
>>> [(p.start, p.end, round(p.score, 2)) for p in scored[1].hits()]
[(23, 49, 1.0), (0, 22, 0.52)]
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memreader.retrieval.passages import Passage, PassageHit
from memreader.retrieval.query_dates import DatePeriod, query_period
from memreader.retrieval.rank_terms import rank_terms
from memreader.stores.passages.words import (
    PassageWords,
    WordPool,
    named_speakers,
    passage_words,
    word_match,
)
from memreader.stores.scoring import Candidate, ScoreParts, rank_candidates

__all__ = [
    "COSINE_FLOOR",
    "COSINE_FULL",
    "DATE_WEIGHT",
    "LEXICAL_WEIGHT",
    "OWN_VECTOR",
    "SESSION_WEIGHT",
    "SPEAKER_WEIGHT",
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
#: 0.1-0.47 (median 0.19) with a question about something never said. The map keeps order;
#: it makes the number readable: 0 unrelated, 1 a near paraphrase.
COSINE_FLOOR = 0.15
COSINE_FULL = 0.75

#: How much the words count against the meaning: ``(1 - w) * meaning + w * words``. Measured
#: on LoCoMo conversations 4-10 (the ten best messages, the rest as kept; RESULTS.md, "issue
#: 40"): 0.4 0.845, 0.5 0.863, 0.6 0.866, 0.7 0.871, 0.8 0.864. Real questions reuse the words
#: of what they ask about; 0.5 keeps a paraphrase (no word in common) as strong as a word match.
LEXICAL_WEIGHT = 0.5

#: A chat message's meaning: this share of its own vector's cosine, the rest of the cosine of
#: it read with its neighbours (LoCoMo 4-10, ten best messages: 0.0 0.828, 0.3 0.833, 0.5 0.820
#: before the date and session hints; with them 0.3 0.863, 0.5 0.851).
OWN_VECTOR = 0.3

#: What a message of the one speaker a query names gains (LoCoMo 4-10, ten best messages, the
#: rest as kept: 0 0.832, 0.2 0.863; 0.1 / 0.2 / 0.3 before the date and session hints: 0.821
#: / 0.833 / 0.833).
SPEAKER_WEIGHT = 0.2

#: What a message said in the period a query names gains (LoCoMo 4-10, ten best messages, the
#: rest as kept: 0 0.840, 0.2 0.863; 0.1 / 0.2 / 0.3 before the session hint: 0.844 / 0.849 /
#: 0.851; 167 of 1,153 questions name a date).
DATE_WEIGHT = 0.2

#: What a passage gains from the best passage of its session (of its memory, when it has no
#: session): a conversation's topic is told over several messages, and a session where one
#: message matches well is likelier to hold the others (LoCoMo 4-10, ten best messages: 0
#: 0.843, 0.3 0.858, 0.5 0.863; blocks of 500 / 2,000 tokens 0.847 / 0.949 -> 0.868 / 0.958 at
#: 0.5; grouping by fixed runs of 15 messages instead of sessions gave 0.853).
SESSION_WEIGHT = 0.5


# Not frozen: a search builds one per candidate (~100) and a frozen dataclass's constructor
# costs five times a plain one's (2.3 vs 0.4 us here: issue 42). Nothing changes one once made.
@dataclass(slots=True)
class PassageSet:
    """One candidate memory as passage scoring reads it: its rowid, text and passages (exact
    spans of the text, as :func:`span_rows`), the passages' vectors (one row per passage of one
    vector or two side by side, norm at most 1, see :mod:`~memreader.stores.passages.rows`;
    ``None`` when they have none stored), the memory's own cosine with the query (``None``
    without vectors), its :class:`PassageWords` (``None``: computed when scored; a store
    keeps them with the rest, so a repeated search does not cut words again) and its
    session."""

    rowid: int
    text: str
    spans: np.ndarray
    vectors: np.ndarray | None
    window_cosine: float | None
    words: PassageWords | None = field(default=None, compare=False)
    #: The memory's session (``None``: its passages are grouped by memory).
    session: str | None = None


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


# Not frozen, as PassageSet: one per candidate of every search.
@dataclass(slots=True)
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
        rows, scores = self.spans.tolist(), self.scores.tolist()
        # A stable sort of the negated scores: ties keep their order (earlier first); one
        # passage (a single message's memory) needs none.
        order = [0] if len(scores) == 1 else np.argsort(-self.scores, kind="stable").tolist()
        return tuple(
            PassageHit(rows[i][0], rows[i][1], scores[i], None if rows[i][2] < 0 else rows[i][2])
            for i in order
        )


def _hints(query: str, pool: WordPool, period: DatePeriod | None) -> tuple[np.ndarray, float]:
    """What the speaker and date hints add to each passage, and the most they add."""
    added = np.zeros(len(pool.counts), dtype=np.float64)
    most = 0.0
    named = named_speakers(query, pool.speakers)
    if len(named) == 1:
        said = np.array([s == named[0] for s in pool.speakers], dtype=np.float64)
        added += SPEAKER_WEIGHT * said
        most += SPEAKER_WEIGHT
    if period is not None:
        then = np.array([t is not None and period.holds(t) for t in pool.times], dtype=np.float64)
        if 0 < then.sum() < len(then):  # a period holding all or none tells nothing apart
            added += DATE_WEIGHT * then
            most += DATE_WEIGHT
    return added, most


def _positions(edges: np.ndarray, members: Sequence[int]) -> np.ndarray:
    """The pool indexes of the passages of candidates ``members`` (``edges``: the pool's
    bounds), in that order: one numpy call for all of them rather than a range each."""
    chosen = np.asarray(members, dtype=np.int64)
    starts, sizes = edges[chosen], edges[chosen + 1] - edges[chosen]
    before = np.cumsum(sizes) - sizes  # where each member's run begins in the answer
    found: np.ndarray = np.arange(int(sizes.sum()), dtype=np.int64) + np.repeat(
        starts - before, sizes
    )
    return found


def _meaning(vector: np.ndarray, candidates: Sequence[PassageSet], bounds: list[int]) -> np.ndarray:
    """Each passage's calibrated cosine with the query (NaN: no vector, nor its memory's)."""
    edges = np.asarray(bounds, dtype=np.int64)
    cosines = np.full(bounds[-1], np.nan)
    # How many vectors each candidate's passage rows hold side by side (0: none it can use).
    dim = len(vector)
    widths = [
        c.vectors.shape[1] // dim
        if dim and c.vectors is not None and c.vectors.ndim == 2 and c.vectors.shape[1] % dim == 0
        else 0
        for c in candidates
    ]
    for width, blend in ((1, np.array([1.0])), (2, np.array([OWN_VECTOR, 1 - OWN_VECTOR]))):
        own = [i for i, w in enumerate(widths) if w == width]
        if own:
            rows = np.concatenate([candidates[i].vectors for i in own])
            read = (rows.reshape(len(rows), width, len(vector)) @ vector) @ blend
            if len(own) == len(candidates):  # the usual case: every passage, in order
                cosines[:] = read
            else:
                cosines[_positions(edges, own)] = read
    if not np.isnan(cosines).any():  # no passage without a cosine: no memory's to take
        return np.clip((cosines - COSINE_FLOOR) / (COSINE_FULL - COSINE_FLOOR), 0.0, 1.0)
    # A candidate none of whose passages has a vector takes its memory's cosine.
    counted = np.concatenate([[0], np.cumsum(~np.isnan(cosines))])
    held = (counted[edges[1:]] - counted[edges[:-1]]).tolist()
    bare = [i for i, c in enumerate(candidates) if c.window_cosine is not None and not held[i]]
    if bare:
        sizes = edges[1:] - edges[:-1]
        window = np.array([candidates[i].window_cosine for i in bare], dtype=np.float64)
        cosines[_positions(edges, bare)] = np.repeat(window, sizes[bare])
    return np.clip((cosines - COSINE_FLOOR) / (COSINE_FULL - COSINE_FLOOR), 0.0, 1.0)


def _with_sessions(
    scores: np.ndarray, candidates: Sequence[PassageSet], bounds: list[int]
) -> np.ndarray:
    """``scores`` with each passage's session's best score added at :data:`SESSION_WEIGHT`
    (a candidate without a session is its own), scaled back onto [0, 1]."""
    if not len(scores):
        return scores
    groups: dict[object, int] = {}
    group_of = [
        groups.setdefault(c.session if c.session is not None else ("memory", c.rowid), len(groups))
        for c in candidates
    ]
    # Each passage's group, then each group's best in one pass (numpy, not a loop per group).
    passage_group = np.repeat(np.asarray(group_of, dtype=np.int64), np.diff(bounds))
    tops = np.full(len(groups), -np.inf)
    np.maximum.at(tops, passage_group, scores)
    return (scores + SESSION_WEIGHT * tops[passage_group]) / (1.0 + SESSION_WEIGHT)


def score_passages(
    query: str,
    vector: np.ndarray | None,
    candidates: Sequence[PassageSet],
    *,
    lexical_weight: float | None = None,
) -> dict[int, ScoredPassages]:
    """Each candidate's passages scored for ``query`` (``vector``: its unit vector, ``None`` for
    a text-only search), keyed by rowid: see the module (``lexical_weight``: the words' weight,
    :data:`LEXICAL_WEIGHT` when ``None``). Scores lie in [0, 1] and compare across the
    candidates of one query."""
    scores, bounds = _pooled_scores(query, vector, candidates, lexical_weight)
    return {
        c.rowid: ScoredPassages(c.spans, scores[bounds[i] : bounds[i + 1]])
        for i, c in enumerate(candidates)
    }


def _pooled_scores(
    query: str,
    vector: np.ndarray | None,
    candidates: Sequence[PassageSet],
    lexical_weight: float | None,
) -> tuple[np.ndarray, list[int]]:
    """:func:`score_passages`'s scores, every candidate's passages in one array, and where
    each candidate's begin (one more bound at the end)."""
    weight = LEXICAL_WEIGHT if lexical_weight is None else lexical_weight
    pool = WordPool.of([c.words or passage_words(c.text, c.spans) for c in candidates])
    named = set(named_speakers(query, pool.speakers))
    names = {t for name in named for t in rank_terms(name)}
    terms = [t for t in dict.fromkeys(rank_terms(query)) if t not in names]
    scores = word_match(terms, pool)
    if vector is not None and pool.bounds[-1]:
        meaning = _meaning(vector, candidates, pool.bounds)
        blend = np.maximum((1.0 - weight) * meaning + weight * scores, scores**2)
        scores = np.where(np.isnan(meaning), scores, blend)
    added, most = _hints(query, pool, query_period(query))
    scores = _with_sessions((scores + added) / (1.0 + most), candidates, pool.bounds)
    return np.clip(scores, 0.0, 1.0), pool.bounds


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
    ``limit``. Returns the ranked candidates and the scored passages of those kept."""
    scores, bounds = _pooled_scores(query, vector, sets, None if query else 0.0)
    matches = _best_of_each(sets, scores, bounds)
    scored = rank_candidates(*lists, *ranking, matches, heat, min_relevance=min_score, limit=limit)
    # The scored passages of the hits kept only: a search ranks ~100 candidates and answers
    # ~10 (issue 42).
    at = {c.rowid: i for i, c in enumerate(sets)}
    passages = {
        rowid: ScoredPassages(sets[i].spans, scores[bounds[i] : bounds[i + 1]])
        for rowid, _ in scored
        if (i := at.get(rowid)) is not None
    }
    return scored, passages


def _best_of_each(
    sets: Sequence[PassageSet], scores: np.ndarray, bounds: list[int]
) -> dict[int, float | None]:
    """Each candidate's best passage score (:attr:`ScoredPassages.best`; ``None``: it has no
    passage), with one numpy call for all of them."""
    best: dict[int, float | None] = {c.rowid: None for c in sets}
    nonempty = [i for i in range(len(sets)) if bounds[i + 1] > bounds[i]]
    if not nonempty:
        return best
    # Each segment runs to the next nonempty one's start: exactly its own scores (the
    # candidates between hold none).
    tops = np.maximum.reduceat(scores, [bounds[i] for i in nonempty]).tolist()
    for i, top in zip(nonempty, tops, strict=True):
        best[sets[i].rowid] = float(top)
    return best
