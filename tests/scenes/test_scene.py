"""Input normalisation: accepted shapes, chat times, and a typed error for every bad shape."""

from __future__ import annotations

import copy
from datetime import datetime, timedelta

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memreader.documents import DocumentAccess, normalize_doc
from memreader.errors import (
    DocumentError,
    InvalidChatTimeError,
    InvalidInfoError,
    InvalidMessageError,
    InvalidSceneError,
    UnknownRoleError,
)
from memreader.scenes.scene import normalize_chat, validate_info
from memreader.windowing.parsers import scene_units

MSG = {"role": "user", "content": "I like tea", "chat_time": "1:56 pm on 8 May, 2023"}


def test_flat_message_list_is_one_scene_and_not_stringified() -> None:
    scenes = normalize_chat([MSG, {"role": "assistant", "content": "Nice"}])
    assert len(scenes) == 1
    assert [m.role for m in scenes[0].messages] == ["user", "assistant"]
    assert scenes[0].messages[0].parts[0].text == "I like tea"


def test_list_of_scenes_and_string_scenes() -> None:
    scenes = normalize_chat([[MSG], "user: free text transcript", [MSG, MSG]])
    assert [len(s.messages) for s in scenes] == [1, 1, 2]
    assert scenes[1].messages[0].role is None
    assert [s.index for s in scenes] == [0, 1, 2]


@pytest.mark.parametrize(
    ("chat_time", "expected"),
    [
        ("1:56 pm on 8 May, 2023", datetime(2023, 5, 8, 13, 56)),
        ("03:45 PM on 20 August, 2026", datetime(2026, 8, 20, 15, 45)),
        ("2023-04-27", datetime(2023, 4, 27)),
        ("2026-08-20T15:45:00", datetime(2026, 8, 20, 15, 45)),
        ("2026-08-20T15:45:00Z", datetime(2026, 8, 20, 15, 45).replace(tzinfo=None)),
        ("the day after", None),
    ],
)
def test_chat_times_are_kept_and_parsed(chat_time: str, expected: datetime | None) -> None:
    message = normalize_chat([{"role": "user", "content": "x", "chat_time": chat_time}])[
        0
    ].messages[0]
    assert message.chat_time == chat_time
    if expected is None:
        assert message.timestamp is None
    else:
        assert message.timestamp is not None
        assert message.timestamp.replace(tzinfo=None) == expected


def test_zoned_iso_time_keeps_its_offset() -> None:
    message = normalize_chat(
        [{"role": "user", "content": "x", "chat_time": "2026-08-20T15:45:00+02:00"}]
    )[0].messages[0]
    assert message.timestamp is not None and message.timestamp.utcoffset() == timedelta(hours=2)


def test_no_chat_time_is_invented() -> None:
    message = normalize_chat([{"role": "user", "content": "x"}])[0].messages[0]
    assert message.chat_time is None and message.timestamp is None


def test_content_parts_tool_calls_and_ids() -> None:
    scene = normalize_chat(
        [
            {
                "role": "user",
                "message_id": "m1",
                "content": [
                    {"type": "text", "text": "look at this"},
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64," + "A" * 5000},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "search", "arguments": '{"q": "tea"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "name": "search", "content": "green tea"},
        ]
    )[0]
    user, assistant, tool = scene.messages
    assert user.message_id == "m1"
    assert [p.type for p in user.parts] == ["text", "image_url"]
    # Parts keep their payload; the parser of each type renders what a window shows.
    _, image = scene_units(scene)[0:2]
    assert user.parts[1].exact is False and len(image.text) < 100, "no base64 in memories"
    assert image.text.startswith("[image: inline image/png")
    assert assistant.parts[0].type == "tool_calls"
    assert scene_units(scene)[2].text == '[tool calls: search({"q": "tea"})]'
    assert tool.tool_call_id == "c1" and tool.parts[0].text == "green tea"


def test_caller_data_is_not_mutated() -> None:
    data = [[dict(MSG), {"role": "assistant", "content": [{"type": "text", "text": "ok"}]}]]
    before = copy.deepcopy(data)
    normalize_chat(data)
    assert data == before


@pytest.mark.parametrize(
    ("data", "error", "where"),
    [
        ([], InvalidSceneError, (None, None)),
        ([[MSG], []], InvalidSceneError, (1, None)),
        ([[MSG], "   "], InvalidSceneError, (1, None)),
        ([[MSG], {"role": "user", "content": "x"}, 5], InvalidSceneError, (1, None)),
        ([[MSG, {"role": "bot", "content": "x"}]], UnknownRoleError, (0, 1)),
        ([[MSG, {"content": "x"}]], UnknownRoleError, (0, 1)),
        ([[MSG], [MSG, MSG, "hello"]], InvalidMessageError, (1, 2)),
        ([[{"role": "user"}]], InvalidMessageError, (0, 0)),
        ([[{"role": "user", "content": 5}]], InvalidMessageError, (0, 0)),
        ([[{"role": "user", "content": [{"type": "video"}]}]], InvalidMessageError, (0, 0)),
        (
            [[{"role": "user", "content": "x", "chat_time": 1699999999}]],
            InvalidChatTimeError,
            (0, 0),
        ),
        (42, InvalidSceneError, (None, None)),
    ],
)
def test_bad_shapes_raise_typed_errors_that_say_where(
    data: object, error: type, where: tuple
) -> None:
    with pytest.raises(error) as info:
        normalize_chat(data)
    assert (info.value.scene_index, info.value.message_index) == where
    if where[0] is not None:
        assert f"scene {where[0]}" in str(info.value)
    if where[1] is not None:
        assert f"message {where[1]}" in str(info.value)


def test_bad_part_names_its_index() -> None:
    with pytest.raises(InvalidMessageError) as info:
        normalize_chat(
            [[{"role": "user", "content": [{"type": "text", "text": "a"}, {"type": "text"}]}]]
        )
    assert info.value.part_index == 1 and "part 1" in str(info.value)


@pytest.mark.parametrize(
    "info",
    [
        None,
        {},
        {"user_id": "u"},
        {"user_id": 1, "session_id": "s"},
        {"user_id": "u", "session_id": ""},
        "u1",
    ],
)
def test_info_needs_string_ids(info: object) -> None:
    with pytest.raises(InvalidInfoError):
        validate_info(info)  # type: ignore[arg-type]


roles = st.sampled_from(["system", "user", "assistant", "tool", "developer"])
messages = st.fixed_dictionaries(
    {"role": roles, "content": st.text(max_size=50)},
    optional={
        "chat_time": st.text(max_size=30),
        "message_id": st.text(max_size=10),
        "name": st.text(max_size=10),
    },
)


@given(st.lists(st.lists(messages, min_size=1, max_size=5), min_size=1, max_size=5))
def test_any_valid_chat_normalises_verbatim(data: list[list[dict[str, str]]]) -> None:
    before = copy.deepcopy(data)
    scenes = normalize_chat(data)
    assert data == before
    assert len(scenes) == len(data)
    for scene, raw in zip(scenes, data, strict=True):
        assert [m.parts[0].text for m in scene.messages] == [m["content"] for m in raw]
        assert [m.chat_time for m in scene.messages] == [m.get("chat_time") for m in raw]


def test_docs_text_parts_and_paths(tmp_path) -> None:  # type: ignore[no-untyped-def]
    note = tmp_path / "note.txt"
    note.write_text("Tea notes: green, oolong.", encoding="utf-8")
    scenes = normalize_doc(
        [
            "plain text with a / slash that is not a path",
            {"type": "text", "text": "a text part"},
            str(note),
            [{"type": "text", "text": "part one"}, {"type": "file", "file": {"path": str(note)}}],
        ],
        DocumentAccess(allow_local_paths=True),  # off by default: input may come from strangers
    )
    assert [s.type for s in scenes] == ["doc"] * 4
    assert scenes[0].messages[0].parts[0].text.startswith("plain text")
    assert scenes[2].messages[0].parts[0].text == "Tea notes: green, oolong."
    assert scenes[2].messages[0].parts[0].doc_path == str(note)
    assert len(scenes[3].messages) == 2


def test_doc_file_data_and_errors() -> None:
    import base64

    data = base64.b64encode(b"name,drink\nEmily,tea\n").decode()
    scene = normalize_doc(
        [{"type": "file", "file": {"file_data": data, "filename": "../../etc/drinks.csv"}}]
    )[0]
    part = scene.messages[0].parts[0]
    assert "Emily" in part.text and part.doc_path == "drinks.csv", "file names never become paths"
    with pytest.raises(DocumentError) as info:
        normalize_doc(["ok", {"type": "file", "file": {"filename": "x.pdf"}}])
    assert info.value.scene_index == 1
    with pytest.raises(DocumentError):
        normalize_doc(
            [{"type": "file", "file": {"file_data": "not base64!!", "filename": "a.txt"}}]
        )
    with pytest.raises(DocumentError):
        normalize_doc([{"type": "image", "url": "x"}])
    with pytest.raises(DocumentError):
        normalize_doc([{"type": "file", "file": {"path": "/nonexistent/file.pdf"}}])
    with pytest.raises(DocumentError):
        normalize_doc(
            [{"type": "file", "file": {"path": "/etc/hostname"}}],
            DocumentAccess(allow_local_paths=False),
        )


def test_office_files_convert_through_markitdown(tmp_path) -> None:  # type: ignore[no-untyped-def]
    import openpyxl

    book = openpyxl.Workbook()
    sheet = book.active
    sheet.append(["name", "drink"])
    sheet.append(["Emily", "oolong"])
    path = tmp_path / "drinks.xlsx"
    book.save(path)
    [scene] = normalize_doc(
        [str(path)], DocumentAccess(allow_local_paths=True, allowed_roots=[str(tmp_path)])
    )
    part = scene.messages[0].parts[0]
    assert part.type == "file" and "| Emily | oolong |" in part.text
    with pytest.raises(DocumentError, match="not supported"):
        normalize_doc([{"type": "file", "file": {"file_data": "AAAA", "filename": "talk.mp3"}}])


@pytest.mark.parametrize("chat_time", ["9999-12-31T23:59:59-05:00", "0001-01-01T00:00:00+05:00"])
def test_a_chat_time_outside_the_years_a_store_keeps_is_a_typed_error(chat_time: str) -> None:
    data = [MSG, {"role": "user", "content": "later", "chat_time": chat_time}]
    with pytest.raises(InvalidChatTimeError) as info:
        normalize_chat(data)
    assert str(info.value) == (
        f"scene 0, message 1: chat_time {chat_time!r} is out of range: in UTC it falls "
        "outside years 1 to 9999"
    )


def test_the_last_time_in_range_is_kept() -> None:
    naive = normalize_chat([{**MSG, "chat_time": "9999-12-31 23:59:59"}])  # taken as UTC
    assert naive[0].messages[0].timestamp is not None
    assert naive[0].messages[0].timestamp.year == 9999
