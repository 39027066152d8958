"""Embedder backends by name, on the one :class:`~memreader.registry.Registry`.

A backend is a class with a ``config_class`` (a pydantic model for its settings) that is built as
``cls(config)``; its instances satisfy :class:`~memreader.embedders.base.Embedder`. The built-ins
(``local``, ``sentence_transformers``, ``openai``, ``ollama``, and the ``hash`` test double of
:mod:`memreader.testing`) are imported on first use; plugins register theirs with
:func:`register_embedder` or through the ``memreader.plugins`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from pydantic import BaseModel

from memreader.registry import Registry, RegistryError

__all__ = ["EMBEDDERS", "register_embedder"]

#: Embedder backend classes by name (lower-case).
EMBEDDERS: Registry[type[Any]] = Registry(
    "embedder backend",
    lazy={
        "local": "memreader.embedders.local",
        "static": "memreader.embedders.static",
        "sentence_transformers": "memreader.embedders.sentence_transformers_backend",
        "openai": "memreader.embedders.openai_compat",
        "ollama": "memreader.embedders.ollama_client",
        "hash": "memreader.testing",
    },
)

_T = TypeVar("_T", bound=type[Any])


def register_embedder(name: str) -> Callable[[_T], _T]:
    """Class decorator registering an embedder backend under ``name``.

    The class needs a ``config_class`` attribute (a pydantic model) and must be constructible as
    ``cls(config)`` with an instance of it; instances must satisfy
    :class:`~memreader.embedders.base.Embedder`.

    Raises:
        RegistryError: the class has no pydantic ``config_class``, or ``name`` is registered to
            a different class (the same class again is a no-op).
    """

    def decorator(cls: _T) -> _T:
        config_class = getattr(cls, "config_class", None)
        if not (isinstance(config_class, type) and issubclass(config_class, BaseModel)):
            raise RegistryError(
                f"embedder backend {name!r} ({cls.__module__}.{cls.__qualname__}) needs a "
                "pydantic `config_class` attribute"
            )
        EMBEDDERS.register(name, cls)
        return cls

    return decorator
