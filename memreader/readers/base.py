"""The reader protocol and registry."""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, TypeVar

if TYPE_CHECKING:
    from memreader.config import BaseReaderConfig
    from memreader.items import TextualMemoryItem
    from memreader.report import ReadReport

READERS: dict[str, type[BaseMemReader]] = {}
R = TypeVar("R", bound="type[BaseMemReader]")


def register_reader(name: str) -> Callable[[R], R]:
    """Register a reader class under ``name`` (used by ``MemReaderConfigFactory.backend``)."""

    def decorate(cls: R) -> R:
        READERS[name] = cls
        return cls

    return decorate


class BaseMemReader(ABC):
    """What every reader offers."""

    config_class: ClassVar[type[BaseReaderConfig]]

    @abstractmethod
    def get_memory(
        self,
        scene_data: Any,
        type: str = "chat",
        info: Mapping[str, Any] | None = None,
        mode: str = "fast",
        *,
        custom_tags: Sequence[str] | None = None,
        report: ReadReport | None = None,
    ) -> list[list[TextualMemoryItem]]:
        """Turn ``scene_data`` into memory items: one inner list per scene, in input order."""
