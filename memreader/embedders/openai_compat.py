"""Embeddings from an OpenAI-compatible ``/v1/embeddings`` endpoint, via the official client.

Works with OpenAI and with local servers that speak the same API (llama.cpp, vLLM, LM Studio,
...). Tokens are counted in cl100k (the tokenizer of OpenAI's embedding models; for other
servers an estimate, so set ``max_input_tokens`` with some margin there). ``encoding_format`` is
always ``"float"``, which every compatible server understands.

Requests go through memreader's HTTP client (:mod:`memreader.transport`): ``timeout`` is a
deadline for each whole request, the answer is capped at :attr:`OpenAIEmbedder.max_response_bytes`
and credentials in ``base_url`` are sent as basic auth, never logged; a ``transport`` in the
config replaces the network under those limits. Retries are memreader's one policy, not the
SDK's (the SDK's loop would not retry a garbled reply): see :mod:`memreader.embedders.remote`.
Errors become :class:`EmbeddingError` naming the model, the base URL and the batch, never the
API key.
"""

from __future__ import annotations

import base64
import struct
from collections.abc import Sequence
from typing import Any

from memreader.embedders.backends import register_embedder
from memreader.embedders.config import OpenAIEmbedderConfig
from memreader.embedders.remote import RemoteEmbedder
from memreader.errors import EmbeddingError
from memreader.secret_masking import mask_url
from memreader.transport import deadline, http_client, openai_http_lib, split_credentials

__all__ = ["OpenAIEmbedder"]


@register_embedder("openai")
class OpenAIEmbedder(RemoteEmbedder):
    """Embeds through an OpenAI-compatible endpoint.

    ``name`` is ``"openai:<model>"``, with ``":<dimensions>d"`` appended when ``dimensions`` is
    configured. The dimension is the configured one or learnt from the first response.
    Vectors are treated as unit length (OpenAI's contract): pooled vectors are re-normalised.
    """

    config_class = OpenAIEmbedderConfig
    config: OpenAIEmbedderConfig

    #: The largest response body read: 512 texts of 3,072 floats as JSON are about 35 MB.
    max_response_bytes: int = 128 * 1024 * 1024

    def __init__(self, config: OpenAIEmbedderConfig) -> None:
        suffix = f":{config.dimensions}d" if config.dimensions is not None else ""
        super().__init__(config, name=f"openai:{config.model}{suffix}", dimension=config.dimensions)
        try:
            import openai
        except ImportError as e:  # pragma: no cover - openai is a core dependency
            raise EmbeddingError("the openai embedder needs the openai package") from e
        api_key = config.api_key.get_secret_value() if config.api_key is not None else None
        if api_key:
            self._secrets.append(api_key)
        base_url, credentials = (
            split_credentials(config.base_url) if config.base_url else (None, None)
        )
        if credentials is not None:
            self._secrets.extend(s for s in (credentials[1] or credentials[0],) if s)
        self._client = openai.OpenAI(
            base_url=base_url,
            api_key=api_key or "EMPTY",
            timeout=None,  # the deadline in _embed_batch bounds the whole request
            max_retries=0,
            default_headers=config.extra_headers or None,
            http_client=http_client(
                openai_http_lib(openai),
                timeout=None,
                max_response_bytes=self.max_response_bytes,
                credentials=credentials,
                inner=config.transport,
            ),
        )
        self.base_url = mask_url(str(self._client.base_url))

    def request_failed(self, detail: str) -> EmbeddingError:
        """An error naming the model and base URL (the key is scrubbed by the caller)."""
        return EmbeddingError(
            f"embedding request failed (model {self.config.model!r}, "
            f"base_url {self.base_url}): {detail}"
        )

    def _embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        extra: dict[str, Any] = {}
        if self.config.dimensions is not None:
            extra["dimensions"] = self.config.dimensions

        def send() -> list[list[float]]:
            with deadline(self.config.timeout):
                response = self._client.embeddings.create(
                    model=self.config.model, input=texts, encoding_format="float", **extra
                )
            return self._vectors(response, len(texts))

        return self.request(send)

    def _vectors(self, response: Any, expected: int) -> list[list[float]]:
        """The vectors of a response in input order; a reply of the wrong shape raises (the
        SDK returns what the server sent when it is not an object: a list, a string, null)."""
        data = sorted(response.data, key=lambda item: item.index)
        indices = [item.index for item in data]
        vectors = [_as_floats(item.embedding) for item in data]
        if indices != list(range(expected)):
            raise self.request_failed(
                f"the response has {len(indices)} vectors with indices {indices[:10]}"
                f"{'...' if len(indices) > 10 else ''} for {expected} inputs"
            )
        return vectors


def _as_floats(embedding: Any) -> list[float]:
    """A response vector as floats (some servers send base64 float32 even when asked not to)."""
    if isinstance(embedding, str):
        raw = base64.b64decode(embedding)
        return list(struct.unpack(f"<{len(raw) // 4}f", raw))
    return [float(x) for x in embedding]
