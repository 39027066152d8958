"""How every store ranks: the vector and full-text lists pick the candidates (fused by
reciprocal rank), each candidate's passages are scored (:mod:`memreader.stores.passages.scoring`),
and a memory's relevance is its best passage's score, an absolute number in [0, 1] (0: nothing
of the query in it, 1: a near paraphrase); then a bounded importance factor and decay, so the
final score lies in [0, 1] too. Also a full-text query that cannot be a syntax error.

>>> round(rrf_score([1]), 5), round(rrf_score([1, 3]), 5)
(0.01639, 0.03227)
>>> decay(0.0, 0.99), round(decay(10.0, 0.99), 4)
(1.0, 0.9044)
>>> final_score(1.0, 1.0, 1.0, 0.2), round(final_score(0.5, 0.5, 0.9, 0.2), 4)
(1.0, 0.4091)
>>> fts_query('what about "Porto"?!'), fts_query("?!")
('"what" OR "about" OR "porto"', None)
>>> affordable_words(["the", "porto", "moved"], {"the": 9000, "porto": 3, "moved": 40}, 100)
['porto', 'moved']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np

from memreader.errors import ConfigError

# The full-text helpers live in text_match (re-exported here for older imports).
from memreader.stores.text_match import affordable_words, fts_match, fts_query, fts_words

__all__ = [
    "DEFAULT_GAMMA",
    "DEFAULT_IMPORTANCE_WEIGHT",
    "NEUTRAL_IMPORTANCE",
    "RANK_WEIGHT",
    "RECOMMENDED_MIN_SCORE",
    "RRF_K",
    "Candidate",
    "ScoreParts",
    "affordable_words",
    "age_days",
    "check_importance_weight",
    "decay",
    "final_score",
    "fts_match",
    "fts_query",
    "fts_words",
    "heated",
    "importance_of",
    "rank_candidates",
    "rrf_score",
]

#: The constant of reciprocal rank fusion (Cormack et al., 2009): 60 damps the head of each
#: list so that agreement between the lists outweighs one list's first place.
RRF_K = 60

#: How much importance moves a score, and (:data:`DEFAULT_GAMMA`) decay: measured
#: (``benchmarks/store.py --sweep``; RESULTS.md "Retrieval: MemoryBank"), each MemoryBank
#: day's first user message must find its own day among its owner's 149 memories, with fast
#: mode's heuristic importance (0.3-0.95) and days 1 to 10 apart. Reciprocal rank fusion is
#: flat: rank 1 and rank 10 of one list differ by ~13%, adjacent ranks by ~1.6%, so a factor
#: that moves a score by more than a few percent reorders the list by itself. The first
#: formula, ``fused * (0.5 + importance) * 0.99 ** days``, let importance (x0.8-1.45) and the
#: date (1% a day) decide: hybrid recall@5 0.75 against 0.99 for the cosine alone. Swept
#: over importance_weight {0, 0.05, 0.1, 0.2, 0.5} x gamma {1, 0.999, 0.995, 0.99}: the best
#: is recall@5 1.0 / recall@1 0.946 (no importance, no decay); 0.05 with gamma 0.999 keeps
#: recall@5 1.0 and recall@1 0.940, while 0.1 already costs recall@1 (0.852), 0.2 and 0.5
#: recall@5 too, and gamma 0.995 / 0.99 cost recall@1 (0.84 / 0.64). So the defaults are the
#: largest weights that cost nothing measurable here yet still decide near-ties: importance
#: moves a score by at most +-2.5%, more than the gap between adjacent ranks of one list (a
#: near-tie) and far less than the ~13% between rank 1 and rank 10. This check cannot show a
#: gain from importance (fast mode's heuristic knows nothing of the query's day), only a cost.
DEFAULT_IMPORTANCE_WEIGHT = 0.05

#: The daily decay factor: decay is ``gamma ** days`` since the memory's time (when the fact
#: held, else when it was recorded), per day rather than per hour, because memories here come
#: from chats and documents that span months. 0.999 (measured with
#: :data:`DEFAULT_IMPORTANCE_WEIGHT`, see there) costs 1% over 10 days and 30% over a year
#: (half-life ~693 days): recency decides between near-equal hits, not between a close and a
#: far one. Configurable per store (``gamma=``).
DEFAULT_GAMMA = 0.999

#: The ``min_score`` the README recommends: a hit less relevant than this matches the query
#: about as well as a memory about something else does. Measured with the bundled MiniLM
#: (``benchmarks/passage_scores.py``): over 40 questions about facts planted in real chats, no
#: answering hit found scored below 0.08 (at 0.1 one of 31 was cut; at 0.2, three), while of 24
#: questions about nothing stored, 8 kept no hit at 0.08 and the others about 6 of their 10
#: (RESULTS.md, "issue 40": words weigh more in a passage's score than when this was first
#: measured, 14 with no hit then). Search does not cut by default (``min_score=None``): a caller
#: asking for the 10 best gets 10 when there are 10; the scale is the model's, so another
#: embedder needs its own measurement.
RECOMMENDED_MIN_SCORE = 0.08

#: How much the candidate's places in the vector and full-text lists count in its relevance,
#: beside its best passage: ``relevance = (1 - r) * passage + r * fused / best_fused`` where
#: ``best_fused`` is first place in both lists (2 / (RRF_K + 1)). Small, so that relevance
#: stays an absolute match (an unrelated query's first hit gains at most ``r``), yet it breaks
#: the ties of passages that match equally (a text search whose words every candidate holds
#: is then ranked by bm25, as before passages were scored).
RANK_WEIGHT = 0.02

#: The importance of a memory nothing has scored: the middle, so it neither helps nor hurts.
NEUTRAL_IMPORTANCE = 0.5

#: The largest importance weight: at 2 the least important memory would score zero.
MAX_IMPORTANCE_WEIGHT = 2.0

#: One search candidate as a store reads it: rowid, stored importance (``None``: unscored),
#: the memory's time, and the cosine with the query (``None`` without vectors).
Candidate = tuple[int, float | None, datetime, float | None]


@dataclass(frozen=True)
class ScoreParts:
    """Why a hit ranked where it did: ``final`` (in [0, 1]) is what hits are sorted by.

    ``similarity`` is the cosine of the query's and the whole memory's vectors (``None``
    without vectors), ``text_rank`` its rank in the full-text search (1 = best; ``None`` when
    the text search did not find it), ``fused`` the rank fusion of both lists
    (:func:`rrf_score`: what picked the candidate, and breaks ties), ``relevance`` how well the
    memory matches the query, in [0, 1] and comparable across queries: mostly its best
    passage's score (:mod:`memreader.stores.passages.scoring`: the passage's vector match,
    calibrated so that an unrelated text scores near 0, and the share of the query's rarer
    words it holds), and :data:`RANK_WEIGHT` of its places in the two lists,
    ``importance`` the memory's (0..1, a neutral 0.5 when unscored) and ``decay``
    ``gamma ** age_in_days``. ``final = relevance * importance_factor * decay`` where the
    importance factor is ``(1 + w * (importance - 0.5)) / (1 + w / 2)`` with ``w`` the store's
    ``importance_weight`` (see :func:`final_score`). ``passage`` is the best passage's score
    (``None`` when the memory had no passage to score; then relevance is 0). ``heat`` is how
    much the memory was used lately, in [0, 1] (:func:`memreader.stores.usage.heat`; 0 when
    never, or when the search weighs heat at 0, when it is not read): ``final`` is then
    multiplied by ``1 + heat_weight * heat``, capped at 1 (see :func:`heated`).
    """

    final: float
    fused: float
    similarity: float | None
    text_rank: int | None
    importance: float
    decay: float
    relevance: float
    passage: float | None = None
    heat: float = 0.0


_SECONDS_PER_DAY = 86_400.0


def rrf_score(ranks: Iterable[int]) -> float:
    """The fused score of a memory found at ``ranks`` (1 = best) in the lists that found it."""
    return sum(1.0 / (RRF_K + rank) for rank in ranks)


def age_days(when: datetime, now: datetime) -> float:
    """Days from ``when`` to ``now``, never negative (a fact dated in the future is new)."""
    return max(0.0, (now - when).total_seconds() / _SECONDS_PER_DAY)


def decay(days: float, gamma: float) -> float:
    """``gamma ** days``."""
    return float(gamma**days)


def importance_of(importance: float | None) -> float:
    """A memory's importance for scoring: its own, or :data:`NEUTRAL_IMPORTANCE`."""
    return NEUTRAL_IMPORTANCE if importance is None else importance


def final_score(
    relevance: float, importance: float, decay_factor: float, importance_weight: float
) -> float:
    """``relevance * (1 + w * (importance - 0.5)) / (1 + w / 2) * decay`` (``w``: the
    importance weight), in [0, 1] when its inputs are: the importance factor lies in
    ``[(1 - w/2) / (1 + w/2), 1]`` (0.95 to 1 at the default ``w = 0.05``, 0.90 to 1 at 0.1),
    never zero, so importance reorders near-ties, not the list; the most important memory
    keeps its relevance. (Dividing by ``1 + w/2`` rather than capping at 1 keeps every order
    the measured weights gave.)"""
    factor = 1.0 + importance_weight * (importance - NEUTRAL_IMPORTANCE)
    score = relevance * factor / (1.0 + importance_weight / 2.0) * decay_factor
    return min(1.0, max(0.0, score))


def heated(score: float, heat: float, heat_weight: float) -> float:
    """``score * (1 + heat_weight * heat)``, capped at 1: use lifts a relevant memory in
    proportion to its relevance (an unrelated memory used often stays unrelated), and a
    memory never used (heat 0) keeps its score exactly.

    >>> heated(0.5, 0.0, 0.2), heated(0.5, 1.0, 0.2), heated(0.9, 1.0, 0.2)
    (0.5, 0.6, 1.0)
    """
    return min(1.0, score * (1.0 + heat_weight * heat))


def check_importance_weight(value: Any) -> float:
    """``value`` as an importance weight: a number in ``[0, 2)``.

    Raises:
        ConfigError: it is not (the message names the option).
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0.0 <= value < MAX_IMPORTANCE_WEIGHT
    ):
        raise ConfigError(
            f"store option importance_weight must be a number in [0, {MAX_IMPORTANCE_WEIGHT}), "
            f"got {value!r}"
        )
    return float(value)


def _fused(ranks: Sequence[int]) -> float:
    """The reciprocal-rank fusion of ``ranks`` (a candidate's rank in each list that found
    it), added in order from 0 as :func:`rrf_score` does; the usual one or two ranks spelled
    out (adding to 0 first changes no float)."""
    if len(ranks) == 1:
        return 1.0 / (RRF_K + ranks[0])
    if len(ranks) == 2:
        return 1.0 / (RRF_K + ranks[0]) + 1.0 / (RRF_K + ranks[1])
    fused = 0.0
    for rank in ranks:
        fused += 1.0 / (RRF_K + rank)
    return fused


def rank_candidates(
    candidates: Iterable[Candidate],
    ranks: Mapping[int, Sequence[int]],
    text_ranks: Mapping[int, int],
    now: datetime,
    gamma: float,
    importance_weight: float,
    matches: Mapping[int, float | None],
    heat: tuple[Mapping[int, float], float] | None = None,
    *,
    min_relevance: float | None = None,
    limit: int | None = None,
) -> list[tuple[int, ScoreParts]]:
    """Score ``candidates`` (``ranks``: each one's ranks in the lists that found it,
    ``text_ranks``: in the full-text list, ``matches``: each one's best passage score, its
    relevance; ``heat``: each used one's heat and the weight of heat, see :func:`heated`) and
    sort them best first (ties: the higher fused score, then the lower rowid); those less
    relevant than ``min_relevance`` left out, the first ``limit`` kept.

    >>> from datetime import datetime, timezone
    >>> t = datetime(2026, 1, 1, tzinfo=timezone.utc)
    >>> ranked = rank_candidates([(1, None, t, 0.2), (2, None, t, 0.5)], {1: [1, 1], 2: [2]},
    ...                          {1: 1}, t, 0.999, 0.0, {1: 0.3, 2: 0.8})
    >>> [(rowid, round(parts.final, 3)) for rowid, parts in ranked]
    [(2, 0.794), (1, 0.314)]
    """
    heats, heat_weight = heat if heat is not None else ({}, 0.0)
    chosen = list(candidates)
    if not chosen:
        return []
    # One numpy operation per step for all ~100 candidates, not a loop of float operations
    # per candidate (issue 42): each step is elementwise, in the order the scalar formulas
    # (importance_of, rrf_score, final_score, heated) write it, so every float is the same
    # bit for bit; min/max as fmin/fmax (what Python's min/max return, NaN included). Only
    # the decay stays a Python power per candidate (numpy's SIMD power may differ in the
    # last bit from the C library's).
    rowids = [c[0] for c in chosen]
    weights = [NEUTRAL_IMPORTANCE if c[1] is None else c[1] for c in chosen]
    factors = [
        float(gamma ** max(0.0, (now - c[2]).total_seconds() / _SECONDS_PER_DAY)) for c in chosen
    ]
    passages = [matches.get(rowid) for rowid in rowids]
    used = [heats.get(rowid, 0.0) for rowid in rowids]
    fused = np.array([_fused(ranks[rowid]) for rowid in rowids], dtype=np.float64)
    read = np.array([np.nan if p is None else p for p in passages], dtype=np.float64)
    match = np.where(np.isnan(read), 0.0, np.fmin(1.0, np.fmax(0.0, read)))
    places = np.fmin(1.0, fused * (RRF_K + 1) / 2.0)
    relevance = (1.0 - RANK_WEIGHT) * match + RANK_WEIGHT * places
    base = relevance * (1.0 + importance_weight * (np.array(weights) - NEUTRAL_IMPORTANCE))
    lift = 1.0 + importance_weight / 2.0
    final = np.fmin(1.0, np.fmax(0.0, base / lift * np.array(factors)))
    final = np.fmin(1.0, final * (1.0 + heat_weight * np.array(used, dtype=np.float64)))
    # Best first; ties: the higher fused score, then the lower rowid (rowids are unique).
    order = np.lexsort((np.array(rowids), -fused, -final)).tolist()
    if min_relevance is not None:
        order = [i for i in order if relevance[i] >= min_relevance]
    finals, fusions, relevances = final.tolist(), fused.tolist(), relevance.tolist()
    return [
        (
            rowids[i],
            ScoreParts(
                final=finals[i],
                fused=fusions[i],
                similarity=chosen[i][3],
                text_rank=text_ranks.get(rowids[i]),
                importance=weights[i],
                decay=factors[i],
                relevance=relevances[i],
                passage=passages[i],
                heat=used[i],
            ),
        )
        for i in order[:limit]
    ]
