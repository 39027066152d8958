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
"""

from __future__ import annotations

import re
import unicodedata

__all__ = ["fold", "is_cjk", "text_terms"]

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


def is_cjk(char: str) -> bool:
    """Whether ``char`` belongs to a script written without spaces between words."""
    code = ord(char)
    return any(low <= code <= high for low, high in _CJK_RANGES)


def fold(text: str) -> str:
    """``text`` NFKC-normalised (full-width ``Ｐｏｒｔｏ`` is ``Porto``, ``ｶﾌｪ`` is ``カフェ``)
    and case-folded: the form both sides of a text match are compared in."""
    return unicodedata.normalize("NFKC", text).casefold()


def _run_terms(word: str) -> list[str]:
    """The terms of one ``\\w+`` run: its Latin (etc.) pieces whole, its CJK pieces as
    overlapping bigrams (one character alone stays a term)."""
    terms: list[str] = []
    piece: list[str] = []
    piece_cjk = False
    for char in word + "\0":
        cjk = char != "\0" and is_cjk(char)
        if piece and (cjk != piece_cjk or char == "\0"):
            text = "".join(piece)
            if piece_cjk and len(text) > 1:
                terms.extend(text[i : i + 2] for i in range(len(text) - 1))
            else:
                terms.append(text)
            piece = []
        piece.append(char)
        piece_cjk = cjk
    return terms


def text_terms(text: str) -> list[str]:
    """The terms of ``text`` (see the module), folded, each once, in order of first use."""
    found: dict[str, None] = {}
    for word in _WORD.findall(fold(text)):
        for term in _run_terms(word):
            found.setdefault(term, None)
    return list(found)
