"""The ``rate_limit`` interceptor: requests and tokens per minute, paced on a fake clock (waits
counted, never timed), a typed error instead of a wait past the deadline, scoped to a profile or
a slot, and safe across threads and tasks (no minute of fake time ever holds more requests than
the budget)."""

from __future__ import annotations

import asyncio
import bisect
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from memreader.calls.deadlines import Deadline
from memreader.errors import DeadlineExceeded
from memreader.llms import LLMRateLimitExceeded, LLMRouter, LLMSlots, RateLimit
from memreader.llms.rate_limit import FakeClock
from memreader.testing import ScriptedLLM

HI = [{"role": "user", "content": "hi"}]


def router_with(limit: RateLimit, llm: ScriptedLLM, **slots: Any) -> LLMRouter:
    router = LLMRouter(LLMSlots(llm=llm.config(), **slots))
    router.hooks.interceptors.append(limit)
    return router


def sent_at(clock: FakeClock) -> tuple[list[float], ScriptedLLM]:
    """A scripted LLM that notes the fake time of each request it receives."""
    times: list[float] = []

    def answer(request: Any) -> str:
        times.append(clock())
        return "ok"

    return times, ScriptedLLM(answer)


def most_in_a_minute(times: list[float]) -> int:
    ordered = sorted(times)
    return max(bisect.bisect_left(ordered, t + 60.0) - i for i, t in enumerate(ordered))


def test_requests_are_paced_to_the_budget_on_the_clock() -> None:
    clock = FakeClock()
    times, llm = sent_at(clock)
    limit = RateLimit(requests_per_minute=2, clock=clock, sleep=clock.sleep)
    router = router_with(limit, llm)
    for _ in range(5):
        router.complete("llm", HI)
    assert times == [0.0, 0.0, 60.0, 60.0, 120.0]
    assert (limit.waits, limit.waited_s, limit.refused) == (2, 120.0, 0)


def test_tokens_are_paced_and_counted_as_the_server_reports_them() -> None:
    clock = FakeClock()
    times, llm = sent_at(clock)
    llm.usage = (40, 10)  # 50 tokens a call, reported
    limit = RateLimit(tokens_per_minute=100, clock=clock, sleep=clock.sleep)
    router = router_with(limit, llm)
    for _ in range(3):
        router.complete("llm", HI)
    # "hi" is estimated at 5 tokens, but each answer reports 50: two calls fill the 100, and
    # the third waits for the first to leave the minute.
    assert times == [0.0, 0.0, 60.0]


def test_a_request_larger_than_the_token_budget_goes_when_the_minute_is_empty() -> None:
    clock = FakeClock()
    times, llm = sent_at(clock)
    limit = RateLimit(tokens_per_minute=10, clock=clock, sleep=clock.sleep)
    router = router_with(limit, llm)
    big = [{"role": "user", "content": "x" * 400}]  # about 104 tokens
    router.complete("llm", big)
    router.complete("llm", big)
    assert times == [0.0, 60.0]


def test_a_wait_past_max_wait_is_a_typed_error_and_nothing_is_sent() -> None:
    clock = FakeClock()
    times, llm = sent_at(clock)
    limit = RateLimit(requests_per_minute=1, max_wait_s=30, clock=clock, sleep=clock.sleep)
    router = router_with(limit, llm)
    router.complete("llm", HI)
    with pytest.raises(LLMRateLimitExceeded, match=r"1 requests/min\) for 60.0 s") as info:
        router.complete("llm", HI)
    assert times == [0.0]
    assert info.value.wait_s == 60.0
    assert (info.value.retryable, info.value.interceptor) == (False, "rate_limit")
    assert (limit.waits, limit.refused, clock()) == (0, 1, 0.0)


def test_the_calls_deadline_bounds_the_wait() -> None:
    clock = FakeClock()
    times, llm = sent_at(clock)
    limit = RateLimit(requests_per_minute=1, max_wait_s=3600, clock=clock, sleep=clock.sleep)
    router = router_with(limit, llm)
    router.complete("llm", HI)
    with pytest.raises(LLMRateLimitExceeded):
        router.complete("llm", HI, deadline=Deadline.after(10))
    router.complete("llm", HI, deadline=Deadline.after(3600))  # room comes in time: it waits
    assert times == [0.0, 60.0]


def test_a_limit_of_one_profile_leaves_the_other_calls_alone() -> None:
    clock = FakeClock()
    times, llm = sent_at(clock)
    fast = ScriptedLLM(lambda request: "fast")
    limit = RateLimit(requests_per_minute=1, profile="fast", clock=clock, sleep=clock.sleep)
    router = router_with(limit, llm, llm_profiles={"fast": fast.config()})
    for _ in range(3):
        router.complete("llm", HI)
    router.complete("llm", HI, profile="fast")
    router.complete("llm", HI, profile="fast")
    assert times == [0.0, 0.0, 0.0]  # the slot's calls never waited
    assert (len(fast.requests), limit.waits, clock()) == (2, 1, 60.0)


def test_a_limit_shared_by_threads_never_lets_more_through_in_a_minute() -> None:
    clock = FakeClock()
    times, llm = sent_at(clock)
    limit = RateLimit(requests_per_minute=3, clock=clock, sleep=clock.sleep)
    router = router_with(limit, llm)
    with ThreadPoolExecutor(max_workers=6) as pool:
        list(pool.map(lambda _: router.complete("llm", HI), range(12)))
    assert len(times) == 12
    assert most_in_a_minute(times) <= 3


def test_a_limit_paces_async_calls_without_blocking_the_loop() -> None:
    clock = FakeClock()
    times, llm = sent_at(clock)
    limit = RateLimit(
        requests_per_minute=2, clock=clock, sleep=_no_blocking_sleep, asleep=clock.asleep
    )
    router = router_with(limit, llm)

    async def main() -> None:
        await asyncio.gather(*(router.acomplete("llm", HI) for _ in range(6)))

    asyncio.run(main())
    assert len(times) == 6
    assert most_in_a_minute(times) <= 2
    assert limit.waits >= 2


def _no_blocking_sleep(seconds: float) -> None:
    raise AssertionError("an async call slept in the event loop's thread")


def test_settings_are_checked_when_built() -> None:
    from memreader.errors import ConfigError

    with pytest.raises(ConfigError, match="rate_limit needs requests_per_minute or tokens"):
        RateLimit()
    with pytest.raises(ConfigError, match="requests_per_minute: Input should be greater than"):
        RateLimit(requests_per_minute=0)


def test_a_read_cancelled_while_it_waits_stops_there() -> None:
    clock = FakeClock()
    times, llm = sent_at(clock)
    deadline = Deadline.after(3600, what="the read")
    slept: list[float] = []

    def sleep(seconds: float) -> None:  # the caller gives up during the first slice
        slept.append(seconds)
        deadline.cancel()
        clock.sleep(seconds)

    limit = RateLimit(requests_per_minute=1, clock=clock, sleep=sleep)
    router = router_with(limit, llm)
    router.complete("llm", HI)
    with pytest.raises(DeadlineExceeded, match="the read was cancelled; stopped while waiting"):
        router.complete("llm", HI, deadline=deadline)
    assert times == [0.0]
    assert slept == [0.5]  # one slice, not the whole minute
