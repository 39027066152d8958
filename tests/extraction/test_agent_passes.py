"""The extra fine passes through the scripted LLM server: tool trajectories and tool schemas,
preferences (English and Chinese), skills written as SKILL.md bundles, each pass failing alone,
and the per-pass report."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from memreader import ConfigError, ReadReport, SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.config import FineConfig, without_pass
from memreader.extraction.passes import PASSES, FinePass, register_pass
from memreader.extraction.skills import owner_folder
from memreader.items import MemoryType, TextualMemoryItem
from memreader.pipeline import Step
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState
from tests.common import HASH_EMBEDDER, INFO
from tests.extraction.agent_chat import ALL_PASSES, MENTION_CHAT, TOOL_CHAT, responder, schema_name
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, llm_server, openai_completion

__all__ = ["llm_server"]

pytestmark = pytest.mark.timeout(120)


def make_reader(server: LLMTestServer, **fine: Any) -> SimpleStructMemReader:
    llm = {
        "backend": "openai",
        "model": "m",
        "base_url": server.url,
        "api_key": "sk-test-0123456789",
        "max_retries": 0,
        "timeout": 5,
    }
    return SimpleStructMemReader(
        SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER, llm=llm, fine=fine)
    )


def by_type(items: list[TextualMemoryItem], memory_type: MemoryType) -> list[TextualMemoryItem]:
    return [i for i in items if i.metadata.memory_type == memory_type]


def requests_for(server: LLMTestServer, name: str) -> list[RecordedRequest]:
    return [r for r in server.requests if schema_name(r) == name]


def test_skills_of_different_owners_never_share_a_path_or_an_id(
    llm_server: LLMTestServer, tmp_path: Path
) -> None:
    # The same skill name (up to its slug) from alice and from bob, and from "Alice", whose id
    # differs from alice's only in case: three bundles, three ids.
    llm_server.responder = responder()
    skills = tmp_path / "skills"
    reader = make_reader(llm_server, passes=ALL_PASSES, skills={"output": str(skills)})
    found = {}
    for user in ("alice", "bob", "Alice"):
        info = {**INFO, "user_id": user}
        (items,) = reader.get_memory([TOOL_CHAT], type="chat", info=info, mode="fine")
        (skill,) = by_type(items, MemoryType.SKILL)
        found[user] = (skill.id, skill.metadata.file_ids[0])
    assert len({item_id for item_id, _ in found.values()}) == 3
    assert len({path for _, path in found.values()}) == 3
    for user, (_, path) in found.items():
        assert Path(path).parent.parent.name == owner_folder(user)
        assert Path(path).read_text().startswith("---\nname: check-city-weather\n")
    assert len(list(skills.rglob("SKILL.md"))) == 3


def test_every_pass_on_a_chat_with_real_tool_calls(
    llm_server: LLMTestServer, tmp_path: Path
) -> None:
    llm_server.responder = responder()
    skills = tmp_path / "skills"
    reader = make_reader(llm_server, passes=ALL_PASSES, skills={"output": str(skills)})
    report = ReadReport()
    (items,) = reader.get_memory([TOOL_CHAT], type="chat", info=INFO, mode="fine", report=report)

    (trajectory,) = by_type(items, MemoryType.TOOL_TRAJECTORY)
    assert trajectory.memory == (
        'check the weather in Oslo: called get_weather with {"city": "Oslo"}; success: '
        "-3°C, snow. Lesson: get_weather takes a city name"
    )
    assert [(s.message_index, s.role, s.type) for s in trajectory.metadata.sources] == [
        (2, "assistant", "tool_calls"),
        (3, "tool", "chat"),
    ]
    assert {"tool:get_weather", "outcome:success"} <= set(trajectory.metadata.tags)

    (preference,) = by_type(items, MemoryType.PREFERENCE)
    assert preference.memory == "The user prefers aisle seats."
    (source,) = preference.metadata.sources
    assert source.message_index == 1 and source.span is not None
    assert TOOL_CHAT[1]["content"][source.span[0] : source.span[1]] == source.content
    assert "preference:explicit" in preference.metadata.tags

    (schema,) = by_type(items, MemoryType.TOOL_SCHEMA)
    assert schema.memory.startswith("Tool get_weather: Current weather for a city Parameters:")
    assert schema.metadata.sources[0].type == "tool_description"

    (skill,) = by_type(items, MemoryType.SKILL)
    assert skill.memory.startswith("Skill ../../Check city weather: Look up the weather")
    (written,) = skill.metadata.file_ids
    owner = owner_folder(INFO["user_id"])
    assert written == str(skills.resolve() / owner / "check-city-weather" / "SKILL.md")
    assert Path(written).read_text().startswith("---\nname: check-city-weather\n")
    assert [p.relative_to(tmp_path) for p in tmp_path.rglob("*") if p.is_file()] == [
        Path(f"skills/{owner}/check-city-weather/SKILL.md")
    ]

    assert report.windows[0].passes == {"tool": "ok", "preference": "ok", "skill": "ok"}
    for name in ("extract", "tool", "preference", "skill"):
        stats = report.passes[name]
        assert stats.calls == 1 and stats.windows == 1 and stats.items == 1, name
        assert stats.prompt_tokens > 0 and stats.failed_windows == 0
    assert report.passes["tool_schema"].items == 1 and report.passes["tool_schema"].calls == 0
    # The skill pass was shown the successful attempt after the numbered messages.
    (skill_request,) = requests_for(llm_server, "skills")
    assert (
        "Successful attempts:\n- check the weather in Oslo" in skill_request.messages[-1]["content"]
    )


def test_tool_passes_do_not_run_on_a_chat_that_only_mentions_tools(
    llm_server: LLMTestServer,
) -> None:
    llm_server.responder = responder()
    report = ReadReport()
    (items,) = make_reader(llm_server, passes=ALL_PASSES).get_memory(
        [MENTION_CHAT], type="chat", info=INFO, mode="fine", report=report
    )
    assert not requests_for(llm_server, "tool_trajectories")
    assert not requests_for(llm_server, "skills")
    assert report.windows[0].passes["tool"] == "skipped"
    assert report.windows[0].passes["skill"] == "skipped"
    assert not by_type(items, MemoryType.TOOL_TRAJECTORY) and not by_type(items, MemoryType.SKILL)
    assert not by_type(items, MemoryType.TOOL_SCHEMA)


def test_tool_schemas_are_deduplicated_and_stable_across_calls(llm_server: LLMTestServer) -> None:
    llm_server.responder = responder()
    reader = make_reader(llm_server)  # the default passes include tool_schema (no LLM)
    other_scene = [
        {
            "role": "system",
            "content": [
                {
                    "type": "tool_description",
                    "name": "get_weather",
                    "description": "Current weather for a city",
                    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
                }
            ],
        },
        {"role": "user", "content": "hello"},
    ]
    first = reader.get_memory([TOOL_CHAT, other_scene], type="chat", info=INFO, mode="fine")
    schemas = [i for items in first for i in by_type(items, MemoryType.TOOL_SCHEMA)]
    assert len(schemas) == 1, "the same schema in two scenes (two shapes) is one item"
    again = reader.get_memory([other_scene], type="chat", info=INFO, mode="fine")
    (schema_again,) = by_type(again[0], MemoryType.TOOL_SCHEMA)
    assert schema_again.id == schemas[0].id
    assert not requests_for(llm_server, "tool_trajectories"), "tool is off by default"


@pytest.mark.parametrize("failing", ["tool_trajectories", "preferences", "skills"])
def test_a_failing_pass_loses_only_its_own_items(llm_server: LLMTestServer, failing: str) -> None:
    llm_server.responder = responder(failing=frozenset({failing}))
    report = ReadReport()
    (items,) = make_reader(llm_server, passes=ALL_PASSES).get_memory(
        [TOOL_CHAT], type="chat", info=INFO, mode="fine", report=report
    )
    kinds = {i.metadata.memory_type for i in items}
    pass_name = {"tool_trajectories": "tool", "preferences": "preference", "skills": "skill"}
    failed = pass_name[failing]
    expected = {
        "tool": {MemoryType.TOOL_TRAJECTORY},
        "preference": {MemoryType.PREFERENCE},
        "skill": {MemoryType.SKILL},
    }
    for name, types in expected.items():
        if name == failed or (failed == "tool" and name == "skill"):
            assert not types & kinds, name
        else:
            assert types <= kinds, name
    assert MemoryType.USER in kinds and MemoryType.TOOL_SCHEMA in kinds  # extract, schemas
    window = report.windows[0]
    assert window.status == "ok"
    assert window.passes[failed] == "failed"
    assert any(e.startswith(f"{failed}: ") and "down" in e for e in window.pass_errors)
    assert report.passes[failed].failed_windows == 1
    assert report.passes[failed].failed_calls == 1
    if failed == "tool":
        assert window.passes["skill"] == "skipped"


def test_preferences_in_chinese(llm_server: LLMTestServer) -> None:
    answer = {
        "preferences": [
            {
                "preference": "用户喜欢喝龙井茶。",
                "kind": "implicit",
                "topic": "茶",
                "source_ids": [1, 3],
            }
        ]
    }

    def respond(request: RecordedRequest) -> Reply:
        if schema_name(request) == "preferences":
            return Reply(body=openai_completion(json.dumps(answer, ensure_ascii=False)))
        return responder()(request)

    llm_server.responder = respond
    chat = [
        {"role": "user", "content": "我今天又点了一壶龙井。"},
        {"role": "assistant", "content": "好的。"},
        {"role": "user", "content": "下午还是龙井吧。"},
    ]
    (items,) = make_reader(llm_server, passes=["extract", "preference"]).get_memory(
        [chat], type="chat", info=INFO, mode="fine"
    )
    (preference,) = by_type(items, MemoryType.PREFERENCE)
    assert preference.memory == "用户喜欢喝龙井茶。"
    assert [s.message_index for s in preference.metadata.sources] == [0, 2]
    assert {"preference:implicit", "茶"} <= set(preference.metadata.tags)
    (request,) = requests_for(llm_server, "preferences")
    assert "你在对话中找出用户的偏好" in request.messages[0]["content"]


@pytest.mark.parametrize(
    ("passes", "message"),
    [
        (["tool", "skill"], "passes must include extract"),
        (["extract", "skill"], "the skill pass needs the tool pass"),
        (["extract", "tool", "tool"], "passes lists a pass twice"),
        (["extract", "telepathy"], "fine.passes.1: Input should be"),
    ],
)
def test_invalid_pass_lists(passes: list[str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        SimpleStructMemReaderConfig(fine={"passes": passes})


def test_passes_work_in_refinement(llm_server: LLMTestServer) -> None:
    llm_server.responder = responder()
    fast = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=None)).get_memory(
        [TOOL_CHAT], type="chat", info=INFO
    )
    report = ReadReport()
    (refined,) = make_reader(
        llm_server, passes=["extract", "tool", "preference"]
    ).fine_transfer_simple_mem(fast[0], report=report)
    assert by_type(refined, MemoryType.TOOL_TRAJECTORY) and by_type(refined, MemoryType.PREFERENCE)
    assert {i.metadata.refined_from for i in refined} == {fast[0][0].id}, "each points back"
    assert report.passes["tool"].calls == 1


# -- one way to say which passes run ------------------------------------------------------------


@pytest.mark.parametrize(
    ("fine", "message"),
    [
        (
            {"passes": ["extract", "filter"], "hallucination_filter": False},
            "hallucination_filter: False contradicts passes, which lists filter",
        ),
        (
            {"passes": ["extract", "rewrite"], "rewrite": "off"},
            "rewrite: 'off' contradicts passes, which lists rewrite",
        ),
    ],
)
def test_a_shorthand_that_contradicts_passes_is_a_config_error(
    fine: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError, match=re.escape(message)):
        SimpleStructMemReaderConfig(fine=fine)


def test_shorthands_that_agree_with_passes_are_fine() -> None:
    fine = FineConfig(
        passes=["extract", "rewrite"], hallucination_filter=False, rewrite="user_only"
    )
    assert fine.enabled_passes() == ("extract", "rewrite")
    assert FineConfig(hallucination_filter=False, rewrite="off").enabled_passes() == (
        "extract",
        "tool_schema",
    )


def test_without_pass_turns_a_pass_off_the_way_the_config_says_passes() -> None:
    assert without_pass({"passes": ["extract", "filter", "tool"]}, "filter") == {
        "passes": ["extract", "tool"]
    }
    assert without_pass({}, "filter") == {"hallucination_filter": False}
    assert without_pass({"rewrite": "user_only"}, "rewrite") == {"rewrite": "off"}
    assert FineConfig(**without_pass({}, "tool_schema")).enabled_passes() == (
        "extract",
        "filter",
        "rewrite",
    )


def test_a_pass_is_one_registration(llm_server: LLMTestServer) -> None:
    """A plugin's pass: its step, registered as any step, and one FinePass entry; the config
    accepts its name and the reader runs it in its order."""

    @STEPS.register("shout")
    class Shout(Step):
        name = "shout"
        requires = ("windows", "items", "emitted")
        produces = ("items",)
        modes = frozenset({"fine"})

        def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
            for items in state.items:
                for item in items:
                    item.memory = item.memory.upper()

    register_pass(FinePass("shout", __name__, 65, summary="memories in capitals"))
    try:
        llm_server.responder = responder()
        reader = make_reader(llm_server, passes=["extract", "shout"])
        assert reader.pipeline.names[-6:] == (
            "fine_items",
            "shout",
            "importance",
            "dedup",
            "embed",
            "categorize",
        )
        (items,) = reader.get_memory([MENTION_CHAT], type="chat", info=INFO, mode="fine")
        assert items and all(item.memory == item.memory.upper() for item in items)
    finally:
        PASSES.unregister("shout")
        STEPS.unregister("shout")
    with pytest.raises(ConfigError, match=r"fine\.passes\.1: Input should be"):
        SimpleStructMemReaderConfig(fine={"passes": ["extract", "shout"]})
