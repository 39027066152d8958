"""Client-level fault injection for the LLM backends.

Every bad reply of :func:`tests.llm_server.fault` (and the model-level ones: prose, an empty
answer, the wrong schema, a cut-off answer), through the real openai and ollama clients, sync
and async, against the scripted server on 127.0.0.1: one fault at a time, and mixed at random
rates over a sequence of calls (hypothesis chooses the replies). Every call must return a
response or raise a typed :class:`LLMError`, send at most ``max_retries + 1`` requests, and end
within its deadlines; the measured times are printed (``pytest -s``), the assertions use generous
bounds. Every call runs under a hard timeout (:func:`finishes_within`).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import gzip
import json
import logging
import re
import time
import zlib
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader.llms import (
    ErrorEvent,
    LLMConfig,
    LLMConnectionError,
    LLMEmptyResponseError,
    LLMError,
    LLMHooks,
    LLMParseError,
    LLMRateLimitError,
    LLMRequestError,
    LLMResponse,
    LLMServerError,
    LLMTimeoutError,
    build_llm,
)
from memreader.llms.base import BaseLLMClient
from memreader.transport import deadline_transport, http_lib, install_log_redaction
from tests.llm_server import (
    SLOW_FAULTS,
    TRANSPORT_FAULTS,
    LLMTestServer,
    RecordedRequest,
    Reply,
    fault,
    finishes_within,
    ollama_chat,
    openai_completion,
)

TIMEOUT = 0.3
#: The deadline of calls to a server that answers at once (fast faults, reasks, compressed
#: bodies): generous, so that a loaded machine (two test workers, CI beside other jobs) never
#: turns a slow answer into a timeout the test did not ask for; the stall tests keep TIMEOUT.
ANSWERS_AT_ONCE = 5.0
MAX_RETRIES = 1
BACKOFF_MAX = 0.02
#: Scheduling slack on a loaded 2-core machine: no test asserts a time (outcomes and requests
#: are asserted; measurements are printed), this only bounds a hang.
MARGIN = 30.0
#: The safety net of one call (a hang fails the test instead of hanging the suite): every
#: attempt at its deadline, every backoff, and generous slack.
CALL_LIMIT = TIMEOUT * (MAX_RETRIES + 1) + BACKOFF_MAX * MAX_RETRIES + MARGIN
#: How long a "hang" stalls: past the whole call limit, so a missing deadline fails the test
#: (the server cuts a stall short when it stops).
STALL = 40.0

BACKENDS = ("openai", "ollama")
MODES = ("sync", "async")
FAST_FAULTS = tuple(f for f in TRANSPORT_FAULTS if f not in SLOW_FAULTS)
CONTENT_FAULTS = ("prose", "empty_answer", "wrong_schema", "cut_off")
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"items": {"type": "array", "items": {"type": "string"}}},
    "required": ["items"],
}
GOOD = json.dumps({"items": ["tea", "bees"]})
MESSAGES = [{"role": "user", "content": "List what I like."}]
PASSWORD = "pw-Sekr1t-9876"
API_KEY = "sk-fault-KEY-0123456789"

#: The typed error each fast fault ends in once retries are spent, and what its message says.
EXPECTED: dict[str, tuple[type[LLMError], str]] = {
    "not_json": (LLMServerError, "not valid JSON"),
    "empty_body": (LLMServerError, "not valid JSON"),
    "bad_utf8": (LLMServerError, "not valid UTF-8"),
    "deep_json": (LLMServerError, "nested too deeply"),
    "json_list": (LLMServerError, "not a chat completion|unexpected shape"),
    "json_string": (LLMServerError, "not a chat completion|unexpected shape"),
    "json_null": (LLMServerError, "not a chat completion|unexpected shape"),
    "html_200": (LLMServerError, "not a chat completion|not valid JSON"),
    "http_429": (LLMRateLimitError, "rate limited"),
    "http_500": (LLMServerError, "server error"),
    "http_503_text": (LLMServerError, "server error"),
    "http_400": (LLMRequestError, "request rejected"),
    "reset": (LLMConnectionError, "connection to the server failed"),
}


def validate(parsed: Any) -> list[str]:
    """The extraction contract in miniature: a list of strings under ``items``."""
    items = parsed.get("items") if isinstance(parsed, dict) else None
    if not isinstance(items, list) or not all(isinstance(item, str) for item in items):
        raise ValueError("'items' must be a list of strings")
    return items


def answer(request: RecordedRequest, content: str, finish: str = "stop") -> Reply:
    """A well-formed reply carrying ``content`` in the API the request used."""
    if request.api == "ollama":
        return Reply(body=ollama_chat(content, done_reason=finish))
    return Reply(body=openai_completion(content, finish_reason=finish))


def reply_for(name: str) -> Callable[[RecordedRequest], Reply]:
    """The scripted reply ``name``: ``"ok"``, a content fault or a transport fault."""

    def respond(request: RecordedRequest) -> Reply:
        if name == "ok":
            return answer(request, GOOD)
        if name == "prose":
            return answer(request, "Sure! You like tea and bees.")
        if name == "empty_answer":
            return answer(request, "")
        if name == "wrong_schema":
            return answer(request, json.dumps({"items": [1, 2]}))
        if name == "cut_off":
            return answer(request, GOOD[:12], finish="length")
        return fault(name, stall=STALL)

    return respond


def make_client(
    server: LLMTestServer,
    backend: str,
    *,
    max_retries: int = MAX_RETRIES,
    timeout: float = TIMEOUT,
    **extra: Any,
) -> BaseLLMClient:
    hooks = extra.pop("hooks", None)
    base_url = server.url if backend == "openai" else server.ollama_host
    config = LLMConfig(
        backend=backend,
        model="m",
        base_url=extra.pop("base_url", base_url),
        timeout=timeout,
        max_retries=max_retries,
        backoff_base=0.01,
        backoff_max=BACKOFF_MAX,
        **extra,
    )
    client = build_llm(config, hooks=hooks)
    assert isinstance(client, BaseLLMClient)
    return client


def call(client: BaseLLMClient, mode: str, limit: float = CALL_LIMIT) -> LLMResponse:
    """One ``complete``/``acomplete`` with the schema and ``validate``, under a hard timeout."""

    def sync() -> LLMResponse:
        return client.complete(MESSAGES, schema=SCHEMA, validate=validate)

    async def both() -> LLMResponse:
        try:
            return await client.acomplete(MESSAGES, schema=SCHEMA, validate=validate)
        finally:
            await client.aclose()

    return finishes_within(limit, sync if mode == "sync" else lambda: asyncio.run(both()))


def timed(client: BaseLLMClient, mode: str) -> tuple[LLMResponse | LLMError, float]:
    started = time.monotonic()
    try:
        outcome: LLMResponse | LLMError = call(client, mode)
    except LLMError as err:
        outcome = err
    return outcome, time.monotonic() - started


@pytest.fixture(scope="module")
def shared_server() -> Iterator[LLMTestServer]:
    with LLMTestServer() as srv:
        yield srv


@pytest.fixture
def server(shared_server: LLMTestServer) -> LLMTestServer:
    """The module's server, with no script and no recorded requests (starting one per test
    would cost more than most tests here)."""
    shared_server.reset()
    return shared_server


# -- one fault at a time -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", FAST_FAULTS)
def test_fast_fault_is_typed_retried_and_recovered(
    server: LLMTestServer, backend: str, mode: str, kind: str
) -> None:
    client = make_client(server, backend, timeout=ANSWERS_AT_ONCE)
    error_class, message = EXPECTED[kind]
    retried = kind != "http_400"
    server.script([reply_for(kind), reply_for(kind)])
    outcome, elapsed = timed(client, mode)
    print(f"{backend}/{mode}/{kind}: {type(outcome).__name__} in {elapsed:.3f}s")
    assert type(outcome) is error_class, outcome
    assert re.search(message, str(outcome)), str(outcome)
    assert "model=m" in str(outcome) and "attempts=" in str(outcome)
    assert outcome.retryable is retried
    expected_requests = MAX_RETRIES + 1 if retried else 1
    assert len(server.requests) == expected_requests == outcome.attempts

    # The same fault once, then a good answer: the retry recovers.
    server.reset()
    server.script([reply_for(kind), reply_for("ok")])
    recovered, elapsed = timed(make_client(server, backend, timeout=ANSWERS_AT_ONCE), mode)
    if retried:
        assert isinstance(recovered, LLMResponse), recovered
        assert recovered.attempts == 2 and recovered.validated == ["tea", "bees"]
    else:
        assert isinstance(recovered, LLMRequestError)
    assert len(server.requests) <= MAX_RETRIES + 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", sorted(SLOW_FAULTS))
def test_stalling_reply_ends_at_the_deadline(
    server: LLMTestServer, backend: str, mode: str, kind: str
) -> None:
    # Each byte of slow_headers, trickle_body and endless_body comes well within any read
    # timeout (every 50 ms): only a deadline over the whole request ends them.
    server.script([reply_for(kind)])
    outcome, elapsed = timed(make_client(server, backend, max_retries=0), mode)
    print(f"{backend}/{mode}/{kind}: {type(outcome).__name__} after {elapsed:.3f}s")
    assert isinstance(outcome, LLMTimeoutError), outcome
    assert f"timeout={TIMEOUT:g}s" in str(outcome) and outcome.retryable
    # The deadline (not a read timeout, nor the stall's end) ended it: its message says so.
    assert len(server.requests) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_timeout_is_retried_and_each_attempt_reported(server: LLMTestServer, backend: str) -> None:
    errors: list[ErrorEvent] = []
    client = make_client(server, backend, hooks=LLMHooks(on_error=[errors.append]))
    server.script([reply_for("trickle_body"), reply_for("ok")])
    outcome, _ = timed(client, "sync")
    assert isinstance(outcome, LLMResponse) and outcome.attempts == 2
    assert len(errors) == 1 and isinstance(errors[0].error, LLMTimeoutError)
    assert errors[0].will_retry and f"timeout={TIMEOUT:g}s" in str(errors[0].error)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", CONTENT_FAULTS)
def test_unusable_answers_are_reasked_within_the_budget(
    server: LLMTestServer, backend: str, kind: str
) -> None:
    server.script([reply_for(kind), reply_for("ok")])
    outcome, _ = timed(make_client(server, backend, timeout=ANSWERS_AT_ONCE), "sync")
    assert isinstance(outcome, LLMResponse) and outcome.attempts == 2, outcome
    assert outcome.validated == ["tea", "bees"]
    reask = server.requests[1].messages[-1]["content"]
    assert reask.startswith("Your ")  # the correction that explains what was wrong

    server.reset()
    server.script([reply_for(kind), reply_for(kind)])
    outcome, _ = timed(make_client(server, backend, timeout=ANSWERS_AT_ONCE), "sync")
    assert len(server.requests) == MAX_RETRIES + 1
    if kind == "cut_off":  # budget spent: the cut-off answer is returned, marked
        assert isinstance(outcome, LLMResponse) and outcome.truncated
    else:
        final = LLMEmptyResponseError if kind == "empty_answer" else LLMParseError
        assert type(outcome) is final and outcome.attempts == MAX_RETRIES + 1, outcome


# -- faults mixed at random rates ----------------------------------------------------------------

ALL_FAULTS = FAST_FAULTS + tuple(sorted(SLOW_FAULTS)) + CONTENT_FAULTS
CALLS = 3


@st.composite
def reply_plans(draw: st.DrawFn) -> list[str]:
    """Enough replies for every call's every attempt; each a fault at a drawn rate."""
    rate = draw(st.sampled_from([0.25, 0.5, 0.75, 1.0]))
    return [
        draw(st.sampled_from(ALL_FAULTS)) if draw(st.floats(0, 1)) < rate else "ok"
        for _ in range(CALLS * (MAX_RETRIES + 1))
    ]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(plan=reply_plans())
def test_mixed_faults(server: LLMTestServer, backend: str, mode: str, plan: list[str]) -> None:
    server.reset()
    server.script([reply_for(name) for name in plan])
    client = make_client(server, backend)
    measured = []
    for _ in range(CALLS):
        before = len(server.requests)
        outcome, elapsed = timed(client, mode)
        sent = len(server.requests) - before
        measured.append(f"{type(outcome).__name__}/{sent}/{elapsed:.2f}s")
        assert isinstance(outcome, (LLMResponse, LLMError)), outcome
        assert 1 <= sent <= MAX_RETRIES + 1
        if isinstance(outcome, LLMResponse):
            assert outcome.attempts == sent
    print(f"{backend}/{mode} {plan}: {measured}")


# -- secrets -------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_no_secret_in_logs_or_errors(
    server: LLMTestServer, backend: str, mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    path = "/v1" if backend == "openai" else ""
    base_url = f"http://user:{PASSWORD}@127.0.0.1:{server.port}{path}"
    client = make_client(
        server,
        backend,
        base_url=base_url,
        api_key=API_KEY,
        extra_headers={"X-Api-Token": API_KEY},
    )
    server.script([reply_for("reset"), reply_for("not_json"), reply_for("ok")])
    with caplog.at_level(logging.DEBUG):
        failed, _ = timed(client, mode)
        succeeded, _ = timed(client, mode)
    assert isinstance(failed, LLMError) and isinstance(succeeded, LLMResponse)
    basic = base64.b64encode(f"user:{PASSWORD}".encode()).decode()
    assert server.requests[-1].headers["authorization"] in (f"Basic {basic}", f"Bearer {API_KEY}")
    texts = [caplog.text]
    texts += [record.getMessage() + (record.exc_text or "") for record in caplog.records]
    error: BaseException | None = failed
    while error is not None:  # our message and every message it was made from
        texts += [str(error), repr(error)]
        error = error.__cause__ or error.__context__
    for secret in (PASSWORD, API_KEY, basic):
        assert not [text for text in texts if secret in text], secret
    # The HTTP library did log its request lines, without the credentials.
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("HTTP Request")]
    assert lines and all(f"http://127.0.0.1:{server.port}" in line for line in lines)


# -- the body: size cap, content codings ---------------------------------------------------------


@functools.cache
def compressed(content: str, coding: str, backend: str) -> Reply:
    body = json.dumps(ollama_chat(content) if backend == "ollama" else openai_completion(content))
    data = body.encode()
    packed = {
        "gzip": lambda: gzip.compress(data, compresslevel=1),
        "deflate": lambda: zlib.compress(data),
        "raw-deflate": lambda: zlib.compress(data)[2:-4],
    }[coding]()
    header = "deflate" if coding == "raw-deflate" else coding
    return Reply(body=packed, content_type="application/json", headers={"Content-Encoding": header})


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("coding", ["gzip", "deflate", "raw-deflate"])
def test_compressed_answers_are_read(
    server: LLMTestServer, backend: str, mode: str, coding: str
) -> None:
    server.script([compressed(GOOD, coding, backend)])
    outcome, _ = timed(make_client(server, backend, timeout=ANSWERS_AT_ONCE), mode)
    assert isinstance(outcome, LLMResponse) and outcome.validated == ["tea", "bees"]
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
def test_compression_bomb_stops_at_max_response_bytes(
    server: LLMTestServer, backend: str, mode: str
) -> None:
    # 50 MB of spaces inside a valid answer, about 50 KB gzipped: httpx alone would inflate all
    # of it, whatever the cap on the bytes received.
    content = "{" + " " * 50_000_000 + '"items": []}'
    server.script([compressed(content, "gzip", backend)])
    client = make_client(server, backend, max_response_bytes=1_000_000, timeout=ANSWERS_AT_ONCE)
    outcome, elapsed = timed(client, mode)
    print(f"{backend}/{mode} gzip bomb: {type(outcome).__name__} after {elapsed:.3f}s")
    assert isinstance(outcome, LLMServerError) and not outcome.retryable
    assert "max_response_bytes (1000000 bytes)" in str(outcome)
    assert len(server.requests) == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_oversize_and_undecodable_bodies_are_typed(server: LLMTestServer, backend: str) -> None:
    server.script([Reply(body=b'{"x": "' + b"a" * 5000 + b'"}', content_type="application/json")])
    outcome, _ = timed(
        make_client(server, backend, max_response_bytes=4096, timeout=ANSWERS_AT_ONCE), "sync"
    )
    assert isinstance(outcome, LLMServerError) and "max_response_bytes (4096 bytes)" in str(outcome)
    assert len(server.requests) == 1

    for headers, problem in (
        ({"Content-Encoding": "gzip"}, "not valid gzip data"),
        ({"Content-Encoding": "br"}, "content coding that was not asked for (br)"),
    ):
        server.reset()
        bad = Reply(body=b"\x1f\x8b not gzip", content_type="application/json", headers=headers)
        server.script([bad, bad])
        outcome, _ = timed(make_client(server, backend, timeout=ANSWERS_AT_ONCE), "sync")
        assert isinstance(outcome, LLMServerError) and problem in str(outcome), outcome
        assert outcome.retryable and len(server.requests) == MAX_RETRIES + 1


def test_a_callers_transport_keeps_the_deadline_and_the_cap(server: LLMTestServer) -> None:
    lib = http_lib("httpx")
    transport = deadline_transport(
        lib, timeout=TIMEOUT, max_response_bytes=2000, inner=httpx.HTTPTransport()
    )
    with httpx.Client(transport=transport) as client:
        server.script([fault("endless_body")])
        # The safety net (CALL_LIMIT) is shorter than the stall: only the deadline ends it.
        with pytest.raises(httpx.ReadTimeout):
            finishes_within(CALL_LIMIT, lambda: client.post(f"{server.url}/chat/completions"))
        server.script([compressed(GOOD, "gzip", "openai")])
        answer = client.post(f"{server.url}/chat/completions").json()
        assert answer["choices"][0]["message"]["content"] == GOOD


def test_the_log_filter_masks_a_password_holding_an_at_sign(
    caplog: pytest.LogCaptureFixture,
) -> None:
    install_log_redaction()
    with caplog.at_level(logging.INFO, logger="httpx"):
        logging.getLogger("httpx").info("HTTP Request: POST http://u:p@ss-w0rd@127.0.0.1:9/v1 ok")
    (record,) = [r for r in caplog.records if r.name == "httpx"]
    assert record.getMessage() == "HTTP Request: POST http://***@127.0.0.1:9/v1 ok"
