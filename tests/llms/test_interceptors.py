"""LLM interceptors that act, through a reader on a real HTTP server: one rewrites the messages
(the server receives the rewritten ones) and the sampling settings, one blocks one window's call
(that window falls back with a typed error, the others keep their items, the report says so),
one rejects answers (re-asked, then the bad-answer fallback); interceptors fail closed; and the
config names the built-in ones only."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

from memreader import SimpleStructMemReader
from memreader.errors import ConfigError
from memreader.llms import (
    Block,
    LLMCall,
    LLMCallBlocked,
    LLMInterceptor,
    LLMRouter,
    LLMSlots,
    RawCompletion,
    Reject,
)
from memreader.steps.report import ReadReport
from memreader.testing import ScriptedLLM
from tests.common import INFO
from tests.fine_script import CHAT, kind, make_reader, scripted_responder
from tests.llm_server import LLMTestServer

#: A second scene, in its own window: the one the blocking interceptor stops.
SECRET_CHAT = [
    {"role": "user", "content": "My PIN is 4321, keep it SECRET."},
    {"role": "assistant", "content": "I will not store it."},
    {"role": "user", "content": "Thanks, and I like jazz."},
]


@pytest.fixture
def server() -> Iterator[LLMTestServer]:
    with LLMTestServer() as running:
        running.responder = scripted_responder()
        yield running


def sent_text(server: LLMTestServer) -> str:
    return json.dumps([r.json["messages"] for r in server.requests])


class Redact(LLMInterceptor):
    """Replaces a city with a placeholder and asks for a warmer sampling."""

    def before(self, call: LLMCall) -> LLMCall:
        messages = [
            {**m, "content": str(m["content"]).replace("Lisbon", "[city]")} for m in call.messages
        ]
        return call.replace(messages=messages, temperature=0.5, max_tokens=777)


class BlockSecrets(LLMInterceptor):
    def before(self, call: LLMCall) -> Block | None:
        if any("SECRET" in str(m.get("content")) for m in call.messages):
            return Block("the window holds a secret")
        return None


class RejectExtractions(LLMInterceptor):
    def __init__(self) -> None:
        self.seen = 0

    def after(self, call: LLMCall, reply: RawCompletion) -> Reject | None:
        if "memory_list" in (reply.content or ""):
            self.seen += 1
            return Reject("no memories today")
        return None


def test_an_interceptor_that_rewrites_messages_changes_what_the_server_receives(
    server: LLMTestServer,
) -> None:
    reader = make_reader(server)
    reader.llm_interceptors.append(Redact())
    reader.get_memory(CHAT, "chat", dict(INFO), mode="fine")
    assert len(server.requests) == 3  # extract, filter, rewrite
    assert "Lisbon" not in sent_text(server)
    assert "[city]" in sent_text(server)
    assert {r.json["temperature"] for r in server.requests} == {0.5}
    assert {r.json["max_tokens"] for r in server.requests} == {777}


def test_an_async_read_runs_the_rewriting_interceptor_too(server: LLMTestServer) -> None:
    reader = make_reader(server)
    reader.llm_interceptors.append(Redact())
    asyncio.run(reader.aget_memory(CHAT, "chat", dict(INFO), mode="fine"))
    assert len(server.requests) == 3
    assert "Lisbon" not in sent_text(server)


@pytest.mark.parametrize("asynchronous", [False, True])
def test_a_blocked_call_fails_only_its_window_and_the_report_says_why(
    server: LLMTestServer, asynchronous: bool
) -> None:
    reader = make_reader(server)
    reader.llm_interceptors.append(BlockSecrets())
    report = ReadReport()
    scenes = [CHAT[0], SECRET_CHAT]
    if asynchronous:
        items = asyncio.run(
            reader.aget_memory(scenes, "chat", dict(INFO), mode="fine", report=report)
        )
    else:
        items = reader.get_memory(scenes, "chat", dict(INFO), mode="fine", report=report)
    # Nothing of the secret window reached the server; the other window was read in full.
    assert "SECRET" not in sent_text(server)
    assert sorted(kind(r) for r in server.requests) == [
        "memory_extraction",
        "memory_filter",
        "memory_rewrite",
    ]
    ok, blocked = report.windows
    assert (ok.status, blocked.status, blocked.fallback_reason) == ("ok", "fallback", "blocked")
    assert blocked.error is not None and blocked.error.startswith("LLMCallBlocked: LLM interceptor")
    assert "the window holds a secret" in blocked.error
    assert [i.memory for i in items[0]] == [
        "Emily moved to Lisbon in the week before 2026-05-10.",
        "Emily starts piano lessons on 2026-05-11.",
    ]
    assert len(items[1]) == 1  # the raw window stands in: nothing is lost
    assert "jazz" in items[1][0].memory


def test_a_rejected_answer_is_asked_again_then_falls_back_as_a_bad_answer(
    server: LLMTestServer,
) -> None:
    reader = make_reader(server)  # max_retries=2: three extraction requests at most
    rejecter = RejectExtractions()
    reader.llm_interceptors.append(rejecter)
    report = ReadReport()
    items = reader.get_memory(CHAT, "chat", dict(INFO), mode="fine", report=report)
    assert rejecter.seen == 3
    assert [kind(r) for r in server.requests] == ["memory_extraction"] * 3
    # The re-ask told the model why.
    assert "no memories today" in sent_text(server)
    (window,) = report.windows
    assert (window.status, window.fallback_reason) == ("fallback", "parse_error")
    assert window.error is not None and window.error.startswith("LLMReplyRejected")
    assert len(items[0]) == 1


def test_an_answer_an_interceptor_changes_is_the_one_read() -> None:
    class Translate(LLMInterceptor):
        def after(self, call: LLMCall, reply: RawCompletion) -> RawCompletion:
            return RawCompletion(content='{"answer": "changed"}', usage=reply.usage)

    llm = ScriptedLLM(lambda request: {"answer": "as sent"})
    router = LLMRouter(LLMSlots(llm=llm.config()))
    router.hooks.interceptors.append(Translate())
    response = router.complete("llm", [{"role": "user", "content": "hi"}], schema={})
    assert response.parsed == {"answer": "changed"}


class Broken(LLMInterceptor):
    def before(self, call: LLMCall) -> LLMCall:
        raise KeyError("a bug")


class Sneaky(LLMInterceptor):
    def before(self, call: LLMCall) -> Any:
        return call.replace(messages=[])


class AsyncOnly:
    async def before(self, call: LLMCall) -> None:
        return None


@pytest.mark.parametrize(
    ("interceptor", "message"),
    [
        (Broken(), r"LLM interceptor 'Broken' failed \(KeyError: 'a bug'\)"),
        (Sneaky(), "LLM interceptor 'Sneaky' made the request invalid: messages must be"),
        (AsyncOnly(), "LLM interceptor 'AsyncOnly' is async: it runs only in async calls"),
        (type("Odd", (), {"before": lambda self, call: "yes"})(), "returned str; expected"),
    ],
)
def test_an_interceptor_that_fails_blocks_the_request_rather_than_let_it_through(
    interceptor: object, message: str
) -> None:
    llm = ScriptedLLM(lambda request: "ok")
    router = LLMRouter(LLMSlots(llm=llm.config()))
    router.hooks.interceptors.append(interceptor)
    with pytest.raises(LLMCallBlocked, match=message) as info:
        router.complete("llm", [{"role": "user", "content": "hi"}])
    assert llm.requests == []
    assert info.value.retryable is False
    assert info.value.slot == "llm"


def test_an_async_interceptor_runs_in_async_calls() -> None:
    class Tag(LLMInterceptor):
        async def abefore(self, call: LLMCall) -> LLMCall:
            await asyncio.sleep(0)
            return call.replace(messages=[*call.messages, {"role": "user", "content": "tagged"}])

    llm = ScriptedLLM(lambda request: "ok")
    router = LLMRouter(LLMSlots(llm=llm.config()))
    router.hooks.interceptors.append(Tag())
    asyncio.run(router.acomplete("llm", [{"role": "user", "content": "hi"}]))
    assert llm.requests[0].messages[-1] == {"role": "user", "content": "tagged"}


def test_the_observe_only_hooks_see_the_request_the_interceptors_made() -> None:
    seen: list[Any] = []
    llm = ScriptedLLM(lambda request: "ok")
    router = LLMRouter(LLMSlots(llm=llm.config()))
    router.hooks.before_call.append(lambda event: seen.append(event.messages))
    router.hooks.interceptors.append(Redact())
    router.complete("llm", [{"role": "user", "content": "Lisbon"}])
    assert seen == [({"role": "user", "content": "[city]"},)]


def test_a_config_names_only_registered_interceptors(server: LLMTestServer) -> None:
    with pytest.raises(ConfigError, match="unknown LLM interceptor 'os:system'; known: rate_limit"):
        make_reader(server, llm_interceptors=[{"name": "os:system"}])
    with pytest.raises(ConfigError, match="requests_per_min: Extra inputs are not permitted"):
        make_reader(server, llm_interceptors=[{"name": "rate_limit", "requests_per_min": 5}])


def test_a_configured_rate_limit_that_cannot_wait_fails_the_pass_not_the_read(
    server: LLMTestServer,
) -> None:
    # One request a minute and no wait allowed: the extraction goes, the filter and the
    # rewrite are refused at once (typed), and the extracted memories are kept.
    reader: SimpleStructMemReader = make_reader(
        server,
        llm_interceptors=[{"name": "rate_limit", "requests_per_minute": 1, "max_wait_s": 0}],
    )
    report = ReadReport()
    items = reader.get_memory(CHAT, "chat", dict(INFO), mode="fine", report=report)
    assert [kind(r) for r in server.requests] == ["memory_extraction"]
    (window,) = report.windows
    assert window.status == "ok"
    assert (window.filter_status, window.rewrite_status) == ("failed", "failed")
    assert any(e.startswith("LLMRateLimitExceeded: rate_limit") for e in window.pass_errors)
    assert report.passes["filter"].failed_calls == 1
    assert len(items[0]) == 3  # kept as extracted


def test_an_async_def_before_runs_in_async_calls_through_the_default_abefore() -> None:
    class Upper(LLMInterceptor):
        async def before(self, call: LLMCall) -> LLMCall:  # type: ignore[override]
            return call.replace(messages=[{"role": "user", "content": "HI"}])

    llm = ScriptedLLM(lambda request: "ok")
    router = LLMRouter(LLMSlots(llm=llm.config()))
    router.hooks.interceptors.append(Upper())
    asyncio.run(router.acomplete("llm", [{"role": "user", "content": "hi"}]))
    assert llm.requests[0].messages == [{"role": "user", "content": "HI"}]


def test_interceptors_registered_on_a_memorys_reader_act_on_its_fine_adds() -> None:
    from memreader import Memory

    llm = ScriptedLLM(lambda request: {"memory_list": [], "results": []})
    config = {
        "config": {
            "embedder": {"backend": "hash"},
            "llm": llm.config(),
            "fine": {"passes": ["extract"]},
        }
    }
    with Memory(config, store="sqlite://:memory:") as memory:
        memory.reader.llm_interceptors.append(BlockSecrets())
        result = memory.add(SECRET_CHAT, user_id="u1", mode="fine")
    assert llm.requests == []  # the secret never left
    (window,) = result.report.windows
    assert (window.status, window.fallback_reason) == ("fallback", "blocked")
    assert any("jazz" in item.memory for item in result.items)  # stored as the raw window
