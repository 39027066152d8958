"""Choosing the prompt language of a window: Chinese when CJK characters dominate its letters."""

from __future__ import annotations

import re
from typing import Literal

Language = Literal["en", "zh"]

# Counted with regular expressions: a Python loop over every character costs more than the
# rest of preparing a window.
_CJK = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\U00020000-\U0002fa1f]")
_LETTER = re.compile(r"[^\W\d_]")


def detect_language(text: str, threshold: float = 0.3) -> Language:
    """``"zh"`` when at least ``threshold`` of the letters are CJK ideographs, else ``"en"``.

    Ideographs carry a word each where Latin letters carry a fraction of one, so a modest share
    already means the text is mostly Chinese.

    >>> detect_language("我下周要去上海出差")
    'zh'
    >>> detect_language("I will visit Shanghai (上海) next week")
    'en'
    """
    letters = len(_LETTER.findall(text))
    cjk = len(_CJK.findall(text))
    if not letters:
        return "en"
    return "zh" if cjk / letters >= threshold else "en"
