"""Tests of memreader.llms, driven through the real openai/ollama clients and a real HTTP server."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import pickle
import re
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader.errors import ConfigError, LLMRequiredError, MemReaderError
from memreader.llms import (
    AfterCallEvent,
    BaseLLMClient,
    BeforeCallEvent,
    ConcurrencyLimiter,
    ErrorEvent,
    LLMConfig,
    LLMConnectionError,
    LLMEmptyResponseError,
    LLMError,
    LLMHooks,
    LLMParseError,
    LLMRateLimitError,
    LLMRequestError,
    LLMRouter,
    LLMServerError,
    LLMSlots,
    LLMTimeoutError,
    RawCompletion,
    RetryPolicy,
    Usage,
    UsageMeter,
    available_llm_backends,
    build_llm,
    parse_json,
    parse_retry_after,
    register_llm,
)
from tests.llm_server import (
    LLMTestServer,
    Reply,
    ollama_chat,
    openai_completion,
    openai_error,
)

SECRET = "sk-test-SECRET-0123456789"
SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "maxItems": 3,
            "items": {
                "type": "object",
                "properties": {"key": {"type": "string", "maxLength": 20}},
            },
        }
    },
    "required": ["memories"],
}
GRAMMAR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "maxItems": 3,
            "items": {"type": "object", "properties": {"key": {"type": "string"}}},
        }
    },
    "required": ["memories"],
}
MESSAGES = [
    {"role": "system", "content": "Extract memories."},
    {"role": "user", "content": "I like tea."},
]


@pytest.fixture
def server() -> Iterator[LLMTestServer]:
    """A started scripted server."""
    with LLMTestServer() as srv:
        yield srv


def openai_cfg(server: LLMTestServer, **overrides: Any) -> LLMConfig:
    """An OpenAI-compatible config for ``server`` with tiny backoff."""
    values: dict[str, Any] = {
        "backend": "openai",
        "model": "test-model",
        "base_url": server.url,
        "api_key": SECRET,
        "backoff_base": 0.001,
        "backoff_max": 0.05,
        "max_retries": 2,
        "timeout": 5,
    }
    values.update(overrides)
    return LLMConfig(**values)


def ollama_cfg(server: LLMTestServer, **overrides: Any) -> LLMConfig:
    """An Ollama config for ``server`` with tiny backoff."""
    values: dict[str, Any] = {
        "backend": "ollama",
        "model": "llama-test",
        "base_url": server.ollama_host,
        "backoff_base": 0.001,
        "backoff_max": 0.05,
        "max_retries": 2,
        "timeout": 5,
    }
    values.update(overrides)
    return LLMConfig(**values)


# -- configuration ---------------------------------------------------------------------------


def test_config_defaults_and_backends() -> None:
    cfg = LLMConfig(model="m")
    assert cfg.backend == "openai"
    assert cfg.temperature == 0.0 and cfg.max_tokens == 2048 and cfg.timeout == 60
    assert cfg.structured_output == "json_schema"
    assert (cfg.max_retries, cfg.backoff_base, cfg.backoff_max) == (3, 0.5, 20.0)
    assert LLMConfig(backend="Ollama", model="m").backend == "ollama"
    assert {"openai", "ollama"} <= set(available_llm_backends())


@pytest.mark.parametrize(
    ("values", "field"),
    [
        ({"model": "m", "temperature": 5}, "temperature"),
        ({"model": "m", "max_tokens": 0}, "max_tokens"),
        ({"model": "m", "timeout": 0}, "timeout"),
        ({"model": "m", "backend": "nope"}, "backend"),
        ({"model": "  "}, "model"),
        ({"model": "m", "base_url": "ftp://x"}, "base_url"),
        ({"model": "m", "structured_output": "xml"}, "structured_output"),
        ({"model": "m", "max_retries": -1}, "max_retries"),
        ({"model": "m", "apikey": SECRET}, "apikey"),
        ({}, "model"),
    ],
)
def test_invalid_config_raises_config_error_naming_the_field(
    values: dict[str, Any], field: str
) -> None:
    with pytest.raises(ConfigError) as info:
        LLMConfig(**values)
    assert field in str(info.value)
    assert SECRET not in str(info.value)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_nested_slot_config_errors_name_the_path() -> None:
    with pytest.raises(ConfigError, match=r"general_llm\.temperature"):
        LLMSlots(general_llm={"model": "m", "temperature": 9})
    with pytest.raises(ConfigError, match="llm_max_concurrency"):
        LLMSlots.model_validate({"llm_max_concurrency": 0})
    with pytest.raises(ConfigError, match="unknown_llm"):
        LLMSlots.model_validate({"unknown_llm": {"model": "m"}})


def test_secrets_never_in_repr_str_or_dump() -> None:
    cfg = LLMConfig(
        model="m",
        api_key=SECRET,
        base_url="https://user:pw-SECRET@example.com/v1",
        extra_headers={"Authorization": f"Bearer {SECRET}", "X-Trace": "visible"},
    )
    slots = LLMSlots(llm=cfg)
    for text in (str(cfg), repr(cfg), cfg.model_dump_json(), str(slots), repr(slots)):
        assert SECRET not in text and "pw-SECRET" not in text
    assert "visible" in repr(cfg)
    assert cfg.api_key_value() == SECRET
    client = build_llm(cfg)
    assert SECRET not in repr(client) and "pw-SECRET" not in repr(client)


def test_slot_fallbacks() -> None:
    base = LLMConfig(model="base")
    general = LLMConfig(model="general")
    prefs = LLMConfig(model="prefs")
    slots = LLMSlots(llm=base)
    for name in LLMSlots.SLOTS:
        assert slots.resolve(name) is slots.llm
    slots = LLMSlots(llm=base, general_llm=general, preference_extractor_llm=prefs)
    assert slots.resolve("llm").model == "base"
    assert slots.resolve("general_llm").model == "general"
    assert slots.resolve("image_parser_llm").model == "general"
    assert slots.resolve("document_parser_llm").model == "general"
    assert slots.resolve("preference_extractor_llm").model == "prefs"
    assert slots.resolved_slot("image_parser_llm") == "general_llm"
    only_general = LLMSlots(general_llm=general)
    assert only_general.resolve("llm") is None
    assert only_general.resolve("document_parser_llm").model == "general"
    assert LLMSlots().resolve("general_llm") is None and not LLMSlots().configured
    with pytest.raises(ConfigError, match="unknown LLM slot"):
        slots.resolve("vision_llm")


def test_router_shares_clients_budget_and_meter(server: LLMTestServer) -> None:
    slots = LLMSlots(
        llm=openai_cfg(server, model="base"),
        preference_extractor_llm=openai_cfg(server, model="prefs"),
        llm_max_concurrency=3,
    )
    router = LLMRouter(slots)
    assert router.limiter.limit == 3
    general = router.client("general_llm")
    assert general is router.client("llm") is router.client("image_parser_llm")
    prefs = router.client("preference_extractor_llm")
    assert prefs is not general and prefs is not None
    assert getattr(prefs, "limiter", None) is router.limiter is getattr(general, "limiter", None)
    assert LLMRouter(LLMSlots()).client("llm") is None
    with pytest.raises(LLMRequiredError):
        LLMRouter(LLMSlots()).require("general_llm")
    answer = router.complete("document_parser_llm", MESSAGES, schema=SCHEMA)
    assert answer.slot == "document_parser_llm" and answer.parsed == {}
    assert server.bodies()[-1]["model"] == "base"
    router.close()


# -- parsing ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected", "repair"),
    [
        ('{"a": 1}', {"a": 1}, None),
        ('Sure! Here you go:\n{"a": [1, 2]}\nHope this helps.', {"a": [1, 2]}, "surrounding_text"),
        ('```json\n{"a": "b"}\n```', {"a": "b"}, "code_fence"),
        ('```\n{"a": "b"}', {"a": "b"}, "code_fence"),
        ('<think>draft {"a": 0}</think>\n{"a": 1}', {"a": 1}, "think_block"),
        ('reasoning...</think>{"a": 1}', {"a": 1}, "think_block"),
        ('<think>\n{"a": 1}', {"a": 1}, "unclosed_think"),
        ('{"a": [1, 2,], "b": 3,}', {"a": [1, 2], "b": 3}, "trailing_comma"),
        ('{"a": "snake\\_case \\*x\\*"}', {"a": "snake_case *x*"}, "bad_escape"),
        ('{"path": "C:\\Users\\me"}', {"path": "C:\\Users\\me"}, "bad_escape"),
        ("{\u201ckey\u201d: \u201cvalue\u201d}", {"key": "value"}, "smart_quotes"),
        ("{'key': 'it's fine'}", {"key": "it's fine"}, "single_quotes"),
        ('{"q": "he said "hi" twice"}', {"q": 'he said "hi" twice'}, "unescaped_quote"),
        ('{"a": True, "b": None}', {"a": True, "b": None}, "python_literal"),
        ('{"a": "x"\n "b": 2}', {"a": "x", "b": 2}, "missing_comma"),
        ('{"a": "multi\nline"}', {"a": "multi\nline"}, None),
        ('See [1] and {"a": 1}', {"a": 1}, "surrounding_text"),
    ],
)
def test_parse_json_repairs(text: str, expected: Any, repair: str | None) -> None:
    result = parse_json(text, expect="object")
    assert result.value == expected
    assert not result.truncated
    if repair is None:
        assert not result.repaired
    else:
        assert repair in result.repairs


def test_parse_json_truncated_keeps_complete_prefix_items() -> None:
    text = '```json\n{"memories": [{"key": "a", "value": "b"}, {"key": "c", "val'
    result = parse_json(text)
    assert result.truncated and "truncated" in result.repairs
    assert result.value == {"memories": [{"key": "a", "value": "b"}]}
    assert parse_json('{"a": 1, "b": "unfinis').value == {"a": 1}
    assert parse_json('{"a": 1, "b": 12').value == {"a": 1}  # 12 may be the start of 123
    assert parse_json('[{"a": 1}, {"b": tr').value == [{"a": 1}]
    assert parse_json('{"a": {"b": [1, 2').value == {"a": {"b": [1]}}
    assert parse_json('{"a": "\\u00e9t\\u00').value == {}


def test_parse_json_failures_carry_raw_text() -> None:
    for text in ("no json here", "<think>only thinking", "{not: json}", ""):
        with pytest.raises(LLMParseError) as info:
            parse_json(text)
        assert info.value.raw_text == text
        assert isinstance(info.value, MemReaderError)
    with pytest.raises(LLMParseError):
        parse_json("[1, 2]", expect="object")
    assert parse_json("see [1]", expect="array").value == [1]


JSON_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(10**12), max_value=10**12)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
JSON_VALUES = st.recursive(
    JSON_SCALARS,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=12,
)
PROSE = st.text(
    alphabet=st.characters(blacklist_characters="{}[]`<>", blacklist_categories=("Cs",)),
    max_size=40,
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    data=st.dictionaries(st.text(max_size=10), JSON_VALUES, max_size=5),
    before=PROSE,
    after=PROSE,
    thinking=st.none() | st.text(alphabet=st.characters(blacklist_characters="<"), max_size=40),
    fence=st.sampled_from([None, "```json\n", "```\n", "``` JSON\n"]),
    indent=st.sampled_from([None, 2]),
    ascii_only=st.booleans(),
)
def test_parse_json_property_wrapped_dicts_round_trip(
    data: dict[str, Any],
    before: str,
    after: str,
    thinking: str | None,
    fence: str | None,
    indent: int | None,
    ascii_only: bool,
) -> None:
    body = json.dumps(data, indent=indent, ensure_ascii=ascii_only)
    if fence is not None:
        body = f"{fence}{body}\n```"
    text = f"{before}\n{body}\n{after}"
    if thinking is not None:
        text = f"<think>{thinking}</think>{text}"
    result = parse_json(text, expect="object")
    assert result.value == data
    assert not result.truncated


ITEMS = st.lists(
    st.fixed_dictionaries(
        {
            "key": st.text(max_size=12),
            "n": st.integers(-1000, 1000),
            "tags": st.lists(st.text(max_size=5), max_size=3),
        }
    ),
    max_size=5,
)


@settings(max_examples=150, deadline=None)
@given(items=ITEMS, cut=st.floats(min_value=0.0, max_value=1.0), indent=st.sampled_from([None, 1]))
def test_parse_json_property_truncation_keeps_only_complete_items(
    items: list[dict[str, Any]], cut: float, indent: int | None
) -> None:
    text = json.dumps({"memories": items}, indent=indent)
    prefix = text[: int(len(text) * cut)]
    try:
        result = parse_json(prefix, expect="object")
    except LLMParseError:
        assert "{" not in prefix
        return
    recovered = result.value.get("memories", [])
    assert recovered == items[: len(recovered)]
    assert result.truncated == (prefix != text)


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(
        alphabet=st.sampled_from(list("{}[]\"\\',:a1 \n.-etrufnl`<>/*\u201c\u201d")), max_size=60
    )
)
def test_parse_json_never_crashes(text: str) -> None:
    with contextlib.suppress(LLMParseError):
        parse_json(text)


# -- retry policy ----------------------------------------------------------------------------


def test_retry_policy_backoff_and_retry_after() -> None:
    policy = RetryPolicy(max_retries=3, backoff_base=0.5, backoff_max=3.0)
    for retry, ceiling in [(1, 0.5), (2, 1.0), (3, 2.0), (4, 3.0), (9, 3.0)]:
        waits = [policy.delay(retry) for _ in range(200)]
        assert all(0 <= w <= ceiling for w in waits)
        assert max(waits) > ceiling / 2  # full jitter spreads over the range
    assert policy.delay(1, retry_after=2.0) == 2.0
    assert policy.delay(1, retry_after=100.0) == 3.0
    assert policy.can_retry(3) and not policy.can_retry(4)
    assert parse_retry_after({"retry-after": "1.5"}) == 1.5
    assert parse_retry_after({"retry-after-ms": "250"}) == 0.25
    assert (
        parse_retry_after({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}, now=1445412470.0) == 10
    )
    assert parse_retry_after({"retry-after": "soon"}) is None
    assert parse_retry_after({}) is None


def test_errors_pickle_and_carry_context() -> None:
    err = LLMRateLimitError("slow down", retry_after=1.5, status_code=429)
    err.set_context(slot="llm", model="m", attempts=3, usage=Usage(1, 2, 3), last_output="x" * 5000)
    clone = pickle.loads(pickle.dumps(err))
    assert isinstance(clone, LLMRateLimitError) and clone.retry_after == 1.5
    assert clone.attempts == 3 and clone.usage == Usage(1, 2, 3) and clone.retryable
    assert str(clone) == str(err) == "slow down (slot=llm, model=m, attempts=3, status=429)"
    assert len(err.last_output or "") < 2100
    parse_err = pickle.loads(pickle.dumps(LLMParseError("bad", raw_text="raw")))
    assert parse_err.raw_text == "raw" and parse_err.last_output == "raw"
    assert not LLMRequestError("x").retryable and LLMTimeoutError("x").retryable


# -- OpenAI-compatible backend through the real client ------------------------------------------


@pytest.mark.parametrize(
    ("content", "expected", "truncated"),
    [
        ('{"memories": [{"key": "tea"}]}', {"memories": [{"key": "tea"}]}, False),
        ('Here is the JSON: {"memories": []} Done.', {"memories": []}, False),
        ('```json\n{"memories": [{"key": "a"}]}\n```', {"memories": [{"key": "a"}]}, False),
        ('<think>The user likes tea.</think>\n{"memories": []}', {"memories": []}, False),
        (
            '{"memories": [{"key": "a"}, {"key": "b"}, {"key": "unfini',
            {"memories": [{"key": "a"}, {"key": "b"}]},
            True,
        ),
    ],
)
def test_openai_json_answers(
    server: LLMTestServer, content: str, expected: Any, truncated: bool
) -> None:
    finish = "length" if truncated else "stop"
    server.reply(Reply(body=openai_completion(content, usage=(20, 7), finish_reason=finish)))
    # No retries left: a cut-off answer is returned as it is (with retries it is re-asked).
    client = build_llm(openai_cfg(server, max_retries=0))
    answer = client.complete(MESSAGES, schema=SCHEMA, schema_name="memories")
    assert answer.parsed == expected
    assert answer.truncated is truncated
    assert answer.finish_reason == finish
    assert answer.attempts == 1 and answer.text == content
    assert answer.usage == Usage(20, 7, 27)
    assert answer.model == "test-model"


def test_openai_plain_text_without_schema(server: LLMTestServer) -> None:
    server.reply("just words")
    answer = build_llm(openai_cfg(server)).complete(MESSAGES)
    assert answer.text == "just words" and answer.parsed is None


@pytest.mark.parametrize("backend", ["openai", "ollama"])
@pytest.mark.parametrize("status", [408, 409])
def test_transient_4xx_answers_are_retried_like_the_embedders(
    server: LLMTestServer, backend: str, status: int
) -> None:
    # One rule for every remote call: 408 and 409 are transient (they were "request rejected").
    if backend == "openai":
        server.script([Reply(status=status, body=openai_error("busy")), '{"memories": []}'])
        client = build_llm(openai_cfg(server))
    else:
        server.script([Reply(status=status, body={"error": "busy"}), Reply(body=ollama_chat("{}"))])
        client = build_llm(ollama_cfg(server))
    answer = client.complete(MESSAGES, schema=SCHEMA)
    assert answer.attempts == 2 and len(server.requests) == 2


@pytest.mark.parametrize("backend", ["openai", "ollama"])
def test_an_error_echoing_the_key_is_not_kept_as_the_cause(
    server: LLMTestServer, backend: str
) -> None:
    echo = f"invalid key {SECRET}"
    if backend == "openai":
        server.script([Reply(status=401, body=openai_error(echo))])
        client = build_llm(openai_cfg(server))
    else:
        server.script([Reply(status=401, body={"error": echo})])
        client = build_llm(ollama_cfg(server, api_key=SECRET))
    with pytest.raises(LLMRequestError) as info:
        client.complete(MESSAGES)
    assert re.search(r"request rejected: .*invalid key \*\*\*", str(info.value))
    assert SECRET not in str(info.value) and info.value.status_code == 401
    # The SDK's exception quotes the server, key and all; a traceback would print it.
    assert info.value.__cause__ is None and info.value.__context__ is None


def test_openai_429_retry_after_is_honoured(server: LLMTestServer) -> None:
    server.script(
        [
            Reply(status=429, body=openai_error("slow down"), headers={"Retry-After": "0.3"}),
            '{"memories": []}',
        ]
    )
    client = build_llm(openai_cfg(server, backoff_max=1.0))
    # The wait asked for is recorded, not timed (a clock measures the machine's load too).
    slept: list[float] = []
    client.retry.sleep = slept.append  # type: ignore[attr-defined]
    answer = client.complete(MESSAGES, schema=SCHEMA)
    assert slept == [0.3]
    assert answer.attempts == 2 and answer.parsed == {"memories": []}
    assert len(server.requests) == 2


def test_openai_retry_after_is_capped_by_backoff_max(server: LLMTestServer) -> None:
    server.script(
        [Reply(status=429, body=openai_error("slow"), headers={"Retry-After": "600"}), "{}"]
    )
    client = build_llm(openai_cfg(server, backoff_max=0.05))
    slept: list[float] = []
    client.retry.sleep = slept.append  # type: ignore[attr-defined]
    answer = client.complete(MESSAGES, schema=SCHEMA)
    assert answer.attempts == 2 and slept == [0.05]  # the 600 s asked for, capped


def test_openai_429_exhausted(server: LLMTestServer) -> None:
    server.responder = lambda req: Reply(
        status=429, body=openai_error("quota"), headers={"Retry-After": "0"}
    )
    with pytest.raises(LLMRateLimitError) as info:
        build_llm(openai_cfg(server, max_retries=1)).complete(MESSAGES, schema=SCHEMA)
    assert info.value.attempts == 2 and info.value.status_code == 429
    assert info.value.retry_after == 0 and len(server.requests) == 2


def test_openai_500_then_success(server: LLMTestServer) -> None:
    server.script(
        [
            Reply(status=500, body=openai_error("boom")),
            Reply(status=503, body="unavailable"),
            Reply(body=openai_completion('{"memories": []}', usage=(10, 3))),
        ]
    )
    answer = build_llm(openai_cfg(server, max_retries=3)).complete(MESSAGES, schema=SCHEMA)
    assert answer.attempts == 3 and answer.parsed == {"memories": []}
    assert answer.usage == Usage(10, 3, 13)
    assert len(server.requests) == 3


def test_openai_5xx_exhausted(server: LLMTestServer) -> None:
    server.responder = lambda req: Reply(status=502, body=openai_error("bad gateway"))
    with pytest.raises(LLMServerError) as info:
        build_llm(openai_cfg(server, max_retries=2)).complete(MESSAGES, schema=SCHEMA, slot="x")
    err = info.value
    assert err.attempts == 3 and err.status_code == 502 and err.slot == "x"
    assert err.model == "test-model" and len(server.requests) == 3


@pytest.mark.parametrize("status", [400, 401, 404, 422])
def test_openai_4xx_not_retried(server: LLMTestServer, status: int) -> None:
    server.responder = lambda req: Reply(status=status, body=openai_error("bad request"))
    with pytest.raises(LLMRequestError) as info:
        build_llm(openai_cfg(server)).complete(MESSAGES, schema=SCHEMA)
    assert info.value.attempts == 1 and info.value.status_code == status
    assert len(server.requests) == 1


def test_openai_timeout_retried_then_raised(server: LLMTestServer) -> None:
    server.responder = lambda req: Reply(body=openai_completion("{}"), delay=3)
    client = build_llm(openai_cfg(server, timeout=0.25, max_retries=1))
    # Each answer comes after 3 s: only the 0.25 s timeout ends an attempt (counted: two).
    with pytest.raises(LLMTimeoutError, match=r"timeout=0.25s") as info:
        client.complete(MESSAGES, schema=SCHEMA)
    assert info.value.attempts == 2 and len(server.requests) == 2


def test_openai_connection_error_retried() -> None:
    dead = LLMTestServer().start()
    url = dead.url
    dead.stop()
    cfg = LLMConfig(model="m", base_url=url, max_retries=1, backoff_base=0.001, timeout=2)
    with pytest.raises(LLMConnectionError) as info:
        build_llm(cfg).complete(MESSAGES)
    assert info.value.attempts == 2


def test_openai_empty_answer_reasked_then_raises(server: LLMTestServer) -> None:
    server.script(
        [
            Reply(body=openai_completion("", usage=(4, 0))),
            Reply(body=openai_completion(None, usage=(4, 0))),
            Reply(body=openai_completion("   ", choices=False, usage=(4, 0))),
        ]
    )
    with pytest.raises(LLMEmptyResponseError) as info:
        build_llm(openai_cfg(server, max_retries=2)).complete(MESSAGES, schema=SCHEMA)
    assert info.value.attempts == 3
    assert info.value.usage == Usage(12, 0, 12)
    assert len(server.requests) == 3
    last = server.requests[-1].messages
    assert last[-1]["role"] == "user" and "empty" in last[-1]["content"]
    assert len(last) == len(MESSAGES) + 2  # one correction per re-ask


def test_openai_unparseable_answer_is_reasked_with_the_error(server: LLMTestServer) -> None:
    server.script(["I cannot comply with JSON today.", '{"memories": []}'])
    answer = build_llm(openai_cfg(server)).complete(MESSAGES, schema=SCHEMA)
    assert answer.attempts == 2 and answer.parsed == {"memories": []}
    assert answer.usage == Usage(10, 10, 20)
    reask = server.requests[1].messages
    assert reask[: len(MESSAGES)] == MESSAGES
    assert reask[-2] == {"role": "assistant", "content": "I cannot comply with JSON today."}
    assert reask[-1]["role"] == "user"
    assert reask[-1]["content"].startswith("Your last answer was not valid JSON: ")
    assert "no JSON object found" in reask[-1]["content"]
    assert reask[-1]["content"].endswith("Answer again with only the JSON.")


def test_openai_unparseable_forever_raises_parse_error(server: LLMTestServer) -> None:
    server.responder = lambda req: Reply(body=openai_completion("nope"))
    with pytest.raises(LLMParseError) as info:
        build_llm(openai_cfg(server, max_retries=1)).complete(MESSAGES, schema=SCHEMA)
    assert info.value.attempts == 2 and info.value.raw_text == "nope"
    assert info.value.last_output == "nope"


def test_openai_non_json_body_is_a_server_error(server: LLMTestServer) -> None:
    server.script([Reply(body="<html>proxy error</html>"), '{"memories": []}'])
    answer = build_llm(openai_cfg(server)).complete(MESSAGES, schema=SCHEMA)
    assert answer.attempts == 2


class ContractError(ValueError):
    """Stands in for the extraction contract's error (a ValueError subclass)."""


def memory_keys(parsed: Any) -> list[str]:
    """A ``validate``: the memories' keys; every memory needs a string key."""
    memories = parsed.get("memories") if isinstance(parsed, dict) else None
    if not isinstance(memories, list):
        raise ContractError("'memories' must be a list")
    keys = [m.get("key") for m in memories if isinstance(m, dict)]
    if len(keys) != len(memories) or not all(isinstance(k, str) for k in keys):
        raise ContractError("every memory needs a string 'key'")
    return keys


@pytest.mark.parametrize("backend", ["openai", "ollama"])
@pytest.mark.parametrize("mode", ["sync", "async"])
def test_validate_rejection_is_reasked_within_max_retries(
    server: LLMTestServer, backend: str, mode: str
) -> None:
    events: list[Any] = []
    hooks = LLMHooks(before_call=[events.append], on_error=[events.append])
    cfg = openai_cfg(server) if backend == "openai" else ollama_cfg(server)
    client = build_llm(cfg, hooks=hooks)
    wrong = '{"memories": [{"key": 7}]}'
    server.script([wrong, '{"memories": [{"key": "tea"}]}'])
    if mode == "sync":
        answer = client.complete(MESSAGES, schema=SCHEMA, validate=memory_keys)
    else:
        answer = asyncio.run(client.acomplete(MESSAGES, schema=SCHEMA, validate=memory_keys))
    assert answer.attempts == 2 and answer.validated == ["tea"]
    assert answer.parsed == {"memories": [{"key": "tea"}]}
    reask = server.requests[1].messages
    assert reask[-2] == {"role": "assistant", "content": wrong}
    assert reask[-1] == {
        "role": "user",
        "content": "Your answer did not match the expected format: every memory needs a string "
        "'key'. Answer again with only the JSON.",
    }
    # Hooks see both attempts and the rejection.
    assert [type(e).__name__ for e in events] == [
        "BeforeCallEvent",
        "ErrorEvent",
        "BeforeCallEvent",
    ]
    assert isinstance(events[1].error, LLMParseError) and events[1].will_retry


def test_validate_rejection_after_the_budget_is_a_parse_error(server: LLMTestServer) -> None:
    wrong = '{"memories": [{"key": 7}]}'
    server.responder = lambda req: Reply(body=openai_completion(wrong))
    router = LLMRouter(LLMSlots(llm=openai_cfg(server, max_retries=1)))
    with pytest.raises(LLMParseError) as info:
        router.complete("llm", MESSAGES, schema=SCHEMA, validate=memory_keys)
    err = info.value
    assert len(server.requests) == 2 and err.attempts == 2
    assert err.reason == (
        "the answer did not match the expected format: every memory needs a string 'key'"
    )
    assert err.last_output == wrong and isinstance(err.__cause__, ContractError)
    # Without validate, the same answer is fine: the router passes validate on, nothing more.
    server.reset()
    server.reply(Reply(body=openai_completion(wrong)))
    answer = router.complete("llm", MESSAGES, schema=SCHEMA)
    assert answer.validated is None and answer.parsed == {"memories": [{"key": 7}]}


@pytest.mark.parametrize("backend", ["openai", "ollama"])
def test_cut_off_answer_is_reasked_for_a_shorter_one(server: LLMTestServer, backend: str) -> None:
    cut = '{"memories": [{"key": "tea"}, {"key": "cof'
    if backend == "openai":
        cfg = openai_cfg(server, max_retries=1)
        cut_reply = Reply(body=openai_completion(cut, finish_reason="length"))
        full = Reply(body=openai_completion('{"memories": [{"key": "tea"}]}'))
    else:
        cfg = ollama_cfg(server, max_retries=1)
        cut_reply = Reply(body=ollama_chat(cut, done_reason="length"))
        full = Reply(body=ollama_chat('{"memories": [{"key": "tea"}]}'))
    server.script([cut_reply, full])
    answer = build_llm(cfg).complete(MESSAGES, schema=SCHEMA)
    assert answer.attempts == 2 and not answer.truncated
    reask = server.requests[1].messages[-1]["content"]
    assert "cut off" in reask and "shorter" in reask and "fewer" in reask
    assert answer.usage == Usage(10, 10, 20)

    # Once the budget is spent the cut-off answer comes back as it is, its complete items kept.
    server.reset()
    server.script([cut_reply, cut_reply])
    answer = build_llm(cfg).complete(MESSAGES, schema=SCHEMA)
    assert answer.attempts == 2 and answer.truncated
    assert answer.parsed == {"memories": [{"key": "tea"}]}
    assert len(server.requests) == 2


def test_json_that_ends_early_is_reasked_even_without_finish_reason_length(
    server: LLMTestServer,
) -> None:
    server.script(['{"memories": [{"key": "tea"}, {"ke', '{"memories": []}'])
    answer = build_llm(openai_cfg(server)).complete(MESSAGES, schema=SCHEMA)
    assert answer.attempts == 2 and answer.parsed == {"memories": []}


def test_parse_json_of_deeply_nested_output_is_a_parse_error() -> None:
    for text in ("[" * 100_000, '{"a":' * 100_000, "[" * 100_000 + "]" * 100_000):
        with pytest.raises(LLMParseError, match="nested too deeply"):
            parse_json(text)


@pytest.mark.parametrize("mode", ["json_schema", "json_object_schema", "tool_call", "prompt"])
def test_openai_structured_output_payloads(server: LLMTestServer, mode: str) -> None:
    if mode == "tool_call":
        server.reply(
            Reply(body=openai_completion(None, tool_call=("memories", '{"memories": []}')))
        )
    else:
        server.reply('{"memories": []}')
    cfg = openai_cfg(
        server,
        structured_output=mode,
        temperature=0.3,
        max_tokens=77,
        extra_body={"top_k": 5},
        extra_headers={"X-Team": "memreader"},
    )
    answer = build_llm(cfg).complete(MESSAGES, schema=SCHEMA, schema_name="mem ories!")
    assert answer.parsed == {"memories": []}
    request = server.requests[0]
    body = request.json
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {SECRET}"
    assert request.headers["x-team"] == "memreader"
    assert body["model"] == "test-model" and body["temperature"] == 0.3
    assert body["max_tokens"] == 77 and body["top_k"] == 5
    if mode == "json_schema":
        assert body["response_format"] == {
            "type": "json_schema",
            "json_schema": {"name": "mem_ories_", "schema": SCHEMA, "strict": False},
        }
        assert "tools" not in body
    elif mode == "json_object_schema":
        # llama.cpp's grammar: string length limits removed (they crash its server), maxItems kept.
        assert body["response_format"] == {"type": "json_object", "schema": GRAMMAR_SCHEMA}
    elif mode == "tool_call":
        assert "response_format" not in body
        (tool,) = body["tools"]
        assert tool["type"] == "function"
        assert tool["function"]["name"] == "mem_ories_"
        assert tool["function"]["parameters"] == GRAMMAR_SCHEMA
        assert body["tool_choice"] == {"type": "function", "function": {"name": "mem_ories_"}}
        assert answer.text == '{"memories": []}'
    else:
        assert "response_format" not in body and "tools" not in body
        system = body["messages"][0]
        assert system["role"] == "system"
        assert system["content"].startswith("Extract memories.\n\n")
        assert json.dumps(SCHEMA) in system["content"]
        assert body["messages"][1:] == MESSAGES[1:]
    if mode != "prompt":
        assert body["messages"] == MESSAGES


def test_prompt_mode_without_system_message_inserts_one(server: LLMTestServer) -> None:
    server.reply("{}")
    build_llm(openai_cfg(server, structured_output="prompt")).complete(
        [{"role": "user", "content": "hi"}], schema={"type": "object"}
    )
    messages = server.requests[0].messages
    assert [m["role"] for m in messages] == ["system", "user"]
    assert "JSON schema" in messages[0]["content"]


# -- concurrency -----------------------------------------------------------------------------


def test_concurrency_budget_threads(server: LLMTestServer) -> None:
    server.latency = 0.05
    router = LLMRouter(
        LLMSlots(
            llm=openai_cfg(server), general_llm=openai_cfg(server, model="g"), llm_max_concurrency=4
        )
    )
    slots = ["llm", "general_llm", "document_parser_llm", "preference_extractor_llm"]
    with ThreadPoolExecutor(max_workers=16) as pool:
        futures = [
            pool.submit(router.complete, slots[i % 4], MESSAGES, schema=SCHEMA) for i in range(16)
        ]
        answers = [f.result() for f in futures]
    assert len(answers) == 16 and len(server.requests) == 16
    assert 2 <= server.max_in_flight <= 4
    assert router.limiter.max_in_use <= 4 and router.limiter.in_use == 0


def test_concurrency_budget_asyncio_gather(server: LLMTestServer) -> None:
    server.latency = 0.05
    limiter = ConcurrencyLimiter(4)
    client = build_llm(openai_cfg(server), limiter=limiter)

    async def main() -> list[Any]:
        try:
            return await asyncio.gather(
                *(client.acomplete(MESSAGES, schema=SCHEMA) for _ in range(16))
            )
        finally:
            await client.aclose()  # type: ignore[attr-defined]

    answers = asyncio.run(main())
    assert len(answers) == 16 and all(a.parsed == {} for a in answers)
    assert 2 <= server.max_in_flight <= 4
    assert limiter.max_in_use <= 4 and limiter.in_use == 0


def test_concurrency_budget_shared_by_threads_and_event_loops(server: LLMTestServer) -> None:
    server.latency = 0.03
    limiter = ConcurrencyLimiter(3)
    openai_client = build_llm(openai_cfg(server), limiter=limiter)
    ollama_client = build_llm(ollama_cfg(server), limiter=limiter)

    def run_loop() -> None:
        async def main() -> None:
            await asyncio.gather(*(ollama_client.acomplete(MESSAGES) for _ in range(8)))
            await ollama_client.aclose()  # type: ignore[attr-defined]

        asyncio.run(main())

    loops = [threading.Thread(target=run_loop) for _ in range(2)]
    for t in loops:
        t.start()
    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda _: openai_client.complete(MESSAGES), range(8)))
    for t in loops:
        t.join()
    assert len(server.requests) == 24
    assert server.max_in_flight <= 3 and limiter.max_in_use <= 3 and limiter.in_use == 0


def test_limiter_cancellation_does_not_leak() -> None:
    limiter = ConcurrencyLimiter(1)

    async def main() -> None:
        limiter.acquire()  # the budget is exhausted
        waiters = [asyncio.ensure_future(limiter.aacquire()) for _ in range(3)]
        await asyncio.sleep(0.1)
        for w in waiters:
            w.cancel()
        await asyncio.gather(*waiters, return_exceptions=True)
        limiter.release()
        await asyncio.sleep(0.2)  # let the worker thread notice
        async with limiter:
            assert limiter.in_use == 1

    asyncio.run(main())
    assert limiter.in_use == 0
    assert limiter.acquire(timeout=30)  # a safety net: a free permit comes at once
    limiter.release()
    with pytest.raises(ValueError):
        ConcurrencyLimiter(0)


def test_limiter_cancelled_waiter_in_closed_loop_does_not_leak() -> None:
    limiter = ConcurrencyLimiter(2)
    limiter.acquire()
    limiter.acquire()

    async def main() -> None:
        waiter = asyncio.ensure_future(limiter.aacquire())
        await asyncio.sleep(0.08)  # the worker thread is polling for a permit now
        limiter.release()  # the thread may grab it at any moment...
        waiter.cancel()  # ...while the coroutine gives up
        with contextlib.suppress(asyncio.CancelledError):
            await waiter

    asyncio.run(main())  # the loop is closed right after
    time.sleep(0.15)
    limiter.release()
    assert limiter.acquire(timeout=30) and limiter.acquire(timeout=30)  # nets, not bounds
    limiter.release()
    limiter.release()


# -- usage -----------------------------------------------------------------------------------


def test_usage_summed_per_slot_and_per_call_meter(server: LLMTestServer) -> None:
    server.responder = lambda req: Reply(body=openai_completion("{}", usage=(10, 5)))
    router = LLMRouter(LLMSlots(llm=openai_cfg(server)))
    router.complete("llm", MESSAGES, schema=SCHEMA)
    call_meter = router.meter.child()
    router.complete("general_llm", MESSAGES, schema=SCHEMA, meter=call_meter)
    router.complete("preference_extractor_llm", MESSAGES, schema=SCHEMA, meter=call_meter)

    async def nested() -> None:
        await router.acomplete("general_llm", MESSAGES, schema=SCHEMA, meter=call_meter)

    asyncio.run(nested())
    explicit = router.meter.child()
    router.complete("image_parser_llm", MESSAGES, meter=explicit)

    call = call_meter.snapshot()
    assert call.total == Usage(30, 15, 45) and call.requests == 3
    assert dict(call.by_slot) == {
        "general_llm": Usage(20, 10, 30),
        "preference_extractor_llm": Usage(10, 5, 15),
    }
    assert explicit.total == Usage(10, 5, 15)
    total = router.meter.snapshot()
    assert total.total == Usage(50, 25, 75) and total.requests == 5
    assert total.by_slot["llm"] == Usage(10, 5, 15)
    delta = total - call
    assert delta.total == Usage(20, 10, 30)


def test_usage_meter_is_thread_safe() -> None:
    meter = UsageMeter()
    child = meter.child()

    def work(i: int) -> None:
        for _ in range(200):
            child.add(f"slot{i % 3}", Usage(1, 2, 3))

    threads = [threading.Thread(target=work, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert meter.total == Usage(1600, 3200, 4800) == child.total
    assert sum(u.total_tokens for u in meter.snapshot().by_slot.values()) == 4800
    assert Usage(1, 2, 3) + Usage(1, 1, 2) == Usage(2, 3, 5)


# -- hooks -----------------------------------------------------------------------------------


def test_hooks_receive_events_and_raising_hooks_are_ignored(
    server: LLMTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    events: list[Any] = []

    def boom(event: Any) -> None:
        raise RuntimeError("hook bug")

    hooks = LLMHooks(
        before_call=[boom, events.append],
        after_call=[events.append, boom],
        on_error=[boom, events.append],
    )
    server.script([Reply(status=500, body=openai_error("boom")), "not json", '{"memories": []}'])
    client = build_llm(openai_cfg(server, max_retries=3), hooks=hooks)
    with caplog.at_level(logging.WARNING, logger="memreader.llms"):
        answer = client.complete(MESSAGES, schema=SCHEMA, slot="general_llm")
    assert answer.attempts == 3
    kinds = [type(e).__name__ for e in events]
    assert kinds == [
        "BeforeCallEvent",
        "ErrorEvent",
        "BeforeCallEvent",
        "ErrorEvent",
        "BeforeCallEvent",
        "AfterCallEvent",
    ]
    before = [e for e in events if isinstance(e, BeforeCallEvent)]
    assert [e.attempt for e in before] == [1, 2, 3]
    assert all(e.slot == "general_llm" and e.model == "test-model" for e in before)
    assert before[0].messages == tuple(MESSAGES)
    assert len(before[2].messages) == len(MESSAGES) + 2  # the re-ask is visible
    errors = [e for e in events if isinstance(e, ErrorEvent)]
    assert isinstance(errors[0].error, LLMServerError) and errors[0].will_retry
    assert isinstance(errors[1].error, LLMParseError) and errors[1].will_retry
    assert all(e.elapsed_s >= 0 for e in errors)
    (after,) = [e for e in events if isinstance(e, AfterCallEvent)]
    assert after.response is answer and after.attempt == 3
    assert after.usage == answer.usage == Usage(10, 10, 20)
    assert after.total_elapsed_s >= after.elapsed_s >= 0
    assert sum("hook" in r.getMessage() for r in caplog.records) == 6  # 3 before, 2 error, 1 after


def test_final_error_reported_to_hooks_without_retry(server: LLMTestServer) -> None:
    errors: list[ErrorEvent] = []
    server.reply(Reply(status=400, body=openai_error("bad")))
    client = build_llm(openai_cfg(server), hooks=LLMHooks(on_error=[errors.append]))
    with pytest.raises(LLMRequestError):
        client.complete(MESSAGES)
    assert len(errors) == 1 and not errors[0].will_retry and errors[0].attempt == 1


# -- secrets ---------------------------------------------------------------------------------


def test_api_key_never_in_errors_or_logs(
    server: LLMTestServer, caplog: pytest.LogCaptureFixture
) -> None:
    leak = openai_error(f"Incorrect API key provided: {SECRET}")
    server.script([Reply(status=500, body=leak), Reply(status=401, body=leak)])
    with caplog.at_level(logging.DEBUG), pytest.raises(LLMRequestError) as info:
        build_llm(openai_cfg(server)).complete(MESSAGES)
    err = info.value
    assert SECRET not in str(err) and SECRET not in repr(err) and "***" in str(err)
    assert SECRET not in caplog.text
    assert "Incorrect API key provided" in str(err)


def test_openai_without_key_needs_a_base_url(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="api_key"):
        build_llm(LLMConfig(model="gpt-x"))
    assert build_llm(LLMConfig(model="local", base_url="http://127.0.0.1:1/v1")) is not None


# -- Ollama backend through the real client -----------------------------------------------------


def test_ollama_json_answer_with_usage(server: LLMTestServer) -> None:
    server.reply(
        Reply(
            body=ollama_chat('{"memories": [{"key": "tea"}]}', prompt_eval_count=42, eval_count=8)
        )
    )
    cfg = ollama_cfg(
        server,
        temperature=0.2,
        max_tokens=99,
        extra_body={"num_ctx": 4096, "keep_alive": "5m"},
        api_key=SECRET,
    )
    meter = UsageMeter()
    answer = build_llm(cfg, meter=meter).complete(MESSAGES, schema=SCHEMA, slot="general_llm")
    assert answer.parsed == {"memories": [{"key": "tea"}]}
    assert answer.usage == Usage(42, 8, 50) and answer.finish_reason == "stop"
    assert meter.snapshot().by_slot["general_llm"] == Usage(42, 8, 50)
    request = server.requests[0]
    body = request.json
    assert request.path == "/api/chat" and request.headers["authorization"] == f"Bearer {SECRET}"
    assert body["model"] == "llama-test" and body["stream"] is False
    assert body["format"] == GRAMMAR_SCHEMA
    assert body["options"] == {"temperature": 0.2, "num_predict": 99, "num_ctx": 4096}
    assert body["keep_alive"] == "5m"
    assert body["messages"] == MESSAGES


def test_ollama_modes_and_retries(server: LLMTestServer) -> None:
    server.script(
        [
            Reply(status=500, body={"error": "model runner crashed"}),
            '<think>hmm</think>```json\n{"memories": []}\n```',
        ]
    )
    answer = build_llm(ollama_cfg(server, structured_output="prompt")).complete(
        MESSAGES, schema=SCHEMA
    )
    assert answer.attempts == 2 and answer.parsed == {"memories": []}
    body = server.requests[-1].json
    assert body["format"] == "json" and json.dumps(SCHEMA) in body["messages"][0]["content"]

    server.reply(Reply(body=ollama_chat("", tool_call=("memories", {"memories": []}))))
    answer = build_llm(ollama_cfg(server, structured_output="tool_call")).complete(
        MESSAGES, schema=SCHEMA, schema_name="memories"
    )
    assert answer.parsed == {"memories": []}
    tool = server.requests[-1].json["tools"][0]["function"]
    assert tool["name"] == "memories" and tool["parameters"]["type"] == "object"
    assert set(tool["parameters"]["properties"]) == {"memories"}

    server.reply(Reply(status=404, body={"error": "model 'x' not found"}))
    with pytest.raises(LLMRequestError, match="not found") as info:
        build_llm(ollama_cfg(server)).complete(MESSAGES)
    assert info.value.attempts == 1


def test_ollama_async_and_timeout(server: LLMTestServer) -> None:
    client = build_llm(ollama_cfg(server))

    async def main() -> Any:
        try:
            return await client.acomplete(MESSAGES, schema=SCHEMA)
        finally:
            await client.aclose()  # type: ignore[attr-defined]

    server.reply(Reply(body=ollama_chat('{"memories": []}', prompt_eval_count=3, eval_count=4)))
    answer = asyncio.run(main())
    assert answer.parsed == {"memories": []} and answer.usage == Usage(3, 4, 7)

    server.responder = lambda req: Reply(body=ollama_chat("{}"), delay=3)
    slow = build_llm(ollama_cfg(server, timeout=0.2, max_retries=1))
    with pytest.raises(LLMTimeoutError) as info:
        slow.complete(MESSAGES)
    assert info.value.attempts == 2


# -- extension -------------------------------------------------------------------------------


def test_register_custom_backend() -> None:
    @register_llm("echo-test")
    class EchoClient(BaseLLMClient):
        def _send(self, messages: Any, schema: Any, schema_name: str) -> RawCompletion:
            return RawCompletion(content=json.dumps({"echo": messages[-1]["content"]}))

        async def _asend(self, messages: Any, schema: Any, schema_name: str) -> RawCompletion:
            return self._send(messages, schema, schema_name)

    cfg = LLMConfig(backend="echo-test", model="e")
    client = build_llm(cfg)
    assert isinstance(client, EchoClient) and client.backend == "echo-test"
    assert client.complete(MESSAGES, schema={"type": "object"}).parsed == {"echo": "I like tea."}
    assert "echo-test" in available_llm_backends()


def test_error_hierarchy() -> None:
    """LLMError is the single base of the layer's failures."""
    for cls in (
        LLMTimeoutError,
        LLMConnectionError,
        LLMRateLimitError,
        LLMServerError,
        LLMRequestError,
        LLMParseError,
        LLMEmptyResponseError,
    ):
        assert issubclass(cls, LLMError) and issubclass(cls, MemReaderError)


# -- vision messages (content parts) ---------------------------------------------------------

IMAGE_B64 = (  # a 1x1 PNG
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR4"
    "nGNgYGD4DwABBAEAwS2OUAAAAABJRU5ErkJggg=="
)
VISION_MESSAGES: list[dict[str, Any]] = [
    {"role": "system", "content": "Describe images."},
    {
        "role": "user",
        "content": [
            {"type": "text", "text": "What is in this picture?"},
            {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{IMAGE_B64}"}},
            {"type": "text", "text": "Answer briefly."},
        ],
    },
]


@pytest.mark.parametrize("mode", ["json_schema", "tool_call", "json_object_schema"])
def test_openai_vision_parts_pass_through(server: LLMTestServer, mode: str) -> None:
    server.reply(Reply(body=openai_completion("{}", tool_call=("response", "{}"))))
    build_llm(openai_cfg(server, structured_output=mode)).complete(
        VISION_MESSAGES, schema={"type": "object"}
    )
    assert server.requests[0].messages == VISION_MESSAGES


def test_openai_prompt_mode_with_content_parts(server: LLMTestServer) -> None:
    llm = build_llm(openai_cfg(server, structured_output="prompt"))
    # No system message: one is inserted, the parts are untouched.
    server.reply("{}")
    llm.complete(VISION_MESSAGES[1:], schema=SCHEMA)
    messages = server.requests[0].messages
    assert [m["role"] for m in messages] == ["system", "user"]
    assert json.dumps(SCHEMA) in messages[0]["content"]
    assert messages[1] == VISION_MESSAGES[1]
    # A system message of parts: the instructions are one more text part of it.
    system = {"role": "system", "content": [{"type": "text", "text": "Describe images."}]}
    server.reply("{}")
    llm.complete([system, VISION_MESSAGES[1]], schema=SCHEMA)
    messages = server.requests[1].messages
    assert len(messages) == 2 and messages[1] == VISION_MESSAGES[1]
    parts = messages[0]["content"]
    assert parts[0] == {"type": "text", "text": "Describe images."}
    assert parts[1]["type"] == "text" and json.dumps(SCHEMA) in parts[1]["text"]


@pytest.mark.parametrize("mode", ["json_schema", "prompt"])
def test_ollama_vision_parts_become_images(server: LLMTestServer, mode: str) -> None:
    server.reply("{}")
    build_llm(ollama_cfg(server, structured_output=mode)).complete(VISION_MESSAGES, schema=SCHEMA)
    messages = server.requests[0].messages
    assert messages[-1] == {
        "role": "user",
        "content": "What is in this picture?\nAnswer briefly.",
        "images": [IMAGE_B64],  # raw base64, no data: prefix
    }
    assert messages[0]["role"] == "system" and "images" not in messages[0]
    if mode == "prompt":
        assert json.dumps(SCHEMA) in messages[0]["content"]


@pytest.mark.parametrize(
    ("part", "message"),
    [
        ({"type": "image_url", "image_url": {"url": "https://host/cat.png"}}, "data: URLs only"),
        ({"type": "image_url", "image_url": "file:///etc/passwd"}, "data: URLs only"),
        ({"type": "image_url", "image_url": {"url": "data:image/png;base64"}}, "no ','"),
        ({"type": "image_url", "image_url": {"url": "data:image/png;base64,@@@"}}, "base64"),
        ({"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}, "input_audio"),
    ],
)
def test_ollama_refuses_what_it_cannot_send(
    server: LLMTestServer, part: dict[str, Any], message: str
) -> None:
    llm = build_llm(ollama_cfg(server))
    with pytest.raises(LLMRequestError, match=message) as caught:
        llm.complete([{"role": "user", "content": [{"type": "text", "text": "hi"}, part]}])
    assert caught.value.attempts == 1  # not retried
    assert server.requests == []  # refused before sending


def test_ollama_image_that_looks_like_a_path_is_sent_as_data(server: LLMTestServer) -> None:
    # "etc//passwd" is valid base64 and an existing path relative to "/": the ollama client,
    # given a string, would send that file. The bytes are sent instead.
    path_like = "/etc//passwd"
    server.reply("{}")
    url = f"data:image/png;base64,{path_like}"
    build_llm(ollama_cfg(server)).complete(
        [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}]
    )
    assert server.requests[0].messages[0]["images"] == [path_like]


def test_scripted_llm_reads_content_parts() -> None:
    from memreader.testing import ScriptedLLM

    llm = ScriptedLLM(["{}", "{}", "{}"])
    build_llm(llm.config()).complete(VISION_MESSAGES)
    assert llm.requests[0].prompt == "What is in this picture?\nAnswer briefly."
    assert llm.requests[0].messages[1]["content"][1]["type"] == "image_url"
    # Through the real SDKs, with the script as their transport.
    build_llm(llm.config(backend="openai", base_url="http://llm.test/v1")).complete(VISION_MESSAGES)
    assert llm.requests[1].prompt == "What is in this picture?\nAnswer briefly."
    build_llm(llm.config(backend="ollama", base_url="http://llm.test")).complete(VISION_MESSAGES)
    assert llm.requests[2].prompt == "What is in this picture?\nAnswer briefly."
    assert llm.requests[2].messages[1]["images"] == [IMAGE_B64]
