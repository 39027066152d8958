"""The argument checks both stores share, and what they check into (the source a forget
names; a search's filters are :mod:`memreader.stores.filters`): a leaf module (no store module
imported), so :mod:`memreader.stores.base` and each backend can use it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from memreader.errors import ConfigError, InputError, MemReaderError
from memreader.items import MEMORY_TYPES

__all__ = [
    "MAX_K",
    "SourceSelector",
    "aware",
    "check_k",
    "check_memory_id",
    "check_option",
    "check_owner",
    "check_seen",
    "check_session",
    "check_text_budget",
    "check_types",
    "check_url",
    "moment",
    "storable",
]

#: The most hits one search returns: each hit asks for 5 candidates of both lists, so an
#: unbounded ``k`` (10**6 took 16-26 s and 1.3 GB) is refused rather than served; the service's
#: ``k`` has the same cap.
MAX_K = 1000


def check_min_score(value: object) -> float | None:
    """``value`` as a search's ``min_score``: ``None``, or a number in [0, 1].

    >>> check_min_score(None), check_min_score(0.25)
    (None, 0.25)

    Raises:
        InputError: it is neither (the message names the argument).
    """
    if value is None:
        return None
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0.0 <= float(value) <= 1.0
    ):
        raise InputError(f"min_score must be a number in [0, 1] or null, got {value!r}")
    return float(value)


def aware(value: datetime, what: str) -> datetime:
    """``value`` in UTC.

    Raises:
        InputError: ``value`` is not a timezone-aware datetime, or is outside years 1 to 9999
            in UTC (``what`` names the argument).
    """
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InputError(f"{what} must be a timezone-aware datetime, got {value!r}")
    try:
        return value.astimezone(timezone.utc)
    except OverflowError:  # 9999-12-31 23:00-05:00 is in year 10000 in UTC
        raise InputError(
            f"{what} ({value.isoformat()}) is out of range: in UTC it falls outside years 1 to 9999"
        ) from None


def moment(now: datetime | None) -> datetime:
    """A call's ``now`` in UTC (checked as :func:`aware`), the current time when ``None``."""
    return aware(now, "now") if now is not None else datetime.now(timezone.utc)


def storable(value: str, what: str) -> str:
    """``value``, a string both stores can keep and compare: PostgreSQL refuses a NUL
    character in text (SQLite keeps it), so it is refused on both, as bad input rather than a
    failing store.

    >>> storable("team/ana", "user_id")
    'team/ana'
    >>> storable("ana\\x00", "user_id")
    Traceback (most recent call last):
    memreader.errors.InputError: user_id holds a NUL character (at 3), which a store cannot keep

    Raises:
        InputError: it holds one (the message names ``what`` and where).
    """
    at = value.find("\x00")
    if at >= 0:
        raise InputError(f"{what} holds a NUL character (at {at}), which a store cannot keep")
    return value


@dataclass(frozen=True)
class SourceSelector:
    """Which source :meth:`MemoryStore.forget` forgets: exactly one of a document's
    ``doc_path``, a ``session_id``, a ``message_id`` or a batch ``input_key``."""

    doc_path: str | None = None
    session_id: str | None = None
    message_id: str | None = None
    input_key: str | None = None

    def __post_init__(self) -> None:
        given = {
            "doc_path": self.doc_path,
            "session_id": self.session_id,
            "message_id": self.message_id,
            "input_key": self.input_key,
        }
        for name, value in given.items():
            if value is not None and not isinstance(value, str):
                raise InputError(f"a source's {name} must be a string, got {value!r}")
            if value:
                storable(value, f"a source's {name}")
        if sum(1 for value in given.values() if value) != 1:
            raise InputError(
                "name exactly one source: doc_path, session_id, message_id or input_key"
            )


def check_owner(user_id: str) -> str:
    """``user_id``, checked.

    Raises:
        InputError: it is not a non-empty string, or holds a NUL.
    """
    if not isinstance(user_id, str) or not user_id.strip():
        raise InputError(f"user_id must be a non-empty string, got {user_id!r}")
    return storable(user_id, "user_id")


def check_option(name: str, value: Any, low: float, high: float) -> float:
    """``value`` as a float in ``(low, high]``.

    Raises:
        ConfigError: it is not a number in that range (the message names the option).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value <= high:
        raise ConfigError(f"store option {name} must be a number in ({low}, {high}], got {value!r}")
    return float(value)


def check_k(k: Any) -> int:
    """``k``, the number of hits a search returns.

    Raises:
        InputError: it is not an integer in ``[1, MAX_K]`` (the message names the cap).
    """
    if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_K:
        raise InputError(f"k must be a positive integer of at most {MAX_K}, got {k!r}")
    return k


def check_types(types: Any) -> tuple[str, ...] | None:
    """``types`` (``None`` or a list of memory type names) as a tuple.

    Raises:
        InputError: it is not a list, or one of its entries is not a memory type's name
            (the message names the entry and lists the known ones).
    """
    if types is None:
        return None
    if isinstance(types, (str, bytes)) or not isinstance(types, Sequence):
        raise InputError(f"types must be a list of memory types, got {types!r}")
    for index, name in enumerate(types):
        if not isinstance(name, str) or name not in MEMORY_TYPES:
            raise InputError(
                f"types[{index}] must be a memory type ({', '.join(MEMORY_TYPES)}), got {name!r}"
            )
    return tuple(types)


def check_session(session_id: Any) -> str | None:
    """``session_id``, ``None`` or a non-empty string.

    Raises:
        InputError: it is something else.
    """
    if session_id is not None and (not isinstance(session_id, str) or not session_id):
        raise InputError(f"session_id must be a non-empty string, got {session_id!r}")
    return None if session_id is None else storable(session_id, "session_id")


def check_memory_id(memory_id: Any, what: str = "memory_id") -> str:
    """``memory_id``, a non-empty string (``what`` names the argument).

    Raises:
        InputError: it is not one.
    """
    if not isinstance(memory_id, str) or not memory_id:
        raise InputError(f"{what} must be a non-empty string, got {memory_id!r}")
    return storable(memory_id, what)


def check_seen(seen: Any) -> dict[str, set[str]]:
    """``retire_unseen``'s ``seen``: owner -> the memory ids seen, as sets.

    Raises:
        InputError: it is not a mapping of non-empty owner strings to collections of ids.
    """
    if not isinstance(seen, Mapping):
        raise InputError(
            f"seen must be a mapping of owner -> memory ids, got {type(seen).__name__}"
        )
    checked: dict[str, set[str]] = {}
    for owner, ids in seen.items():
        check_owner(owner)
        if isinstance(ids, (str, bytes)) or not isinstance(ids, Collection):
            raise InputError(f"seen[{owner!r}] must be a collection of memory ids, got {ids!r}")
        checked[owner] = {check_memory_id(i, f"seen[{owner!r}] entry") for i in ids}
    return checked


def check_url(url: Any) -> str:
    """A store URL that can reach a driver.

    Raises:
        ConfigError: it is not a string, or holds a NUL or another control character (the
            drivers raise a bare ``ValueError`` on a NUL).
    """
    if not isinstance(url, str):
        raise ConfigError(f"a store URL must be a string, got {type(url).__name__}")
    bad = next((c for c in url if ord(c) < 32 or ord(c) == 127), None)
    if bad is not None:
        raise ConfigError(
            f"a store URL must not hold control characters, got {bad!a} at "
            f"position {url.index(bad)}"
        )
    return url


def check_text_budget(value: Any) -> int | None:
    """The ``text_budget`` store option: ``None`` (the store's default) or a positive integer.

    Raises:
        ConfigError: it is something else.
    """
    if value is not None and (
        isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 10_000_000
    ):
        raise ConfigError(
            f"store option text_budget must be an integer in [1, 10000000], got {value!r}"
        )
    return value


#: The largest heat weight: a memory at full heat then scores at most twice its relevance.
MAX_HEAT_WEIGHT = 1.0


def check_heat_weight(
    value: Any, what: str = "heat_weight", error: type[MemReaderError] = ConfigError
) -> float:
    """``value`` as a heat weight, a number in ``[0, MAX_HEAT_WEIGHT]``.

    Raises:
        ConfigError: it is not (the message names ``what``), or ``error`` when given (a
            search's argument is an :class:`~memreader.errors.InputError`).
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not 0.0 <= value <= MAX_HEAT_WEIGHT
    ):
        raise error(f"{what} must be a number in [0, {MAX_HEAT_WEIGHT:g}], got {value!r}")
    return float(value)
