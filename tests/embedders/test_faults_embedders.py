"""Client-level fault injection for the remote embedders (OpenAI-compatible and Ollama).

Every bad reply of :func:`tests.llm_server.fault`, through the real openai and ollama clients
against the scripted server on 127.0.0.1, called directly and from asyncio (``asyncio.to_thread``,
as the readers do): one fault at a time, and mixed at random rates over a sequence of calls
(hypothesis chooses the replies). Every call must return one vector per text or raise an
:class:`EmbeddingError` that names the batch, send at most ``max_retries + 1`` requests per
batch, and end within its deadlines (measured times are printed with ``pytest -s``; the bounds
asserted are generous). Every call runs under a hard timeout (:func:`finishes_within`).
"""

from __future__ import annotations

import asyncio
import base64
import functools
import gzip
import json
import logging
import random
import re
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader.embedders import OllamaEmbedder, OpenAIEmbedder, build_embedder
from memreader.embedders.base import PoolingEmbedder
from memreader.embedders.config import OllamaEmbedderConfig, OpenAIEmbedderConfig
from memreader.errors import ConfigError, EmbeddingError
from tests.llm_server import (
    SLOW_FAULTS,
    TRANSPORT_FAULTS,
    LLMTestServer,
    RecordedRequest,
    Reply,
    default_responder,
    fake_vector,
    fault,
    finishes_within,
    ollama_embed,
    openai_embeddings,
)

TIMEOUT = 0.3
#: The deadline of calls to a server that answers at once (fast faults): generous, so that a
#: loaded machine (CI beside other jobs) never turns a slow connect into a timeout the test
#: did not ask for; the stall tests keep TIMEOUT.
ANSWERS_AT_ONCE = 5.0
MAX_RETRIES = 1
BACKOFF = 0.01
#: Slack that only bounds a hang (no test asserts a time: outcomes and requests are asserted,
#: measurements printed), generous for a loaded 2-core machine.
MARGIN = 30.0
CALL_LIMIT = TIMEOUT * (MAX_RETRIES + 1) + BACKOFF * 2**MAX_RETRIES + MARGIN
#: Past the call's safety net, so a missing deadline fails the test.
STALL = 40.0

BACKENDS = ("openai", "ollama")
MODES = ("sync", "async")
FAST_FAULTS = tuple(f for f in TRANSPORT_FAULTS if f not in SLOW_FAULTS)
TEXTS = ["I keep bees behind the barn.", "The hives need checking on Sunday."]
PASSWORD = "pw-Sekr1t-9876"
API_KEY = "sk-fault-KEY-0123456789"

#: What the error message says, once retries are spent, for each fast fault.
EXPECTED: dict[str, str] = {
    "not_json": "not valid JSON",
    "empty_body": "not valid JSON",
    "bad_utf8": "not valid UTF-8",
    "deep_json": "nested too deeply",
    "json_list": "not an? .*embed",
    "json_string": "not an? .*embed",
    "json_null": "not an? .*embed",
    "html_200": "not an? .*embed|not valid JSON",
    "http_429": "HTTP 429",
    "http_500": "HTTP 500",
    "http_503_text": "HTTP 503",
    "http_400": "HTTP 400",
    "reset": "connection failed: ReadError",
}


def reply_for(name: str) -> Callable[[RecordedRequest], Reply]:
    """``"ok"`` (the texts' vectors) or a transport fault."""

    def respond(request: RecordedRequest) -> Reply:
        return default_responder(request) if name == "ok" else fault(name, stall=STALL)

    return respond


def make_embedder(
    server: LLMTestServer,
    backend: str,
    *,
    max_retries: int = MAX_RETRIES,
    cls: type[PoolingEmbedder] | None = None,
    **extra: Any,
) -> PoolingEmbedder:
    settings_: dict[str, Any] = {
        "model": "e",
        "timeout": TIMEOUT,
        "max_retries": max_retries,
        "backoff_base": BACKOFF,
    }
    if backend == "openai":
        settings_["base_url"] = extra.pop("base_url", server.url)
    else:
        settings_["host"] = extra.pop("host", server.ollama_host)
    settings_.update(extra)
    if cls is None:
        embedder = build_embedder({"backend": backend, "config": settings_})
    else:
        config_class = OpenAIEmbedderConfig if backend == "openai" else OllamaEmbedderConfig
        embedder = cls(config_class(**settings_))  # type: ignore[call-arg]
    assert isinstance(embedder, PoolingEmbedder)
    return embedder


def timed(
    embedder: PoolingEmbedder, mode: str, texts: list[str] = TEXTS
) -> tuple[list[list[float]] | EmbeddingError, float]:
    def run() -> list[list[float]]:
        if mode == "sync":
            return embedder.embed(texts)
        return asyncio.run(asyncio.to_thread(embedder.embed, texts))

    started = time.monotonic()
    try:
        outcome: list[list[float]] | EmbeddingError = finishes_within(CALL_LIMIT, run)
    except EmbeddingError as err:
        outcome = err
    return outcome, time.monotonic() - started


def names_the_batch(error: EmbeddingError, backend: str, server: LLMTestServer) -> None:
    message = str(error)
    assert "model 'e'" in message and f"127.0.0.1:{server.port}" in message, message
    assert f"a batch of 2 texts, the first (28 characters): {TEXTS[0]!r}" in message, message


@pytest.fixture(scope="module")
def shared_server() -> Iterator[LLMTestServer]:
    with LLMTestServer() as srv:
        yield srv


@pytest.fixture
def server(shared_server: LLMTestServer) -> LLMTestServer:
    """The module's server, reset."""
    shared_server.reset()
    return shared_server


# -- one fault at a time -----------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", FAST_FAULTS)
def test_fast_fault_is_typed_retried_and_recovered(
    server: LLMTestServer, backend: str, mode: str, kind: str
) -> None:
    embedder = make_embedder(server, backend, timeout=ANSWERS_AT_ONCE)
    server.script([reply_for(kind), reply_for(kind)])
    outcome, elapsed = timed(embedder, mode)
    print(f"{backend}/{mode}/{kind}: {type(outcome).__name__} in {elapsed:.3f}s")
    assert isinstance(outcome, EmbeddingError), outcome
    assert re.search(EXPECTED[kind], str(outcome)), str(outcome)
    names_the_batch(outcome, backend, server)
    retried = kind != "http_400"
    assert len(server.requests) == (MAX_RETRIES + 1 if retried else 1)

    server.reset()
    server.script([reply_for(kind), reply_for("ok")])
    recovered, _ = timed(make_embedder(server, backend, timeout=ANSWERS_AT_ONCE), mode)
    if retried:
        assert recovered == [pytest.approx(fake_vector(text)) for text in TEXTS]
    else:
        assert isinstance(recovered, EmbeddingError)
    assert len(server.requests) <= MAX_RETRIES + 1


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", sorted(SLOW_FAULTS))
def test_stalling_reply_ends_at_the_deadline(
    server: LLMTestServer, backend: str, mode: str, kind: str
) -> None:
    server.script([reply_for(kind)])
    outcome, elapsed = timed(make_embedder(server, backend, max_retries=0), mode)
    print(f"{backend}/{mode}/{kind}: {type(outcome).__name__} after {elapsed:.3f}s")
    assert isinstance(outcome, EmbeddingError), outcome
    assert f"timed out: no complete answer within timeout={TIMEOUT:g}s" in str(outcome)
    names_the_batch(outcome, backend, server)
    assert len(server.requests) == 1  # its deadline ended it: the message names the timeout


# -- faults mixed at random rates ----------------------------------------------------------------

ALL_FAULTS = FAST_FAULTS + tuple(sorted(SLOW_FAULTS))
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
    embedder = make_embedder(server, backend)
    measured = []
    for _ in range(CALLS):
        before = len(server.requests)
        outcome, elapsed = timed(embedder, mode)
        measured.append(f"{type(outcome).__name__}/{len(server.requests) - before}/{elapsed:.2f}s")
        if isinstance(outcome, EmbeddingError):
            names_the_batch(outcome, backend, server)
        else:
            assert outcome == [pytest.approx(fake_vector(text)) for text in TEXTS]
    # Each call made 1 to MAX_RETRIES + 1 attempts. Counted over all calls, once the server has
    # read every request: on a loaded machine an attempt a call timed out on can be read by the
    # server's thread after the call returned, and would count for the next call.
    sent = settled_count(server)
    assert CALLS <= sent <= CALLS * (MAX_RETRIES + 1), measured
    print(f"{backend}/{mode} {plan}: {measured}")


def settled_count(server: LLMTestServer, quiet: float = 0.3, limit: float = 10.0) -> int:
    """How many requests the server has read, once that number stayed the same for ``quiet``
    seconds (at most ``limit`` seconds of waiting)."""
    count, since, ends = len(server.requests), time.monotonic(), time.monotonic() + limit
    while time.monotonic() < ends:
        time.sleep(0.05)
        if len(server.requests) != count:
            count, since = len(server.requests), time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return count


# -- secrets -------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
def test_no_secret_in_logs_or_errors(
    server: LLMTestServer, backend: str, caplog: pytest.LogCaptureFixture
) -> None:
    url = f"http://user:{PASSWORD}@127.0.0.1:{server.port}"
    extra: dict[str, Any] = (
        {"base_url": f"{url}/v1", "api_key": API_KEY, "extra_headers": {"X-Token": API_KEY}}
        if backend == "openai"
        else {"host": url}
    )
    embedder = make_embedder(server, backend, **extra)
    server.script([reply_for("reset"), reply_for("not_json"), reply_for("ok")])
    with caplog.at_level(logging.DEBUG):
        failed, _ = timed(embedder, "sync")
        vectors, _ = timed(embedder, "sync")
    assert isinstance(failed, EmbeddingError) and isinstance(vectors, list)
    basic = base64.b64encode(f"user:{PASSWORD}".encode()).decode()
    # The URL's credentials are sent as basic auth (they win over the key, as in httpx).
    assert server.requests[-1].headers["authorization"] == f"Basic {basic}"
    texts = [caplog.text, repr(embedder)]
    texts += [record.getMessage() + (record.exc_text or "") for record in caplog.records]
    error: BaseException | None = failed
    while error is not None:
        texts += [str(error), repr(error)]
        error = error.__cause__ or error.__context__
    for secret in (PASSWORD, API_KEY, basic):
        assert not [text for text in texts if secret in text], secret
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("HTTP Request")]
    assert lines and all(f"http://127.0.0.1:{server.port}" in line for line in lines)


# -- the body: content codings and the size cap --------------------------------------------------


@functools.cache
def gzipped(backend: str, padding: int = 0) -> Reply:
    body = openai_embeddings(TEXTS) if backend == "openai" else ollama_embed(TEXTS)
    data = json.dumps(body).encode()
    if padding:  # spaces before the last brace: still the same, valid JSON
        data = data[:-1] + b" " * padding + b"}"
    return Reply(
        body=gzip.compress(data, compresslevel=1),
        content_type="application/json",
        headers={"Content-Encoding": "gzip"},
    )


class SmallOpenAIEmbedder(OpenAIEmbedder):
    max_response_bytes = 100_000


class SmallOllamaEmbedder(OllamaEmbedder):
    max_response_bytes = 100_000


@pytest.mark.parametrize("backend", BACKENDS)
def test_compressed_answers_are_read_and_capped(server: LLMTestServer, backend: str) -> None:
    server.script([gzipped(backend)])
    vectors, _ = timed(make_embedder(server, backend, timeout=ANSWERS_AT_ONCE), "sync")
    assert vectors == [pytest.approx(fake_vector(text)) for text in TEXTS]
    assert server.requests[0].headers["accept-encoding"] == "gzip, deflate"

    server.reset()
    cls = SmallOpenAIEmbedder if backend == "openai" else SmallOllamaEmbedder
    server.script([gzipped(backend, padding=20_000_000)])
    outcome, elapsed = timed(
        make_embedder(server, backend, cls=cls, timeout=ANSWERS_AT_ONCE), "sync"
    )
    print(f"{backend} gzip bomb: {type(outcome).__name__} after {elapsed:.3f}s")
    assert isinstance(outcome, EmbeddingError)
    assert "larger than max_response_bytes (100000 bytes)" in str(outcome)
    names_the_batch(outcome, backend, server)
    assert len(server.requests) == 1  # not worth another try


# -- one retry policy, the same as the LLM backends' ----------------------------------------------


def error_reply(request: RecordedRequest, status: int, **headers: str) -> Reply:
    body: Any = (
        {"error": {"message": "busy"}} if request.api == "openai_embed" else {"error": "busy"}
    )
    return Reply(status=status, body=body, headers=headers)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("status", [408, 409, 429, 503])
def test_the_llm_backends_transient_statuses_are_retried(
    server: LLMTestServer, backend: str, status: int
) -> None:
    # The Ollama embedder retried only 429 and 5xx, the OpenAI one 408 and 409 too; one rule.
    server.script([lambda request: error_reply(request, status), reply_for("ok")])
    vectors, _ = timed(make_embedder(server, backend, timeout=ANSWERS_AT_ONCE), "sync")
    assert vectors == [pytest.approx(fake_vector(text)) for text in TEXTS]
    assert len(server.requests) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_waits_are_full_jitter_and_retry_after_is_capped_at_backoff_max(
    server: LLMTestServer, backend: str
) -> None:
    embedder = make_embedder(
        server,
        backend,
        max_retries=3,
        backoff_base=1.0,
        backoff_max=1.5,
        timeout=ANSWERS_AT_ONCE,
    )
    assert isinstance(embedder, (OpenAIEmbedder, OllamaEmbedder))
    waits: list[float] = []
    embedder.retry.sleep = waits.append
    embedder.retry.rng = random.Random(7)
    server.script(
        [
            lambda request: error_reply(request, 503),
            lambda request: error_reply(request, 503),
            lambda request: error_reply(request, 429, **{"Retry-After": "600"}),
            reply_for("ok"),
        ]
    )
    assert embedder.embed(TEXTS) == [pytest.approx(fake_vector(text)) for text in TEXTS]
    same = random.Random(7)
    expected = [same.uniform(0, 1.0), same.uniform(0, 1.5)]
    # The ollama client does not expose response headers: no Retry-After there.
    expected.append(1.5 if backend == "openai" else same.uniform(0, 1.5))
    assert waits == pytest.approx(expected)


def test_backoff_settings_are_checked_by_the_config() -> None:
    for settings_ in ({"backoff_base": float("inf")}, {"backoff_max": -1}, {"max_retries": 99}):
        with pytest.raises(ConfigError) as info:
            build_embedder({"backend": "ollama", "config": settings_})
        assert next(iter(settings_)) in str(info.value)
