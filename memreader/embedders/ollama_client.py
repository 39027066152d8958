"""Embeddings from an Ollama server (``POST /api/embed``), via the official ``ollama`` client.

Tokens are counted in cl100k: Ollama does not expose its models' tokenizers, so this is an
estimate. Requests are sent with ``truncate=False`` so a text that the server's model cannot read
whole is an error rather than a silently shortened vector; if that happens, lower
``max_input_tokens``. The ollama client does not retry, so this module retries connection
errors, timeouts, 429 and 5xx answers ``max_retries`` times with exponential backoff.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from memreader.embedders._tiktoken import count_cl100k, tiktoken_token_cuts
from memreader.embedders.base import PoolingEmbedder, redact_url, register_embedder
from memreader.embedders.config import OllamaEmbedderConfig
from memreader.errors import EmbeddingError

__all__ = ["OllamaEmbedder"]

logger = logging.getLogger(__name__)

_MAX_DETAIL = 500


@register_embedder("ollama")
class OllamaEmbedder(PoolingEmbedder):
    """Embeds through an Ollama server; ``name`` is ``"ollama:<model>"``.

    The dimension is learnt from the first response. Ollama returns unit-length vectors, and
    pooled vectors are re-normalised.
    """

    config_class = OllamaEmbedderConfig

    retry_backoff_s: float = 0.5
    """First retry delay; doubles per attempt, capped at ``retry_backoff_max_s``."""
    retry_backoff_max_s: float = 8.0

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
        self._client = ollama.Client(host=config.host, timeout=config.timeout)

    def count_tokens(self, text: str) -> int:
        """Number of cl100k tokens of ``text`` (an estimate of the server model's count)."""
        return count_cl100k(text)

    def _token_cuts(self, text: str) -> Sequence[int | None]:
        return tiktoken_token_cuts(text)

    def _fail(self, detail: str) -> EmbeddingError:
        if len(detail) > _MAX_DETAIL:
            detail = detail[:_MAX_DETAIL] + "..."
        return EmbeddingError(
            f"ollama embedding request failed (model {self.config.model!r}, "
            f"host {self.host}): {detail}"
        )

    def _request(self, texts: list[str]) -> Any:
        ollama, httpx = self._ollama, self._httpx
        attempt = 0
        while True:
            try:
                return self._client.embed(model=self.config.model, input=texts, truncate=False)
            except ollama.ResponseError as e:
                retryable = e.status_code == 429 or e.status_code >= 500
                error: Exception = e
                detail = f"HTTP {e.status_code}: {e.error}"
            except (ConnectionError, httpx.TransportError) as e:
                retryable = True
                error = e
                detail = f"{type(e).__name__}: {e}"
            except (ollama.RequestError, httpx.HTTPError, ValueError) as e:
                raise self._fail(f"{type(e).__name__}: {e}") from e
            if not retryable or attempt >= self.config.max_retries:
                raise self._fail(detail) from error
            delay = min(self.retry_backoff_s * 2**attempt, self.retry_backoff_max_s)
            attempt += 1
            logger.warning(
                "%s: %s; retry %d/%d in %.1fs",
                self.name,
                detail,
                attempt,
                self.config.max_retries,
                delay,
            )
            time.sleep(delay)

    def _embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        response = self._request(texts)
        embeddings = getattr(response, "embeddings", None)
        if not isinstance(embeddings, Sequence):
            raise self._fail("malformed response: no embeddings")
        if len(embeddings) != len(texts):
            raise self._fail(f"the response has {len(embeddings)} vectors for {len(texts)} inputs")
        return embeddings
