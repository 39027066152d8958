"""What both stores' full-text halves share: the query's terms
(:func:`~memreader.retrieval.terms.text_terms`, the same cut as the indexed
:func:`~memreader.retrieval.terms.index_text`: NFKC- and case-folded words, Chinese, Japanese
and Korean as overlapping bigrams), an FTS5 query of them that cannot be a syntax error, and
which of them a search can afford to rank.

A query term that is one CJK character (``猫``) matches as a prefix: it starts the bigrams of
the character's runs, and a run's last character is indexed alone as well.

>>> fts_query('what about "Porto"?!'), fts_query("?!")
('"what" OR "about" OR "porto"', None)
>>> fts_query("ｐｏｒｔｏ 咖啡"), fts_query("我 喜欢猫")
('"porto" OR "咖啡"', '"我"* OR "喜欢" OR "欢猫"')
>>> affordable_words(["the", "porto", "moved"], {"the": 9000, "porto": 3, "moved": 40}, 100)
['porto', 'moved']
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from memreader.retrieval.terms import is_single_cjk, text_terms

__all__ = ["affordable_words", "fts_match", "fts_query", "fts_words"]


def fts_words(text: str) -> list[str]:
    """The terms a full-text search for ``text`` matches
    (:func:`~memreader.retrieval.terms.text_terms`: folded, each once, in order)."""
    return text_terms(text)


def fts_match(words: Iterable[str]) -> str | None:
    """An FTS5 query matching any of ``words``: each quoted (so no word is read as an operator
    or column; a term holds ``\\w`` characters only, never a quote), one CJK character as a
    prefix (``"猫"*``), joined by ``OR``; ``None`` when there is none."""
    quoted = [f'"{w}"*' if is_single_cjk(w) else f'"{w}"' for w in words]
    return " OR ".join(quoted) if quoted else None


def fts_query(text: str) -> str | None:
    """An FTS5 query matching any term of ``text`` (:func:`fts_words`, :func:`fts_match`);
    ``None`` when ``text`` has none."""
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
