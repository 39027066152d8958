"""How a search scores the passages of its candidates (both stores), each in [0, 1]: a
memory's match is its best passage's, and ``context()`` packs passages by these scores.

A window of ~780 tokens holds a dozen messages; its one vector (read by a model that sees the
first 256 tokens) is the blur of them all, so a question about one message ranks the window by
the blur. Scoring the window's messages one by one finds the message, and says which it is.

A passage's score blends two matches and adds two hints:

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
  :data:`DATE_WEIGHT` (a chat message says "yesterday"; its date is only its time).

``score = (max((1 - w) * meaning + w * words, words ** 2) + hints) / (1 + the hints that
apply)``, with ``w`` :data:`LEXICAL_WEIGHT` (words alone without vectors). The square lets a
passage holding all of the query's rarer words (a name searched for) match whatever a small
model's vector says, while a partial match (half the words: 0.25) does not outweigh meaning
(on LoCoMo it changes nothing measurable: ten best 0.842 -> 0.843). Measured on real conversations (LoCoMo
conversations 4-10, 1,153 questions; benchmarks/RESULTS.md, "issue 40"): the share of
questions whose evidence is among the ten best single messages, 0.626 for BM25 and MiniLM
fused by reciprocal rank (the issue's simple baseline), 0.719 stemmed words without function
words blended with meaning, 0.833 with the neighbours' words and vector and the speaker hint,
0.849 with the date hint.

>>> text = "user: I moved to Porto.\\nuser: Ana moved to Lisbon."
>>> scored = score_passages(
...     "where did Ana move?", None,
...     [PassageSet(1, text, span_rows([Passage(0, 22, 0), Passage(23, 49, 1)]), None, None)],
... )
>>> [(p.start, p.end, round(p.score, 2)) for p in scored[1].hits()]
[(23, 49, 1.0), (0, 22, 0.27)]
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np

from memreader.retrieval.passages import Passage, PassageHit, line_head
from memreader.retrieval.query_dates import DatePeriod, query_period
from memreader.retrieval.rank_terms import STOPWORDS, rank_terms
from memreader.retrieval.terms import fold
from memreader.scenes.chat_time import parse_chat_time
from memreader.stores.scoring import Candidate, ScoreParts, rank_candidates

__all__ = [
    "COSINE_FLOOR",
    "COSINE_FULL",
    "DATE_WEIGHT",
    "LEXICAL_WEIGHT",
    "NEIGHBOUR_WORDS",
    "OWN_VECTOR",
    "SPEAKER_WEIGHT",
    "PassageSet",
    "PassageWords",
    "ScoredPassages",
    "calibrated",
    "passage_words",
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
#: on LoCoMo conversations 4-10 (the ten best messages, see the module): 0.3 0.831, 0.4 0.840,
#: 0.5 0.840, 0.6 0.852.
LEXICAL_WEIGHT = 0.5

#: A chat message's meaning: this share of its own vector's cosine, the rest of the cosine of
#: it read with its neighbours (LoCoMo 4-10, ten best messages: 0.0 0.828, 0.3 0.833, 0.5 0.820,
#: 0.7 0.756 without the neighbours' words).
OWN_VECTOR = 0.3

#: A chat message's words: this share of its BM25 counted with its neighbours' words (LoCoMo
#: 4-10, ten best messages: 0 0.783, 0.3 0.798, 0.5 0.814, 0.7 0.833 with the rest in place).
NEIGHBOUR_WORDS = 0.5

#: What a message of the one speaker a query names gains (LoCoMo 4-10, ten best messages: 0
#: 0.755, 0.1 0.821, 0.2 0.833, 0.3 0.833).
SPEAKER_WEIGHT = 0.2

#: What a message said in the period a query names gains (LoCoMo 4-10, ten best messages: 0
#: 0.832, 0.1 0.844, 0.2 0.849, 0.3 0.851; 167 of 1,153 questions name a date).
DATE_WEIGHT = 0.2

# BM25's constants (Robertson et al.; the usual values).
_K1 = 1.2
_B = 0.75

# A capitalised word of a query (a possessive "'s" left out): what may name a speaker.
_CAPITALISED = re.compile(r"\b([A-Z][\w-]*?)(?:['\u2019]s)?\b")


@dataclass(frozen=True)
class PassageWords:
    """What ranking reads of one memory's passages, computed once per memory read: each
    passage's ranking terms (counted), their number, its chat neighbours in the memory
    (``before`` and ``after``: indexes, -1 for none), its speaker's name (folded; ``None``
    without one or for a passage that is not a chat message) and its time (``None`` when
    unknown)."""

    counts: tuple[Counter[str], ...]
    lengths: np.ndarray
    before: np.ndarray
    after: np.ndarray
    speakers: tuple[str | None, ...]
    times: tuple[datetime | None, ...]


def passage_words(text: str, spans: np.ndarray) -> PassageWords:
    """The :class:`PassageWords` of a memory's ``text`` cut at ``spans`` (rows of start, end,
    source: :func:`span_rows`): a chat line's head (``role (Name): [time]: ``) names its
    speaker and time and is not searched as words."""
    counts: list[Counter[str]] = []
    speakers: list[str | None] = []
    times: list[datetime | None] = []
    chat: list[bool] = []
    for start, end in spans[:, :2].tolist():
        line = text[start:end]
        head = line_head(line)
        if head is None:
            counts.append(Counter(rank_terms(line)))
            speakers.append(None)
            times.append(None)
            chat.append(False)
            continue
        counts.append(Counter(rank_terms(line[head.content :])))
        speakers.append(" ".join(fold(head.name).split()) if head.name else None)
        moment = parse_chat_time(head.chat_time) if head.chat_time else None
        times.append(moment.replace(tzinfo=None) if moment is not None else None)
        chat.append(True)
    n = len(counts)
    before = np.array(
        [i - 1 if i and chat[i] and chat[i - 1] else -1 for i in range(n)], dtype=np.int64
    )
    after = np.array(
        [i + 1 if i + 1 < n and chat[i] and chat[i + 1] else -1 for i in range(n)], dtype=np.int64
    )
    lengths = np.array([sum(c.values()) for c in counts], dtype=np.float64)
    return PassageWords(tuple(counts), lengths, before, after, tuple(speakers), tuple(times))


@dataclass(frozen=True)
class PassageSet:
    """One candidate memory as passage scoring reads it: its rowid, text and passages (exact
    spans of the text, as :func:`span_rows`), the passages' vectors (one row per passage of one
    vector or two side by side, norm at most 1, see :mod:`~memreader.stores.passages.rows`;
    ``None`` when they have none stored), the memory's own cosine with the query (``None``
    without vectors) and its :class:`PassageWords` (``None``: computed when scored; a store
    keeps them with the rest, so a repeated search does not cut words again)."""

    rowid: int
    text: str
    spans: np.ndarray
    vectors: np.ndarray | None
    window_cosine: float | None
    words: PassageWords | None = field(default=None, compare=False)


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


@dataclass
class _Pool:
    """Every passage of every candidate, flattened: where each candidate's start (``bounds``),
    and each passage's words, neighbours (global indexes, -1 for none), speaker and time."""

    bounds: list[int]
    counts: list[Counter[str]]
    lengths: np.ndarray
    before: np.ndarray
    after: np.ndarray
    speakers: list[str | None]
    times: list[datetime | None]

    @classmethod
    def of(cls, words: Sequence[PassageWords]) -> _Pool:
        bounds = np.cumsum([0, *(len(w.counts) for w in words)]).tolist()

        def shifted(arrays: list[np.ndarray]) -> np.ndarray:
            moved = [np.where(a >= 0, a + at, -1) for a, at in zip(arrays, bounds, strict=False)]
            return np.concatenate([np.zeros(0, dtype=np.int64), *moved]).astype(np.int64)

        return cls(
            bounds,
            [c for w in words for c in w.counts],
            np.concatenate([w.lengths for w in words]) if words else np.zeros(0),
            shifted([w.before for w in words]),
            shifted([w.after for w in words]),
            [s for w in words for s in w.speakers],
            [t for w in words for t in w.times],
        )

    def around(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one per passage) plus its chat neighbours' (a sum)."""
        padded = np.append(values, 0.0)  # index -1 reads the 0 appended
        return values + padded[self.before] + padded[self.after]


def _named_speakers(query: str, speakers: Sequence[str | None]) -> list[str]:
    """The candidates' speakers whose first name the query holds as a capitalised word (not
    a function word: a speaker named "Will" is not named by "Will she come?")."""
    capitalised = {fold(w) for w in _CAPITALISED.findall(query)} - STOPWORDS
    if not capitalised:
        return []
    return sorted({s for s in speakers if s and s.split()[0] in capitalised})


def _bm25(tf: np.ndarray, lengths: np.ndarray, idf: float) -> np.ndarray:
    mean = float(lengths.mean()) if len(lengths) and lengths.mean() > 0 else 1.0
    return idf * tf * (_K1 + 1) / (tf + _K1 * (1 - _B + _B * lengths / mean))


def _words(terms: Sequence[str], pool: _Pool) -> np.ndarray:
    """Each passage's words match (see the module): BM25 alone and with its neighbours,
    scaled so that the best holds the share of the terms' weight it holds."""
    n = len(pool.counts)
    found = np.zeros(n, dtype=np.float64)
    if not terms or not n:
        return found
    wide = pool.around(pool.lengths)
    weights: dict[str, float] = {}
    held: dict[str, np.ndarray] = {}
    for term in terms:
        tf = np.fromiter((c.get(term, 0) for c in pool.counts), dtype=np.float64, count=n)
        df = int(np.count_nonzero(tf))
        weights[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        if df:
            held[term] = tf
            own = _bm25(tf, pool.lengths, weights[term])
            near = _bm25(pool.around(tf), wide, weights[term])
            found += (1 - NEIGHBOUR_WORDS) * own + NEIGHBOUR_WORDS * near
    top = float(found.max())
    if top <= 0:
        return found
    best = int(found.argmax())
    share = sum(weights[t] for t, tf in held.items() if tf[best] > 0) / sum(weights.values())
    return found / top * share


def _hints(query: str, pool: _Pool, period: DatePeriod | None) -> tuple[np.ndarray, float]:
    """What the speaker and date hints add to each passage, and the most they add."""
    added = np.zeros(len(pool.counts), dtype=np.float64)
    most = 0.0
    named = _named_speakers(query, pool.speakers)
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


def _meaning(vector: np.ndarray, candidates: Sequence[PassageSet], bounds: list[int]) -> np.ndarray:
    """Each passage's calibrated cosine with the query (NaN: no vector, nor its memory's)."""
    cosines = np.full(bounds[-1], np.nan)
    for width, blend in ((1, np.array([1.0])), (2, np.array([OWN_VECTOR, 1 - OWN_VECTOR]))):
        own = [
            i
            for i, c in enumerate(candidates)
            if c.vectors is not None and c.vectors.shape[1:] == (width * len(vector),)
        ]
        if own:
            rows = np.concatenate([candidates[i].vectors for i in own])  # type: ignore[misc]
            read = (rows.reshape(len(rows), width, len(vector)) @ vector) @ blend
            at = np.concatenate([np.arange(bounds[i], bounds[i + 1]) for i in own])
            cosines[at] = read
    for i, c in enumerate(candidates):
        if c.window_cosine is not None and np.isnan(cosines[bounds[i] : bounds[i + 1]]).all():
            cosines[bounds[i] : bounds[i + 1]] = c.window_cosine
    return np.clip((cosines - COSINE_FLOOR) / (COSINE_FULL - COSINE_FLOOR), 0.0, 1.0)


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
    weight = LEXICAL_WEIGHT if lexical_weight is None else lexical_weight
    pool = _Pool.of([c.words or passage_words(c.text, c.spans) for c in candidates])
    named = set(_named_speakers(query, pool.speakers))
    names = {t for name in named for t in rank_terms(name)}
    terms = [t for t in dict.fromkeys(rank_terms(query)) if t not in names]
    scores = _words(terms, pool)
    if vector is not None and pool.bounds[-1]:
        meaning = _meaning(vector, candidates, pool.bounds)
        blend = np.maximum((1.0 - weight) * meaning + weight * scores, scores**2)
        scores = np.where(np.isnan(meaning), scores, blend)
    added, most = _hints(query, pool, query_period(query))
    scores = np.clip((scores + added) / (1.0 + most), 0.0, 1.0)
    bounds = pool.bounds
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
