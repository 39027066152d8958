"""The Pydantic AI toolset through a real ``pydantic_ai.Agent``, driven offline by Pydantic AI's
own ``FunctionModel`` (a script of tool calls) and ``TestModel`` (calls every tool)."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import pytest
from pydantic_ai import Agent
from pydantic_ai.messages import (
    ModelMessage,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.test import TestModel

from memreader import AsyncMemory, Memory
from memreader.errors import DeadlineExceeded, ForbiddenUserError, InputError, StoreError
from memreader.integrations.pydantic_ai import MemoryToolset
from tests.common import HASH_MEMORY as CONFIG


def scripted(*turns: list[Any]) -> FunctionModel:
    """A model that answers each request with the next turn's parts, then "done"."""
    answers = iter(turns)

    def answer(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        return ModelResponse(parts=next(answers, [TextPart("done")]))

    return FunctionModel(answer)


def returns(messages: list[ModelMessage]) -> dict[str, Any]:
    """What each tool call answered, by its call id (sent back for a retry too)."""
    found: dict[str, Any] = {}
    for message in messages:
        for part in message.parts:
            if isinstance(part, ToolReturnPart) and part.tool_call_id:
                found[part.tool_call_id] = part
    return found


def retried(part: Any) -> str | None:
    """Why a tool call was sent back to the model (``None``: it was answered)."""
    return part.retry.cause if getattr(part, "outcome", None) == "retried" else None


def test_a_remembered_fact_is_recalled_with_where_it_came_from(memory: Memory) -> None:
    agent = Agent(
        scripted(
            [ToolCallPart("remember", {"fact": "Ana is vegetarian."}, tool_call_id="c1")],
            [ToolCallPart("recall", {"query": "vegetarian"}, tool_call_id="c2")],
        ),
        toolsets=[MemoryToolset(memory, user_id="ana")],
    )
    result = agent.run_sync("remember that I am vegetarian", conversation_id="conv-1")
    answers = returns(result.all_messages())
    assert answers["c1"].content["event"] == "ADD"
    assert answers["c1"].content["session_id"] == "conv-1"
    (recalled,) = answers["c2"].content["memories"]
    assert recalled["memory"] == "Ana is vegetarian."
    assert recalled["session_id"] == "conv-1"
    assert recalled["tool_call_id"] == "c1"
    assert recalled["run_id"] == result.run_id
    # The same store, through the library: ana's memory, nobody else's.
    assert [hit.text for hit in memory.search("vegetarian", user_id="ana")] == [
        "Ana is vegetarian."
    ]
    assert memory.search("vegetarian", user_id="bob") == []


def test_recall_and_context_carry_the_sources_of_a_chat(memory: Memory) -> None:
    chat = [
        {"role": "user", "content": "I adopted a cat named Miso.", "message_id": "m1"},
        {"role": "assistant", "content": "Lovely name!", "message_id": "m2"},
    ]
    memory.add(chat, user_id="ana", session_id="s1")
    agent = Agent(
        scripted(
            [
                ToolCallPart("recall", {"query": "cat", "k": 3}, tool_call_id="r"),
                ToolCallPart("context", {"query": "cat", "max_tokens": 300}, tool_call_id="c"),
            ]
        ),
        toolsets=[MemoryToolset(memory, user_id="ana")],
    )
    answers = returns(agent.run_sync("what is my cat called?").all_messages())
    (hit,) = answers["r"].content["memories"]
    assert hit["session_id"] == "s1"
    first = hit["sources"][0]
    assert (first["message_id"], first["role"], first["quote"]) == (
        "m1",
        "user",
        "I adopted a cat named Miso.",
    )
    block = answers["c"].content
    assert "I adopted a cat named Miso." in block["text"]
    assert block["parts"][0]["session_id"] == "s1"
    assert block["parts"][0]["messages"] == [0]


def test_a_bad_filter_asks_the_model_again_with_the_reason(memory: Memory) -> None:
    memory.add_memory("Ana is vegetarian.", user_id="ana")
    naive = {"query": "vegetarian", "since": "2026-01-01T00:00:00"}
    fixed = {"query": "vegetarian", "since": "2026-01-01T00:00:00Z"}
    agent = Agent(
        scripted(
            [ToolCallPart("recall", naive, tool_call_id="bad")],
            [ToolCallPart("recall", fixed, tool_call_id="good")],
        ),
        toolsets=[MemoryToolset(memory, user_id="ana")],
    )
    answers = returns(agent.run_sync("what do I eat?").all_messages())
    assert retried(answers["bad"]) == "model_retry"
    assert "since must be a timezone-aware datetime" in answers["bad"].content
    assert retried(answers["good"]) is None
    assert [m["memory"] for m in answers["good"].content["memories"]] == ["Ana is vegetarian."]


def test_typed_arguments_are_checked_before_the_store_is_touched(memory: Memory) -> None:
    agent = Agent(
        scripted(
            [ToolCallPart("recall", {"query": "tea", "k": 0}, tool_call_id="k0")],
            [ToolCallPart("remember", {"fact": ""}, tool_call_id="empty")],
        ),
        toolsets=[MemoryToolset(memory, user_id="ana")],
    )
    answers = returns(agent.run_sync("hi").all_messages())
    assert retried(answers["k0"]) == retried(answers["empty"]) == "validation_error"
    assert [error["loc"] for error in answers["k0"].content] == [["k"]]
    assert [error["loc"] for error in answers["empty"].content] == [["fact"]]
    assert list(memory.get_all(user_id="ana")) == []


@dataclass
class Deps:
    user: str


def test_the_user_comes_from_the_runs_deps_and_stays_behind_its_wall(memory: Memory) -> None:
    toolset = MemoryToolset[Deps](memory, user_of=lambda deps: deps.user, users=["ana", "bob"])

    def remember(fact: str) -> Agent[Deps, str]:
        call = ToolCallPart("remember", {"fact": fact}, tool_call_id="c")
        return Agent(scripted([call]), deps_type=Deps, toolsets=[toolset])

    remember("Ana likes oolong.").run_sync("hi", deps=Deps("ana"))
    remember("Bob likes coffee.").run_sync("hi", deps=Deps("bob"))
    assert [h.text for h in memory.search("likes", user_id="ana")] == ["Ana likes oolong."]
    assert [h.text for h in memory.search("likes", user_id="bob")] == ["Bob likes coffee."]
    with pytest.raises(ForbiddenUserError, match="'eve'"):
        remember("Eve reads mail.").run_sync("hi", deps=Deps("eve"))
    assert list(memory.get_all(user_id="eve")) == []


def test_the_model_cannot_name_a_user(memory: Memory) -> None:
    call = ToolCallPart("recall", {"query": "tea", "user_id": "bob"}, tool_call_id="u")
    agent = Agent(scripted([call]), toolsets=[MemoryToolset(memory, user_id="ana")])
    answers = returns(agent.run_sync("hi").all_messages())
    assert retried(answers["u"]) == "validation_error"  # an unknown argument, refused
    assert [error["type"] for error in answers["u"].content] == ["extra_forbidden"]


def test_test_model_calls_every_tool_on_an_async_memory() -> None:
    async def run() -> tuple[str, list[str]]:
        async with AsyncMemory(CONFIG, store="sqlite://:memory:") as m:
            toolset = MemoryToolset(m, user_id="ana", task_id="trip")
            result = await Agent(TestModel(), toolsets=[toolset]).run("hi")
            stored = [s.item.memory for s in await m.get_all(user_id="ana", task_id="trip")]
            return result.output, stored

    output, stored = asyncio.run(run())
    assert '"remember"' in output and '"recall"' in output and '"context"' in output
    assert len(stored) == 1  # TestModel's remember, kept in the task's scope


def test_a_failing_store_is_a_typed_error_not_a_retry(memory: Memory) -> None:
    agent = Agent(
        scripted([ToolCallPart("recall", {"query": "tea"}, tool_call_id="c")]),
        toolsets=[MemoryToolset(memory, user_id="ana")],
    )
    memory.close()
    with pytest.raises(StoreError, match="closed"):
        agent.run_sync("hi")


def test_a_call_past_the_callers_deadline_stops(memory: Memory) -> None:
    agent = Agent(
        scripted([ToolCallPart("recall", {"query": "tea"}, tool_call_id="c")]),
        toolsets=[MemoryToolset(memory, user_id="ana")],
    )
    with memory.within(0), pytest.raises(DeadlineExceeded):
        agent.run_sync("hi")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "exactly one of user_id= or user_of="),
        ({"user_id": "ana", "user_of": str}, "exactly one of user_id= or user_of="),
        ({"user_id": ""}, "user_id must be a non-empty string"),
        ({"user_of": str, "users": "ana"}, "a collection of user ids, not one string"),
        ({"user_id": "ana", "task_id": ""}, "task_id"),
        ({"user_id": "ana", "users": ["ana"]}, "users= limits what user_of= gives"),
        ({"user_id": "ana", "session_id": " "}, "session_id must be a non-empty string"),
        ({"user_id": "ana", "timeout_s": 0}, "timeout_s must be a number of seconds > 0"),
    ],
)
def test_bad_construction_is_an_input_error(
    memory: Memory, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        MemoryToolset(memory, **arguments)


def test_it_needs_a_memory_not_a_store_url() -> None:
    with pytest.raises(InputError, match="takes a memreader Memory or AsyncMemory"):
        MemoryToolset("sqlite:///tmp/x.db", user_id="ana")


def test_user_of_giving_no_user_is_an_input_error(memory: Memory) -> None:
    toolset = MemoryToolset[Deps](memory, user_of=lambda deps: deps.user)
    call = ToolCallPart("recall", {"query": "tea"}, tool_call_id="c")
    agent = Agent(scripted([call]), deps_type=Deps, toolsets=[toolset])
    with pytest.raises(InputError, match="user_id must be a non-empty string"):
        agent.run_sync("hi", deps=Deps(""))
