"""Errors raised by the LLM client layer.

Every error is an :class:`LLMError` (a :class:`memreader.errors.MemReaderError`) and carries the
context a caller needs to decide what to do without parsing the message: the ``slot`` and
``model`` of the call, how many ``attempts`` were made, the (truncated) ``last_output`` of the
model if there was one, and the token ``usage`` spent so far. ``retryable`` says whether the
retry loop treats the failure as transient.

Messages never contain the API key: backends scrub it from upstream error text before building
an error.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from memreader.errors import MemReaderError
from memreader.transport.failures import Failure

if TYPE_CHECKING:
    from memreader.llms.usage import Usage

#: How many characters of a model's output an error keeps in ``last_output``.
LAST_OUTPUT_LIMIT = 2000


def _clip(text: str | None, limit: int = LAST_OUTPUT_LIMIT) -> str | None:
    if text is None or len(text) <= limit:
        return text
    return text[:limit] + f"... [{len(text) - limit} more characters]"


class LLMError(MemReaderError):
    """Base class of every failure of an LLM call.

    Attributes:
        reason: the bare message, without the context suffix.
        slot: the LLM slot the call was made for (``"llm"``, ``"general_llm"``, ...).
        model: the model name of the call.
        attempts: how many requests were sent (1 = no retry).
        last_output: the model's last answer, clipped to :data:`LAST_OUTPUT_LIMIT` characters.
        usage: tokens spent by all attempts of the call (``None`` if unknown).
        retryable: whether the retry loop considers this failure transient.
        status_code: the HTTP status code, where one applies.
    """

    #: Default for :attr:`retryable`; subclasses for transient failures set it to ``True``.
    default_retryable = False

    def __init__(
        self,
        message: str,
        *,
        slot: str | None = None,
        model: str | None = None,
        attempts: int = 0,
        last_output: str | None = None,
        usage: Usage | None = None,
        retryable: bool | None = None,
        status_code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = message
        self.slot = slot
        self.model = model
        self.attempts = attempts
        self.last_output = _clip(last_output)
        self.usage = usage
        self.retryable = self.default_retryable if retryable is None else retryable
        self.status_code = status_code

    def set_context(
        self,
        *,
        slot: str | None = None,
        model: str | None = None,
        attempts: int | None = None,
        last_output: str | None = None,
        usage: Usage | None = None,
    ) -> None:
        """Fill in call context once the retry loop knows it (only the arguments given)."""
        if slot is not None:
            self.slot = slot
        if model is not None:
            self.model = model
        if attempts is not None:
            self.attempts = attempts
        if last_output is not None:
            self.last_output = _clip(last_output)
        if usage is not None:
            self.usage = usage

    def __str__(self) -> str:
        bits = []
        if self.slot is not None:
            bits.append(f"slot={self.slot}")
        if self.model is not None:
            bits.append(f"model={self.model}")
        if self.attempts:
            bits.append(f"attempts={self.attempts}")
        if self.status_code is not None:
            bits.append(f"status={self.status_code}")
        return f"{self.reason} ({', '.join(bits)})" if bits else self.reason

    def __reduce__(self) -> tuple[Any, ...]:
        # Keyword-only arguments need help to survive pickling (multiprocessing, Ray).
        return (_rebuild, (type(self), self.reason, dict(self.__dict__)))


def _rebuild(cls: type[LLMError], reason: str, state: dict[str, Any]) -> LLMError:
    err = cls.__new__(cls)
    Exception.__init__(err, reason)
    err.__dict__.update(state)
    return err


class LLMTimeoutError(LLMError):
    """The request timed out (connect or read). Retryable."""

    default_retryable = True


class LLMConnectionError(LLMError):
    """The server could not be reached or dropped the connection. Retryable."""

    default_retryable = True


class LLMRateLimitError(LLMError):
    """HTTP 429. Retryable; ``retry_after`` holds the server's ``Retry-After`` in seconds."""

    default_retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class LLMServerError(LLMError):
    """HTTP 5xx (or a server answer the client cannot read). Retryable for 5xx."""

    default_retryable = True

    def __init__(self, message: str, *, retry_after: float | None = None, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.retry_after = retry_after


class LLMRequestError(LLMError):
    """HTTP 4xx other than 429: the request itself is wrong (auth, model name, payload).

    Not retried (sending the same request again gives the same answer), except 408 and 409,
    which are transient (:func:`memreader.transport.failures.retryable_status`).
    """


class LLMParseError(LLMError):
    """The model's answer holds no JSON value that could be recovered.

    ``raw_text`` keeps the whole answer (``last_output`` keeps a clipped copy).
    """

    def __init__(self, message: str, *, raw_text: str = "", **kwargs: Any) -> None:
        kwargs.setdefault("last_output", raw_text)
        super().__init__(message, **kwargs)
        self.raw_text = raw_text


class LLMEmptyResponseError(LLMError):
    """The model answered with nothing (no content, no tool call, no choices)."""


class LLMReplyRejected(LLMParseError):
    """An LLM interceptor's ``after`` rejected the answer (:class:`~memreader.llms.interceptors.
    Reject`): it is asked again as an unusable answer is, and this is raised once the
    ``max_retries`` budget is spent (the window, item or call then falls back as for any bad
    answer)."""


class LLMCallBlocked(LLMError):
    """An LLM interceptor's ``before`` blocked the request
    (:class:`~memreader.llms.interceptors.Block`, an error it raised, or a request it made
    invalid): nothing was sent, and it is not retried. The call's unit (a window, an item)
    falls back as for any failed call. ``interceptor`` names the one that blocked it."""

    def __init__(self, message: str, *, interceptor: str = "", **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.interceptor = interceptor


class LLMRateLimitExceeded(LLMCallBlocked):
    """The ``rate_limit`` interceptor would have had to wait past the call's deadline (or its
    ``max_wait_s``) for room in its requests- or tokens-per-minute budget; ``wait_s`` is the
    wait that was needed. Nothing was sent."""

    def __init__(self, message: str, *, wait_s: float = 0.0, **kwargs: Any) -> None:
        super().__init__(message, **kwargs)
        self.wait_s = wait_s


def retry_after_of(error: BaseException) -> float | None:
    """The server-requested wait of ``error`` in seconds, if it carries one."""
    value = getattr(error, "retry_after", None)
    return float(value) if isinstance(value, (int, float)) else None


def llm_error(failure: Failure, *, timeout: float) -> LLMError:
    """The :class:`LLMError` subclass for a failed request (``timeout``: the config's, for the
    message); whether it is retryable is the failure's (one rule for every backend)."""
    kind, detail, retryable = failure.kind, failure.detail, failure.retryable
    if kind == "timeout":
        return LLMTimeoutError(f"request timed out: no complete answer within timeout={timeout:g}s")
    if kind == "connection":
        suffix = f": {detail}" if detail else ""
        return LLMConnectionError(f"connection to the server failed{suffix}")
    if kind == "status":
        status = failure.status_code
        after = failure.retry_after
        if status == 429:
            return LLMRateLimitError(f"rate limited: {detail}", retry_after=after, status_code=429)
        if status is not None and 400 <= status < 500:
            return LLMRequestError(
                f"request rejected: {detail}", status_code=status, retryable=retryable
            )
        return LLMServerError(
            f"server error: {detail}",
            retry_after=after,
            status_code=status if status is not None and status >= 500 else None,
            retryable=retryable,
        )
    if kind == "invalid":
        return LLMRequestError(detail, retryable=False)
    if kind in ("unreadable", "too_large"):
        if kind == "too_large":
            detail = detail.replace("the response body", "the server's answer", 1)
        return LLMServerError(detail, retryable=retryable)
    if kind == "shape":
        # The SDK could not fit the reply into its response model: the server answered
        # something other than the API's shape.
        return LLMServerError(
            f"the server's answer has an unexpected shape ({detail})", retryable=retryable
        )
    return LLMError(detail, retryable=retryable)
