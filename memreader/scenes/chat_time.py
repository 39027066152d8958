"""Parsing the ``chat_time`` strings that chat logs carry.

The string is always kept as given; a timestamp is added only when it parses. Times without a
zone stay naive: memreader never invents a timezone or a time.
"""

from __future__ import annotations

from datetime import datetime, timezone
from functools import lru_cache

_FORMATS = (
    "%I:%M %p on %d %B, %Y",  # 03:45 PM on 20 August, 2026 / 1:56 pm on 8 May, 2023
    "%I:%M %p on %d %b, %Y",
    "%I:%M%p on %d %B, %Y",
    "%Y-%m-%d %H:%M:%S",
    "%Y-%m-%d %H:%M",
    "%Y/%m/%d %H:%M:%S",
    "%Y/%m/%d",
    "%d %B %Y",
    "%B %d, %Y",
)


@lru_cache(maxsize=4096)
def parse_chat_time(value: str) -> datetime | None:
    """Parse a chat time, or return ``None`` when it is in no known format.

    Cached: a session's messages mostly share one time string, and trying the formats with
    ``strptime`` costs about 0.1 ms a message (datetimes are immutable, so sharing is safe).

    >>> parse_chat_time("1:56 pm on 8 May, 2023")
    datetime.datetime(2023, 5, 8, 13, 56)
    >>> parse_chat_time("2026-08-20T15:45:00+02:00").utcoffset().seconds
    7200
    >>> parse_chat_time("yesterday") is None
    True
    """
    text = value.strip()
    if not text:
        return None
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00") if text.endswith("Z") else text)
    except ValueError:
        pass
    # strptime's %p only accepts the locale's AM/PM spelling; upper-case makes "pm" parse.
    candidates = (text, text.upper().replace(" ON ", " on "))
    for fmt in _FORMATS:
        for candidate in candidates:
            try:
                return datetime.strptime(candidate, fmt)
            except ValueError:
                continue
    return None


def utc_in_range(value: datetime) -> bool:
    """Whether ``value`` has a time in UTC (years 1 to 9999), what a store converts it to: a
    naive time (taken as UTC) always has; ``9999-12-31T23:59:59-05:00`` has not.

    >>> utc_in_range(parse_chat_time("9999-12-31T23:59:59-05:00"))
    False
    """
    if value.tzinfo is None:
        return True
    try:
        value.astimezone(timezone.utc)
    except OverflowError:
        return False
    return True
