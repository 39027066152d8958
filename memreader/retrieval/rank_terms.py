"""The terms passages are ranked by (:mod:`memreader.stores.passages.scoring`'s BM25): the
search terms of :mod:`memreader.retrieval.terms` without English function words, each word
reduced to its Snowball stem, so that ``painted`` finds ``painting`` and ``What did ...`` does
not rank by ``what`` and ``did``. CJK bigrams and numbers are kept as they are.

Measured on real conversations (LoCoMo conversations 4-10, 1,153 questions; RESULTS.md, "issue
40"): the share of questions whose evidence message is among the ten best single messages by
BM25 alone rose from 0.573 (plain words) to 0.619 without function words and 0.674 stemmed.

The full-text index (:func:`memreader.retrieval.terms.index_text`) is not stemmed: it picks
candidates by plain words, and changing it would need every stored row indexed again.

>>> rank_terms("What did Melanie paint after the races?")
['melani', 'paint', 'race']
>>> rank_terms("She painted 2 sunsets; 我喜欢咖啡")
['paint', '2', 'sunset', '我喜', '喜欢', '欢咖', '咖啡']
>>> stem("adoption"), stem("adopting")
('adopt', 'adopt')
"""

from __future__ import annotations

import re
import threading
from functools import lru_cache

import snowballstemmer

from memreader.retrieval.terms import is_cjk, term_stream

__all__ = ["STOPWORDS", "rank_terms", "stem"]

# English function words (STOPWORDS), left out of ranking: they occur in most messages and
# most questions, so they add noise to BM25 without telling passages apart (the pronouns and
# auxiliaries of a question, its wh-word).
_FUNCTION_WORDS = """a about above after again against all also am an and any are as at be
    because been before being below between both but by can could did do does doing down
    during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom whose why will with would you your yours yourself
    yourselves"""
STOPWORDS = frozenset(_FUNCTION_WORDS.split())

_ASCII_WORD = re.compile(r"\w+")
_STEMMER = snowballstemmer.stemmer("english")
# A Snowball stemmer keeps state while it stems a word: one word at a time.
_STEM_LOCK = threading.Lock()


@lru_cache(maxsize=1 << 16)
def stem(word: str) -> str:
    """``word`` (folded) reduced to its English Snowball stem; cached (a conversation reuses a
    few thousand words)."""
    with _STEM_LOCK:
        stemmed: str = _STEMMER.stemWord(word)
    return stemmed


def _ranked(term: str) -> str:
    """A term as ranking compares it: a word stemmed, a number or CJK bigram as it is."""
    if term.isdigit() or is_cjk(term[0]):
        return term
    return stem(term)


def rank_terms(text: str) -> list[str]:
    """The ranking terms of ``text`` (see the module), in order, repeats kept (BM25 counts
    them). ASCII text takes a shortcut with the same terms (lower-casing is its folding)."""
    words = _ASCII_WORD.findall(text.lower()) if text.isascii() else term_stream(text)
    return [_ranked(word) for word in words if word not in STOPWORDS]
