"""Fault injection through the whole reader: whatever the LLM server does, a fine-mode call
returns, every window is ``ok`` or a ``fallback`` with an LLM-side reason (never
``internal_error``: that would mean an untyped exception got through), every message is in some
item's sources, and the requests stay within ``windows x passes x (max_retries + 1)``.

The server answers each request correctly for its pass, or, with a probability hypothesis
chooses, with a fault: a broken HTTP exchange (``tests.llm_server.fault``) or a bad answer
(prose, an empty answer, the wrong schema, a cut-off answer).
"""

from __future__ import annotations

import asyncio
import json
import random
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader import ReadReport, SimpleStructMemReader, SimpleStructMemReaderConfig
from tests.common import HASH_EMBEDDER, INFO
from tests.fine_script import kind
from tests.llm_server import (
    SLOW_FAULTS,
    TRANSPORT_FAULTS,
    LLMTestServer,
    RecordedRequest,
    Reply,
    fault,
    llm_server,
    ollama_chat,
    openai_completion,
)

__all__ = ["llm_server"]

# The bound on a hang: generous, a safety net only (the tests count requests and outcomes).
pytestmark = pytest.mark.timeout(300)

WINDOWS = 6
PASSES = 3  # extract, filter, rewrite
MAX_RETRIES = 1
TIMEOUT = 0.4
FALLBACK_REASONS = {"timeout", "llm_error", "parse_error", "empty_response", "truncated"}
CONTENT_FAULTS = ("prose", "empty_answer", "wrong_schema", "cut_off")
FAST_TRANSPORT_FAULTS = tuple(f for f in TRANSPORT_FAULTS if f not in SLOW_FAULTS)


def scenes() -> list[list[dict[str, str]]]:
    return [
        [
            {"role": "user", "content": f"I keep {i} bee hives behind the barn."},
            {"role": "assistant", "content": f"That is {i} hives to look after!"},
        ]
        for i in range(WINDOWS)
    ]


def good_content(request: RecordedRequest) -> str:
    which = kind(request)
    if which == "memory_extraction":
        memory = {
            "key": "bees",
            "memory_type": "UserMemory",
            "value": "The user keeps bee hives behind the barn.",
            "tags": ["bees"],
            "source_ids": [1, 2],
        }
        return json.dumps({"memory_list": [memory], "summary": "bees"})
    if which == "memory_filter":
        return json.dumps({"results": [{"id": 1, "supported": True}]})
    return json.dumps({"results": [{"id": 1, "value": "The user keeps hives behind the barn."}]})


def answer(request: RecordedRequest, content: str, finish: str = "stop") -> Reply:
    if request.api == "ollama":
        return Reply(body=ollama_chat(content, done_reason=finish))
    return Reply(body=openai_completion(content, finish_reason=finish))


def faulty(request: RecordedRequest, name: str) -> Reply:
    if name == "prose":
        return answer(request, "Sure! The user seems to like bees a lot.")
    if name == "empty_answer":
        return answer(request, "")
    if name == "wrong_schema":
        return answer(request, json.dumps({"answer": "bees"}))
    if name == "cut_off":
        return answer(request, good_content(request)[:25], finish="length")
    return fault(name, stall=5.0, trickle=0.05)


def responder(
    rate: float, faults: tuple[str, ...], seed: int
) -> Callable[[RecordedRequest], Reply]:
    rng = random.Random(seed)
    lock = threading.Lock()

    def respond(request: RecordedRequest) -> Reply:
        with lock:
            name = rng.choice(faults) if rng.random() < rate else None
        return answer(request, good_content(request)) if name is None else faulty(request, name)

    return respond


def make_reader(server: LLMTestServer, backend: str) -> SimpleStructMemReader:
    base_url = server.url if backend == "openai" else server.ollama_host
    config = SimpleStructMemReaderConfig(
        embedder=HASH_EMBEDDER,
        llm={
            "backend": backend,
            "model": "m",
            "base_url": base_url,
            "timeout": TIMEOUT,
            "max_retries": MAX_RETRIES,
            "backoff_base": 0.01,
            "backoff_max": 0.02,
        },
        llm_max_concurrency=4,
    )
    return SimpleStructMemReader(config)


def read(reader: SimpleStructMemReader, use_async: bool, report: ReadReport) -> list[list[Any]]:
    if use_async:

        async def run() -> list[list[Any]]:
            try:
                return await reader.aget_memory(
                    scenes(), type="chat", info=INFO, mode="fine", report=report
                )
            finally:
                await reader.aclose()

        return asyncio.run(run())
    try:
        return reader.get_memory(scenes(), type="chat", info=INFO, mode="fine", report=report)
    finally:
        reader.close()


def check_call(server: LLMTestServer, backend: str, use_async: bool) -> ReadReport:
    """One fine-mode call against whatever the server does; the promises hold. Returns the
    call's report."""
    report = ReadReport()
    result = read(make_reader(server, backend), use_async, report)
    assert len(result) == WINDOWS and len(report.windows) == WINDOWS
    for window, items in zip(report.windows, result, strict=True):
        assert window.status in ("ok", "fallback"), window
        if window.status == "fallback":
            assert window.fallback_reason in FALLBACK_REASONS, window
            assert f"fallback:{window.fallback_reason}" in items[0].metadata.tags
        assert {s.message_index for i in items for s in i.metadata.sources} == {0, 1}, (
            "every message is in some item's sources"
        )
        assert all(i.metadata.embedding is not None for i in items)
    assert len(server.requests) <= WINDOWS * PASSES * (MAX_RETRIES + 1)
    return report


BACKENDS = [("openai", False), ("openai", True), ("ollama", False), ("ollama", True)]


@pytest.mark.parametrize(("backend", "use_async"), BACKENDS)
@pytest.mark.parametrize("name", FAST_TRANSPORT_FAULTS + CONTENT_FAULTS)
def test_every_window_survives_one_fault_kind(
    llm_server: LLMTestServer, backend: str, use_async: bool, name: str
) -> None:
    llm_server.responder = responder(1.0, (name,), seed=0)
    check_call(llm_server, backend, use_async)


@pytest.mark.parametrize(("backend", "use_async"), BACKENDS)
def test_slow_faults_end_at_the_deadline(
    llm_server: LLMTestServer, backend: str, use_async: bool
) -> None:
    # Every request hangs, trickles or never ends (for 5 s, far past the 0.4 s deadline): each
    # attempt ends at the deadline, as a timeout, and the filter and rewrite never run (every
    # extraction falls back). Counted, not timed: without the deadline the stalls would end as
    # other errors (or answers) after 5 s, and the test's own timeout bounds the wait.
    llm_server.responder = responder(1.0, tuple(sorted(SLOW_FAULTS)), seed=1)
    report = check_call(llm_server, backend, use_async)
    assert [w.fallback_reason for w in report.windows] == ["timeout"] * WINDOWS
    assert len(llm_server.requests) == WINDOWS * (MAX_RETRIES + 1)


@settings(
    max_examples=6,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
    derandomize=True,
)
@given(
    rate=st.floats(min_value=0.3, max_value=0.5),
    seed=st.integers(min_value=0, max_value=2**32 - 1),
    setup=st.sampled_from(BACKENDS),
)
def test_mixed_faults_at_random_rates(
    llm_server: LLMTestServer, rate: float, seed: int, setup: tuple[str, bool]
) -> None:
    llm_server.reset()
    backend, use_async = setup
    faults = FAST_TRANSPORT_FAULTS + CONTENT_FAULTS + ("hang", "endless_body")
    llm_server.responder = responder(rate, faults, seed)
    check_call(llm_server, backend, use_async)
    requests = len(llm_server.requests)
    print(f"{backend} async={use_async} rate={rate:.2f}: {requests} requests")
