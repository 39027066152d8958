"""LLM interceptors a config may name: only the registered ones, never a Python path.

A reader config lists them as ``llm_interceptors: [{name: rate_limit, requests_per_minute:
60}]``: ``name`` picks a registered interceptor class and the other keys are its settings,
checked by its ``Settings`` model when the config is read (a wrong key or value is a
:class:`~memreader.errors.ConfigError` then, not at the first call). A config is content, not
the operator: it can switch on what code registered, and nothing else. A plugin registers
its own with :func:`register_llm_interceptor`.

>>> spec = InterceptorSpec(name="rate_limit", requests_per_minute=60)
>>> spec.settings()
{'requests_per_minute': 60}
>>> try:
...     InterceptorSpec(name="os.system")
... except ConfigError as exc:
...     refused = str(exc).split(", ", 1)[1]
>>> refused
"unknown LLM interceptor 'os.system'; known: rate_limit"
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pydantic import ConfigDict, Field, model_validator

from memreader.config_model import ConfigModel
from memreader.errors import ConfigError  # noqa: F401 - the doctest's
from memreader.registry import Registry

__all__ = [
    "LLM_INTERCEPTORS",
    "ConfiguredInterceptor",
    "InterceptorSpec",
    "register_llm_interceptor",
]


class ConfiguredInterceptor(Protocol):
    """What a registered interceptor class provides: its settings model, and a constructor
    from checked settings."""

    Settings: type[ConfigModel]

    @classmethod
    def from_settings(cls, settings: Any) -> object:
        """The interceptor ``settings`` describe."""
        ...


#: Interceptor classes by the name a config gives them.
LLM_INTERCEPTORS: Registry[Any] = Registry(
    "LLM interceptor", lazy={"rate_limit": "memreader.llms.rate_limit"}
)

C = TypeVar("C", bound=Callable[..., Any])


def register_llm_interceptor(name: str) -> Callable[[C], C]:
    """Register an interceptor class under ``name``, for configs to name; use as a class
    decorator. The class needs a ``Settings`` config model and a ``from_settings``
    classmethod (:class:`ConfiguredInterceptor`)."""

    def decorator(cls: C) -> C:
        LLM_INTERCEPTORS.register(name, cls)
        return cls

    return decorator


class InterceptorSpec(ConfigModel):
    """One entry of ``llm_interceptors``: ``name`` (a registered interceptor) and its settings
    as the other keys."""

    model_config = ConfigDict(extra="allow", frozen=True, allow_inf_nan=False)

    name: str = Field(min_length=1, description="A registered LLM interceptor (rate_limit).")

    @model_validator(mode="after")
    def _check_settings(self) -> InterceptorSpec:
        kind: ConfiguredInterceptor = LLM_INTERCEPTORS.get(self.name)
        kind.Settings.model_validate(self.settings())
        return self

    def settings(self) -> dict[str, Any]:
        """The settings (every key but ``name``)."""
        return dict(self.model_extra or {})

    def build(self) -> object:
        """A new interceptor of these settings."""
        kind: ConfiguredInterceptor = LLM_INTERCEPTORS.get(self.name)
        return kind.from_settings(kind.Settings.model_validate(self.settings()))
