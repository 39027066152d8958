"""The OpenAI Agents SDK tools (memreader.integrations.openai_agents.tools) through the real
SDK, and a whole run: an ``Agent`` on the SDK's ``ScriptedModel`` calls the recall tool and its
``MemreaderSession`` keeps the turn, offline."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from agents import Agent, RunConfig, Runner
from agents.exceptions import ModelBehaviorError
from agents.testing import ScriptedModel, assistant_message, function_call
from agents.tool import FunctionTool
from agents.tool_context import ToolContext

from memreader import Memory
from memreader.errors import InputError
from memreader.integrations.openai_agents import (
    AgentsMemoryError,
    MemreaderSession,
    memory_tools,
)
from memreader.integrations.openai_agents.items import message_id

OFFLINE = RunConfig(tracing_disabled=True)  # no trace is exported anywhere


def call(tool: FunctionTool, arguments: dict[str, Any] | str) -> Any:
    """The tool's answer to ``arguments``, as the SDK invokes it."""
    raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
    context = ToolContext(context=None, tool_name=tool.name, tool_call_id="c1", tool_arguments=raw)
    return asyncio.run(tool.on_invoke_tool(context, raw))


def tools(memory: Memory, **options: Any) -> dict[str, FunctionTool]:
    return {tool.name: tool for tool in memory_tools(memory, user_id="ana", **options)}


def test_recall_answers_each_memory_with_where_it_came_from(memory: Memory) -> None:
    said = {"role": "user", "content": "My sister Ines lives in Porto."}
    session = MemreaderSession("chat-1", memory, user_id="ana")
    asyncio.run(session.add_items([said]))
    memory.add_memory("Bob lives in Porto too.", user_id="bob")

    answer = json.loads(call(tools(memory)["recall"], {"query": "who lives in Porto?", "k": 5}))
    (found,) = answer["memories"]  # Bob's memory is not Ana's
    assert found["memory"] == "user: My sister Ines lives in Porto."
    assert found["session_id"] == "chat-1" and 0 <= found["score"] <= 1
    (source,) = found["sources"]
    assert source["message_id"] == message_id("chat-1", 0, said)
    assert (source["role"], source["quote"]) == ("user", said["content"])


def test_remember_keeps_a_fact_for_the_bound_user_only(memory: Memory) -> None:
    answer = json.loads(call(tools(memory)["remember"], {"fact": "Ana is vegetarian."}))
    assert answer["change"]["event"] == "ADD"
    assert [h.text for h in memory.search("vegetarian", user_id="ana")] == ["Ana is vegetarian."]
    assert memory.search("vegetarian", user_id="bob") == []


def test_context_answers_a_block_and_its_parts(memory: Memory) -> None:
    memory.add("I adopted a cat named Miso.", user_id="ana", session_id="s1")
    answer = json.loads(
        call(tools(memory)["memory_context"], {"query": "my cat", "max_tokens": 200})
    )
    assert "I adopted a cat named Miso." in answer["text"] and answer["tokens"] <= 200
    assert answer["parts"][0]["session_id"] == "s1" and answer["parts_total"] == 1


def test_the_tools_scope_reads_and_writes_one_agents_memories(memory: Memory) -> None:
    memory.add_memory("Planner note: book the train.", user_id="ana", agent_id="planner")
    memory.add_memory("Coder note: fix the bug.", user_id="ana", agent_id="coder")
    coder = tools(memory, agent_id="coder")
    answer = json.loads(call(coder["recall"], {"query": "note", "k": 5}))
    assert [m["memory"] for m in answer["memories"]] == ["Coder note: fix the bug."]
    call(coder["remember"], {"fact": "Coder prefers tabs."})
    (hit,) = memory.search("tabs", user_id="ana", agent_id="coder", k=1)
    assert hit.memory.item.metadata.agent_id == "coder"


def test_no_tool_lets_the_model_name_a_user(memory: Memory) -> None:
    for tool in memory_tools(memory, user_id="ana"):
        assert "user_id" not in tool.params_json_schema["properties"]
    # A user the model names anyway is not an argument: the call stays Ana's.
    memory.add_memory("Bob's PIN is 1234.", user_id="bob")
    answer = call(tools(memory)["recall"], {"query": "Bob's PIN", "k": 5, "user_id": "bob"})
    assert json.loads(answer) == {"memories": []}


@pytest.mark.parametrize(
    ("name", "arguments"),
    [
        ("recall", {"query": "", "k": 5}),
        ("recall", {"query": "x", "k": 0}),
        ("recall", {"query": "x", "k": 51}),
        ("recall", "{not json"),
        ("memory_context", {"query": "x", "max_tokens": 0}),
        ("remember", {"fact": ""}),
    ],
)
def test_bad_arguments_go_back_to_the_model_or_raise_the_sdks_error(
    memory: Memory, name: str, arguments: Any
) -> None:
    answer = call(tools(memory)[name], arguments)
    assert answer.startswith(
        f"The memory tool refused the call: Invalid JSON input for tool {name}"
    )
    assert "k: 1 to 50" in answer  # what the arguments must be
    with pytest.raises(ModelBehaviorError, match=f"Invalid JSON input for tool {name}"):
        call(tools(memory, failure_error_function=None)[name], arguments)


def test_a_query_memreader_refuses_goes_back_with_memreaders_reason(memory: Memory) -> None:
    answer = call(tools(memory)["memory_context"], {"query": "   ", "max_tokens": 100})
    assert answer.startswith("The memory tool refused the call:") and "query" in answer
    with pytest.raises(InputError, match="query"):
        call(tools(memory, failure_error_function=None)["memory_context"], {"query": " "})


def test_a_failed_memory_is_told_without_its_details(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    recall = tools(memory)["recall"]
    memory.close()
    answer = call(recall, {"query": "x", "k": 1})
    assert answer == "The memory tool failed (StoreError); try again later."
    assert "this Memory is closed" in caplog.text  # logged for the operator


@pytest.mark.parametrize(
    ("options", "match"),
    [
        ({"user_id": ""}, "user_id must be a non-empty string"),
        ({"names": ["recall", "forget_all"]}, "unknown memory tool 'forget_all'"),
        ({"names": "recall"}, "unknown memory tool 'recall'"),
        ({"timeout_s": float("inf")}, "timeout_s must be a positive number"),
        ({"agent_id": 3}, "agent_id must be a non-empty string or null"),
    ],
)
def test_bad_tool_settings_are_refused_by_name(
    memory: Memory, options: dict[str, Any], match: str
) -> None:
    given = {"user_id": "ana", **options}
    with pytest.raises(AgentsMemoryError, match=match):
        memory_tools(memory, **given)


def test_an_agent_recalls_through_the_tool_and_its_session_keeps_the_turn(
    memory: Memory,
) -> None:
    memory.add_memory("Ana's cat is called Miso.", user_id="ana", session_id="earlier")
    model = ScriptedModel(
        [
            [function_call("recall", {"query": "cat name", "k": 3}, call_id="call_1")],
            [assistant_message("Your cat is called Miso.", item_id="msg_1")],
        ]
    )
    agent = Agent(name="helper", model=model, tools=memory_tools(memory, user_id="ana"))
    session = MemreaderSession("chat-1", memory, user_id="ana")

    async def scenario() -> list[Any]:
        result = await Runner.run(
            agent, "What is my cat called?", session=session, run_config=OFFLINE
        )
        assert result.final_output == "Your cat is called Miso."
        return await session.get_items()

    kept = asyncio.run(scenario())
    model.assert_complete()
    # The next turn starts from the kept items: the model sees the first turn first.
    model.enqueue([assistant_message("You're welcome.", item_id="msg_2")])
    asyncio.run(Runner.run(agent, "Thanks!", session=session, run_config=OFFLINE))
    assert model.calls[2].input[: len(kept)] == kept
    assert asyncio.run(session.get_items())[len(kept) :][0] == {
        "role": "user",
        "content": "Thanks!",
    }
    assert [item.get("type", "message") for item in kept] == [
        "message",
        "function_call",
        "function_call_output",
        "message",
    ]
    assert kept[0] == {"role": "user", "content": "What is my cat called?"}
    # The model saw the recalled memory, with where it came from.
    second = model.calls[1].input
    output = next(item for item in second if item.get("type") == "function_call_output")
    recalled = json.loads(output["output"])["memories"]
    assert any(
        m["memory"] == "Ana's cat is called Miso." and m["session_id"] == "earlier"
        for m in recalled
    )
    # The turn's messages are Ana's memories now, from this session.
    texts = [hit.text for hit in memory.search("Miso", user_id="ana", session_id="chat-1")]
    assert any("assistant: Your cat is called Miso." in text for text in texts)
    assert any("user: What is my cat called?" in text for text in texts)
