"""Readers from configs: :class:`MemReaderConfigFactory` (a reader ``backend`` name and its
validated config) and :class:`MemReaderFactory` (one cached reader per distinct config).

This is where names are looked up in the registries, so :mod:`memreader.config` stays a leaf.

>>> cfg = MemReaderConfigFactory(backend="simple_struct", config={"window": {"max_tokens": 512}})
>>> cfg.config.window.max_tokens
512
"""

from __future__ import annotations

import os
import threading
from collections.abc import Collection, Mapping
from functools import partial
from typing import Any, ClassVar, Protocol

from pydantic import BaseModel, Field, SerializeAsAny, ValidationError, model_validator

from memreader.config import BaseReaderConfig, cache_digest
from memreader.config_files import interpolate_env, read_yaml_config
from memreader.config_model import ConfigModel
from memreader.errors import ConfigError, config_error_from
from memreader.readers import READERS, BaseMemReader
from memreader.registry import Registry

__all__ = [
    "CONFIG_FORMATS",
    "ConfigFormat",
    "ConfigTranslation",
    "MemReaderConfigFactory",
    "MemReaderFactory",
]


class ConfigTranslation(Protocol):
    """Another library's reader config made memreader's, with a report of each setting."""

    @property
    def config(self) -> dict[str, Any]:
        """memreader's reader config mapping."""
        ...

    def log(self) -> None:
        """Log once what each setting became."""
        ...


class ConfigFormat(Protocol):
    """Another library's reader config shape, recognized and translated into memreader's.

    A format registers itself in :data:`CONFIG_FORMATS`; MemOS's
    (:mod:`memreader.memos.formats`) is loaded by name when a config is first validated, so
    this module never imports the package that knows MemOS.
    """

    def recognizes(self, config: Mapping[str, Any]) -> bool:
        """Whether the reader config ``config`` is in this format's shape."""
        ...

    def translate(self, config: Mapping[str, Any], *, fields: Collection[str]) -> ConfigTranslation:
        """memreader's config for ``config``; ``fields``: the reader config class's settings,
        taken as they are.

        Raises:
            MemReaderError: a setting memreader cannot honour (a typed error naming it).
        """
        ...


#: Reader config formats by name; the built-in ``memos`` is imported on first lookup.
CONFIG_FORMATS: Registry[ConfigFormat] = Registry(
    "reader config format", lazy={"memos": "memreader.memos.formats"}
)


def _format_of(config: Mapping[str, Any]) -> ConfigFormat | None:
    for name in CONFIG_FORMATS.names():
        fmt = CONFIG_FORMATS.get(name)
        if fmt.recognizes(config):
            return fmt
    return None


class MemReaderConfigFactory(ConfigModel):
    """A reader backend name and its validated config.

    A MemOS reader config (``llm: {backend, config: {model_name_or_path, ...}}``, ``chunker``...)
    is accepted too: translated by its :data:`CONFIG_FORMATS` entry
    (:mod:`memreader.memos.config_shapes`), with MemOS's defaults (filter and rewrite off),
    the report of what each setting became logged once.

    Dumps and reprs never show a secret: python-mode ``model_dump()`` keeps API keys, secret
    header values and a ``base_url`` with a password as ``SecretStr`` (validating such a dump
    again restores them, so ``MemReaderConfigFactory(**cfg.model_dump())`` round-trips), and
    JSON dumps show ``**********``. ``config`` is dumped as its actual (registered) class.
    """

    backend: str = "simple_struct"
    # SerializeAsAny: dumps (and so cache_key) include the fields a reader's own config class
    # adds to BaseReaderConfig.
    config: SerializeAsAny[BaseReaderConfig] = Field(default_factory=BaseReaderConfig)

    @model_validator(mode="before")
    @classmethod
    def _validate_backend_config(cls, data: Any) -> Any:
        if not isinstance(data, Mapping):
            return data
        backend = data.get("backend", "simple_struct")
        if not isinstance(backend, str):
            raise ValueError(f"backend must be a reader name, got {type(backend).__name__}")
        try:
            config_class = READERS.get(backend).config_class
        except ConfigError as exc:
            raise ValueError(str(exc)) from None
        raw = data.get("config") or {}
        fmt = _format_of(raw) if isinstance(raw, Mapping) else None
        if fmt is not None:
            # Another library's config (MemOS's nested LLM and embedder shapes): translated,
            # and the report of what each setting became logged once.
            translation = fmt.translate(raw, fields=config_class.model_fields)
            translation.log()
            raw = translation.config
        if isinstance(raw, BaseModel) and not isinstance(raw, config_class):
            raw = raw.model_dump()
        if not isinstance(raw, config_class):
            raw = config_class.model_validate(raw)
        return {**data, "backend": backend.strip().lower(), "config": raw}

    def __init__(self, **data: Any) -> None:
        try:
            BaseModel.__init__(self, **data)
            return
        except ValidationError as exc:
            error = config_error_from("reader config", exc)
        raise error from None

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> MemReaderConfigFactory:
        """Build from a plain mapping, interpolating ``${ENV}`` references in strings."""
        if not isinstance(data, Mapping):
            raise ConfigError(f"a reader config must be a mapping, got {type(data).__name__}")
        return cls(**interpolate_env(dict(data)))

    @classmethod
    def from_yaml(cls, path: str | os.PathLike[str]) -> MemReaderConfigFactory:
        """Load a YAML file (see ``configs/`` for examples and
        :func:`memreader.config_files.read_yaml_config` for the limits)."""
        return cls.from_dict(read_yaml_config(path))

    def cache_key(self) -> str:
        """A digest of the whole config of the actual reader class, secrets included (they are
        hashed, never shown)."""
        return cache_digest(self)

    def build(self) -> BaseMemReader:
        """A new reader for this config (uncached; see :class:`MemReaderFactory`)."""
        reader_class = READERS.get(self.backend)
        return reader_class(self.config)


class MemReaderFactory:
    """Builds readers from configs and caches them, one per full config (secrets included).

    A reader whose pipeline is changed in Python (``reader.pipeline.insert_after(...)``) leaves
    the cache at once: the next ``from_config`` with the same config builds a fresh reader with
    the config's own pipeline, so one caller's change never reaches another. (A pipeline
    declared in the config's ``pipeline`` section is part of the config, and so of the key.)

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
                reader = config.build()
                cls._cache[key] = reader
                reader.pipeline.on_change(partial(cls._forget, key, reader))
            return reader

    @classmethod
    def _forget(cls, key: str, reader: BaseMemReader, _changed: object = None) -> None:
        with cls._lock:
            if cls._cache.get(key) is reader:
                del cls._cache[key]

    @classmethod
    def clear_cache(cls) -> None:
        """Forget every cached reader (the next ``from_config`` builds anew)."""
        with cls._lock:
            cls._cache.clear()
