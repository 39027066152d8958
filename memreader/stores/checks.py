"""The argument checks both stores share, and the search filters they check into: a leaf
module (no store module imported), so :mod:`memreader.stores.base` and each backend can use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from memreader.errors import ConfigError, InputError

__all__ = ["Filters", "aware", "check_option", "check_owner", "moment"]


@dataclass(frozen=True)
class Filters:
    """What a search keeps: memory types, a session, a time range (on ``valid_from``, else
    ``recorded_at``), whether retired memories count, and a category the memories are linked
    to. Each store turns it into its own SQL."""

    types: tuple[str, ...] | None = None
    session_id: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    include_inactive: bool = False
    category: str | None = None


def aware(value: datetime, what: str) -> datetime:
    """``value`` in UTC.

    Raises:
        InputError: ``value`` is not a timezone-aware datetime (``what`` names the argument).
    """
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InputError(f"{what} must be a timezone-aware datetime, got {value!r}")
    return value.astimezone(timezone.utc)


def moment(now: datetime | None) -> datetime:
    """A call's ``now`` in UTC (checked as :func:`aware`), the current time when ``None``."""
    return aware(now, "now") if now is not None else datetime.now(timezone.utc)


def check_owner(user_id: str) -> str:
    """``user_id``, checked.

    Raises:
        InputError: it is not a non-empty string.
    """
    if not isinstance(user_id, str) or not user_id.strip():
        raise InputError(f"user_id must be a non-empty string, got {user_id!r}")
    return user_id


def check_option(name: str, value: Any, low: float, high: float) -> float:
    """``value`` as a float in ``(low, high]``.

    Raises:
        ConfigError: it is not a number in that range (the message names the option).
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not low < value <= high:
        raise ConfigError(f"store option {name} must be a number in ({low}, {high}], got {value!r}")
    return float(value)
