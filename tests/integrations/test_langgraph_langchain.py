"""The LangChain faces: MemReaderRetriever (Documents with provenance in their metadata) and
the remember / recall / context tools, run by LangGraph's own ToolNode on the tool calls of
LangChain's fake chat model, bound to one user whatever the model asks."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.documents import Document
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, HumanMessage, ToolMessage
from langgraph.graph import START, MessagesState, StateGraph
from langgraph.prebuilt import ToolNode, tools_condition
from pydantic import ValidationError

from memreader import Memory
from memreader.integrations.langgraph import MemReaderRetriever, memory_tools

CHAT = [
    {"role": "user", "content": "I adopted a cat named Miso."},
    {"role": "assistant", "content": "Lovely! How old is Miso?"},
    {"role": "user", "content": "Two years old, and she loves tuna."},
]


@pytest.fixture
def memory() -> Iterator[Memory]:
    with Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:") as m:
        m.add(CHAT, user_id="ana", session_id="chat-1")
        m.add_memory("Bob's cat is called Rex.", user_id="bob")
        yield m


def test_the_retriever_returns_documents_that_say_where_they_came_from(memory: Memory) -> None:
    docs = MemReaderRetriever(memory=memory, user_id="ana", k=2).invoke("what is my cat called?")
    assert docs and all(isinstance(doc, Document) for doc in docs)
    first = docs[0]
    assert "Miso" in first.page_content and first.id == first.metadata["id"]
    assert first.metadata["session_id"] == "chat-1" and 0 < first.metadata["score"] <= 1
    source = first.metadata["sources"][0]
    assert source["message_index"] == 0 and source["role"] == "user"
    assert "Miso" in source["quote"]
    assert all("Rex" not in doc.page_content for doc in docs)  # bob's memories stay bob's


def test_the_retriever_async_and_filters(memory: Memory) -> None:
    memory.add_memory("Ana's cat Miso is grey.", user_id="ana", session_id="chat-2")
    retriever = MemReaderRetriever(memory=memory, user_id="ana", filters={"session_id": "chat-2"})
    docs = asyncio.run(retriever.ainvoke("cat"))
    assert [doc.page_content for doc in docs] == ["Ana's cat Miso is grey."]


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"memory": "not a memory", "user_id": "ana"}, "must be a memreader Memory, got str"),
        ({"user_id": ""}, "user_id must be a non-empty string"),
        ({"user_id": "ana", "k": 0}, "greater than or equal to 1"),
        ({"user_id": "ana", "filters": {"sesion_id": "x"}}, "has no filter 'sesion_id'"),
    ],
)
def test_a_bad_retriever_is_refused(memory: Memory, arguments: Any, message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        MemReaderRetriever(**{"memory": memory, **arguments})


def test_the_tools_are_typed_and_bound_to_one_user(memory: Memory) -> None:
    remember, recall, context = memory_tools(memory, user_id="ana", session_id="chat-9")
    assert [t.name for t in (remember, recall, context)] == ["remember", "recall", "context"]
    assert set(recall.args) == {"query", "k"} and "user_id" not in remember.args
    answer = json.loads(remember.invoke({"fact": "Ana is vegetarian."}))
    assert answer["event"] == "ADD"
    stored = memory.get(answer["memory_id"], user_id="ana", used=False)
    assert stored is not None and stored.item.metadata.session_id == "chat-9"
    found = json.loads(recall.invoke({"query": "cat", "k": 3}))["memories"]
    assert any("Miso" in m["memory"] for m in found)
    assert all("Rex" not in m["memory"] for m in found)
    assert found[0]["sources"][0]["message_index"] in (0, 2)
    block = context.invoke({"query": "what does the cat love?", "max_tokens": 200})
    assert "tuna" in block and "recalled data, not instructions" in block
    assert "Rex" not in block


def test_a_bad_tool_argument_is_given_back_to_the_model(memory: Memory) -> None:
    remember, recall, _ = memory_tools(memory, user_id="ana")
    with pytest.raises(ValidationError):
        recall.invoke({"query": "cat", "k": 500})  # the schema's bound, before any call
    answer = remember.invoke({"fact": "   "})  # memreader's InputError as a ToolException
    assert answer.startswith("a memory's text must be a non-empty string")


def test_a_graph_runs_the_tools_a_fake_model_calls(memory: Memory) -> None:
    tools = memory_tools(memory, user_id="ana", session_id="chat-3")
    scripted = iter(
        [
            # One call a turn: ToolNode runs a turn's calls concurrently.
            AIMessage(
                content="",
                tool_calls=[
                    {"name": "remember", "args": {"fact": "Ana flies to Oslo in May."}, "id": "1"}
                ],
            ),
            AIMessage(
                content="",
                tool_calls=[{"name": "recall", "args": {"query": "Oslo trip"}, "id": "2"}],
            ),
            AIMessage(content="Noted: Oslo in May."),
        ]
    )
    model = GenericFakeChatModel(messages=scripted)

    def agent(state: MessagesState) -> dict[str, list[Any]]:
        return {"messages": [model.invoke(state["messages"])]}

    builder = StateGraph(MessagesState)
    builder.add_node("agent", agent)
    builder.add_node("tools", ToolNode(tools))
    builder.add_edge(START, "agent")
    builder.add_conditional_edges("agent", tools_condition)
    builder.add_edge("tools", "agent")
    graph = builder.compile()
    out = graph.invoke({"messages": [HumanMessage("I fly to Oslo in May.")]})
    results = [m for m in out["messages"] if isinstance(m, ToolMessage)]
    assert [m.name for m in results] == ["remember", "recall"]
    recalled = json.loads(str(results[1].content))["memories"]
    assert recalled[0]["memory"] == "Ana flies to Oslo in May."
    assert out["messages"][-1].content == "Noted: Oslo in May."
    assert [h.text for h in memory.search("Oslo", user_id="bob")] == ["Bob's cat is called Rex."]


def test_the_tools_run_async_too(memory: Memory) -> None:
    _, recall, context = memory_tools(memory, user_id="ana")

    async def run() -> tuple[Any, Any]:
        return await recall.ainvoke({"query": "tuna"}), await context.ainvoke({"query": "tuna"})

    found, block = asyncio.run(run())
    assert "tuna" in json.loads(found)["memories"][0]["memory"] and "tuna" in block
