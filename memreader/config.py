"""Configuration: pydantic models, YAML loading and ``${ENV}`` interpolation.

A reader is configured by a :class:`MemReaderConfigFactory`: a registered ``backend`` name and
its ``config``, validated against that backend's config model. Secrets are ``SecretStr`` and are
never printed.

>>> cfg = MemReaderConfigFactory(backend="simple_struct", config={"window": {"max_tokens": 512}})
>>> cfg.config.window.max_tokens
512
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from memreader.embedders.config import EmbedderConfig
from memreader.errors import ConfigError, config_error_from
from memreader.llms.config import LLMConfig, LLMSlots


class WindowConfig(BaseModel):
    """How scenes are cut into windows (token counts in ``tokenizer``'s tokens)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_tokens: int = Field(default=1024, ge=64)
    overlap_tokens: int = Field(default=200, ge=0)
    tokenizer: str = "cl100k_base"
    # How a message or document too long for one window is cut: "recursive" prefers paragraph,
    # sentence, then word boundaries (chonkie's RecursiveChunker); "tokens" cuts at token
    # boundaries, preferring a newline or a space. Both keep exact spans and the budget.
    splitter: Literal["recursive", "tokens"] = "recursive"

    @model_validator(mode="after")
    def _overlap_fits(self) -> WindowConfig:
        if self.overlap_tokens > self.max_tokens // 2:
            raise ValueError(
                f"overlap_tokens ({self.overlap_tokens}) must be at most half of max_tokens "
                f"({self.max_tokens})"
            )
        return self


class FineConfig(BaseModel):
    """How fine mode checks what the LLM extracted."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    hallucination_filter: bool = True
    rewrite: Literal["all", "user_only", "off"] = "all"
    # A window the model finds nothing in: keep it as a raw item ("fallback") or only report it.
    empty_window: Literal["fallback", "drop"] = "fallback"
    language: Literal["auto", "en", "zh"] = "auto"


class BaseReaderConfig(BaseModel):
    """Settings every reader shares.

    The LLM slots fall back: ``general_llm`` -> ``llm``; ``image_parser_llm``,
    ``document_parser_llm`` and ``preference_extractor_llm`` -> ``general_llm``.
    ``llm_max_concurrency`` bounds the reader's LLM requests in flight, all slots together.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    # None: items are not embedded (for stores that embed on their own).
    embedder: EmbedderConfig | None = Field(default_factory=EmbedderConfig)
    window: WindowConfig = Field(default_factory=WindowConfig)
    embedding_cache_size: int = Field(default=10_000, ge=1)
    allow_local_paths: bool = True
    max_file_bytes: int = Field(default=50 * 1024 * 1024, gt=0)
    llm: LLMConfig | None = None
    general_llm: LLMConfig | None = None
    image_parser_llm: LLMConfig | None = None
    document_parser_llm: LLMConfig | None = None
    preference_extractor_llm: LLMConfig | None = None
    llm_max_concurrency: int = Field(default=4, ge=1, le=1024)
    fine: FineConfig = Field(default_factory=FineConfig)

    def llm_slots(self) -> LLMSlots:
        """The LLM slots of this config, with their shared concurrency budget."""
        return LLMSlots(
            llm=self.llm,
            general_llm=self.general_llm,
            image_parser_llm=self.image_parser_llm,
            document_parser_llm=self.document_parser_llm,
            preference_extractor_llm=self.preference_extractor_llm,
            max_concurrency=self.llm_max_concurrency,
        )


class SimpleStructMemReaderConfig(BaseReaderConfig):
    """The simple structured reader's settings."""


class MemReaderConfigFactory(BaseModel):
    """A reader backend name and its validated config."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    backend: str = "simple_struct"
    config: BaseReaderConfig = Field(default_factory=SimpleStructMemReaderConfig)

    @model_validator(mode="before")
    @classmethod
    def _validate_backend_config(cls, data: Any) -> Any:
        from memreader.readers import READERS

        if not isinstance(data, Mapping):
            return data
        backend = data.get("backend", "simple_struct")
        if backend not in READERS:
            raise ValueError(f"unknown reader backend {backend!r}; known: {sorted(READERS)}")
        config_class = READERS[backend].config_class
        raw = data.get("config") or {}
        if isinstance(raw, BaseModel) and not isinstance(raw, config_class):
            raw = raw.model_dump()
        if not isinstance(raw, config_class):
            raw = config_class.model_validate(raw)
        return {**data, "backend": backend, "config": raw}

    def __init__(self, **data: Any) -> None:
        try:
            super().__init__(**data)
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
        """Load a YAML file (see ``configs/`` for examples)."""
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ConfigError(f"cannot read config {os.fspath(path)!r}: {exc.strerror}") from exc
        try:
            data = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise ConfigError(f"config {os.fspath(path)!r} is not valid YAML: {exc}") from exc
        return cls.from_dict(data or {})

    def cache_key(self) -> str:
        """A digest of the full config, secrets included (they are hashed, never shown)."""
        payload = json.dumps(self.model_dump(), sort_keys=True, default=_reveal)
        return hashlib.sha256(payload.encode()).hexdigest()


def _reveal(value: Any) -> Any:
    if isinstance(value, SecretStr):
        return "secret:" + hashlib.sha256(value.get_secret_value().encode()).hexdigest()
    if isinstance(value, BaseModel):
        return value.model_dump()
    return str(value)


_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def interpolate_env(value: Any, path: str = "config") -> Any:
    """Replace ``${NAME}`` and ``${NAME:-default}`` in every string of ``value``.

    >>> os.environ["MEMREADER_DOCTEST"] = "x"
    >>> interpolate_env({"a": ["${MEMREADER_DOCTEST}-${NOPE_NOT_SET:-d}"]})
    {'a': ['x-d']}
    """
    if isinstance(value, str):

        def substitute(match: re.Match[str]) -> str:
            name, default = match.group(1), match.group(2)
            if name in os.environ:
                return os.environ[name]
            if default is not None:
                return default
            raise ConfigError(f"{path}: environment variable {name} is not set")

        return _ENV.sub(substitute, value)
    if isinstance(value, Mapping):
        return {k: interpolate_env(v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate_env(v, f"{path}[{i}]") for i, v in enumerate(value)]
    return value
