"""Evaluation files read (:mod:`memreader.evaluation.load`): LoCoMo's shape and the simple one,
names on and off, photo captions, evidence ids normalised, what names no message counted and
never dropped silently, and every bad input a typed ``InputError`` naming the file and where."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memreader.errors import InputError
from memreader.evaluation import (
    LOCOMO_CATEGORIES,
    MAX_EVAL_FILE_BYTES,
    EvalSet,
    load_eval_file,
    normalise_dia_ids,
    parse_eval_data,
)
from tests.evaluation.eval_files import locomo_samples, simple_file, write


def test_locomo_turns_become_named_messages_with_the_session_date(tmp_path: Path) -> None:
    data = load_eval_file(write(tmp_path, "locomo.json", locomo_samples()))
    assert data.name == "locomo.json"
    assert [c.id for c in data.conversations] == ["conv-a", "conv-b"]
    conv = data.conversations[0]
    assert [s.id for s in conv.sessions] == ["session_1", "session_2", "session_4"]  # a gap
    first = conv.message("D1:1")
    assert first.as_message() == {
        "role": "user",
        "content": "Morning Tomas! I finally repainted the kitchen a pale green.",
        "message_id": "D1:1",
        "name": "Ines",
        "chat_time": "9:12 am on 3 March, 2023",
    }
    assert conv.message("D1:2").role == "assistant" and conv.message("D1:2").name == "Tomas"
    assert conv.message("D2:2").content == (
        "Look what I found at the flea market! [shares a photo of a brass lamp shaped like a tulip]"
    )
    assert conv.sessions[2].date == "8:05 pm on 2 April, 2023"
    assert (data.messages, conv.messages) == (13, 9)


def test_without_names_no_message_has_one(tmp_path: Path) -> None:
    data = load_eval_file(write(tmp_path, "locomo.json", locomo_samples()), names=False)
    messages = [m for c in data.conversations for s in c.sessions for m in s.messages]
    assert messages and all(m.name is None and "name" not in m.as_message() for m in messages)
    simple = load_eval_file(write(tmp_path, "simple.json", simple_file()), names=False)
    assert simple.conversations[0].message("D1:1").name is None


def test_malformed_evidence_is_normalised_and_what_names_nothing_is_counted(
    tmp_path: Path,
) -> None:
    data = load_eval_file(write(tmp_path, "locomo.json", locomo_samples()))
    one, two = data.conversations
    assert [q.evidence for q in one.questions] == [
        ("D1:3",),
        ("D1:2",),  # "D:1:2"
        ("D2:1",),  # "D2:01"
        ("D1:1", "D2:2"),  # "D1:1 D2:2": two in one string
        ("D4:1",),  # and "D9:9", which names no turn
    ]
    assert one.unknown_evidence == ("D9:9", "D")
    assert (one.unanswerable, one.other_categories) == (1, 1)  # "D" only; the adversarial one
    assert [q.evidence for q in two.questions] == [("D1:2",), ("D2:2",)]  # "D2:02"
    assert (two.unknown_evidence, two.unanswerable, two.other_categories) == ((), 0, 0)
    assert [q.id for q in one.questions] == [f"conv-a#q{i}" for i in (1, 2, 3, 4, 5)]
    assert one.questions[4].answer == "2023"  # a number read as text
    assert normalise_dia_ids("D30:05 D:3:1") == ["D30:5", "D3:1"]


def test_categories_choose_the_questions(tmp_path: Path) -> None:
    path = write(tmp_path, "locomo.json", locomo_samples())
    assert LOCOMO_CATEGORIES == (1, 2, 3, 4)
    every = load_eval_file(path, categories=(1, 2, 3, 4, 5))
    assert every.questions == 8 and every.conversations[0].other_categories == 0
    single_hop = load_eval_file(path, categories=["4"])  # compared as text
    assert [q.category for c in single_hop.conversations for q in c.questions] == [4, 4, 4]
    assert single_hop.conversations[0].other_categories == 5


def test_one_locomo_sample_on_its_own_reads_too() -> None:
    data = parse_eval_data(locomo_samples()[1], "one.json")
    assert [c.id for c in data.conversations] == ["conv-b"] and data.questions == 2


def test_the_simple_shape_in_its_three_spellings(tmp_path: Path) -> None:
    wrapped = simple_file()
    data = load_eval_file(write(tmp_path, "simple.json", wrapped))
    one, two = data.conversations
    assert [s.id for s in one.sessions] == ["session_1", "session_2", "session_4"]
    assert one.message("D2:2").chat_time == "6:40 pm on 19 March, 2023"  # the session's date
    assert one.message("D1:2").as_message()["name"] == "Tomas"
    assert [q.evidence for q in one.questions] == [("D1:3",)]
    # The simple shape's ids are read as written: "D:1:2" names no message there.
    assert one.unknown_evidence == ("D:1:2", "nope") and one.unanswerable == 2
    assert [s.id for s in two.sessions] == ["session_1", "session_2"]  # plain lists
    assert [m.id for s in two.sessions for m in s.messages] == ["10", "11", "20", "21"]
    assert two.questions[0].evidence == ("11",) and two.questions[0].category == "single-hop"
    assert two.message("10").name is None and two.message("10").chat_time is None
    as_list = parse_eval_data(wrapped["conversations"], "list.json")
    alone = parse_eval_data(wrapped["conversations"][1], "one.json")
    assert as_list.conversations == data.conversations
    assert alone.conversations == (two,)


def test_only_some_conversations() -> None:
    data = parse_eval_data(locomo_samples(), "locomo.json")
    assert [c.id for c in data.only(["conv-b"]).conversations] == ["conv-b"]
    with pytest.raises(InputError, match=r"locomo\.json: no conversation conv-z; known: conv-a"):
        data.only(["conv-z"])
    assert isinstance(data.only([]), EvalSet)


def _broken(edit: str) -> Any:
    samples = locomo_samples()
    talk = samples[1]["conversation"]
    if edit == "no text":
        talk["session_2"].append({"speaker": "Wen", "dia_id": "D2:3"})
    elif edit == "stranger":
        talk["session_1"][0]["speaker"] = "Mallory"
    elif edit == "same dia_id":
        talk["session_2"][1]["dia_id"] = "D2:01"
    elif edit == "no sessions":
        for key in [k for k in talk if k.startswith("session_")]:
            del talk[key]
    elif edit == "no qa":
        del samples[1]["qa"]
    elif edit == "same sample_id":
        samples[1]["sample_id"] = "conv-a"
    elif edit == "evidence not ids":
        samples[1]["qa"][0]["evidence"] = [3]
    elif edit == "a list of turns is an object":
        talk["session_1"] = {"speaker": "Wen"}
    return samples


def _simple_broken(edit: str) -> Any:
    data = simple_file()
    message = data["conversations"][0]["sessions"][0]["messages"][1]
    if edit == "no id":
        del message["id"]
    elif edit == "no content":
        del message["content"]
    elif edit == "same id":
        message["id"] = "D1:1"
    elif edit == "bad role":
        message["role"] = "narrator"
    elif edit == "no evidence":
        del data["conversations"][1]["questions"][0]["evidence"]
    return data


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (_broken("no text"), 'locomo.json: conversation 2 (conv-b): session_2 turn 3: no "text"'),
        (_broken("stranger"), "session_1 turn 1: speaker 'Mallory' is neither speaker_a nor"),
        (_broken("same dia_id"), "session_2 turn 2: dia_id 'D2:1' is also session_2 turn 1's"),
        (_broken("no sessions"), 'conversation 2 (conv-b): "conversation" has no "session_1"'),
        (_broken("no qa"), 'locomo.json: conversation 2 (conv-b): no "qa"'),
        (
            _broken("same sample_id"),
            "conversation 2 (conv-a): \"sample_id\" 'conv-a' is used twice",
        ),
        (_broken("evidence not ids"), 'conversation 2 (conv-b): qa 1: "evidence" holds 3'),
        (_broken("a list of turns is an object"), "session_1: expected a list, got dict"),
        (_simple_broken("no id"), 'conversation 1 (conv-a): session 1 message 2: no "id"'),
        (_simple_broken("no content"), 'session 1 message 2: no "content"'),
        (_simple_broken("same id"), "session 1 message 2: id 'D1:1' is also session 1 message 1's"),
        (_simple_broken("bad role"), "session 1 message 2: \"role\" 'narrator' is not one of"),
        (_simple_broken("no evidence"), 'conversation 2 (conv-b): question 1: no "evidence"'),
        ({"talk": []}, "locomo.json: neither shape: LoCoMo's"),
        (42, "locomo.json: a JSON int is neither shape"),
        ([], "locomo.json: holds no conversation"),
        ({"sessions": [], "questions": []}, 'conversation 1 (conv-1): "sessions" is empty'),
    ],
)
def test_bad_input_is_a_typed_error_naming_the_file_and_where(
    tmp_path: Path, data: Any, expected: str
) -> None:
    path = write(tmp_path, "locomo.json", data)
    with pytest.raises(InputError) as caught:
        load_eval_file(path)
    assert type(caught.value) is InputError
    assert expected in str(caught.value)


@pytest.mark.parametrize(
    ("content", "expected"),
    [
        (b'{"sessions": [', "locomo.json: not JSON: Expecting value (line 1 column 15)"),
        (b"\xff\xfe{}", "locomo.json: not UTF-8 (byte offset 0)"),
        (b"[" * 100_000 + b"]" * 100_000, "locomo.json: not JSON this reader takes"),
    ],
)
def test_a_file_that_is_not_json_is_a_typed_error(
    tmp_path: Path, content: bytes, expected: str
) -> None:
    path = tmp_path / "locomo.json"
    path.write_bytes(content)
    with pytest.raises(InputError) as caught:
        load_eval_file(path)
    assert type(caught.value) is InputError and expected in str(caught.value)


def test_a_file_too_big_missing_or_not_a_file_is_refused_before_parsing(tmp_path: Path) -> None:
    path = write(tmp_path, "locomo.json", locomo_samples())
    assert MAX_EVAL_FILE_BYTES == 256 * 1024 * 1024
    with pytest.raises(
        InputError, match=r"locomo\.json: cannot read it: \d+ bytes, over the limit"
    ):
        load_eval_file(path, max_bytes=100)
    with pytest.raises(InputError, match=r"missing\.json: cannot read it: No such file"):
        load_eval_file(tmp_path / "missing.json")
    with pytest.raises(InputError, match="cannot read it: Is a directory"):
        load_eval_file(tmp_path)
    assert json.loads(path.read_text(encoding="utf-8"))  # the file itself was fine
