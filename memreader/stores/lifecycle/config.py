"""A store's life-cycle settings (:class:`LifecycleConfig`): the budget of active memories each
owner keeps, how many of them may be pinned, and how long a retired memory waits before
``maintain`` purges it; and what ``Memory`` does about the index when it opens its store
(:class:`IndexConfig`).

>>> budget = LifecycleConfig(max_active=1000)
>>> budget.watermark, budget.target, budget.pin_limit
(800, 600, 300)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, Literal

from pydantic import Field, model_validator

from memreader.config_model import ConfigModel
from memreader.errors import ConfigError

__all__ = ["MAX_PURGE_AFTER_DAYS", "IndexConfig", "LifecycleConfig", "check_lifecycle"]

#: The longest ``purge_after_days`` (100 years): a longer delay is ``null`` (never), said so, not
#: a date before year 1 that every ``maintain`` would fail to compute.
MAX_PURGE_AFTER_DAYS = 36_500.0


class LifecycleConfig(ConfigModel):
    """How memories fade within a budget (see the README's "The life of a memory").

    - ``max_active`` (default ``None``: no budget): the active memories one owner may keep.
    - ``trigger_ratio`` (0.8): an owner whose active memories pass ``max_active *
      trigger_ratio`` (the *watermark*) is brought back down.
    - ``expire_fraction`` (0.2): how far down: to ``max_active * (trigger_ratio -
      expire_fraction)`` (the *target*, at least 1), the lowest by priority
      (:mod:`~memreader.stores.lifecycle.priority`) expiring first; pinned memories never do.
      It must be below ``trigger_ratio``.
    - ``max_pinned`` (``None``: half the target, rounded down): the active memories one owner
      may pin while a budget is set, below the target, so pins never take every place and a
      new memory always has one (:attr:`pin_limit`).
    - ``purge_after_days`` (30; ``None``: never; at most :data:`MAX_PURGE_AFTER_DAYS`):
      ``maintain`` removes the rows of memories expired or superseded more than this long ago
      (until then they can be read, traced and restored).
    - ``repair_batch`` (256): memories ``maintain`` embeds again per transaction.

    Numbers are taken as numbers only: ``true`` or ``"10"`` for ``max_active`` is an error, not
    a budget of 1 or 10.
    """

    # strict: a YAML `max_active: true` would otherwise be a budget of 1, and "10" a silent 10.
    max_active: int | None = Field(default=None, ge=1, strict=True)
    trigger_ratio: float = Field(default=0.8, gt=0.0, le=1.0, strict=True)
    expire_fraction: float = Field(default=0.2, gt=0.0, lt=1.0, strict=True)
    max_pinned: int | None = Field(default=None, ge=0, strict=True)
    purge_after_days: float | None = Field(
        default=30.0, ge=0.0, le=MAX_PURGE_AFTER_DAYS, strict=True
    )
    repair_batch: int = Field(default=256, ge=1, le=10_000, strict=True)

    @model_validator(mode="after")
    def _fraction_below_trigger(self) -> LifecycleConfig:
        if self.expire_fraction >= self.trigger_ratio:
            raise ValueError(
                f"expire_fraction ({self.expire_fraction}) must be below trigger_ratio "
                f"({self.trigger_ratio}): the budget would expire every memory"
            )
        target = self.target
        if target is not None and target < 1:
            raise ValueError(
                f"max_active {self.max_active} x (trigger_ratio {self.trigger_ratio:g} - "
                f"expire_fraction {self.expire_fraction:g}) leaves a target of 0 active "
                "memories: the budget would expire every new memory; raise max_active"
            )
        if target is not None and self.max_pinned is not None and self.max_pinned >= target:
            raise ValueError(
                f"max_pinned ({self.max_pinned}) must be below the target ({target}): pins "
                "would take every place a new memory needs"
            )
        return self

    @property
    def watermark(self) -> int | None:
        """The most active memories an owner keeps before the budget acts (``None``: none)."""
        if self.max_active is None:
            return None
        return math.floor(self.max_active * self.trigger_ratio)

    @property
    def target(self) -> int | None:
        """How many active memories an owner over the watermark is brought down to."""
        if self.max_active is None:
            return None
        return math.floor(self.max_active * (self.trigger_ratio - self.expire_fraction))

    @property
    def pin_limit(self) -> int | None:
        """The most active memories an owner may pin (``None``: no budget, no limit):
        ``max_pinned``, else half the target."""
        target = self.target
        if target is None:
            return None
        return self.max_pinned if self.max_pinned is not None else target // 2


class IndexConfig(ConfigModel):
    """What ``Memory`` does when it opens its store and finds active memories its vector search
    cannot find (without a vector, or with another model's: see
    :mod:`memreader.stores.lifecycle.index_check`).

    >>> IndexConfig().on_open, IndexConfig(on_open="repair").repair_within_s
    ('warn', 60.0)
    """

    on_open: Literal["warn", "repair", "ignore"] = Field(
        default="warn",
        description="`warn`: log one warning per store naming the counts and the command "
        "that repairs them; `repair`: embed them again while opening (bounded by "
        "`repair_within_s`); `ignore`: count nothing",
    )
    repair_within_s: float = Field(
        default=60.0,
        gt=0.0,
        le=86_400.0,
        strict=True,
        description="the longest a repair on open may take; past it the open goes on and "
        "logs what is left for `memreader maintain`",
    )


def check_lifecycle(value: Any) -> LifecycleConfig | None:
    """``value`` (``None``, a :class:`LifecycleConfig` or its mapping) as a config.

    Raises:
        ConfigError: not a mapping, or a bad setting (the message names it).
    """
    if value is None or isinstance(value, LifecycleConfig):
        return value
    if not isinstance(value, Mapping):
        raise ConfigError(
            f"the store's lifecycle must be a mapping of settings, got {type(value).__name__}"
        )
    return LifecycleConfig.model_validate(dict(value))
