"""How every store ranks: reciprocal rank fusion of the vector and full-text lists, then
importance and decay; and a full-text query that cannot be a syntax error.

>>> round(rrf_score([1]), 5), round(rrf_score([1, 3]), 5)
(0.01639, 0.03227)
>>> decay(0.0, 0.99), round(decay(10.0, 0.99), 4)
(1.0, 0.9044)
>>> fts_query('what about "Porto"?!'), fts_query("?!")
('"what" OR "about" OR "porto"', None)
>>> affordable_words(["the", "porto", "moved"], {"the": 9000, "porto": 3, "moved": 40}, 100)
['porto', 'moved']
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime

__all__ = [
    "DEFAULT_GAMMA",
    "NEUTRAL_IMPORTANCE",
    "RRF_K",
    "affordable_words",
    "age_days",
    "decay",
    "final_score",
    "fts_match",
    "fts_query",
    "fts_words",
    "importance_of",
    "rrf_score",
]

#: The constant of reciprocal rank fusion (Cormack et al., 2009): 60 damps the head of each
#: list so that agreement between the lists outweighs one list's first place.
RRF_K = 60

#: The daily decay factor. The MemU design (issue 19) scores retrieval as similarity x
#: importance x decay; we take decay as ``gamma ** days`` since the memory's time (when the
#: fact held, else when it was recorded), per day rather than per hour, because memories here
#: come from chats and documents that span months: 0.99 halves a score in ~69 days, so recent
#: facts win ties without old ones vanishing. Configurable per store (``gamma=``).
DEFAULT_GAMMA = 0.99

#: The importance of a memory nothing has scored: the middle, so it neither helps nor hurts.
NEUTRAL_IMPORTANCE = 0.5

_WORD = re.compile(r"\w+", re.UNICODE)
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


def final_score(fused: float, importance: float, decay_factor: float) -> float:
    """``fused * (0.5 + importance) * decay``: an unscored memory (0.5) keeps its fused score,
    the most important counts 1.5 times, the least 0.5 times, never zero (so importance
    reorders close hits but cannot hide a memory that both lists found first)."""
    return fused * (0.5 + importance) * decay_factor


def fts_words(text: str) -> list[str]:
    """The words of ``text`` (``\\w+`` runs), case-folded, each once, in order."""
    return list(dict.fromkeys(w.casefold() for w in _WORD.findall(text)))


def fts_match(words: Iterable[str]) -> str | None:
    """An FTS5 query matching any of ``words``: each quoted (so no word is read as an operator
    or column), joined by ``OR``; ``None`` when there is none."""
    quoted = [f'"{w}"' for w in words]
    return " OR ".join(quoted) if quoted else None


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any word of ``text``: each word quoted (so no word is read as an
    operator or column), joined by ``OR``, case-folded; ``None`` when ``text`` has no word."""
    return fts_match(fts_words(text))


def affordable_words(words: Sequence[str], rows: Mapping[str, int], budget: int) -> list[str]:
    """The ``words`` a full-text search matches when it may read at most ``budget`` index
    entries: rarest first (``rows``: how many rows hold each word), while their rows add up to
    at most ``budget``; in ``words``' order. A word no row holds is left out; so is a word
    held by more rows than the budget, and the commoner words once it is spent: they are the
    words BM25 weighs least (a word in half the rows weighs nothing), and the ones that cost
    the most to rank."""
    total = 0
    kept: set[str] = set()
    for word in sorted((w for w in words if rows.get(w, 0) > 0), key=lambda w: rows[w]):
        total += rows[word]
        if total > budget:
            break
        kept.add(word)
    return [w for w in words if w in kept]
