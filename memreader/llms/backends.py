"""LLM backends by name, on the one :class:`~memreader.registry.Registry`.

A backend is a factory (usually a :class:`~memreader.llms.base.BaseLLMClient` subclass) called
as ``factory(config, limiter=..., meter=..., hooks=...)``. The built-ins (``openai``,
``ollama``, and the ``scripted`` test double of :mod:`memreader.testing`) are imported on first
use; plugins register theirs with :func:`register_llm` or through the ``memreader.plugins``
entry-point group.

This module is a leaf (it imports neither the clients nor their config), so
:class:`~memreader.llms.config.LLMConfig` can check a backend name here without a cycle.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from memreader.errors import ConfigError
from memreader.registry import Registry

__all__ = ["LLM_BACKENDS", "available_llm_backends", "check_llm_backend", "register_llm"]

F = TypeVar("F", bound=Callable[..., Any])

#: Backend factories by name (lower-case).
LLM_BACKENDS: Registry[Callable[..., Any]] = Registry(
    "LLM backend",
    lazy={
        "openai": "memreader.llms.openai_compat",
        "ollama": "memreader.llms.ollama_client",
        "scripted": "memreader.testing",
    },
)


def register_llm(name: str) -> Callable[[F], F]:
    """Register a backend factory under ``name``; use as a class decorator.

    The factory is called as ``factory(config, limiter=..., meter=..., hooks=...)`` and must
    return an :class:`~memreader.llms.base.LLMClient`. A class with a ``backend`` attribute gets
    the registered name there.

    Raises:
        RegistryError: ``name`` is registered to a different factory (the same one again is a
            no-op).
    """

    def decorator(factory: F) -> F:
        LLM_BACKENDS.register(name, factory)
        if isinstance(factory, type) and hasattr(factory, "backend"):
            factory.backend = name.strip().lower()
        return factory

    return decorator


def available_llm_backends() -> list[str]:
    """Names accepted as ``LLMConfig.backend`` (built-ins, registered ones and plugins')."""
    return LLM_BACKENDS.names()


def check_llm_backend(name: str) -> str:
    """``name`` as the registry stores it (lower-case), without importing the backend.

    Raises:
        ConfigError: no backend of that name is known (the message lists the known ones).
    """
    key = name.strip().lower()
    known = LLM_BACKENDS.names()
    if key not in known:
        raise ConfigError(f"unknown LLM backend {name!r}; known: {', '.join(known)}")
    return key
