"""``MemReaderFactory``: one reader per distinct config, shared and thread-safe."""

from __future__ import annotations

import threading
from typing import ClassVar

from memreader.config import MemReaderConfigFactory
from memreader.errors import ConfigError
from memreader.readers import READERS, BaseMemReader


class MemReaderFactory:
    """Builds readers from configs and caches them, one per full config (secrets included).

    >>> cfg = MemReaderConfigFactory(backend="simple_struct", config={})
    >>> MemReaderFactory.from_config(cfg) is MemReaderFactory.from_config(cfg)
    True
    """

    _cache: ClassVar[dict[str, BaseMemReader]] = {}
    _lock: ClassVar[threading.Lock] = threading.Lock()

    @classmethod
    def from_config(cls, config: MemReaderConfigFactory) -> BaseMemReader:
        """The cached reader for ``config``, built on first request."""
        if not isinstance(config, MemReaderConfigFactory):
            raise ConfigError(
                f"from_config() takes a MemReaderConfigFactory, got {type(config).__name__}"
            )
        key = config.cache_key()
        with cls._lock:
            reader = cls._cache.get(key)
            if reader is None:
                reader_class = READERS[config.backend]
                reader = reader_class(config.config)  # type: ignore[call-arg]
                cls._cache[key] = reader
            return reader

    @classmethod
    def clear_cache(cls) -> None:
        """Forget every cached reader (the next ``from_config`` builds anew)."""
        with cls._lock:
            cls._cache.clear()
