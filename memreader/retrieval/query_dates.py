"""The time a query asks about, when it names one ("on 9 December 2023", "in May 2023", "in
October", "in 2022"), as the period in which a message telling of it was most likely said.

A chat message says "yesterday" or "last week"; the date is only in its session's time. A
question that names the date can still find the message: ranking
(:mod:`memreader.stores.passages.scoring`) lifts the passages said within the period.

The period is generous after the date, because people tell of an event in the days after it:

- a day: from the day before to a week after;
- a month (with its year): the month and the first week of the next;
- a month alone ("in October", capitalised, after a preposition): that month in any year, and
  the first week of the next;
- a year ("in 2023", after a preposition): the year and the first week of the next.

Only English month names are read; a query naming no date (or only relative ones: "last
week") has no period.

>>> period = query_period("What did Sam do on December 4, 2023?")
>>> period.start, period.end
(datetime.datetime(2023, 12, 3, 0, 0), datetime.datetime(2023, 12, 12, 0, 0))
>>> query_period("Where was Dave in the last two weeks of August 2023?").holds(datetime(2023, 9, 3))
True
>>> query_period("Which painting did Evan share in October?").holds(datetime(2021, 10, 9))
True
>>> query_period("May I ask what she likes?") is None
True
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import datetime, timedelta

__all__ = ["DatePeriod", "query_period"]

_MONTH_NAMES = "january february march april may june july august september october november"
_MONTHS = [*_MONTH_NAMES.split(), "december"]
_MONTH = "|".join(_MONTHS)
_MONTH_TITLE = "|".join(month.title() for month in _MONTHS)
_DAY = r"(\d{1,2})(?:st|nd|rd|th)?"
_DAY_MONTH_YEAR = re.compile(rf"\b{_DAY}\s+({_MONTH}),?\s+(\d{{4}})\b", re.IGNORECASE)
_MONTH_DAY_YEAR = re.compile(rf"\b({_MONTH})\s+{_DAY},?\s+(\d{{4}})\b", re.IGNORECASE)
_ISO_DAY = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_MONTH_YEAR = re.compile(rf"\b({_MONTH}),?\s+(\d{{4}})\b", re.IGNORECASE)
# A month alone must be capitalised and follow a preposition: "may" is a verb too.
_MONTH_ALONE = re.compile(
    rf"\b(?i:in|during|of|on|since|by|early|late|mid|until)\s+({_MONTH_TITLE})\b"
)
_YEAR = re.compile(r"\b(?:in|during|of|since|by|until)\s+((?:19|20)\d\d)\b", re.IGNORECASE)

_BEFORE = timedelta(days=1)
_AFTER = timedelta(days=8)
_NEXT_WEEK = timedelta(days=7)


@dataclass(frozen=True)
class DatePeriod:
    """When a message telling of the query's date was likely said: ``[start, end)`` (naive
    datetimes, as chat times without a zone are read), or, for a month named without a year,
    ``month`` (1-12) of any year (``start`` and ``end`` ``None``)."""

    start: datetime | None
    end: datetime | None
    month: int | None = None

    def holds(self, moment: datetime) -> bool:
        """Whether ``moment`` (its zone, if any, ignored) lies in the period."""
        moment = moment.replace(tzinfo=None)
        if self.start is None or self.end is None:
            after = (self.month or 0) % 12 + 1
            return moment.month == self.month or (moment.month == after and moment.day <= 7)
        return self.start <= moment < self.end


def _month(name: str) -> int:
    return _MONTHS.index(name.lower()) + 1


def _day(year: int, month: int, day: int) -> DatePeriod | None:
    try:
        moment = datetime(year, month, day)
    except ValueError:
        return None  # "31 February": no such day, no period
    return DatePeriod(moment - _BEFORE, moment + _AFTER)


def query_period(query: str) -> DatePeriod | None:
    """The period the date named in ``query`` points to (see the module), else ``None``.
    The most precise date named wins (a day over a month over a year)."""
    if found := _DAY_MONTH_YEAR.search(query):
        return _day(int(found[3]), _month(found[2]), int(found[1]))
    if found := _MONTH_DAY_YEAR.search(query):
        return _day(int(found[3]), _month(found[1]), int(found[2]))
    if found := _ISO_DAY.search(query):
        return _day(int(found[1]), int(found[2]), int(found[3]))
    if found := _MONTH_YEAR.search(query):
        year, month = int(found[2]), _month(found[1])
        following = datetime(year + month // 12, month % 12 + 1, 1)
        return DatePeriod(datetime(year, month, 1), following + _NEXT_WEEK)
    if found := _MONTH_ALONE.search(query):
        return DatePeriod(None, None, _month(found[1]))
    if found := _YEAR.search(query):
        year = int(found[1])
        return DatePeriod(datetime(year, 1, 1), datetime(year + 1, 1, 1) + _NEXT_WEEK)
    return None
