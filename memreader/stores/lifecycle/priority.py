"""Which of an owner's memories the budget expires first: the lowest :func:`priority`.

A memory's priority is the mean of three parts, each in [0, 1]:

- **importance**: the score the reader gave it (``None``: 0.5, neither kept nor dropped);
- **use**: how often it was handed to an agent (``access_count``) or written again
  (``reinforced``): ``log(1 + uses) / log(1 + USE_SATURATION)``, capped at 1, so the first
  uses count most and a memory used :data:`USE_SATURATION` times or more is as used as can be;
- **recency**: ``0.5 ** (days / RECENCY_HALF_LIFE_DAYS)`` since its last sign of life (the
  latest of when it was recorded and when it was last used).

Ties go to the older memory (it expires first), then to the smaller id, so the order is total
and two runs over the same rows expire the same memories.

>>> from datetime import datetime, timezone
>>> now = datetime(2026, 1, 31, tzinfo=timezone.utc)
>>> old = PriorityFacts("a", 0.5, 0, datetime(2025, 12, 1, tzinfo=timezone.utc))
>>> used = PriorityFacts("b", 0.5, 0, old.recorded_at, access_count=9, last_used_at=now)
>>> [f.memory_id for f in lowest([used, old], 1, now)]
['a']
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime

__all__ = [
    "RECENCY_HALF_LIFE_DAYS",
    "USE_SATURATION",
    "PriorityFacts",
    "lowest",
    "priority",
]

#: Days after which a memory's recency part is halved.
RECENCY_HALF_LIFE_DAYS = 30.0
#: Uses (accesses plus reinforcements) at which the use part reaches 1.
USE_SATURATION = 20
#: An importance nothing scored.
NEUTRAL_IMPORTANCE = 0.5


@dataclass(frozen=True)
class PriorityFacts:
    """What the priority of one active memory is computed from."""

    memory_id: str
    importance: float | None
    reinforced: int
    recorded_at: datetime
    access_count: int = 0
    last_used_at: datetime | None = None
    #: Its task ("" for none) and visibility: a task's write never expires another task's
    #: private memories (:mod:`memreader.stores.lifecycle.api`).
    task_id: str = ""
    visibility: str = "private"


def priority(facts: PriorityFacts, now: datetime) -> float:
    """The memory's priority in [0, 1] at ``now`` (see the module docstring)."""
    importance = NEUTRAL_IMPORTANCE if facts.importance is None else facts.importance
    importance = min(1.0, max(0.0, importance))
    uses = max(0, facts.access_count) + max(0, facts.reinforced)
    use = min(1.0, math.log1p(uses) / math.log1p(USE_SATURATION))
    alive = facts.recorded_at
    if facts.last_used_at is not None and facts.last_used_at > alive:
        alive = facts.last_used_at
    days = max(0.0, (now - alive).total_seconds() / 86_400.0)
    recency = float(0.5 ** (days / RECENCY_HALF_LIFE_DAYS))
    return (importance + use + recency) / 3.0


def lowest(facts: Iterable[PriorityFacts], n: int, now: datetime) -> list[PriorityFacts]:
    """The ``n`` memories of ``facts`` with the lowest priority, lowest first (ties: the
    older, then the smaller id)."""
    if n <= 0:
        return []
    return heapq.nsmallest(n, facts, key=lambda f: (priority(f, now), f.recorded_at, f.memory_id))
