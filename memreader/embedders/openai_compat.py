"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint, via the official client.

Works with OpenAI and with local servers that speak the same API (llama.cpp, vLLM, LM Studio,
...). Tokens are counted in cl100k (the tokenizer of OpenAI's embedding models; for other
servers an estimate, so set ``max_input_tokens`` with some margin there). ``encoding_format`` is
always ``"float"``, which every compatible server understands. Retries with backoff and timeouts
are the openai client's (``max_retries``, ``timeout``). Errors become :class:`EmbeddingError`
naming the model and base URL, never the API key.
"""

from __future__ import annotations

import base64
import logging
import struct
from collections.abc import Sequence
from typing import Any

from memreader.embedders._tiktoken import count_cl100k, tiktoken_token_cuts
from memreader.embedders.base import PoolingEmbedder, redact_url, register_embedder
from memreader.embedders.config import OpenAIEmbedderConfig
from memreader.errors import EmbeddingError

__all__ = ["OpenAIEmbedder"]

logger = logging.getLogger(__name__)

_MAX_DETAIL = 500


@register_embedder("openai")
class OpenAIEmbedder(PoolingEmbedder):
    """Embeds through an OpenAI-compatible endpoint.

    ``name`` is ``"openai:<model>"``, with ``":<dimensions>d"`` appended when ``dimensions`` is
    configured. The dimension is the configured one or learnt from the first response.
    Vectors are treated as unit length (OpenAI's contract): pooled vectors are re-normalised.
    """

    config_class = OpenAIEmbedderConfig

    def __init__(self, config: OpenAIEmbedderConfig) -> None:
        suffix = f":{config.dimensions}d" if config.dimensions is not None else ""
        super().__init__(
            name=f"openai:{config.model}{suffix}",
            max_input_tokens=config.max_input_tokens,
            batch_size=config.batch_size,
            normalize=True,
            dimension=config.dimensions,
        )
        self.config = config
        try:
            import openai
        except ImportError as e:  # pragma: no cover - openai is a core dependency
            raise EmbeddingError("the openai embedder needs the openai package") from e
        self._openai = openai
        api_key = config.api_key.get_secret_value() if config.api_key is not None else None
        self._api_key = api_key
        self._client = openai.OpenAI(
            base_url=config.base_url,
            api_key=api_key or "EMPTY",
            timeout=config.timeout,
            max_retries=config.max_retries,
            default_headers=config.extra_headers or None,
        )
        self.base_url = redact_url(str(self._client.base_url))

    def count_tokens(self, text: str) -> int:
        """Number of cl100k tokens of ``text``."""
        return count_cl100k(text)

    def _token_cuts(self, text: str) -> Sequence[int | None]:
        return tiktoken_token_cuts(text)

    def _fail(self, detail: str) -> EmbeddingError:
        if self._api_key:
            detail = detail.replace(self._api_key, "***")
        if len(detail) > _MAX_DETAIL:
            detail = detail[:_MAX_DETAIL] + "..."
        return EmbeddingError(
            f"embedding request failed (model {self.config.model!r}, "
            f"base_url {self.base_url}): {detail}"
        )

    def _embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        openai = self._openai
        extra: dict[str, Any] = {}
        if self.config.dimensions is not None:
            extra["dimensions"] = self.config.dimensions
        try:
            response = self._client.embeddings.create(
                model=self.config.model, input=texts, encoding_format="float", **extra
            )
        except openai.APIStatusError as e:
            raise self._fail(f"HTTP {e.status_code}: {e.message}") from e
        except openai.APITimeoutError as e:
            raise self._fail(f"timed out after {self.config.timeout}s") from e
        except openai.APIConnectionError as e:
            raise self._fail(f"connection failed: {e}") from e
        except openai.OpenAIError as e:
            raise self._fail(f"{type(e).__name__}: {e}") from e
        try:
            data = sorted(response.data, key=lambda item: item.index)
            indices = [item.index for item in data]
            vectors = [_as_floats(item.embedding) for item in data]
        except (AttributeError, TypeError, ValueError, struct.error) as e:
            raise self._fail(f"malformed response: {type(e).__name__}: {e}") from e
        if indices != list(range(len(texts))):
            raise self._fail(
                f"the response has {len(indices)} vectors with indices {indices[:10]}"
                f"{'...' if len(indices) > 10 else ''} for {len(texts)} inputs"
            )
        return vectors


def _as_floats(embedding: Any) -> list[float]:
    """A response vector as floats (some servers send base64 float32 even when asked not to)."""
    if isinstance(embedding, str):
        raw = base64.b64decode(embedding)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    return [float(x) for x in embedding]
