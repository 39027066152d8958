"""How much a memory matters, and since when it holds: the extraction answer's optional fields
(``importance``, ``importance_reason``, ``valid_from``) read leniently, and the stated heuristic
that scores a memory no model scored (fast mode's ``importance`` step; fine-mode items the model
gave no score).

**The heuristic.** A memory starts at 0.3 and gains or loses for what it says; the reason lists
each cue that counted, so a score can always be explained::

    cue                        weight  what it looks for (English and Chinese)
    states a preference        +0.2    "I love/prefer/hate ...", "Ana likes ...", favourite, 喜欢
    states a personal fact     +0.15   "I am/live/work/moved ...", "my name", "my X is", 我是, 我住
    states a plan              +0.1    will, going to, plan to, appointment, deadline, 打算, 预约
    names a date               +0.1    2024-05-01, 5/1, a year, a month or weekday, yesterday, 明天
    names someone or something +0.1    a capitalised word inside a sentence ("I'm Emily")
    gives a number             +0.05   a digit outside the dates
    is short                   -0.1    under 4 words (Chinese: 2 characters a word): small talk

The score is clipped to 0..1 and rounded to two places. Why these: what a personal assistant is
asked about later is what the user likes, who they are, what they plan, and the names, dates
and numbers that pin a fact down; a greeting or an "ok" is rarely worth recalling. The first
three cues look only at the speaker's own words where the text has several speakers (fast
mode: the user's messages and documents, not the assistant's "I'd love to help"); the others
look at all of it. It is a heuristic, deterministic and cheap, not a judgement: fine mode's
model scores are preferred where it gives them.

>>> heuristic_importance("I'm Emily. I love green tea, 3 cups a day since 2019.")
Importance(score=0.9, reason='heuristic: base 0.3, states a preference (+0.2), states a personal \
fact (+0.15), names a date (+0.1), names someone or something (+0.1), gives a number (+0.05)')
>>> heuristic_importance("ok thanks").reason
'heuristic: base 0.3, is short (-0.1)'
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from memreader.items import MAX_IMPORTANCE_REASON_CHARS, SourceMessage
from memreader.scenes.chat_time import parse_chat_time
from memreader.scenes.clipping import one_line

__all__ = [
    "MAX_VALID_FROM_CHARS",
    "Importance",
    "heuristic_importance",
    "read_importance",
    "read_valid_from",
    "source_importance",
]

#: The longest ``valid_from`` string read from an answer (an ISO datetime with an offset fits).
MAX_VALID_FROM_CHARS = 64
#: The answer's scale: an integer 0..10, stored divided by 10.
IMPORTANCE_SCALE = 10
BASE_SCORE = 0.3

_MODEL_PREFIX = "model: "
_HEURISTIC_PREFIX = "heuristic: "
_NO_REASON = "no reason given"


@dataclass(frozen=True)
class Importance:
    """A 0..1 score and its one-line reason."""

    score: float
    reason: str


# "May" alone is mostly the verb ("May I ..."): it counts as a month only beside a number.
_MONTHS = (
    "January|February|March|April|June|July|August|September|October|November|December|"
    r"Jan|Feb|Mar|Apr|Jun|Jul|Aug|Sept|Sep|Oct|Nov|Dec|May(?=\s+\d)|(?<=\d\s)May"
)
_WEEKDAYS = "Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday"

_PREFERENCE = re.compile(
    r"(?i:\b(?:i|we)\s+(?:(?:really|also|still|do|don't|never|always)\s+)?"
    r"(?:like|love|prefer|enjoy|hate|dislike|adore)\b)"
    r"|\b(?:[A-Z][\w'-]*|(?i:he|she|they|the user))\s+"
    r"(?:(?i:really|also|still|never|always|does|doesn't)\s+)?"
    r"(?i:likes|loves|prefers|enjoys|hates|dislikes|adores)\b"
    r"|(?i:\b(?:favou?rite|allergic to|can't stand|a fan of)\b)"
    r"|喜欢|爱吃|爱喝|爱看|讨厌|偏好|最爱|不爱|过敏|受不了"
)
_PERSONAL = re.compile(
    r"(?i:\b(?:i\s+(?:am|was|have|had|live|lived|work|worked|moved|grew up|study|studied|own"
    r"|got|started|joined|bought)|i'm|i've|my\s+name|my\s+\w+\s+(?:is|are|was|were))\b)"
    r"|我(?:是|叫|住|在|有|的|们|刚)"
)
_PLAN = re.compile(
    r"(?i:\b(?:will|going to|plan(?:s|ned|ning)?\s+to|intend(?:s)?\s+to|appointment|deadline"
    r"|meeting|remind me|scheduled?)\b)"
    r"|打算|计划|准备|将要|预约|提醒我|会议|截止"
)
_DATE = re.compile(
    r"\b\d{4}-\d{1,2}-\d{1,2}\b|\b\d{1,2}/\d{1,2}(?:/\d{2,4})?\b|\b(?:1[89]|20)\d{2}\b"
    rf"|\b(?:{_MONTHS}|{_WEEKDAYS})\b"
    r"|(?i:\b(?:yesterday|today|tonight|tomorrow|(?:last|next)\s+(?:week|weekend|month|year)"
    r"|\d+\s+(?:days?|weeks?|months?|years?)\s+ago)\b)"
    r"|昨天|今天|明天|前天|后天|上周|下周|本周|上个月|下个月|去年|今年|明年"
    r"|星期[一二三四五六日天]|周[一二三四五六日末]|\d+\s*[年月日号]"
)
_NAME = re.compile(rf"(?<=[a-z,;:] )(?!(?:{_MONTHS}|{_WEEKDAYS})\b)[A-Z][a-z]+")
_DIGIT = re.compile(r"\d")
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff]")
_WORD = re.compile(r"[^\W\u3040-\u30ff\u3400-\u9fff]+")
_SHORT_WORDS = 4


def _cues(text: str, own_words: str) -> list[tuple[str, float]]:
    """The cues that count for ``text`` (``own_words``: the speaker's own part of it)."""
    found: list[tuple[str, float]] = []
    if _PREFERENCE.search(own_words):
        found.append(("states a preference", 0.2))
    if _PERSONAL.search(own_words):
        found.append(("states a personal fact", 0.15))
    if _PLAN.search(own_words):
        found.append(("states a plan", 0.1))
    if _DATE.search(text):
        found.append(("names a date", 0.1))
    if _NAME.search(text):
        found.append(("names someone or something", 0.1))
    if _DIGIT.search(_DATE.sub(" ", text)):
        found.append(("gives a number", 0.05))
    if len(_WORD.findall(text)) + len(_CJK.findall(text)) // 2 < _SHORT_WORDS:
        found.append(("is short", -0.1))
    return found


def heuristic_importance(text: str, own_words: str | None = None) -> Importance:
    """The heuristic's score of ``text`` (see the module docstring); the first-person cues look
    at ``own_words`` when given (the speaker's part of ``text``), else at ``text``."""
    cues = _cues(text, text if own_words is None else own_words)
    score = round(min(1.0, max(0.0, BASE_SCORE + sum(w for _, w in cues))), 2)
    parts = [f"base {BASE_SCORE}", *(f"{label} ({weight:+g})" for label, weight in cues)]
    reason = _HEURISTIC_PREFIX + ", ".join(parts)
    return Importance(score, reason[:MAX_IMPORTANCE_REASON_CHARS])


def source_importance(sources: Sequence[SourceMessage]) -> Importance:
    """The heuristic's score of what ``sources`` say (their text, not the rendered lines with
    their roles and times); the first-person cues count the user's messages and documents."""
    text = "\n".join(s.content for s in sources)
    own = "\n".join(s.content for s in sources if s.role in (None, "user"))
    return heuristic_importance(text, own)


def _number(raw: Any) -> float | None:
    """``raw`` as a finite number (an int, a float, or a string "7", "7.5" or "7/10")."""
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int | float):
        value = float(raw)
    elif isinstance(raw, str):
        text = raw.strip().removesuffix(f"/{IMPORTANCE_SCALE}").strip()
        try:
            value = float(text)
        except ValueError:
            return None
    else:
        return None
    return value if math.isfinite(value) else None


def read_importance(raw: Any, raw_reason: Any) -> tuple[Importance | None, bool]:
    """The model's importance (an integer 0..10 in the answer) as 0..1 with its reason, and
    whether the value was malformed.

    A missing value (absent, ``null``, ``""``) is ``(None, False)``: the field is optional. A
    number within 0..10 (an int, a float, or a numeric string such as ``"7"`` or ``"7/10"``) is
    divided by 10. Anything else is dropped, not clamped, and reported malformed: a boolean,
    text, NaN, or a number outside 0..10 (a 15 or a 70 says the model used another scale, and
    clamping it would invent a top score). The reason is the model's, on one line, prefixed
    ``"model: "`` and clipped to fit :data:`~memreader.items.MAX_IMPORTANCE_REASON_CHARS`
    (``"model: no reason given"`` when it gave none).

    >>> read_importance(7, "states where the user lives\\nand since when")
    (Importance(score=0.7, reason='model: states where the user lives and since when'), False)
    >>> read_importance(15, "very"), read_importance(None, None)
    ((None, True), (None, False))
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None, False
    value = _number(raw)
    if value is None or not 0 <= value <= IMPORTANCE_SCALE:
        return None, True
    given = raw_reason if isinstance(raw_reason, str) and raw_reason.strip() else _NO_REASON
    reason = one_line(given, MAX_IMPORTANCE_REASON_CHARS - len(_MODEL_PREFIX))
    return Importance(round(value / IMPORTANCE_SCALE, 4), _MODEL_PREFIX + reason), False


def read_valid_from(raw: Any) -> tuple[datetime | None, bool]:
    """When the model says the fact began to hold, and whether the value was malformed.

    An ISO date or datetime (``"2024-05-01"``, ``"2024-05-01T09:00:00+02:00"``; the chat-time
    formats memreader parses are accepted too). A missing value is ``(None, False)``; one that
    does not parse (``"yesterday"``, a number, over :data:`MAX_VALID_FROM_CHARS` characters) is
    ``(None, True)``. A time without a zone stays naive here: the item takes the zone of the
    messages it cites (:func:`memreader.steps.items.valid_from_for`).

    >>> read_valid_from("2024-05-01")
    (datetime.datetime(2024, 5, 1, 0, 0), False)
    >>> read_valid_from("yesterday"), read_valid_from(None)
    ((None, True), (None, False))
    """
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None, False
    if not isinstance(raw, str) or len(raw) > MAX_VALID_FROM_CHARS:
        return None, True
    parsed = parse_chat_time(raw.strip())
    return parsed, parsed is None
