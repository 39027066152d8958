"""``Memory.recall``: category, item and resource tiers with a sufficiency check after each
(the ``scripted`` backend counts the calls; a real HTTP server plays a failing model)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from memreader import Memory
from memreader.errors import DeadlineExceeded, InputError
from memreader.testing import ScriptedLLM, ScriptedRequest
from tests.llm_server import LLMTestServer, fault, llm_server

__all__ = ["llm_server"]

pytestmark = pytest.mark.timeout(60)

CHAT = [
    {"role": "user", "content": "My cat Miso loves tuna.", "chat_time": "2024-03-01T10:00:00"},
    {"role": "assistant", "content": "Miso sounds lovely.", "chat_time": "2024-03-01T10:00:05"},
]


def config(llm: Any = None) -> dict[str, Any]:
    settings: dict[str, Any] = {"embedder": {"backend": "hash"}}
    if llm is not None:
        settings["llm"] = llm
    return {"config": settings}


def seeded(memory: Memory) -> Memory:
    memory.add(CHAT, user_id="ana", session_id="s1")
    memory.add_memory("Ana works as a nurse.", user_id="ana")
    memory.add("My cat Rex hates tuna, PIN 4321.", user_id="bob")
    return memory


def sufficient_at(tier: str) -> Any:
    """A script judging the recall sufficient once ``tier`` was recalled."""

    def answer(request: ScriptedRequest) -> Any:
        return {"sufficient": f'tier="{tier}"' in request.prompt}

    return answer


@pytest.fixture
def scripted() -> ScriptedLLM:
    return ScriptedLLM(sufficient_at("item"))


@pytest.fixture
def memory(scripted: ScriptedLLM) -> Iterator[Memory]:
    with Memory(config(scripted.config()), store="sqlite://:memory:") as m:
        yield seeded(m)


def test_recall_stops_after_the_first_sufficient_tier(
    memory: Memory, scripted: ScriptedLLM
) -> None:
    found = memory.recall("what does my cat love?", user_id="ana")
    assert [(t.tier, t.sufficient) for t in found.tiers] == [("category", False), ("item", True)]
    assert found.stopped_early and found.resources == ()
    assert found.categories and found.items
    assert [r.schema_name for r in scripted.requests] == ["recall_sufficiency"] * 2


def test_a_sufficient_first_tier_makes_one_call(memory: Memory, scripted: ScriptedLLM) -> None:
    scripted.answers = sufficient_at("category")
    found = memory.recall("what does my cat love?", user_id="ana")
    assert [t.tier for t in found.tiers] == ["category"] and found.items == ()
    assert len(scripted.requests) == 1


def test_all_tiers_run_when_nothing_suffices_and_the_last_is_not_checked(
    memory: Memory, scripted: ScriptedLLM
) -> None:
    scripted.answers = sufficient_at("nothing")
    found = memory.recall("what does my cat love?", user_id="ana", k=5)
    assert [(t.tier, t.sufficient) for t in found.tiers] == [
        ("category", False),
        ("item", False),
        ("resource", None),
    ]
    assert "the last tier: not checked" in found.tiers[-1].note
    assert not found.stopped_early and len(scripted.requests) == 2
    texts = [r.text for r in found.resources]
    assert "My cat Miso loves tuna." in texts and len(texts) == len(set(texts))
    assert all(r.source.content == r.text for r in found.resources)


def test_recall_without_an_llm_runs_every_tier_and_says_so() -> None:
    with Memory(config(), store="sqlite://:memory:") as m:
        found = seeded(m).recall("what does my cat love?", user_id="ana")
    assert [t.tier for t in found.tiers] == ["category", "item", "resource"]
    assert all(t.sufficient is None for t in found.tiers)
    assert "not checked (no LLM configured)" in found.tiers[0].note


def test_sufficiency_false_makes_no_llm_call(memory: Memory, scripted: ScriptedLLM) -> None:
    found = memory.recall("cat", user_id="ana", sufficiency=False, tiers=["item", "resource"])
    assert [t.tier for t in found.tiers] == ["item", "resource"] and scripted.requests == []
    assert "not checked (sufficiency=False)" in found.tiers[0].note


def test_another_users_memories_never_appear(memory: Memory, scripted: ScriptedLLM) -> None:
    scripted.answers = sufficient_at("nothing")
    found = memory.recall("cat tuna PIN", user_id="ana", k=50, rerank=False)
    owners = {hit.memory.item.metadata.user_id for hit in found.items}
    assert owners == {"ana"} and {c.user_id for c in found.categories} == {"ana"}
    assert all("Rex" not in r.text for r in found.resources)
    assert all("Rex" not in request.prompt for request in scripted.requests)


def test_a_failing_check_is_not_known_and_the_next_tier_runs(llm_server: LLMTestServer) -> None:
    http = {"backend": "openai", "model": "m", "base_url": llm_server.url, "api_key": "sk-test"}
    with Memory(config({**http, "max_retries": 0}), store="sqlite://:memory:") as m:
        seeded(m)
        llm_server.script([fault("http_500"), fault("not_json")])
        found = m.recall("what does my cat love?", user_id="ana")
    assert [(t.tier, t.sufficient) for t in found.tiers] == [
        ("category", None),
        ("item", None),
        ("resource", None),
    ]
    assert "the sufficiency check failed (LLMServerError" in found.tiers[0].note
    assert found.resources and len(llm_server.requests) == 2


@pytest.mark.parametrize(
    ("tiers", "message"),
    [
        ([], "recall(): tiers must be a non-empty list of"),
        ("item", "recall(): tiers must be a non-empty list of"),
        (["item", "items"], "recall(): tiers must be distinct names of"),
        (["item", "item"], "recall(): tiers must be distinct names of"),
        (["category", "resource"], "recall(): the 'resource' tier reads the items' sources"),
    ],
)
def test_bad_tiers_are_a_typed_error(memory: Memory, tiers: Any, message: str) -> None:
    with pytest.raises(InputError, match=message.replace("(", r"\(").replace(")", r"\)")):
        memory.recall("cat", user_id="ana", tiers=tiers)


def test_bad_query_and_user_are_typed_errors(memory: Memory) -> None:
    with pytest.raises(InputError, match=r"recall\(\): query must be a non-empty string"):
        memory.recall("  ", user_id="ana")
    with pytest.raises(InputError, match=r"recall\(\)"):
        memory.recall("cat")


def test_a_passed_deadline_stops_recall_before_any_call(
    memory: Memory, scripted: ScriptedLLM
) -> None:
    with memory.within(0), pytest.raises(DeadlineExceeded, match=r"recall\(\)"):
        memory.recall("cat", user_id="ana")
    assert scripted.requests == []
