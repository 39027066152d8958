"""What the remote embedders (OpenAI-compatible, Ollama) share: cl100k token counting, secrets
kept out of messages, and the one retry policy of every remote call.

A request is retried by :class:`~memreader.transport.retry.RetryPolicy` while its failure is
retryable by :func:`~memreader.transport.failures.classify` (timeouts, connection errors, 408,
409, 429, 5xx, replies that cannot be read), at most ``max_retries`` times, waiting with full
jitter or the server's ``Retry-After`` (capped at ``backoff_max``). A failure that is final
becomes an :class:`~memreader.errors.EmbeddingError` naming the model and the server (the
base class adds the batch), without the SDK's exception as its cause.
"""

from __future__ import annotations

import dataclasses
import logging
import traceback
from abc import abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, ClassVar, TypeVar

from memreader.embedders.base import PoolingEmbedder, clip_detail
from memreader.errors import EmbeddingError
from memreader.transport.failures import Failure, classify
from memreader.transport.retry import RetryPolicy
from memreader.windowing.tokens import get_tokenizer, token_cuts

__all__ = ["RemoteEmbedder"]

logger = logging.getLogger(__name__)

_R = TypeVar("_R")


class RemoteEmbedder(PoolingEmbedder):
    """A :class:`PoolingEmbedder` behind an HTTP API (see the module docstring).

    Subclasses call :meth:`request` around each request and say what their server's reply is
    called (:attr:`reply_name`) and how their errors name the server (:meth:`request_failed`).
    """

    #: What a well-formed reply is, for "the server's answer is not ..." messages.
    reply_name: ClassVar[str] = "an embeddings response"

    def __init__(self, config: Any, *, name: str, dimension: int | None = None) -> None:
        super().__init__(
            name=name,
            max_input_tokens=config.max_input_tokens,
            batch_size=config.batch_size,
            normalize=True,
            dimension=dimension,
        )
        self.config = config
        self.retry = RetryPolicy(
            max_retries=config.max_retries,
            backoff_base=config.backoff_base,
            backoff_max=config.backoff_max,
        )

    def count_tokens(self, text: str) -> int:
        """Number of cl100k tokens of ``text`` (an estimate of the server model's own count)."""
        return get_tokenizer().count(text)

    def _token_cuts(self, text: str) -> Sequence[int | None]:
        return token_cuts(text)

    @abstractmethod
    def request_failed(self, detail: str) -> EmbeddingError:
        """The error for a request that failed for good, naming the model and the server."""

    def request(self, send: Callable[[], _R]) -> _R:
        """``send()`` under the retry policy; an :class:`EmbeddingError` it raises is final."""
        return self.retry.run(
            send,
            self._failure,
            lambda failure: self.request_failed(clip_detail(self.scrub(self.describe(failure)))),
            label=self.name,
            passthrough=(EmbeddingError,),
        )

    def describe(self, failure: Failure) -> str:
        """A failed request in words (before secrets are scrubbed)."""
        if failure.kind == "status":
            return f"HTTP {failure.status_code}: {failure.detail}"
        if failure.kind == "timeout":
            return f"timed out: no complete answer within timeout={self.config.timeout:g}s"
        if failure.kind == "connection":
            return f"connection failed: {failure.detail}" if failure.detail else "connection failed"
        if failure.kind == "shape":
            return f"the server's answer is not {self.reply_name} ({failure.detail})"
        return failure.detail

    def _failure(self, exc: Exception) -> Failure:
        logger.debug(
            "%s: request failed with %s:\n%s",
            self.name,
            type(exc).__name__,
            self.scrub("".join(traceback.format_exception(exc))).rstrip(),
        )
        failure = classify(exc)
        return dataclasses.replace(failure, detail=self.scrub(failure.detail))
