"""Deadlines stop the work, not only the wait: a library call past its deadline (or cancelled)
raises DeadlineExceeded at the next check and does no more (counted: embedding batches, windows,
steps), a store write past it stores nothing, and a cancelled caller waits for its thread."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memreader import (
    Deadline,
    DeadlineExceeded,
    InputError,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
)
from memreader.calls.deadlines import in_thread
from memreader.pipeline import FunctionStep
from memreader.steps.chain import PerWindowStep, WindowWork, arun_chain, run_chain
from memreader.steps.report import WindowReport
from memreader.steps.state import FineWindow, ReadState
from memreader.stores import open_store
from memreader.testing import HashEmbedder

pytestmark = pytest.mark.timeout(60)

INFO = {"user_id": "u1", "session_id": "s1"}


class CancellingEmbedder(HashEmbedder):
    """Embeds one text per call, counting calls; cancels ``deadline`` on call ``at``."""

    batch_size = 1

    def __init__(self, at: int) -> None:
        super().__init__()
        self.at = at
        self.deadline: Deadline | None = None

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = super().embed(texts)
        if len(self.calls) == self.at and self.deadline is not None:
            self.deadline.cancel()
        return out


def long_chat(words: int = 3000) -> list[dict[str, str]]:
    return [{"role": "user", "content": " ".join(f"w{n}" for n in range(words))}]


def reader_with(embedder: Any) -> SimpleStructMemReader:
    config = SimpleStructMemReaderConfig(window={"max_tokens": 64, "overlap_tokens": 8})
    return SimpleStructMemReader(config, embedder=embedder)


def test_a_deadline_is_a_point_in_time_and_a_cancel_flag() -> None:
    live = Deadline.after(3600, what="the read")
    assert not live.expired and live.remaining > 3000
    live.check("anywhere")  # no error while it holds
    live.cancel()
    assert live.expired and live.cancelled and live.remaining == 0.0
    with pytest.raises(DeadlineExceeded) as info:
        live.check("before window 3")
    assert info.value.cancelled and info.value.where == "before window 3"
    assert str(info.value) == "the read was cancelled; stopped before window 3"
    with pytest.raises(DeadlineExceeded) as info:
        Deadline.after(0, what="the write").check("before the commit")
    assert not info.value.cancelled
    assert str(info.value) == "the write passed its deadline (0 s); stopped before the commit"
    assert not Deadline().expired  # no time limit: only a cancel stops it
    for bad in (-1, float("nan"), "5", True):
        with pytest.raises(InputError, match="seconds must be a number"):
            Deadline(bad)


def test_a_deadline_that_is_not_one_is_an_input_error() -> None:
    reader = reader_with(HashEmbedder())
    with pytest.raises(
        InputError, match=r"deadline must be a memreader\.calls\.deadlines\.Deadline"
    ):
        reader.get_memory([long_chat(10)], info=INFO, deadline=5)  # type: ignore[arg-type]


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_cancelled_read_stops_between_embedding_batches(run: str) -> None:
    embedder = CancellingEmbedder(at=3)
    reader = reader_with(embedder)
    everything = reader.get_memory([long_chat()], info=INFO)
    batches = len(embedder.calls)
    assert batches > 20  # one call per item: enough to see the read stop early
    embedder.calls.clear()
    deadline = Deadline.after(3600, what="the read")
    embedder.deadline = deadline
    with pytest.raises(DeadlineExceeded) as info:
        if run == "sync":
            reader.get_memory([long_chat()], info=INFO, deadline=deadline)
        else:
            asyncio.run(reader.aget_memory([long_chat()], info=INFO, deadline=deadline))
    assert len(embedder.calls) == 3  # the batch after the cancel never ran
    assert info.value.where == "before embedding batch 3 (items 3+)"
    assert everything and everything[0]


def test_an_expired_deadline_runs_no_step() -> None:
    embedder = HashEmbedder()
    reader = reader_with(embedder)
    started: list[str] = []
    reader.step_hooks.before_step.append(lambda event: started.append(event.step))
    with pytest.raises(DeadlineExceeded, match="stopped before step 'normalize'"):
        reader.get_memory([long_chat(50)], info=INFO, deadline=Deadline.after(0))
    assert started == [] and embedder.calls == []


def test_a_deadline_cancelled_inside_a_step_stops_before_the_next() -> None:
    reader = reader_with(HashEmbedder())
    deadline = Deadline.after(3600)
    reader.pipeline.insert_after(
        "window", FunctionStep("give_up", lambda state, runtime: deadline.cancel())
    )
    started: list[str] = []
    reader.step_hooks.before_step.append(lambda event: started.append(event.step))
    with pytest.raises(DeadlineExceeded) as info:
        reader.get_memory([long_chat(50)], info=INFO, deadline=deadline)
    assert started[-1] == "give_up" and "fast_items" not in started
    assert info.value.where == "before step 'fast_items'"


class CountingWindows(PerWindowStep):
    """A per-window step that counts the windows it entered and cancels at the third."""

    name = "counting"
    requires = ()
    produces = ()

    def __init__(self, deadline: Deadline) -> None:
        self.deadline = deadline
        self.entered: list[int] = []
        self.fallbacks: list[int] = []
        self.lock = threading.Lock()

    def window(self, state: ReadState, runtime: Any, index: int) -> WindowWork:
        with self.lock:
            self.entered.append(index)
            if len(self.entered) == 3:
                self.deadline.cancel()
        return
        yield  # pragma: no cover - makes this a generator

    def failed(self, state: ReadState, index: int, error: Exception) -> None:
        self.fallbacks.append(index)


@pytest.mark.parametrize("run", ["sync", "async"])
def test_a_deadline_stops_every_window_of_a_chain_not_one(run: str) -> None:
    reader = reader_with(HashEmbedder())
    deadline = Deadline.after(3600)
    step = CountingWindows(deadline)
    state = ReadState(mode="fine", deadline=deadline)
    state.fine_windows = [
        FineWindow(i, "text", (i,), WindowReport(0, i), [], {}) for i in range(200)
    ]
    with pytest.raises(DeadlineExceeded, match="before window"):
        if run == "sync":
            run_chain([step], state, reader.runtime)
        else:
            asyncio.run(arun_chain([step], state, reader.runtime))
    # Windows already running when it was cancelled may end; no later one starts, and no
    # window got a fallback (a deadline is the call's, not one window's failure).
    assert 3 <= len(step.entered) < 200
    assert step.fallbacks == []


class Countdown(Deadline):
    """A deadline cancelled by its ``at``-th check (what runs between checks is a write)."""

    def __init__(self, at: int) -> None:
        super().__init__(3600, what="the write")
        self.at = at
        self.seen: list[str] = []

    def check(self, where: str) -> None:
        self.seen.append(where)
        if len(self.seen) >= self.at:
            self.cancel()
        super().check(where)


def test_a_store_write_past_its_deadline_stores_nothing(tmp_path: Path) -> None:
    reader = reader_with(HashEmbedder())
    [items] = reader.get_memory([long_chat(300)], info=INFO)
    store = open_store(f"sqlite:///{tmp_path / 'm.db'}", embedder=HashEmbedder())
    try:
        with pytest.raises(DeadlineExceeded, match="before the store write"):
            store.write(items, deadline=Deadline.after(0))
        # Cancelled at its last check, right before the commit: everything rolls back.
        late = Countdown(at=3)
        with pytest.raises(DeadlineExceeded) as info:
            store.write(items, deadline=late)
        assert info.value.where == "right before the sqlite store write commits"
        assert store.search("w1", user_id="u1", mode="text") == []
        assert all(store.get(item.id, user_id="u1") is None for item in items)
        # The store is whole: the same write, in time, stores every item.
        events = store.write(items, deadline=Deadline.after(3600))
        assert [e.event for e in events] == ["ADD"] * len(items)
        assert store.get(items[0].id, user_id="u1") is not None
        with pytest.raises(InputError, match="deadline must be"):
            store.write(items, deadline=1.0)  # type: ignore[arg-type]
    finally:
        store.close()


def test_a_cancelled_caller_waits_for_its_thread() -> None:
    release = threading.Event()
    ended: list[str] = []

    def work() -> str:
        release.wait(30)
        ended.append("work")
        return "done"

    async def main() -> tuple[list[str], str]:
        task = asyncio.ensure_future(in_thread(work))
        await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.sleep(0.05)
        assert not task.done()  # the thread still runs: so does the cancelled call
        release.set()
        with pytest.raises(asyncio.CancelledError):
            await task
        seen = list(ended)  # the thread had ended when the cancellation came through
        release.clear()
        kept = asyncio.ensure_future(in_thread(work, keep_result=True))
        await asyncio.sleep(0.05)
        kept.cancel()
        release.set()
        return seen, await kept

    seen, kept = asyncio.run(main())
    assert seen == ["work"] and kept == "done"


class SlowCountingEmbedder(HashEmbedder):
    """One text per call, each call waiting ``pause`` seconds; counts them (thread-safe)."""

    batch_size = 1

    def __init__(self, pause: float) -> None:
        super().__init__()
        self.pause = pause
        self.done = threading.Semaphore(0)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        threading.Event().wait(self.pause)
        out = super().embed(texts)
        self.done.release()
        return out


def test_a_cancelled_async_read_stops_its_thread_and_leaves_the_callers_deadline() -> None:
    embedder = SlowCountingEmbedder(pause=0.01)
    reader = reader_with(embedder)
    mine = Deadline()  # the caller's: cancelling the call does not cancel it

    async def main() -> int:
        task = asyncio.ensure_future(reader.aget_memory([long_chat()], info=INFO, deadline=mine))
        while len(embedder.calls) < 3:
            await asyncio.sleep(0.005)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        return len(embedder.calls)  # the embed thread had ended when the cancel came through

    stopped = asyncio.run(main())
    assert len(embedder.calls) == stopped  # nothing embedded after the call returned
    assert 3 <= stopped < 20 and not mine.cancelled


def test_a_deadline_within_another_ends_with_it_and_cancels_alone() -> None:
    parent = Deadline.after(3600, what="the request")
    child = Deadline.within(parent)
    child.cancel()
    assert child.expired and not parent.expired
    other = Deadline.within(parent)
    parent.cancel()
    assert other.expired and other.cancelled and other.remaining == 0.0
    with pytest.raises(DeadlineExceeded, match=r"^the request was cancelled; stopped here$"):
        other.check("here")
    timed = Deadline.within(Deadline.after(0, what="the read"))
    with pytest.raises(DeadlineExceeded, match=r"^the read passed its deadline \(0 s\)"):
        timed.check("there")
