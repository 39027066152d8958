"""The test seams users get: :mod:`memreader.testing` (the ``scripted`` LLM backend and the
``hash`` embedder) and the ``transport`` of the LLM and remote embedder configs, each driven
through a reader. Nothing here opens a socket: every base URL is unroutable on purpose."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest

from memreader import (
    MemReaderConfigFactory,
    MemReaderFactory,
    ReadReport,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
)
from memreader.categories.config import CategoriesConfig
from memreader.embedders import EmbedderConfig, build_embedder
from memreader.errors import ConfigError
from memreader.llms import (
    LLMConfig,
    LLMServerError,
    LLMTimeoutError,
    RawCompletion,
    build_llm,
)
from memreader.secret_masking import OpaqueRef
from memreader.testing import HashEmbedder, ScriptedLLM, ScriptedRequest
from tests.common import INFO
from tests.llm_server import finishes_within

#: Nothing listens there (and .invalid never resolves): a request that reached the network
#: would fail, so a passing test shows the transport answered.
NOWHERE = "http://nowhere.invalid"
CHAT = [
    [
        {"role": "user", "content": "I moved to Lisbon last week.", "chat_time": "2026-05-10"},
        {"role": "assistant", "content": "How do you like it?", "chat_time": "2026-05-10"},
        {"role": "user", "content": "I start piano lessons tomorrow.", "chat_time": "2026-05-10"},
    ]
]
EXTRACTION = {
    "memory_list": [
        {
            "key": "home",
            "memory_type": "UserMemory",
            "value": "The user moved to Lisbon in early May 2026.",
            "tags": ["relocation"],
            "source_ids": [1],
        },
        {
            "key": "piano",
            "memory_type": "UserMemory",
            "value": "The user starts piano lessons on 2026-05-11.",
            "tags": ["music"],
            "source_ids": [3],
        },
    ],
    "summary": "The user moved to Lisbon and starts piano lessons.",
}
FILTER = {"results": [{"id": 1, "supported": True}, {"id": 2, "supported": True}]}
REWRITE: dict[str, Any] = {"results": []}


def by_pass(request: ScriptedRequest) -> dict[str, Any]:
    """The three fine-mode passes, told apart by their schema's name."""
    return {"memory_extraction": EXTRACTION, "memory_filter": FILTER}.get(
        request.schema_name, REWRITE
    )


def by_schema(request: ScriptedRequest) -> dict[str, Any]:
    """The three passes, told apart by their schema (the Ollama API sends no schema name)."""
    properties = (request.schema or {}).get("properties", {})
    if "memory_list" in properties:
        return EXTRACTION
    return FILTER if "supported" in properties["results"]["items"]["properties"] else REWRITE


def reader_with(llm: dict[str, Any] | LLMConfig, embedder: Any = None) -> SimpleStructMemReader:
    config = SimpleStructMemReaderConfig(
        embedder=embedder if embedder is not None else {"backend": "hash"}, llm=llm
    )
    return SimpleStructMemReader(config)


def memories(items: list[list[Any]]) -> list[str]:
    return [item.memory for scene in items for item in scene]


# -- the scripted backend ------------------------------------------------------------------------


def test_a_scripted_list_answers_a_fine_read_in_order_and_records_it() -> None:
    llm = ScriptedLLM([EXTRACTION, FILTER, REWRITE], usage=(100, 20))
    reader = reader_with(llm.config())
    report = ReadReport()
    items = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine", report=report)
    assert memories(items) == [m["value"] for m in EXTRACTION["memory_list"]]
    assert [r.schema_name for r in llm.requests] == [
        "memory_extraction",
        "memory_filter",
        "memory_rewrite",
    ]
    assert "I moved to Lisbon last week." in llm.requests[0].prompt
    assert llm.requests[0].schema is not None and llm.requests[0].model == "scripted"
    assert report.usage is not None and report.usage.requests == 3
    assert report.usage.total.prompt_tokens == 300


def test_a_scripted_function_serves_async_reads_too() -> None:
    llm = ScriptedLLM(by_pass)
    reader = reader_with(llm.config())
    items = asyncio.run(reader.aget_memory(CHAT, type="chat", info=INFO, mode="fine"))
    assert len(memories(items)) == 2 and len(llm.requests) == 3


def test_a_scripted_failure_is_retried_and_a_bad_answer_re_asked() -> None:
    llm = ScriptedLLM(
        [
            LLMTimeoutError("scripted timeout"),
            "Sure! Here are the memories.",  # no JSON: re-asked with the parse error
            json.dumps(EXTRACTION),
            FILTER,
            REWRITE,
        ]
    )
    client = build_llm(llm.config(max_retries=2))
    answer = client.complete(
        [{"role": "user", "content": "x"}], schema={"type": "object"}, schema_name="memory_list"
    )
    assert answer.attempts == 3 and answer.parsed == EXTRACTION
    reask = llm.requests[2].messages
    assert reask[-2] == {"role": "assistant", "content": "Sure! Here are the memories."}
    assert "not valid JSON" in reask[-1]["content"]


def test_a_used_up_script_is_the_windows_fallback_naming_the_count() -> None:
    llm = ScriptedLLM([])
    report = ReadReport()
    items = reader_with(llm.config()).get_memory(
        CHAT, type="chat", info=INFO, mode="fine", report=report
    )
    assert len(memories(items)) == 1, "the raw window stands in"
    (window,) = report.windows
    assert window.status == "fallback" and window.fallback_reason == "llm_error"
    assert "the scripted LLM has no answer for request 1 (0 answers were scripted)" in (
        window.error or ""
    )


def test_the_scripted_backend_needs_a_script() -> None:
    mock = httpx.MockTransport(lambda request: httpx.Response(200))
    with pytest.raises(ConfigError, match=r"LLMConfig.transport: the scripted backend .*"):
        build_llm(LLMConfig(backend="scripted", model="m", transport=mock))
    with pytest.raises(ConfigError, match=r"LLMConfig\.transport: .*got NoneType"):
        build_llm(LLMConfig(backend="scripted", model="m"))


def test_a_raw_completion_answer_keeps_its_finish_reason_and_usage() -> None:
    llm = ScriptedLLM([RawCompletion(content='{"a": [1, 2', finish_reason="length")], usage=(1, 1))
    answer = build_llm(llm.config(max_retries=0)).complete(
        [{"role": "user", "content": "x"}], schema={"type": "object"}
    )
    assert answer.truncated and answer.parsed == {"a": [1]}


# -- the hash embedder ---------------------------------------------------------------------------


def test_the_hash_embedder_is_deterministic_and_records_its_calls() -> None:
    reader = reader_with(ScriptedLLM(by_pass).config())
    first = reader.get_memory(CHAT, type="chat", info=INFO, mode="fast")
    inner = reader.embedder.inner  # type: ignore[attr-defined]
    assert isinstance(inner, HashEmbedder) and inner.name == "hash:16"
    # The items, then the category descriptions (categorize, once per reader).
    assert len(inner.calls) == 2
    assert inner.calls[1] == [c.description for c in CategoriesConfig().all()[:-1]]
    again = SimpleStructMemReader(
        SimpleStructMemReaderConfig(embedder={"backend": "hash"})
    ).get_memory(CHAT, type="chat", info=INFO, mode="fast")
    vectors = [item.metadata.embedding for scene in first for item in scene]
    assert vectors == [item.metadata.embedding for scene in again for item in scene]
    assert all(abs(sum(x * x for x in v or []) - 1.0) < 1e-9 for v in vectors)
    with pytest.raises(ConfigError, match="dimension"):
        build_embedder({"backend": "hash", "config": {"dimension": 33}})


# -- the transport seam, through a reader --------------------------------------------------------


def openai_api(request: Any) -> Any:
    """An OpenAI-compatible server in a function: chat completions and embeddings."""
    lib = httpx2 if isinstance(request, httpx2.Request) else httpx
    body = json.loads(request.content)
    if request.url.path.endswith("/embeddings"):
        data = [
            {"object": "embedding", "index": i, "embedding": [1.0, float(len(text))]}
            for i, text in enumerate(body["input"])
        ]
        return lib.Response(200, json={"object": "list", "model": body["model"], "data": data})
    name = body["response_format"]["json_schema"]["name"]
    content = json.dumps(by_pass(ScriptedRequest(body["messages"], None, name)))
    return lib.Response(
        200,
        json={
            "id": "x",
            "object": "chat.completion",
            "created": 0,
            "model": body["model"],
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": content},
                    "finish_reason": "stop",
                }
            ],
        },
    )


def ollama_api(request: httpx.Request) -> httpx.Response:
    """An Ollama server in a function: /api/chat and /api/embed."""
    body = json.loads(request.content)
    if request.url.path == "/api/embed":
        vectors = [[0.0, 1.0, float(len(text))] for text in body["input"]]
        return httpx.Response(200, json={"model": body["model"], "embeddings": vectors})
    properties = body["format"]["properties"]
    if "memory_list" in properties:
        answer: dict[str, Any] = EXTRACTION
    elif "supported" in properties["results"]["items"]["properties"]:
        answer = FILTER
    else:
        answer = REWRITE
    return httpx.Response(
        200,
        json={
            "model": body["model"],
            "created_at": "2026-01-01T00:00:00Z",
            "message": {"role": "assistant", "content": json.dumps(answer)},
            "done": True,
            "done_reason": "stop",
        },
    )


class Recorder:
    """A handler that records the paths it was asked for."""

    def __init__(self, handler: Any) -> None:
        self.handler = handler
        self.paths: list[str] = []

    def __call__(self, request: Any) -> Any:
        self.paths.append(request.url.path)
        return self.handler(request)


@pytest.mark.parametrize("mode", ["sync", "async"])
def test_openai_llm_and_embedder_through_caller_transports(mode: str) -> None:
    recorder = Recorder(openai_api)
    transport = httpx2.MockTransport(recorder)
    llm = {"model": "m", "base_url": f"{NOWHERE}/v1", "transport": transport}
    embedder = {
        "backend": "openai",
        "config": {"model": "e", "base_url": f"{NOWHERE}/v1", "transport": transport},
    }
    reader = reader_with(llm, embedder)
    if mode == "sync":
        items = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    else:
        items = asyncio.run(reader.aget_memory(CHAT, type="chat", info=INFO, mode="fine"))
    assert memories(items) == [m["value"] for m in EXTRACTION["memory_list"]]
    expected = [[1.0, float(len(text))] for text in memories(items)]
    assert [item.metadata.embedding for scene in items for item in scene] == expected
    assert recorder.paths.count("/v1/chat/completions") == 3
    # The items, then the category descriptions (the answer names no categories, so categorize
    # matches the items by similarity; the descriptions are embedded once per reader).
    assert recorder.paths.count("/v1/embeddings") == 2


def test_ollama_llm_and_embedder_through_caller_transports() -> None:
    recorder = Recorder(ollama_api)
    transport = httpx.MockTransport(recorder)
    reader = reader_with(
        {"backend": "ollama", "model": "m", "base_url": NOWHERE, "transport": transport},
        {"backend": "ollama", "config": {"model": "e", "host": NOWHERE, "transport": transport}},
    )
    items = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    assert memories(items) == [m["value"] for m in EXTRACTION["memory_list"]]
    assert next(item.metadata.embedding for scene in items for item in scene) == [
        0.0,
        1.0,
        float(len(memories(items)[0])),
    ]
    # The items, then the category descriptions (see the OpenAI test above).
    assert recorder.paths.count("/api/chat") == 3 and recorder.paths.count("/api/embed") == 2


@pytest.mark.parametrize("backend", ["openai", "ollama"])
def test_a_scripted_llm_is_also_a_transport_for_the_real_backends(backend: str) -> None:
    llm = ScriptedLLM(by_schema)
    url = f"{NOWHERE}/v1" if backend == "openai" else NOWHERE
    reader = reader_with({"backend": backend, "model": "m", "base_url": url, "transport": llm})
    items = reader.get_memory(CHAT, type="chat", info=INFO, mode="fine")
    assert len(memories(items)) == 2 and len(llm.requests) == 3
    assert llm.requests[0].model == "m"


def stalling(lib: Any) -> Any:
    """A transport whose answer's body arrives a chunk every 50 ms, forever."""

    def chunks() -> Iterator[bytes]:
        while True:
            time.sleep(0.05)
            yield b" "

    return lib.MockTransport(lambda request: lib.Response(200, content=chunks()))


@pytest.mark.parametrize("backend", ["openai", "ollama"])
def test_the_deadline_and_the_size_cap_apply_around_a_transport(backend: str) -> None:
    lib = httpx2 if backend == "openai" else httpx
    url = f"{NOWHERE}/v1" if backend == "openai" else NOWHERE
    slow = LLMConfig(
        backend=backend, model="m", base_url=url, timeout=0.3, max_retries=0,
        transport=stalling(lib),
    )  # fmt: skip
    # The body never ends: only the deadline can end the call, as its typed error says (the
    # 60 s only bounds a hang; no test asserts a time).
    with pytest.raises(LLMTimeoutError, match=r"timeout=0.3s"):
        finishes_within(60, lambda: build_llm(slow).complete([{"role": "user", "content": "x"}]))

    big = lib.MockTransport(lambda request: lib.Response(200, content=b"x" * 10_000))
    capped = LLMConfig(
        backend=backend, model="m", base_url=url, max_response_bytes=4096, max_retries=0,
        transport=big,
    )  # fmt: skip
    with pytest.raises(LLMServerError, match=r"max_response_bytes \(4096 bytes\)"):
        build_llm(capped).complete([{"role": "user", "content": "x"}])


def test_the_deadline_applies_around_an_embedder_transport() -> None:
    embedder = build_embedder(
        {
            "backend": "ollama",
            "config": {
                "host": NOWHERE,
                "timeout": 0.3,
                "max_retries": 0,
                "transport": stalling(httpx),
            },
        }
    )
    with pytest.raises(Exception, match=r"timed out: no complete answer within timeout=0.3s"):
        finishes_within(60, lambda: embedder.embed(["x"]))


# -- a transport is no data: never shown, not dumped, told apart by identity ----------------------


def test_a_transport_is_never_shown_nor_dumped_but_survives_a_python_round_trip() -> None:
    transport = httpx2.MockTransport(openai_api)
    llm = LLMConfig(model="m", base_url=f"{NOWHERE}/v1", transport=transport)
    embedder = EmbedderConfig(backend="openai", config={"model": "e", "transport": transport})
    for text in (repr(llm), str(llm), repr(embedder), str(embedder)):
        assert "MockTransport object" not in text and "openai_api" not in text
    assert "transport" not in repr(llm)
    assert json.loads(llm.model_dump_json())["transport"] is None
    assert json.loads(embedder.model_dump_json())["config"]["transport"] is None
    dumped = llm.model_dump()["transport"]
    assert isinstance(dumped, OpaqueRef) and repr(dumped) == "OpaqueRef(MockTransport)"
    assert LLMConfig.model_validate(llm.model_dump()).transport is transport
    cfg = MemReaderConfigFactory(config={"llm": llm, "embedder": embedder})
    again = MemReaderConfigFactory(**cfg.model_dump())
    assert again.config.llm is not None and again.config.llm.transport is transport
    assert again.cache_key() == cfg.cache_key()


def test_the_reader_cache_tells_transports_apart_by_identity() -> None:
    def factory(transport: Any) -> MemReaderConfigFactory:
        return MemReaderConfigFactory(
            config={
                "embedder": {"backend": "hash"},
                "llm": {"model": "m", "base_url": f"{NOWHERE}/v1", "transport": transport},
            }
        )

    first, second = httpx2.MockTransport(openai_api), httpx2.MockTransport(openai_api)
    reader = MemReaderFactory.from_config(factory(first))
    assert MemReaderFactory.from_config(factory(first)) is reader
    assert MemReaderFactory.from_config(factory(second)) is not reader
    assert factory(first).cache_key() != factory(second).cache_key()
    script_a, script_b = ScriptedLLM(by_pass), ScriptedLLM(by_pass)
    assert MemReaderFactory.from_config(
        MemReaderConfigFactory(config={"llm": script_a.config()})
    ) is not MemReaderFactory.from_config(MemReaderConfigFactory(config={"llm": script_b.config()}))

    embedders = [
        MemReaderConfigFactory(
            config={"embedder": {"backend": "ollama", "config": {"transport": t}}}
        ).cache_key()
        for t in (first, second)
    ]
    assert embedders[0] != embedders[1]


@pytest.mark.parametrize("where", ["llm", "embedder"])
def test_something_that_is_not_a_transport_is_a_config_error(where: str) -> None:
    with pytest.raises(ConfigError, match=r"transport.*httpx-style transport.*got str"):
        if where == "llm":
            LLMConfig(model="m", transport="http://proxy:3128")
        else:
            build_embedder({"backend": "ollama", "config": {"transport": "http://proxy:3128"}})
