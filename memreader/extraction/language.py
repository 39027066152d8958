"""Choosing the prompt language of a window: Chinese when CJK characters dominate its letters."""

from __future__ import annotations

from typing import Literal

Language = Literal["en", "zh"]

_CJK_RANGES = (
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xF900, 0xFAFF),
    (0x20000, 0x2FA1F),
)


def _is_cjk(char: str) -> bool:
    code = ord(char)
    return any(lo <= code <= hi for lo, hi in _CJK_RANGES)


def detect_language(text: str, threshold: float = 0.3) -> Language:
    """``"zh"`` when at least ``threshold`` of the letters are CJK ideographs, else ``"en"``.

    Ideographs carry a word each where Latin letters carry a fraction of one, so a modest share
    already means the text is mostly Chinese.

    >>> detect_language("我下周要去上海出差")
    'zh'
    >>> detect_language("I will visit Shanghai (上海) next week")
    'en'
    """
    letters = cjk = 0
    for char in text:
        if char.isalpha():
            letters += 1
            if _is_cjk(char):
                cjk += 1
    if not letters:
        return "en"
    return "zh" if cjk / letters >= threshold else "en"
