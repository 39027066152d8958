"""Retry policy: which failures are retried, how long to wait, and how to re-ask.

* Transient failures (:attr:`LLMError.retryable`: timeouts, connection errors, HTTP 429 and
  5xx) are retried after a wait: the server's ``Retry-After`` when it sent one (capped at
  ``backoff_max``), otherwise exponential backoff with full jitter,
  ``uniform(0, min(backoff_max, backoff_base * 2 ** (retry - 1)))``.
* Other 4xx answers are not retried.
* An answer that is empty, holds no usable JSON or is rejected by the caller's ``validate`` is
  *re-asked* at once (no wait): the bad answer and a short correction are appended to the
  conversation, instructor style. A cut-off answer is re-asked for a complete, shorter one.

Transient retries and re-asks share one budget, ``max_retries``: a call sends at most
``max_retries + 1`` requests, whatever went wrong.
"""

from __future__ import annotations

import email.utils
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = [
    "RetryPolicy",
    "cutoff_reask_messages",
    "empty_reask_messages",
    "format_reask_messages",
    "parse_reask_messages",
    "parse_retry_after",
]

#: The correction appended after an unparseable answer (``{error}`` is the parse error).
PARSE_REASK = "Your last answer was not valid JSON: {error}. Answer again with only the JSON."
#: The correction appended after an answer the caller's ``validate`` rejected.
FORMAT_REASK = (
    "Your answer did not match the expected format: {error}. Answer again with only the JSON."
)
#: The correction appended after a cut-off answer (the bad answer is not echoed: it is long).
CUTOFF_REASK = (
    "Your answer was cut off before it was complete. Answer again with a complete, shorter "
    "answer: fewer and shorter items, only the JSON."
)
#: The correction appended after an empty answer when a schema was requested.
EMPTY_REASK_JSON = "Your last answer was empty. Answer again with only the JSON."
#: The correction appended after an empty answer to a plain-text request.
EMPTY_REASK_TEXT = "Your last answer was empty. Please answer again."
#: How much of a bad answer is echoed back to the model when re-asking.
REASK_ECHO_LIMIT = 4000


@dataclass
class RetryPolicy:
    """Backoff settings plus the clock and randomness (replaceable in tests).

    Attributes:
        max_retries: retries after the first attempt (transient errors and re-asks together).
        backoff_base: the first backoff ceiling, in seconds.
        backoff_max: the largest wait, in seconds; also caps ``Retry-After``.
        rng: the random source for jitter.
        sleep: the blocking sleep used by sync calls (async calls use ``asyncio.sleep``).
    """

    max_retries: int = 3
    backoff_base: float = 0.5
    backoff_max: float = 20.0
    rng: random.Random = field(default_factory=random.Random)
    sleep: Callable[[float], None] = time.sleep

    def can_retry(self, attempt: int) -> bool:
        """Whether another request may follow attempt number ``attempt`` (1-based)."""
        return attempt <= self.max_retries

    def delay(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number ``retry`` (1-based)."""
        if retry_after is not None and retry_after >= 0:
            return min(float(retry_after), self.backoff_max)
        ceiling = min(self.backoff_max, self.backoff_base * (2 ** max(0, retry - 1)))
        return self.rng.uniform(0.0, ceiling) if ceiling > 0 else 0.0


def parse_retry_after(
    headers: Mapping[str, str] | Any, *, now: float | None = None
) -> float | None:
    """Seconds to wait from ``Retry-After`` (seconds or an HTTP date) or ``retry-after-ms``.

    Returns ``None`` when there is no usable header. Negative waits become 0.
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
    if when is None:  # pragma: no cover - older Pythons return None
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


def _echo(text: str) -> str:
    if len(text) <= REASK_ECHO_LIMIT:
        return text
    return text[:REASK_ECHO_LIMIT] + "..."


def parse_reask_messages(bad_answer: str, error: str) -> list[dict[str, Any]]:
    """The messages appended after an unparseable answer."""
    return [
        {"role": "assistant", "content": _echo(bad_answer)},
        {"role": "user", "content": PARSE_REASK.format(error=error)},
    ]


def empty_reask_messages(*, wants_json: bool) -> list[dict[str, Any]]:
    """The message appended after an empty answer."""
    return [{"role": "user", "content": EMPTY_REASK_JSON if wants_json else EMPTY_REASK_TEXT}]


def format_reask_messages(bad_answer: str, error: str) -> list[dict[str, Any]]:
    """The messages appended after an answer the caller's ``validate`` rejected."""
    return [
        {"role": "assistant", "content": _echo(bad_answer)},
        {"role": "user", "content": FORMAT_REASK.format(error=error)},
    ]


def cutoff_reask_messages() -> list[dict[str, Any]]:
    """The message appended after a cut-off answer."""
    return [{"role": "user", "content": CUTOFF_REASK}]
