"""The ``rate_limit`` LLM interceptor: requests and tokens per minute, per profile or slot.

Configured by name (``llm_interceptors: [{name: rate_limit, requests_per_minute: 60,
tokens_per_minute: 90000, profile: fast}]``) or built in Python (:class:`RateLimit`). Each
entry is one budget over a sliding minute, shared by every thread and task of the reader: a
request is admitted when fewer than ``requests_per_minute`` were sent in the last 60 seconds
and its tokens fit in ``tokens_per_minute`` with theirs. A request's tokens are estimated from
its text when it is sent (about four characters a token; image parts are not counted), then
corrected with the usage the server reports. A request that does not fit waits for room, in
its thread or, in async calls, without blocking the event loop, but never past its call's
deadline nor ``max_wait_s``: when the room would come later, it is not sent and the call ends
at once with :class:`~memreader.llms.errors.LLMRateLimitExceeded` (its window or item falls
back as for any failed call). A single request larger than the whole token budget waits until
nothing else is in the minute, then goes.

``profile`` or ``slot`` narrows an entry to the calls that profile (of ``llm_profiles``) or slot
serves; without either it counts every call of the reader. The clock and the sleeps can be
replaced (tests count waits on a fake clock).

>>> clock = FakeClock()
>>> limit = RateLimit(requests_per_minute=2, clock=clock, sleep=clock.sleep)
>>> call = LLMCall("llm", None, "m", "openai", 1, ({"role": "user", "content": "hi"},), 0.0, 8)
>>> for _ in range(3):
...     limit.before(call)
>>> limit.waits, clock.now
(1, 60.0)
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import Field, model_validator

from memreader.config_model import ConfigModel
from memreader.llms.errors import LLMRateLimitExceeded
from memreader.llms.interceptor_specs import register_llm_interceptor
from memreader.llms.interceptors import LLMCall, LLMInterceptor
from memreader.llms.types import RawCompletion

__all__ = ["FakeClock", "RateLimit", "RateLimitSettings", "estimate_tokens"]

#: The budget's window in seconds.
WINDOW_S = 60.0
#: How long a sync wait sleeps between looks at its call's deadline.
_SLICE_S = 0.5
#: Characters per token when a request's tokens are estimated before it is sent.
CHARS_PER_TOKEN = 4


class RateLimitSettings(ConfigModel):
    """The settings of a ``rate_limit`` entry of ``llm_interceptors``."""

    requests_per_minute: int | None = Field(
        default=None, ge=1, description="Requests sent in any 60 s, at most."
    )
    tokens_per_minute: int | None = Field(
        default=None, ge=1, description="Tokens (prompt and answer) in any 60 s, at most."
    )
    profile: str | None = Field(
        default=None, description="Count only the calls this profile of llm_profiles serves."
    )
    slot: str | None = Field(default=None, description="Count only the calls of this LLM slot.")
    max_wait_s: float = Field(
        default=60.0,
        ge=0.0,
        le=3600.0,
        description="The longest a request waits for room (the call's deadline may cut it).",
    )

    @model_validator(mode="after")
    def _some_limit(self) -> RateLimitSettings:
        if self.requests_per_minute is None and self.tokens_per_minute is None:
            raise ValueError("rate_limit needs requests_per_minute or tokens_per_minute")
        return self


@dataclass
class _Sent:
    at: float
    tokens: int


def estimate_tokens(messages: Sequence[Mapping[str, Any]]) -> int:
    """About how many tokens ``messages`` hold (text only; a few per message for its frame).

    >>> estimate_tokens([{"role": "user", "content": "x" * 400}])
    104
    """
    chars = 0
    for message in messages:
        content = message.get("content")
        if isinstance(content, str):
            chars += len(content)
        elif isinstance(content, list):
            for part in content:
                if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                    chars += len(part["text"])
    return math.ceil(chars / CHARS_PER_TOKEN) + 4 * len(messages)


@register_llm_interceptor("rate_limit")
class RateLimit(LLMInterceptor):
    """Paces requests to a requests- and tokens-per-minute budget (see the module docstring).

    Attributes:
        waits: how many times a request waited for room.
        waited_s: the seconds waited in all.
        refused: requests refused because room would come too late.
    """

    name = "rate_limit"
    Settings = RateLimitSettings

    def __init__(
        self,
        *,
        requests_per_minute: int | None = None,
        tokens_per_minute: int | None = None,
        profile: str | None = None,
        slot: str | None = None,
        max_wait_s: float = 60.0,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], object] = time.sleep,
        asleep: Callable[[float], Awaitable[object]] = asyncio.sleep,
    ) -> None:
        self.settings = RateLimitSettings(
            requests_per_minute=requests_per_minute,
            tokens_per_minute=tokens_per_minute,
            profile=profile,
            slot=slot,
            max_wait_s=max_wait_s,
        )
        self._clock, self._sleep, self._asleep = clock, sleep, asleep
        self._lock = threading.Lock()
        self._sent: deque[_Sent] = deque()
        self._tokens = 0  # the tokens of what _sent holds, kept as it changes
        self._pending: dict[int, _Sent] = {}
        self.waits = 0
        self.waited_s = 0.0
        self.refused = 0

    @classmethod
    def from_settings(cls, settings: RateLimitSettings) -> RateLimit:
        """The interceptor of a config's ``rate_limit`` entry."""
        return cls(**settings.model_dump())

    def applies(self, call: LLMCall) -> bool:
        """Whether ``call`` counts against this budget (its profile and slot)."""
        wanted = self.settings
        return (wanted.profile is None or call.profile == wanted.profile) and (
            wanted.slot is None or call.slot == wanted.slot
        )

    def before(self, call: LLMCall) -> None:
        """Wait for room (blocking the thread), or raise :class:`LLMRateLimitExceeded`."""
        if not self.applies(call):
            return
        give_up_at = self._clock() + self._budget(call)
        while (wait := self._admit(call)) > 0:
            self._check_wait(call, wait, give_up_at)
            self._pause(wait, call)

    async def abefore(self, call: LLMCall) -> None:
        """Wait for room without blocking the event loop, or raise."""
        if not self.applies(call):
            return
        give_up_at = self._clock() + self._budget(call)
        while (wait := self._admit(call)) > 0:
            self._check_wait(call, wait, give_up_at)
            await self._asleep(wait)

    def after(self, call: LLMCall, reply: RawCompletion) -> None:
        """Count the tokens the server reports instead of the estimate."""
        with self._lock:
            sent = self._pending.pop(id(call), None)
            if sent is not None and reply.usage.total_tokens > 0:
                # Still pending, so still in the minute (both are forgotten together).
                self._tokens += reply.usage.total_tokens - sent.tokens
                sent.tokens = reply.usage.total_tokens

    async def aafter(self, call: LLMCall, reply: RawCompletion) -> None:
        """:meth:`after` (it never waits)."""
        self.after(call, reply)

    def _pause(self, wait: float, call: LLMCall) -> None:
        """Sleep ``wait`` seconds, in slices that look at the call's deadline: a read that is
        cancelled meanwhile stops here (:class:`~memreader.errors.DeadlineExceeded`), rather
        than after the wait. (An async call is cancelled as its task is.)"""
        if call.deadline is None:
            self._sleep(wait)
            return
        while wait > 0:
            call.deadline.check("while waiting for room in the LLM rate limit")
            step = min(wait, _SLICE_S)
            self._sleep(step)
            wait -= step
        call.deadline.check("while waiting for room in the LLM rate limit")

    def _budget(self, call: LLMCall) -> float:
        budget = self.settings.max_wait_s
        if call.deadline is not None:
            budget = min(budget, call.deadline.remaining)
        return budget

    def _check_wait(self, call: LLMCall, wait: float, give_up_at: float) -> None:
        if self._clock() + wait > give_up_at:
            with self._lock:
                self.refused += 1
            raise LLMRateLimitExceeded(
                f"rate_limit: no room in the budget ({self._describe()}) for {wait:.1f} s, "
                f"past the call's deadline or max_wait_s={self.settings.max_wait_s:g}; the "
                "request was not sent",
                wait_s=wait,
                interceptor=self.name,
                slot=call.slot,
                model=call.model,
            )
        with self._lock:
            self.waits += 1
            self.waited_s += wait

    def _describe(self) -> str:
        limits = self.settings
        parts = []
        if limits.requests_per_minute is not None:
            parts.append(f"{limits.requests_per_minute} requests/min")
        if limits.tokens_per_minute is not None:
            parts.append(f"{limits.tokens_per_minute} tokens/min")
        scope = f" of profile {limits.profile!r}" if limits.profile else ""
        scope += f" of slot {limits.slot!r}" if limits.slot else ""
        return " and ".join(parts) + scope

    def _admit(self, call: LLMCall) -> float:
        """0 when ``call`` was admitted (and counted), else the seconds until it may fit."""
        tokens = estimate_tokens(call.messages)
        with self._lock:
            now = self._clock()
            self._forget_before(now - WINDOW_S)
            wait = max(self._request_wait(now), self._token_wait(now, tokens))
            if wait > 0:
                return wait
            sent = _Sent(now, tokens)
            self._sent.append(sent)
            self._tokens += tokens
            self._pending[id(call)] = sent
            return 0.0

    def _forget_before(self, cutoff: float) -> None:
        while self._sent and self._sent[0].at <= cutoff:
            self._tokens -= self._sent.popleft().tokens
        for key in [k for k, s in self._pending.items() if s.at <= cutoff]:
            del self._pending[key]  # never answered (the request failed): its count expired

    def _request_wait(self, now: float) -> float:
        limit = self.settings.requests_per_minute
        if limit is None or len(self._sent) < limit:
            return 0.0
        # The request that must leave the minute for one more to fit.
        return self._sent[len(self._sent) - limit].at + WINDOW_S - now

    def _token_wait(self, now: float, tokens: int) -> float:
        limit = self.settings.tokens_per_minute
        if limit is None or not self._sent:
            return 0.0
        used = self._tokens
        if used + tokens <= limit:
            return 0.0
        for sent in self._sent:  # oldest first: when has enough left the minute?
            used -= sent.tokens
            if used + tokens <= limit or used == 0:
                return sent.at + WINDOW_S - now
        return self._sent[-1].at + WINDOW_S - now  # pragma: no cover - the loop always returns


class FakeClock:
    """A clock that only moves when it is slept on, for tests and examples.

    >>> clock = FakeClock()
    >>> clock.sleep(2.5)
    >>> clock()
    2.5
    """

    def __init__(self, start: float = 0.0) -> None:
        self.now = start
        self._lock = threading.Lock()

    def __call__(self) -> float:
        with self._lock:
            return self.now

    def sleep(self, seconds: float) -> None:
        """Move the clock on by ``seconds``."""
        with self._lock:
            self.now += max(0.0, seconds)

    async def asleep(self, seconds: float) -> None:
        """:meth:`sleep`, for async calls."""
        self.sleep(seconds)
