"""What a store records of a memory's use: :class:`Usage` (how often it was handed to an agent,
and when last), the use-record methods of :class:`~memreader.stores.base.MemoryStore`
(:func:`mark_used`, :func:`usage`) and the bounded :func:`heat` a search may weigh.

**Use is recorded, not guessed.** A memory is *used* when it is handed to an agent: shown by
``context()``, read by ``Memory.get`` (and the HTTP and MCP equivalents), or named by an
explicit ``mark_used``. A plain search is a read and never writes: it ranks, it does not hand
anything over. Each call records its memories in one statement (per :data:`CHUNK` ids).

**Where it lives.** A side table per store (``memory_use`` in SQLite, ``memreader_memory_use``
in PostgreSQL), one row per used memory keyed by ``(user_id, memory_id)``, made with
``CREATE ... IF NOT EXISTS`` on every open: an older store gains it without a schema version
change. Its rows go with their memory (a trigger in SQLite, a cascading foreign key in
PostgreSQL), so purge and erase remove them.

**Heat** is ``log1p(count) / log1p(HEAT_CAP)`` (capped at 1) times ``0.5 ** (days since the
last use / HEAT_HALF_LIFE_DAYS)``: in [0, 1], 0 for a memory never used. A search multiplies a
hit's final score by ``1 + heat_weight * heat`` (capped at 1), so without recorded use, or at
weight 0, nothing changes; see :data:`DEFAULT_HEAT_WEIGHT` for the measured default.

>>> from datetime import datetime, timezone
>>> t = datetime(2026, 1, 31, tzinfo=timezone.utc)
>>> heat(None, t), heat(Usage(0, None), t)
(0.0, 0.0)
>>> round(heat(Usage(50, t), t), 3), round(heat(Usage(3, t), t), 3)
(1.0, 0.353)
>>> round(heat(Usage(50, datetime(2026, 1, 1, tzinfo=timezone.utc)), t), 3)
0.5
"""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memreader.errors import InputError, StoreError
from memreader.stores.checks import (
    MAX_HEAT_WEIGHT,
    aware,
    check_heat_weight,
    check_memory_id,
    check_owner,
    moment,
)
from memreader.stores.records import Usage

if TYPE_CHECKING:
    from memreader.stores.contract import StoreBackend

__all__ = [
    "CHUNK",
    "DEFAULT_HEAT_WEIGHT",
    "HEAT_CAP",
    "HEAT_HALF_LIFE_DAYS",
    "MAX_CLOCK_SKEW",
    "MAX_HEAT_WEIGHT",
    "Usage",
    "check_heat_weight",
    "check_used_ids",
    "heat",
    "mark_used",
    "record_use",
    "usage",
]

_log = logging.getLogger(__name__)

#: Uses at which heat reaches 1: past it, more use adds nothing (a memory recalled a thousand
#: times is not worth more than one recalled fifty times).
HEAT_CAP = 50

#: Days after its last use in which a memory's heat halves: a month of silence halves it.
HEAT_HALF_LIFE_DAYS = 30.0

#: How much heat moves a search score, measured by ``benchmarks/heat.py`` (RESULTS.md "ranking
#: with and without heat"): on the synthetic evidence set, 0.2 lifts questions whose evidence was
#: used before (recall@3 0.64 -> 0.75) and costs the others as much (recall@10 0.99 -> 0.89: a
#: used memory of one question competes for another); with hot distractors every weight from
#: 0.05 costs recall@1. So 0: use is recorded, and weighed only where a caller sets a weight.
DEFAULT_HEAT_WEIGHT = 0.0


#: Ids per statement (well under SQLite's parameter limit).
CHUNK = 500

#: How far past the store's clock a use's ``at`` may be (clocks of two hosts differ a little):
#: a use is something that happened, and one dated later would never decay (its heat and the
#: budget's recency stay full until that date).
MAX_CLOCK_SKEW = timedelta(minutes=5)

_SECONDS_PER_DAY = 86_400.0


def heat(usage: Usage | None, now: datetime) -> float:
    """A memory's heat at ``now``, in [0, 1] (see the module docstring); 0 without use."""
    if usage is None or usage.access_count <= 0 or usage.last_accessed_at is None:
        return 0.0
    count = min(1.0, math.log1p(usage.access_count) / math.log1p(HEAT_CAP))
    days = max(0.0, (now - usage.last_accessed_at).total_seconds() / _SECONDS_PER_DAY)
    return float(count * 0.5 ** (days / HEAT_HALF_LIFE_DAYS))


def check_used_ids(ids: Any) -> list[str]:
    """``ids``, distinct, in the order given.

    Raises:
        InputError: not a list (or tuple) of non-empty strings.
    """
    if not isinstance(ids, (list, tuple)):
        raise InputError(f"mark_used(): ids must be a list of memory ids, got {type(ids).__name__}")
    return list(dict.fromkeys(check_memory_id(i, "mark_used(): each id") for i in ids))


def mark_used(
    store: StoreBackend, ids: Sequence[str], *, user_id: str, at: datetime | None = None
) -> int:
    """Record that ``user_id``'s memories ``ids`` were handed to an agent at ``at`` (now
    when ``None``): each one's ``access_count`` grows by one, its ``last_accessed_at``
    becomes ``at`` unless it is later already. Ids that owner has no memory of are
    ignored; returns how many memories were marked. One statement per :data:`CHUNK` ids.

    Raises:
        InputError: ``ids`` is not a list of non-empty strings, ``user_id`` not a
            non-empty string, ``at`` a naive time or later than now (by more than
            :data:`MAX_CLOCK_SKEW`).
        StoreError: the store failed (or cannot write: a read-only file or replica).
    """
    checked = check_used_ids(ids)
    owner = check_owner(user_id)
    now = moment(None)
    when = aware(at, "at") if at is not None else now
    if when - now > MAX_CLOCK_SKEW:
        raise InputError(
            f"mark_used(): at ({when.isoformat()}) is later than now "
            f"({now.isoformat(timespec='seconds')}): a use is recorded when it happened"
        )
    return store._mark_used(checked, owner, when) if checked else 0


def usage(store: StoreBackend, ids: Sequence[str], *, user_id: str) -> dict[str, Usage]:
    """The recorded use of ``user_id``'s memories ``ids``: a memory never used, or not
    that owner's, is absent.

    Raises:
        InputError: ``ids`` is not a list of non-empty strings, or ``user_id`` is bad.
    """
    checked = check_used_ids(ids)
    owner = check_owner(user_id)
    return store._usage(checked, owner) if checked else {}


def record_use(store: StoreBackend, ids: Sequence[str], *, user_id: str) -> int:
    """:meth:`mark_used` as reads call it (``context()``, ``get``): a store that cannot
    write (a read-only file, a replica) still answers the read; the failure is logged as
    a warning naming the store, and 0 returned."""
    try:
        return mark_used(store, ids, user_id=user_id)
    except StoreError as exc:
        _log.warning("%r could not record the use of %d memories: %s", store, len(ids), exc)
        return 0
