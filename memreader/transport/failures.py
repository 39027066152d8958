"""What went wrong with one request, the same way for every remote backend.

:func:`classify` reads the exceptions of the openai SDK, the ollama client, httpx and httpx2, and
memreader's own transport, and says what kind of failure each is and whether another request may
help (see :mod:`memreader.transport.retry`). The LLM layer turns a :class:`Failure` into its
:class:`~memreader.llms.errors.LLMError` subclasses and the embedders into an
:class:`~memreader.errors.EmbeddingError`, each in its own words; what is retried is decided here,
once.
"""

from __future__ import annotations

import email.utils
import struct
import sys
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from memreader.transport.body import ResponseTooLargeError, unreadable_reply

__all__ = [
    "RETRY_STATUSES",
    "Failure",
    "FailureKind",
    "classify",
    "parse_retry_after",
    "retryable_status",
]

FailureKind = Literal[
    "timeout", "connection", "status", "unreadable", "shape", "too_large", "invalid", "other"
]

#: 4xx statuses worth another request (as the openai SDK's own rule); every 5xx is too.
RETRY_STATUSES = frozenset({408, 409, 429})

# A reply the SDK could not fit into its response model (a JSON list, a string, null, missing
# fields; pydantic's ValidationError is a ValueError) fails with one of these.
_SHAPE_ERRORS = (TypeError, ValueError, KeyError, AttributeError, IndexError, struct.error)


def retryable_status(status: int) -> bool:
    """Whether an HTTP answer with ``status`` is worth another request."""
    return status in RETRY_STATUSES or status >= 500


@dataclass(frozen=True)
class Failure:
    """One failed request.

    Attributes:
        kind: ``timeout`` (no complete answer within the deadline), ``connection`` (refused,
            reset), ``status`` (an HTTP error answer: see ``status_code``), ``unreadable`` (not
            JSON, not UTF-8, nested too deeply, a broken or unasked-for content coding),
            ``shape`` (valid JSON of the wrong shape), ``too_large`` (over
            ``max_response_bytes``), ``invalid`` (the client refused the request before
            sending it), ``other``.
        detail: what went wrong, for a message: the server's error text for ``status``, the
            exception's type for ``connection``, a sentence otherwise. It may hold text the
            server sent; callers scrub secrets from it.
        retryable: whether another request may succeed.
        status_code: the HTTP status, for ``status``.
        retry_after: the server's ``Retry-After`` in seconds, if it sent one.
    """

    kind: FailureKind
    detail: str
    retryable: bool
    status_code: int | None = None
    retry_after: float | None = None


def classify(exc: BaseException) -> Failure:
    """What ``exc``, raised while sending one request or reading its answer, means."""
    openai = sys.modules.get("openai")
    if openai is not None and isinstance(exc, openai.OpenAIError):
        return _openai(exc, openai)
    ollama = sys.modules.get("ollama")
    if ollama is not None and isinstance(exc, ollama.ResponseError):
        return _status(exc.status_code, str(exc.error), None)
    if ollama is not None and isinstance(exc, ollama.RequestError):
        return Failure("invalid", f"invalid request: {exc.error}", retryable=False)
    for lib in _http_libs():
        if isinstance(exc, lib.TimeoutException):
            return Failure("timeout", type(exc).__name__, retryable=True)
        if isinstance(exc, lib.TransportError):
            return Failure("connection", type(exc).__name__, retryable=True)
        if isinstance(exc, lib.HTTPError):
            # Too many redirects, a bad URL, ...: sending it again changes nothing.
            return Failure("other", f"{type(exc).__name__}: {exc}", retryable=False)
    if isinstance(exc, ConnectionError):
        return Failure("connection", type(exc).__name__, retryable=True)
    return _reply_failure(exc)


def _openai(exc: Any, openai: Any) -> Failure:
    if isinstance(exc, openai.APITimeoutError):
        return Failure("timeout", type(exc).__name__, retryable=True)
    if isinstance(exc, openai.APIConnectionError):
        cause = exc.__cause__ or exc.__context__
        return Failure(
            "connection", type(cause).__name__ if cause is not None else "", retryable=True
        )
    if isinstance(exc, openai.APIStatusError):
        headers = getattr(exc.response, "headers", None)
        return _status(exc.status_code, str(exc.message), parse_retry_after(headers))
    return Failure("other", f"{type(exc).__name__}: {exc}", retryable=False)


def _status(status: int, detail: str, retry_after: float | None) -> Failure:
    return Failure(
        "status",
        detail,
        retryable=retryable_status(status),
        status_code=status,
        retry_after=retry_after,
    )


def _reply_failure(exc: BaseException) -> Failure:
    if isinstance(exc, ResponseTooLargeError):
        return Failure("too_large", str(exc), retryable=False)
    problem = unreadable_reply(exc)
    if problem is not None:
        return Failure("unreadable", problem, retryable=True)
    if isinstance(exc, _SHAPE_ERRORS):
        return Failure("shape", f"{type(exc).__name__}: {exc}", retryable=True)
    return Failure("other", f"{type(exc).__name__}: {exc}", retryable=False)


def _http_libs() -> list[Any]:
    # Only the libraries already imported can have raised (importing one here costs ~100 ms).
    return [module for module in (sys.modules.get("httpx"), sys.modules.get("httpx2")) if module]


def parse_retry_after(
    headers: Mapping[str, str] | Any, *, now: float | None = None
) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``.

    Returns ``None`` when there is no usable header. Negative waits become 0.

    >>> parse_retry_after({"retry-after": "1.5"}), parse_retry_after({"retry-after-ms": "250"})
    (1.5, 0.25)
    """
    if headers is None:
        return None
    getter = getattr(headers, "get", None)
    if getter is None:
        return None
    millis = getter("retry-after-ms")
    if millis is not None:
        try:
            return max(0.0, float(millis) / 1000.0)
        except (TypeError, ValueError):
            pass
    value = getter("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except (TypeError, ValueError):
        pass
    try:
        when = email.utils.parsedate_to_datetime(str(value))
    except (TypeError, ValueError, IndexError):
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)
