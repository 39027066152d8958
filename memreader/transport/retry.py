"""The one retry policy of every remote call: both LLM backends and both remote embedders.

* What is retried is decided once, by :func:`~memreader.transport.failures.classify`: timeouts,
  connection errors, HTTP 408, 409, 429 and 5xx, and replies that could not be read (not JSON,
  not UTF-8, the wrong shape). Other 4xx answers and a reply over ``max_response_bytes`` are not.
* The wait before retry *n* (1-based) is the server's ``Retry-After`` when it sent one, capped at
  ``backoff_max``; otherwise exponential backoff with full jitter,
  ``uniform(0, min(backoff_max, backoff_base * 2 ** (n - 1)))``.
* A call sends at most ``max_retries + 1`` requests. (The LLM layer spends the same budget on
  re-asks of unusable answers: see :mod:`memreader.llms.base`.)

The LLM layer drives the policy from its own sync/async loop (:meth:`RetryPolicy.can_retry`,
:meth:`RetryPolicy.delay`); the embedders, which only call synchronously, use
:meth:`RetryPolicy.run`.

>>> policy = RetryPolicy(max_retries=2, backoff_base=0.5, backoff_max=4.0)
>>> policy.delay(1, retry_after=30.0)  # Retry-After, capped
4.0
>>> 0.0 <= policy.delay(3) <= 2.0  # full jitter under min(backoff_max, 0.5 * 2 ** 2)
True
>>> policy.can_retry(2), policy.can_retry(3)
(True, False)
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TypeVar

from memreader.transport.failures import Failure, parse_retry_after

__all__ = ["RetryPolicy", "parse_retry_after"]

logger = logging.getLogger(__name__)

R = TypeVar("R")


@dataclass
class RetryPolicy:
    """Backoff settings plus the clock and randomness (replaceable in tests).

    Attributes:
        max_retries: retries after the first attempt.
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

    def run(
        self,
        send: Callable[[], R],
        classify: Callable[[Exception], Failure],
        give_up: Callable[[Failure], BaseException],
        *,
        label: str,
        passthrough: tuple[type[BaseException], ...] = (),
    ) -> R:
        """``send()``, retried while its failures are retryable and the budget lasts.

        Args:
            send: one request.
            classify: how a failure of ``send`` is seen (it may log it first).
            give_up: the typed error to raise once a failure is final; it is raised without the
                original exception as cause or context (an SDK error may echo a secret).
            label: who is retrying, for the log line of each retry.
            passthrough: exceptions raised as they are, never retried (already typed).
        """
        attempt = 0
        while True:
            attempt += 1
            try:
                return send()
            except passthrough:
                raise
            except Exception as exc:  # every failure is classified: retried, or raised typed
                failure = classify(exc)
            if not failure.retryable or not self.can_retry(attempt):
                raise give_up(failure) from None
            wait = self.delay(attempt, failure.retry_after)
            logger.warning(
                "%s: %s; retry %d/%d in %.2fs",
                label,
                failure.detail[:200],
                attempt,
                self.max_retries,
                wait,
            )
            self.sleep(wait)
