"""Running the plans of many windows at once: on threads for sync calls, as tasks for async
ones. The reader's LLM budget (one limiter for all its slots) bounds the requests in flight.

One window's failure is that window's result: an exception a plan did not turn into an outcome
(a bug, a plugin or SDK raising something untyped) is handed to ``on_error``, whose return value
stands in for that window; the other windows go on.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, TypeVar

from memreader.extraction.fine import Plan, arun_plan, run_plan
from memreader.llms import LLMRouter, UsageMeter

if TYPE_CHECKING:
    from memreader.calls.deadlines import Deadline

__all__ = ["arun_plans", "run_plans"]

T = TypeVar("T")
OnError = Callable[[int, Exception], T]


def run_plans(
    plans: Sequence[Plan],
    router: LLMRouter | None,
    *,
    meter: UsageMeter | None,
    workers: int,
    on_error: OnError[T],
    deadline: Deadline | None = None,
) -> list[T]:
    """Each plan's result, in order; blocking, on up to ``workers`` threads (``deadline``: the
    read's, for the LLM interceptors)."""

    def work(index: int, plan: Plan) -> T:
        try:
            result: T = run_plan(plan, router, meter, deadline)
        except Exception as exc:  # one window's failure is that window's result
            return on_error(index, exc)
        return result

    if not plans:
        return []
    with ThreadPoolExecutor(
        max_workers=max(1, min(workers, len(plans))), thread_name_prefix="memreader-llm"
    ) as pool:
        futures = [pool.submit(work, i, plan) for i, plan in enumerate(plans)]
        return [future.result() for future in futures]


async def arun_plans(
    plans: Sequence[Plan],
    router: LLMRouter | None,
    *,
    meter: UsageMeter | None,
    on_error: OnError[T],
    deadline: Deadline | None = None,
) -> list[T]:
    """The async twin of :func:`run_plans`: one task per plan."""

    async def work(index: int, plan: Plan) -> T:
        try:
            result: T = await arun_plan(plan, router, meter, deadline)
        except Exception as exc:  # one window's failure is that window's result
            return on_error(index, exc)
        return result

    tasks: list[asyncio.Future[T]] = []
    try:
        for i, plan in enumerate(plans):
            tasks.append(asyncio.ensure_future(work(i, plan)))
            # Let the new task send its first request, and the loop read the answers that have
            # come in, before the next plan starts: creating every task at once would run each
            # one's preparation before any answer is handled.
            await asyncio.sleep(0)
        return list(await asyncio.gather(*tasks))
    except BaseException:
        # Cancelled (or failed) while tasks run: none may outlive the call, asking the LLM
        # for a caller that has gone. Cancel them and wait until they have ended.
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        raise
