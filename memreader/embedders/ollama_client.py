"""Embeddings from an Ollama server (``POST /api/embed``), via the official ``ollama`` client.

Tokens are counted in cl100k: Ollama does not expose its models' tokenizers, so this is an
estimate. Requests are sent with ``truncate=False`` so a text that the server's model cannot read
whole is an error rather than a silently shortened vector; if that happens, lower
``max_input_tokens``. The ollama client does not retry; memreader's one retry policy does (see
:mod:`memreader.embedders.remote`). Requests go through memreader's HTTP client
(:mod:`memreader.transport`): ``timeout`` is a deadline for each whole request and the answer is
capped at :attr:`OllamaEmbedder.max_response_bytes`; a ``transport`` in the config replaces the
network under those limits.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memreader.embedders.backends import register_embedder
from memreader.embedders.config import OllamaEmbedderConfig
from memreader.embedders.remote import RemoteEmbedder
from memreader.errors import EmbeddingError
from memreader.secret_masking import mask_url
from memreader.transport import deadline, deadline_transport, http_lib, split_credentials

__all__ = ["OllamaEmbedder"]


@register_embedder("ollama")
class OllamaEmbedder(RemoteEmbedder):
    """Embeds through an Ollama server; ``name`` is ``"ollama:<model>"``.

    The dimension is learnt from the first response. Ollama returns unit-length vectors, and
    pooled vectors are re-normalised.
    """

    config_class = OllamaEmbedderConfig
    config: OllamaEmbedderConfig
    reply_name = "an Ollama embed response"

    #: The largest response body read (see :class:`~memreader.embedders.OpenAIEmbedder`).
    max_response_bytes: int = 128 * 1024 * 1024

    def __init__(self, config: OllamaEmbedderConfig | None = None) -> None:
        config = config if config is not None else OllamaEmbedderConfig()
        super().__init__(config, name=f"ollama:{config.model}")
        self.host = mask_url(config.host)
        try:
            import httpx
            import ollama
        except ImportError as e:  # pragma: no cover - ollama is a core dependency
            raise EmbeddingError("the ollama embedder needs the ollama package") from e
        host, credentials = split_credentials(config.host)
        kwargs: dict[str, Any] = {}
        if credentials is not None:
            self._secrets.extend(s for s in (credentials[1] or credentials[0],) if s)
            kwargs["auth"] = httpx.BasicAuth(*credentials)
        self._client = ollama.Client(
            host=host,
            # No timeouts of the client's or the transport's own: the deadline in _embed_batch
            # bounds the whole request.
            transport=deadline_transport(
                http_lib("httpx"),
                timeout=None,
                max_response_bytes=self.max_response_bytes,
                inner=config.transport,
            ),
            **kwargs,
        )

    def request_failed(self, detail: str) -> EmbeddingError:
        """An error naming the model and host."""
        return EmbeddingError(
            f"ollama embedding request failed (model {self.config.model!r}, "
            f"host {self.host}): {detail}"
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

        return self.request(send)
