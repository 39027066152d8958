"""A store's life-cycle settings (:class:`LifecycleConfig`): the budget of active memories each
owner keeps, and how long a retired memory waits before ``maintain`` purges it.

>>> LifecycleConfig(max_active=1000).watermark, LifecycleConfig(max_active=1000).target
(800, 600)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pydantic import Field, model_validator

from memreader.config_model import ConfigModel
from memreader.errors import ConfigError

__all__ = ["LifecycleConfig", "check_lifecycle"]


class LifecycleConfig(ConfigModel):
    """How memories fade within a budget (see the README's "The life of a memory").

    - ``max_active`` (default ``None``: no budget): the active memories one owner may keep.
    - ``trigger_ratio`` (0.8): an owner whose active memories pass ``max_active *
      trigger_ratio`` (the *watermark*) is brought back down.
    - ``expire_fraction`` (0.2): how far down: to ``max_active * (trigger_ratio -
      expire_fraction)`` (the *target*), the lowest by priority
      (:mod:`~memreader.stores.lifecycle.priority`) expiring first; pinned memories never do.
      It must be below ``trigger_ratio``.
    - ``purge_after_days`` (30; ``None``: never): ``maintain`` removes the rows of memories
      expired or superseded more than this long ago (until then they can be read, traced and
      restored).
    - ``repair_batch`` (256): memories ``maintain`` embeds again per transaction.
    """

    max_active: int | None = Field(default=None, ge=1)
    trigger_ratio: float = Field(default=0.8, gt=0.0, le=1.0)
    expire_fraction: float = Field(default=0.2, gt=0.0, lt=1.0)
    purge_after_days: float | None = Field(default=30.0, ge=0.0)
    repair_batch: int = Field(default=256, ge=1, le=10_000)

    @model_validator(mode="after")
    def _fraction_below_trigger(self) -> LifecycleConfig:
        if self.expire_fraction >= self.trigger_ratio:
            raise ValueError(
                f"expire_fraction ({self.expire_fraction}) must be below trigger_ratio "
                f"({self.trigger_ratio}): the budget would expire every memory"
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
