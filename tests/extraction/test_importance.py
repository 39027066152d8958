"""Importance and validity in time: the stated heuristic, fast mode's ``importance`` step (and
switching it off), ``valid_from`` from the sources' times, and items' JSON with the new fields."""

from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from memreader import (
    MemReaderConfigFactory,
    MemReaderFactory,
    SimpleStructMemReader,
    SimpleStructMemReaderConfig,
    TextualMemoryItem,
)
from memreader.extraction.importance import Importance, heuristic_importance, source_importance
from memreader.items import SourceMessage
from memreader.pipeline import step
from memreader.steps.items import valid_from_for
from tests.common import HASH_EMBEDDER, INFO

UTC = timezone.utc
PLUS2 = timezone(timedelta(hours=2))

CHAT = [
    [
        {"role": "user", "content": "I love green tea.", "chat_time": "2024-05-02T10:00:00+02:00"},
        {"role": "assistant", "content": "I'd love to help!", "chat_time": "2024-05-02T10:01:00"},
    ],
    [{"role": "user", "content": "ok thanks"}],
]


def make_reader(**config: Any) -> SimpleStructMemReader:
    return SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER, **config))


@pytest.mark.parametrize(
    ("text", "score", "cues"),
    [
        ("I love green tea.", 0.5, ["states a preference (+0.2)"]),
        ("Emily prefers aisle seats on long flights.", 0.5, ["states a preference (+0.2)"]),
        (
            "My sister is a nurse in Porto.",
            0.55,
            ["states a personal fact (+0.15)", "names someone or something (+0.1)"],
        ),
        (
            "I will meet Dr Chen on Monday at 3pm.",
            0.65,
            [
                "states a plan (+0.1)",
                "names a date (+0.1)",
                "names someone or something (+0.1)",
                "gives a number (+0.05)",
            ],
        ),
        ("我喜欢喝绿茶，明天去上海。", 0.6, ["states a preference (+0.2)", "names a date (+0.1)"]),
        ("ok thanks", 0.2, ["is short (-0.1)"]),
        ("你好", 0.2, ["is short (-0.1)"]),
        ("The weather was fine and the walk was long.", 0.3, []),
        # "May" is the verb here, not the month.
        ("May I ask you something about the walk?", 0.3, []),
        (
            "The walk is on May 3 this year.",
            0.45,
            ["names a date (+0.1)", "gives a number (+0.05)"],
        ),
    ],
)
def test_the_heuristic_states_each_cue_it_counted(text: str, score: float, cues: list[str]) -> None:
    scored = heuristic_importance(text)
    assert scored == Importance(score, ", ".join(["heuristic: base 0.3", *cues]))
    assert heuristic_importance(text) == scored, "deterministic"


def test_the_heuristic_counts_first_person_cues_in_the_speakers_own_words() -> None:
    said = "I love it here. Great, I'd love to help you settle in Lisbon next week."
    assert heuristic_importance(said, own_words="").reason == (
        "heuristic: base 0.3, names a date (+0.1), names someone or something (+0.1)"
    )
    sources = [
        SourceMessage(role="assistant", scene_index=0, message_index=0, content="I love Lisbon!"),
        SourceMessage(role="user", scene_index=0, message_index=1, content="Thanks, see you"),
    ]
    scored = source_importance(sources)
    assert "preference" not in scored.reason, "the assistant's preference is not the user's"
    assert "names someone or something" in scored.reason
    doc = [SourceMessage(type="doc", scene_index=0, message_index=0, content="We prefer tea.")]
    assert "states a preference" in source_importance(doc).reason, "a document speaks itself"


def test_scores_stay_within_0_and_1() -> None:
    loaded = "I'm Ana. I love tea, I will visit Porto on 2024-05-01 with 3 friends. " * 3
    assert heuristic_importance(loaded).score == 1.0, "every cue but short: 0.3 + 0.7"
    assert 0 <= heuristic_importance("").score <= 1


def source(time: datetime | None, index: int = 0) -> SourceMessage:
    return SourceMessage(scene_index=0, message_index=index, timestamp=time)


def test_valid_from_is_the_earliest_source_time_and_aware() -> None:
    aware = datetime(2024, 5, 2, 10, 0, tzinfo=PLUS2)  # 08:00 UTC
    naive = datetime(2024, 5, 2, 9, 0)  # read as 09:00 UTC
    assert valid_from_for([source(naive), source(aware, 1)]) == aware
    assert valid_from_for([source(naive)]) == datetime(2024, 5, 2, 9, 0, tzinfo=UTC)
    assert valid_from_for([source(None), source(None, 1)]) is None
    assert valid_from_for([]) is None


def test_a_stated_valid_from_wins_and_takes_the_sources_zone() -> None:
    said = [source(datetime(2024, 5, 2, 10, 0, tzinfo=PLUS2))]
    assert valid_from_for(said, datetime(2024, 5, 1)) == datetime(2024, 5, 1, tzinfo=PLUS2)
    stated = datetime(2024, 5, 1, 12, 0, tzinfo=UTC)
    assert valid_from_for(said, stated) == stated
    assert valid_from_for([source(None)], datetime(2024, 5, 1)) == datetime(2024, 5, 1, tzinfo=UTC)


def test_fast_items_carry_importance_and_valid_from() -> None:
    first, second = make_reader().get_memory(CHAT, type="chat", info=INFO)
    [tea], [thanks] = first, second
    assert tea.metadata.importance == 0.5
    assert tea.metadata.importance_reason == "heuristic: base 0.3, states a preference (+0.2)"
    assert tea.metadata.valid_from == datetime(2024, 5, 2, 10, 0, tzinfo=PLUS2)
    assert thanks.metadata.importance == 0.2 and thanks.metadata.valid_from is None
    assert TextualMemoryItem.from_dict(json.loads(json.dumps(tea.to_dict()))) == tea


def test_the_importance_step_can_be_removed_and_ids_do_not_depend_on_it(tmp_path: Path) -> None:
    path = tmp_path / "reader.yaml"
    path.write_text(
        "backend: simple_struct\nconfig:\n  embedder: {backend: hash}\n"
        "  pipeline: {remove: [importance]}\n",
        encoding="utf-8",
    )
    off = MemReaderFactory.from_config(MemReaderConfigFactory.from_yaml(path))
    assert "importance" not in off.pipeline.names
    [[tea], _] = off.get_memory(CHAT, type="chat", info=INFO)
    assert (tea.metadata.importance, tea.metadata.importance_reason) == (None, None)
    assert tea.metadata.valid_from is not None, "valid_from is set where items are made"
    [[scored], _] = make_reader().get_memory(CHAT, type="chat", info=INFO)
    assert scored.id == tea.id and scored.metadata.embedding == tea.metadata.embedding


def test_an_item_scored_before_the_step_keeps_its_importance() -> None:
    reader = make_reader()

    @step("judge", requires=["items"], produces=["items"], modes=["fast"])
    def judge(state: Any, runtime: Any) -> None:
        for items in state.items:
            for item in items:
                item.metadata.importance, item.metadata.importance_reason = 1.0, "mine"

    reader.pipeline.insert_before("importance", judge)
    [[tea], _] = reader.get_memory(CHAT, type="chat", info=INFO)
    assert (tea.metadata.importance, tea.metadata.importance_reason) == (1.0, "mine")


def test_old_item_dicts_without_the_new_keys_still_load() -> None:
    [[tea], _] = make_reader().get_memory(CHAT, type="chat", info=INFO)
    data = tea.to_dict()
    assert {"importance", "importance_reason", "valid_from"} <= set(data["metadata"])
    for key in ("importance", "importance_reason", "valid_from"):
        del data["metadata"][key]
    old = TextualMemoryItem.from_dict(data)
    assert (old.metadata.importance, old.metadata.valid_from) == (None, None)
    assert old.id == tea.id and old.memory == tea.memory


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("importance", 1.5),
        ("importance", -0.1),
        ("importance", float("nan")),
        ("importance_reason", "two\nlines"),
        ("importance_reason", "x" * 201),
        ("valid_from", "2024-05-01T00:00:00"),  # naive
    ],
)
def test_the_new_fields_are_validated(field: str, value: object) -> None:
    [[tea], _] = make_reader().get_memory(CHAT, type="chat", info=INFO)
    data = tea.to_dict()
    data["metadata"][field] = value
    with pytest.raises(ValueError, match=field):
        TextualMemoryItem.from_dict(data)
