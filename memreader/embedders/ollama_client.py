"""Embeddings from an Ollama server (``POST /api/embed``), via the official ``ollama`` client.

Tokens are counted in cl100k: Ollama does not expose its models' tokenizers, so this is an
estimate. Requests are sent with ``truncate=False`` so a text that the server's model cannot read
whole is an error rather than a silently shortened vector; if that happens, lower
``max_input_tokens``. The ollama client does not retry, so this module retries connection
errors, timeouts, 429 and 5xx answers and replies that cannot be read ``max_retries`` times with
exponential backoff. Requests go through memreader's HTTP client (:mod:`memreader.transport`):
``timeout`` is a deadline for each whole request and the answer is capped at
:attr:`OllamaEmbedder.max_response_bytes`.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from memreader.embedders._tiktoken import count_cl100k, tiktoken_token_cuts
from memreader.embedders.base import (
    PoolingEmbedder,
    RequestFailure,
    redact_url,
    register_embedder,
)
from memreader.embedders.config import OllamaEmbedderConfig
from memreader.errors import EmbeddingError
from memreader.transport import deadline, deadline_transport, http_lib, split_credentials

__all__ = ["OllamaEmbedder"]

logger = logging.getLogger(__name__)


@register_embedder("ollama")
class OllamaEmbedder(PoolingEmbedder):
    """Embeds through an Ollama server; ``name`` is ``"ollama:<model>"``.

    The dimension is learnt from the first response. Ollama returns unit-length vectors, and
    pooled vectors are re-normalised.
    """

    config_class = OllamaEmbedderConfig

    #: The largest response body read (see :class:`~memreader.embedders.OpenAIEmbedder`).
    max_response_bytes: int = 128 * 1024 * 1024

    def __init__(self, config: OllamaEmbedderConfig | None = None) -> None:
        config = config if config is not None else OllamaEmbedderConfig()
        super().__init__(
            name=f"ollama:{config.model}",
            max_input_tokens=config.max_input_tokens,
            batch_size=config.batch_size,
            normalize=True,
        )
        self.config = config
        self.host = redact_url(config.host)
        try:
            import httpx
            import ollama
        except ImportError as e:  # pragma: no cover - ollama is a core dependency
            raise EmbeddingError("the ollama embedder needs the ollama package") from e
        self._ollama = ollama
        self._httpx = httpx
        host, credentials = split_credentials(config.host)
        kwargs: dict[str, Any] = {}
        if credentials is not None:
            self._secrets.extend(s for s in (credentials[1] or credentials[0],) if s)
            kwargs["auth"] = httpx.BasicAuth(*credentials)
        self._client = ollama.Client(
            host=host,
            timeout=config.timeout,
            transport=deadline_transport(
                http_lib("httpx"),
                timeout=config.timeout,
                max_response_bytes=self.max_response_bytes,
            ),
            **kwargs,
        )

    def count_tokens(self, text: str) -> int:
        """Number of cl100k tokens of ``text`` (an estimate of the server model's count)."""
        return count_cl100k(text)

    def _token_cuts(self, text: str) -> Sequence[int | None]:
        return tiktoken_token_cuts(text)

    def request_failed(self, detail: str) -> EmbeddingError:
        """An error naming the model and host."""
        return EmbeddingError(
            f"ollama embedding request failed (model {self.config.model!r}, "
            f"host {self.host}): {detail}"
        )

    def classify_failure(self, exc: Exception) -> RequestFailure:
        """The ollama client's and httpx's errors, then the generic reply checks."""
        ollama, httpx = self._ollama, self._httpx
        if isinstance(exc, ollama.ResponseError):
            status = exc.status_code
            return RequestFailure(
                f"HTTP {status}: {exc.error}", retryable=status == 429 or status >= 500
            )
        if isinstance(exc, httpx.TimeoutException):
            return RequestFailure(
                f"timed out: no complete answer within timeout={self.config.timeout:g}s",
                retryable=True,
            )
        if isinstance(exc, (ConnectionError, httpx.TransportError)):
            return RequestFailure(f"connection failed: {type(exc).__name__}: {exc}", True)
        if isinstance(exc, (ollama.RequestError, httpx.HTTPError)):
            return RequestFailure(f"{type(exc).__name__}: {exc}", retryable=False)
        generic = super().classify_failure(exc)
        if generic.retryable or not isinstance(exc, (TypeError, ValueError)):
            return generic
        # ollama builds its response model from the reply: a JSON list, string or null, or
        # missing fields, fail there (TypeError, pydantic's ValidationError).
        return RequestFailure(
            f"the server's answer is not an Ollama embed response ({type(exc).__name__})",
            retryable=True,
        )

    def _embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        def send() -> Sequence[Sequence[float]]:
            with deadline(self.config.timeout):
                response = self._client.embed(model=self.config.model, input=texts, truncate=False)
            embeddings = getattr(response, "embeddings", None)
            if not isinstance(embeddings, Sequence):
                raise self.request_failed("malformed response: no embeddings")
            if len(embeddings) != len(texts):
                raise self.request_failed(
                    f"the response has {len(embeddings)} vectors for {len(texts)} inputs"
                )
            return embeddings

        return self.request_with_retries(send, self.config.max_retries)
