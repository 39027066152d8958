"""What search reads of a passage's text, and how well its words match a query (see
:mod:`memreader.stores.passages.scoring`): each passage's ranking terms
(:func:`~memreader.retrieval.rank_terms.rank_terms`), its chat neighbours, speaker and time,
computed once per memory read (:class:`PassageWords`); then, per query, BM25 over the
candidates' passages, a chat message's words counted alone and with its neighbours'
(:func:`word_match`).

>>> text = "user (Bo): I moved to Porto.\\nuser (Ana): [9:12]: Ana moved to Lisbon."
>>> words = passage_words(text, np.array([[0, 28, 0], [29, len(text), 1]]))
>>> words.speakers, [sorted(c) for c in words.counts], words.after.tolist()
(('bo', 'ana'), [['move', 'porto'], ['ana', 'lisbon', 'move']], [1, -1])
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from itertools import chain, repeat

import numpy as np

from memreader.retrieval.passages import line_head
from memreader.retrieval.rank_terms import STOPWORDS, rank_terms
from memreader.retrieval.terms import fold
from memreader.scenes.chat_time import parse_chat_time

__all__ = [
    "NEIGHBOUR_WORDS",
    "WORDS_CACHE",
    "PassageWords",
    "WordPool",
    "named_speakers",
    "passage_words",
    "word_match",
]

#: A chat message's words: this share of its BM25 counted with its neighbours' words (LoCoMo
#: 4-10, ten best messages, the rest as kept: 0 0.848, 0.5 0.863; before the date and session
#: hints 0.3 0.798, 0.5 0.814 with the speaker hint at 0.1, 0.5 / 0.7 / 1.0 0.833 / 0.833 /
#: 0.832 with it at 0.2).
NEIGHBOUR_WORDS = 0.5

# BM25's constants (Robertson et al.; the usual values).
_K1 = 1.2
_B = 0.75

# A capitalised word of a query (a possessive "'s" left out): what may name a speaker.
_CAPITALISED = re.compile(r"\b([A-Z][\w-]*?)(?:['\u2019]s)?\b")
_WORD = re.compile(r"[\w'\u2019-]+")

_ZERO = np.zeros(1, dtype=np.float64)


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
    #: ``lengths`` as float64 bytes, and each passage's links to its neighbours as one int8
    #: (1: the one before, 2: the one after): a search joins ~100 candidates' bytes and reads
    #: them with one numpy call, where concatenating their arrays cost a call each (issue 42).
    packed: tuple[bytes, bytes] = field(init=False, compare=False, repr=False)

    def __post_init__(self) -> None:
        lengths = np.ascontiguousarray(self.lengths, dtype=np.float64)
        links = ((np.asarray(self.before) >= 0) + 2 * (np.asarray(self.after) >= 0)).astype(np.int8)
        object.__setattr__(self, "packed", (lengths.tobytes(), links.tobytes()))


#: How many memories' words are kept between searches (~20 KiB each for a fast-mode window; a
#: store that keeps no passage cache of its own, as PostgreSQL's, would otherwise cut and stem
#: every candidate's text again).
WORDS_CACHE = 1024


def passage_words(text: str, spans: np.ndarray) -> PassageWords:
    """The :class:`PassageWords` of a memory's ``text`` cut at ``spans`` (rows of start, end,
    source: :func:`~memreader.stores.passages.scoring.span_rows`): a chat line's head
    (``role (Name): [time]: ``) names its speaker and time and is not searched as words.
    Kept for the :data:`WORDS_CACHE` memories read last (the same text and spans give the
    same words; nothing in them is changed by scoring)."""
    return _words_of(text, np.ascontiguousarray(spans[:, :2], dtype=np.int64).tobytes())


@lru_cache(maxsize=WORDS_CACHE)
def _words_of(text: str, spans: bytes) -> PassageWords:
    counts: list[Counter[str]] = []
    speakers: list[str | None] = []
    times: list[datetime | None] = []
    chat: list[bool] = []
    for start, end in np.frombuffer(spans, dtype=np.int64).reshape(-1, 2).tolist():
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


@dataclass
class WordPool:
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
    def of(cls, words: Sequence[PassageWords]) -> WordPool:
        bounds = [0]
        for w in words:
            bounds.append(bounds[-1] + len(w.counts))
        # Each memory's neighbours are the passages right before and after it: one int8 of
        # flags a passage says which it has, and its global index gives theirs.
        links = np.frombuffer(b"".join([w.packed[1] for w in words]), dtype=np.int8)
        index = np.arange(bounds[-1], dtype=np.int64)
        return cls(
            bounds,
            list(chain.from_iterable([w.counts for w in words])),
            np.frombuffer(b"".join([w.packed[0] for w in words]), dtype=np.float64),
            np.where(links & 1, index - 1, -1),
            np.where(links & 2, index + 1, -1),
            list(chain.from_iterable([w.speakers for w in words])),
            list(chain.from_iterable([w.times for w in words])),
        )

    def around(self, values: np.ndarray) -> np.ndarray:
        """``values`` (one per passage) plus its chat neighbours' (a sum)."""
        padded = np.concatenate((values, _ZERO))  # index -1 reads the 0 appended
        summed: np.ndarray = values + padded[self.before] + padded[self.after]
        return summed


def named_speakers(query: str, speakers: Sequence[str | None]) -> list[str]:
    """The candidates' speakers whose first name the query holds as a capitalised word (not
    a function word: a speaker named "Will" is not named by "Will she come?"); in a query
    written without capitals ("what did caroline paint"), as any word.

    >>> named_speakers("What did Caroline's sister paint?", ["caroline", "melanie", None])
    ['caroline']
    >>> named_speakers("what did caroline paint", ["caroline"]), named_speakers("Will?", ["will"])
    (['caroline'], [])
    """
    if query == query.lower():
        words = {fold(w).removesuffix("'s").removesuffix("\u2019s") for w in _WORD.findall(query)}
    else:
        words = {fold(w) for w in _CAPITALISED.findall(query)}
    named = words - STOPWORDS
    if not named:
        return []
    return sorted({s for s in speakers if s and s.split()[0] in named})


def _bm25_norm(lengths: np.ndarray) -> np.ndarray:
    """The part of BM25's denominator that depends on the passages' lengths alone."""
    # The sum over the count, as numpy's mean computes it (the same float), without the
    # mean's own Python wrapper: a search called it four times (issue 42).
    mean = float(lengths.sum()) / len(lengths) if len(lengths) else 0.0
    norm: np.ndarray = _K1 * (1 - _B + _B * lengths / (mean if mean > 0 else 1.0))
    return norm


def _bm25(tf: np.ndarray, norm: np.ndarray, idf: float) -> np.ndarray:
    scores: np.ndarray = idf * tf * (_K1 + 1) / (tf + norm)
    return scores


def word_match(terms: Sequence[str], pool: WordPool) -> np.ndarray:
    """Each passage's words match (see the module): BM25 alone and with its neighbours,
    scaled so that the best holds the share of the terms' weight it holds."""
    n = len(pool.counts)
    found = np.zeros(n, dtype=np.float64)
    if not terms or not n:
        return found
    # The lengths' part of the denominators once, not for every term (the same floats:
    # issue 42); each term's counts by dict.get over the counters, without a frame each.
    own_norm = _bm25_norm(pool.lengths)
    wide_norm = _bm25_norm(pool.around(pool.lengths))
    weights: dict[str, float] = {}
    held: dict[str, np.ndarray] = {}
    for term in terms:
        counted = map(dict.get, pool.counts, repeat(term), repeat(0))
        tf = np.fromiter(counted, dtype=np.float64, count=n)
        df = int(np.count_nonzero(tf))
        weights[term] = math.log(1.0 + (n - df + 0.5) / (df + 0.5))
        if df:
            held[term] = tf
            own = _bm25(tf, own_norm, weights[term])
            near = _bm25(pool.around(tf), wide_norm, weights[term])
            found += (1 - NEIGHBOUR_WORDS) * own + NEIGHBOUR_WORDS * near
    top = float(found.max())
    if top <= 0:
        return found
    best = int(found.argmax())
    share = sum(weights[t] for t, tf in held.items() if tf[best] > 0) / sum(weights.values())
    return found / top * share
