"""The terms a text is searched by: NFKC-folded, case-folded words, with Chinese, Japanese and
Korean runs cut into overlapping character bigrams (their words are not separated by spaces,
so a word tokenizer sees a whole clause as one "word" and ``咖啡`` never matches).

>>> text_terms("I drink 咖啡 in Ｐｏｒｔｏ")
['i', 'drink', '咖啡', 'in', 'porto']
>>> text_terms("我喜欢喝咖啡")
['我喜', '喜欢', '欢喝', '喝咖', '咖啡']
>>> text_terms("東京に住む")
['東京', '京に', 'に住', '住む']
>>> fold("Ｐｏｒｔｏ ＣＡＦÉ")
'porto café'

A store indexes :func:`index_text` (every term in order, repeats kept, so BM25 still counts
how often a word occurs; and each CJK run's last character alone, so a one-character query
matched as a prefix finds any character of a run) and matches :func:`text_terms` of the query:
both sides are folded and cut the same way on every backend.

>>> index_text("咖啡, 咖啡 and Coffee")
'咖啡 啡 咖啡 啡 and coffee'
>>> index_text("我喜欢喝咖啡")
'我喜 喜欢 欢喝 喝咖 咖啡 啡'
>>> is_single_cjk("猫"), is_single_cjk("a"), is_single_cjk("猫咪")
(True, False, False)
"""

from __future__ import annotations

import re
import unicodedata

__all__ = [
    "fold",
    "index_terms",
    "index_text",
    "is_cjk",
    "is_single_cjk",
    "term_stream",
    "text_terms",
]

_WORD = re.compile(r"\w+", re.UNICODE)

#: Scripts written without spaces between words (or, for Hangul, with particles glued to them):
#: Han ideographs (with extensions A and the compatibility block), Hiragana, Katakana (and its
#: half-width forms, which NFKC folds anyway), Hangul syllables and jamo, Bopomofo.
_CJK_RANGES = (
    (0x1100, 0x11FF),
    (0x3040, 0x30FF),
    (0x3100, 0x312F),
    (0x3130, 0x318F),
    (0x31A0, 0x31BF),
    (0x31F0, 0x31FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xA960, 0xA97F),
    (0xAC00, 0xD7AF),
    (0xD7B0, 0xD7FF),
    (0xF900, 0xFAFF),
    (0xFF66, 0xFF9F),
    (0x20000, 0x2FA1F),
)


# One character class of every range: a word holding none of them is one term as it is.
_CJK_CHAR = re.compile("[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in _CJK_RANGES) + "]")


def is_cjk(char: str) -> bool:
    """Whether ``char`` belongs to a script written without spaces between words."""
    return _CJK_CHAR.match(char) is not None


def fold(text: str) -> str:
    """``text`` NFKC-normalised (full-width ``Ｐｏｒｔｏ`` is ``Porto``, ``ｶﾌｪ`` is ``カフェ``)
    and case-folded: the form both sides of a text match are compared in."""
    return unicodedata.normalize("NFKC", text).casefold()


def is_single_cjk(term: str) -> bool:
    """Whether ``term`` is one CJK character: a query term a store matches as a prefix (any
    bigram it starts, or a run's last character, which :func:`index_terms` adds)."""
    return len(term) == 1 and is_cjk(term)


def _run_terms(word: str, *, tail: bool = False) -> list[str]:
    """The terms of one ``\\w+`` run: its Latin (etc.) pieces whole, its CJK pieces as
    overlapping bigrams (one character alone stays a term); ``tail``: each CJK piece of two or
    more characters also ends with its last character alone."""
    if _CJK_CHAR.search(word) is None:
        return [word]
    terms: list[str] = []
    piece: list[str] = []
    piece_cjk = False
    for char in word + "\0":
        cjk = char != "\0" and is_cjk(char)
        if piece and (cjk != piece_cjk or char == "\0"):
            text = "".join(piece)
            if piece_cjk and len(text) > 1:
                terms.extend(text[i : i + 2] for i in range(len(text) - 1))
                if tail:
                    terms.append(text[-1])
            else:
                terms.append(text)
            piece = []
        piece.append(char)
        piece_cjk = cjk
    return terms


def term_stream(text: str) -> list[str]:
    """Every term of ``text`` (see the module) in order, repeats kept.

    >>> term_stream("Tea, tea: 茶")
    ['tea', 'tea', '茶']
    """
    return [term for word in _WORD.findall(fold(text)) for term in _run_terms(word)]


def text_terms(text: str) -> list[str]:
    """The terms of ``text`` (see the module), folded, each once, in order of first use."""
    return list(dict.fromkeys(term_stream(text)))


def index_terms(text: str) -> list[str]:
    """The terms a store indexes ``text`` by: :func:`term_stream`, with each CJK run of two
    or more characters followed by its last character alone (``咖啡`` is ``咖啡 啡``): a
    one-character query term, matched as a prefix, then finds every character of a run
    (``咖`` starts ``咖啡``, ``啡`` is the tail) at the cost of one term per run."""
    return [term for word in _WORD.findall(fold(text)) for term in _run_terms(word, tail=True)]


def index_text(text: str) -> str:
    """:func:`index_terms` as one space-separated string: what a full-text index (SQLite's
    FTS5, PostgreSQL's ``to_tsvector('simple', ...)``) is fed instead of the raw text."""
    return " ".join(index_terms(text))
