"""The base of every config model: unknown fields and non-finite numbers are refused, and an
invalid config raises :class:`~memreader.errors.ConfigError` naming each bad field, never the
values (they may be secrets)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError
from typing_extensions import Self

from memreader.errors import config_error_from

__all__ = ["ConfigModel"]


class ConfigModel(BaseModel):
    """A frozen pydantic model that raises :class:`~memreader.errors.ConfigError`."""

    # allow_inf_nan=False: ``backoff_max: .inf`` would pass ``ge=0`` and overflow at the first
    # retry; ``nan`` passes every comparison.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
            return
        except ValidationError as exc:
            error = config_error_from(type(self).__name__, exc)
        raise error from None

    @classmethod
    def model_validate(cls, obj: Any, *args: Any, **kwargs: Any) -> Self:
        """Validate ``obj``; raises :class:`ConfigError` instead of ``ValidationError``."""
        try:
            return super().model_validate(obj, *args, **kwargs)
        except ValidationError as exc:
            error = config_error_from(cls.__name__, exc)
        raise error from None
