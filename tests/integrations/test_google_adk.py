"""The Google ADK memory service with real ADK sessions and events (built by ADK's own
``InMemorySessionService``), offline."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncGenerator
from datetime import datetime, timezone
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.errors.input_validation_error import InputValidationError
from google.adk.errors.not_found_error import NotFoundError
from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService, Session
from google.adk.tools import load_memory
from google.genai import types

from memreader import AsyncMemory, Memory
from memreader.errors import ForbiddenScopeError, ForbiddenUserError, InputError, StoreError
from memreader.integrations.google_adk import ANY_USER, MemreaderMemoryService
from tests.common import HASH_MEMORY as CONFIG

T0 = datetime(2026, 3, 1, 9, 30, tzinfo=timezone.utc).timestamp()


def text(role: str, said: str, author: str = "user", at: float = T0, **part: Any) -> Event:
    parts = [types.Part(text=said, **part)]
    return Event(
        author=author,
        invocation_id="i1",
        timestamp=at,
        content=types.Content(role=role, parts=parts),
    )


def call(name: str, args: dict[str, Any], at: float) -> Event:
    part = types.Part(function_call=types.FunctionCall(name=name, args=args))
    return Event(
        author="chef",
        invocation_id="i1",
        timestamp=at,
        content=types.Content(role="model", parts=[part]),
    )


def answer(name: str, response: dict[str, Any], at: float) -> Event:
    part = types.Part(function_response=types.FunctionResponse(name=name, response=response))
    return Event(
        author="chef",
        invocation_id="i1",
        timestamp=at,
        content=types.Content(role="user", parts=[part]),
    )


async def session_with(
    events: list[Event], app: str = "chef", user: str = "ana", sid: str = "s1"
) -> tuple[InMemorySessionService, Session]:
    sessions = InMemorySessionService()
    session = await sessions.create_session(app_name=app, user_id=user, session_id=sid)
    for event in events:
        await sessions.append_event(session, event)
    found = await sessions.get_session(app_name=app, user_id=user, session_id=sid)
    assert found is not None
    return sessions, found


TURN = [
    text("user", "I am vegetarian and I love Porto."),
    call("find_restaurant", {"city": "Porto", "diet": "vegetarian"}, T0 + 1),
    answer("find_restaurant", {"result": "Casa Ana"}, T0 + 2),
    text("model", "Try Casa Ana.", author="chef", at=T0 + 3),
]


def test_a_session_is_searchable_with_the_events_it_came_from(memory: Memory) -> None:
    service = MemreaderMemoryService(memory, users=["ana"])

    async def run() -> tuple[Session, Any]:
        _, session = await session_with(TURN)
        await service.add_session_to_memory(session)
        return session, await service.search_memory(
            app_name="chef", user_id="ana", query="vegetarian Porto"
        )

    session, found = asyncio.run(run())
    (entry,) = found.memories
    assert "I am vegetarian and I love Porto." in entry.content.parts[0].text
    assert entry.author is None  # several speakers
    assert entry.timestamp == "2026-03-01T09:30:00+00:00"  # when it was said
    meta = entry.custom_metadata
    assert (meta["session_id"], meta["agent_id"]) == ("s1", "chef")
    assert [s["message_id"] for s in meta["sources"]] == [event.id for event in session.events]
    assert [s["role"] for s in meta["sources"]] == ["user", "assistant", "tool", "assistant"]
    assert (
        meta["sources"][1]["quote"]
        == '[called find_restaurant with {"city": "Porto", "diet": "vegetarian"}]'
    )
    assert meta["sources"][2]["quote"] == '[find_restaurant answered {"result": "Casa Ana"}]'
    assert meta["sources"][0]["chat_time"] == "2026-03-01T09:30:00+00:00"
    # The same memory through the library, in ana's store only.
    assert memory.search("vegetarian", user_id="ana")[0].id == entry.id
    assert memory.search("vegetarian", user_id="bob") == []


def test_a_growing_session_added_again_reads_only_its_new_events(memory: Memory) -> None:
    service = MemreaderMemoryService(memory, users=["ana"])

    async def run() -> list[list[str]]:
        sessions, session = await session_with(TURN)
        await service.add_session_to_memory(session)
        await service.add_session_to_memory(session)  # nothing new
        await sessions.append_event(
            session, text("user", "Also, I am allergic to nuts.", at=T0 + 60)
        )
        await service.add_session_to_memory(session)
        return [[s.content for s in m.item.metadata.sources] for m in memory.get_all(user_id="ana")]

    newest, first = asyncio.run(run())
    assert newest == ["Also, I am allergic to nuts."]
    assert len(first) == 4


def test_a_deleted_memory_is_not_read_again(memory: Memory) -> None:
    service = MemreaderMemoryService(memory, users=["ana"])

    async def run() -> list[Any]:
        _, session = await session_with(TURN)
        await service.add_session_to_memory(session)
        (entry,) = (
            await service.search_memory(app_name="chef", user_id="ana", query="Porto")
        ).memories
        assert entry.id is not None
        await service.delete_memory(app_name="chef", user_id="ana", memory_id=entry.id)
        await service.add_session_to_memory(session)
        return (await service.search_memory(app_name="chef", user_id="ana", query="Porto")).memories

    assert asyncio.run(run()) == []
    (expired,) = memory.get_all(user_id="ana", include_inactive=True)
    assert expired.status == "expired"


def test_events_and_entries_added_directly(
    memory: Memory, caplog: pytest.LogCaptureFixture
) -> None:
    service = MemreaderMemoryService(memory, users=ANY_USER)
    image = types.Part(inline_data=types.Blob(mime_type="image/png", data=b"\x89PNG"))
    events = [
        text("user", "Mi piace il tè verde. 我喜欢绿茶。"),
        text("model", "secret reasoning", author="chef", at=T0 + 1, thought=True),
        Event(author="user", timestamp=T0 + 2, content=types.Content(role="user", parts=[image])),
    ]
    entry = MemoryEntry(
        content=types.Content(parts=[types.Part(text="Bob prefers window seats.")]),
        author="travel_agent",
        timestamp="2026-02-01T10:00:00",
        custom_metadata={"source": "crm"},
    )

    async def run() -> None:
        with caplog.at_level(logging.WARNING, logger="memreader.integrations.google_adk_events"):
            await service.add_events_to_memory(
                app_name="chef", user_id="李雷", events=events, custom_metadata={"ttl": "30d"}
            )
        await service.add_memory(app_name="travel", user_id="bob", memories=[entry])

    asyncio.run(run())
    (tea,) = memory.get_all(user_id="李雷")
    assert tea.item.memory == (
        "user: [2026-03-01T09:30:00+00:00]: Mi piace il tè verde. 我喜欢绿茶。\n"
        "user: [2026-03-01T09:30:02+00:00]: [file image/png]"
    )
    assert tea.item.metadata.info["ttl"] == "30d"
    assert tea.item.metadata.session_id.startswith("auto-")
    assert "its image/png part is kept as a marker only" in caplog.text
    (seat,) = memory.get_all(user_id="bob")
    assert seat.item.memory == "Bob prefers window seats."
    assert seat.item.metadata.agent_id == "travel"
    assert seat.item.metadata.info == {"source": "crm", "author": "travel_agent"}
    assert seat.valid_from == datetime.fromisoformat("2026-02-01T10:00:00").astimezone()


def test_a_bad_entry_stores_none_of_the_call(memory: Memory) -> None:
    service = MemreaderMemoryService(memory, users=["ana"])
    good = MemoryEntry(content=types.Content(parts=[types.Part(text="Ana likes tea.")]))
    empty = MemoryEntry(content=types.Content(parts=[]))
    late = MemoryEntry(content=types.Content(parts=[types.Part(text="x")]), timestamp="yesterday")
    for bad, message in (
        (empty, r"memories\[1\] has no text"),
        (late, r"memories\[1\].timestamp must be ISO 8601"),
    ):
        with pytest.raises(InputValidationError, match=message):
            asyncio.run(service.add_memory(app_name="chef", user_id="ana", memories=[good, bad]))
    assert list(memory.get_all(user_id="ana")) == []


def test_each_app_keeps_its_own_memories_unless_told_otherwise(memory: Memory) -> None:
    scoped = MemreaderMemoryService(memory, users=["ana"])
    shared = MemreaderMemoryService(memory, users=["ana"], app_scope=False)

    async def run() -> tuple[int, int, int]:
        _, session = await session_with(TURN, app="chef")
        await scoped.add_session_to_memory(session)
        chef = await scoped.search_memory(app_name="chef", user_id="ana", query="Porto")
        travel = await scoped.search_memory(app_name="travel", user_id="ana", query="Porto")
        anywhere = await shared.search_memory(app_name="travel", user_id="ana", query="Porto")
        return len(chef.memories), len(travel.memories), len(anywhere.memories)

    assert asyncio.run(run()) == (1, 0, 1)


def test_users_and_apps_not_served_are_refused(memory: Memory) -> None:
    service = MemreaderMemoryService(memory, users=["ana"], apps=["chef"])

    async def run(app: str, user: str) -> Any:
        _, session = await session_with(TURN, app=app, user=user)
        await service.add_session_to_memory(session)

    with pytest.raises(ForbiddenUserError, match="user_id 'bob' is not allowed"):
        asyncio.run(run("chef", "bob"))
    with pytest.raises(ForbiddenScopeError, match="app_name 'travel' is not allowed"):
        asyncio.run(run("travel", "ana"))
    with pytest.raises(ForbiddenUserError):
        asyncio.run(service.search_memory(app_name="chef", user_id="bob", query="Porto"))
    assert list(memory.get_all(user_id="bob")) == []
    assert list(memory.get_all(user_id="ana")) == []


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"users": "ana"}, "a non-empty collection of names"),
        ({"users": []}, "a non-empty collection of names"),
        ({"users": [""]}, "user_id must be a non-empty string"),
        ({"users": ANY_USER, "apps": "chef"}, "a non-empty collection of names"),
        ({"users": ANY_USER, "k": 0}, "k=...\\) must be an integer from 1 to 100"),
        ({"users": ANY_USER, "timeout_s": 0}, "timeout_s must be a number of seconds > 0"),
    ],
)
def test_bad_construction_is_an_input_error(
    memory: Memory, arguments: dict[str, Any], message: str
) -> None:
    with pytest.raises(InputError, match=message):
        MemreaderMemoryService(memory, **arguments)


def test_the_users_must_be_named(memory: Memory) -> None:
    with pytest.raises(TypeError, match="users"):
        MemreaderMemoryService(memory)  # type: ignore[call-arg]


@pytest.mark.parametrize(
    ("call", "error", "message"),
    [
        (
            {"app_name": "", "user_id": "ana"},
            InputValidationError,
            "app_name must be a non-empty string",
        ),
        ({"app_name": "a" * 201, "user_id": "ana"}, InputValidationError, "at most 200 characters"),
        (
            {"app_name": "chef", "user_id": 7},
            InputValidationError,
            "user_id must be a non-empty string",
        ),
        (
            {"app_name": "chef", "user_id": "ana", "memory_id": None},
            InputValidationError,
            "needs a memory_id",
        ),
        (
            {"app_name": "chef", "user_id": "ana", "memory_id": "nope"},
            NotFoundError,
            "no memory 'nope'",
        ),
    ],
)
def test_bad_calls_are_adk_errors(
    memory: Memory, call: dict[str, Any], error: type[Exception], message: str
) -> None:
    service = MemreaderMemoryService(memory, users=ANY_USER)
    with pytest.raises(error, match=message):
        asyncio.run(service.delete_memory(**call))


def test_another_apps_memory_cannot_be_deleted(memory: Memory) -> None:
    service = MemreaderMemoryService(memory, users=["ana"])
    added = memory.add_memory("Ana likes tea.", user_id="ana", agent_id="chef")
    with pytest.raises(NotFoundError):
        asyncio.run(
            service.delete_memory(app_name="travel", user_id="ana", memory_id=added.memory_id)
        )
    assert memory.get(added.memory_id, user_id="ana", used=False).status == "active"


def test_an_empty_query_finds_nothing_as_adks_own_services(memory: Memory) -> None:
    memory.add_memory("Ana likes tea.", user_id="ana", agent_id="chef")
    service = MemreaderMemoryService(memory, users=["ana"])
    found = asyncio.run(service.search_memory(app_name="chef", user_id="ana", query=""))
    assert found.memories == []


def test_on_an_async_memory_and_a_failing_store() -> None:
    async def run() -> int:
        async with AsyncMemory(CONFIG, store="sqlite://:memory:") as m:
            service = MemreaderMemoryService(m, users=["ana"])
            _, session = await session_with(TURN)
            await service.add_session_to_memory(session)
            found = await service.search_memory(app_name="chef", user_id="ana", query="Porto")
        with pytest.raises(StoreError, match="closed"):
            await service.search_memory(app_name="chef", user_id="ana", query="Porto")
        return len(found.memories)

    assert asyncio.run(run()) == 1


class RecallingModel(BaseLlm):
    """An ADK model that calls ``load_memory`` once, then answers with what it got back."""

    model: str = "scripted"

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        parts = llm_request.contents[-1].parts or []
        answered = [p.function_response for p in parts if p.function_response is not None]
        if answered:
            (memory,) = answered[0].response["result"].memories
            said = (
                f"{memory.content.parts[0].text} (session {memory.custom_metadata['session_id']})"
            )
            yield LlmResponse(content=types.Content(role="model", parts=[types.Part(text=said)]))
            return
        ask = types.FunctionCall(name="load_memory", args={"query": "vegetarian"})
        yield LlmResponse(
            content=types.Content(role="model", parts=[types.Part(function_call=ask)])
        )


def test_an_adk_runner_recalls_through_load_memory_and_keeps_the_new_session(
    memory: Memory,
) -> None:
    memory.add("I am vegetarian.", user_id="ana", session_id="last-week", agent_id="chef")
    service = MemreaderMemoryService(memory, users=["ana"])
    sessions = InMemorySessionService()
    agent = LlmAgent(name="chef", model=RecallingModel(), tools=[load_memory])
    runner = Runner(app_name="chef", agent=agent, session_service=sessions, memory_service=service)

    async def run() -> list[str]:
        await sessions.create_session(app_name="chef", user_id="ana", session_id="today")
        asked = types.Content(role="user", parts=[types.Part(text="What do I eat?")])
        said = [
            part.text
            async for event in runner.run_async(
                user_id="ana", session_id="today", new_message=asked
            )
            for part in (event.content.parts if event.content else [])
            if part.text
        ]
        session = await sessions.get_session(app_name="chef", user_id="ana", session_id="today")
        assert session is not None
        await service.add_session_to_memory(session)
        return said

    assert asyncio.run(run()) == ["user: I am vegetarian. (session last-week)"]
    (today,) = memory.get_all(user_id="ana", session_id="today")
    # The question and the answer are kept; load_memory's call and its answer (memories
    # already) are not read again.
    assert [s.role for s in today.item.metadata.sources] == ["user", "assistant"]
    assert "load_memory" not in today.item.memory


def test_events_without_words_partial_pieces_or_a_role_are_read_as_adk_means_them(
    memory: Memory,
) -> None:
    service = MemreaderMemoryService(memory, users=["ana"])
    no_role = types.Content(parts=[types.Part(text="I moved to Lisbon.")])
    events = [
        Event(author="user", timestamp=T0, content=no_role),  # the user's, no role given
        Event(author="chef", timestamp=T0 + 1, partial=True, content=no_role),  # streamed piece
        Event(author="chef", timestamp=T0 + 2),  # a state change: nothing said
        Event(
            author="chef",
            timestamp=float("nan"),
            content=types.Content(parts=[types.Part(text="Welcome!")]),
        ),
    ]
    asyncio.run(
        service.add_events_to_memory(app_name="chef", user_id="ana", events=events, session_id="s9")
    )
    (stored,) = memory.get_all(user_id="ana")
    sources = stored.item.metadata.sources
    assert [(s.role, s.name, s.content) for s in sources] == [
        ("user", None, "I moved to Lisbon."),
        ("assistant", "chef", "Welcome!"),
    ]
    assert [s.message_id for s in sources] == [events[0].id, events[3].id]
    assert sources[1].chat_time is None  # not a time: left out, not invented
