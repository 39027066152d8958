"""Every place content becomes text is checked: a lone surrogate in any string of any input shape
the reader accepts (tool call arguments as text or as objects, tool results, names, ids, titles,
Anthropic and Responses items, documents, stored items to refine) is a typed error naming where
it is, or the items it gives can be written as UTF-8. Never an untyped exception, never an item
(or an error message) that cannot be encoded."""

from __future__ import annotations

import copy
import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.batch.job import load_job
from memreader.batch.job_run import run_job
from memreader.errors import DocumentError, InputError, InvalidMessageError, MemReaderError
from memreader.items import TextualMemoryItem
from memreader.scenes.api_parts import Part
from memreader.scenes.scene import Message, Scene, normalize_chat
from memreader.scenes.text_checks import printable
from memreader.steps.report import ReadReport
from memreader.testing import ScriptedLLM
from memreader.windowing.parsers import PART_PARSERS, scene_units
from tests.batch.jobs import output_items, write_job
from tests.common import INFO

SURROGATE: str = json.loads('"\\udfff"')
READER = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=None))

#: One message of each shape the reader accepts (OpenAI Chat Completions and Responses,
#: Anthropic Messages, memreader's own tool parts), each with every field it reads.
SHAPES: dict[str, dict[str, Any]] = {
    "plain": {"role": "user", "content": "hi", "name": "ana", "chat_time": "2024-05-01"},
    "ids": {"role": "user", "content": "hi", "message_id": "m1"},
    "tool_calls_text": {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"q": 1}'}}
        ],
    },
    "tool_calls_objects": {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"function": {"name": "f", "arguments": {"q": "tea", "o": ["a", {"k": "v"}]}}}
        ],
    },
    "tool_message": {"role": "tool", "tool_call_id": "c1", "content": "result"},
    "tool_message_parts": {"role": "tool", "content": [{"type": "text", "text": "r"}]},
    "tool_use": {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "t1", "name": "f", "input": {"q": ["x"]}}],
    },
    "tool_result": {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "42"}],
    },
    "tool_result_blocks": {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "is_error": True,
                "content": [
                    {"type": "text", "text": "42"},
                    {"type": "image", "source": {"type": "url", "url": "https://x/a.png"}},
                ],
            }
        ],
    },
    "function_call_text": {"type": "function_call", "call_id": "c", "name": "f", "arguments": "1"},
    "function_call_objects": {"type": "function_call", "name": "f", "arguments": {"q": "v"}},
    "function_call_output": {"type": "function_call_output", "call_id": "c", "output": "out"},
    "function_call_output_blocks": {
        "type": "function_call_output",
        "call_id": "c",
        "output": [{"type": "input_text", "text": "out"}, "more"],
    },
    "tool_input": {
        "role": "user",
        "content": [{"type": "tool_input", "name": "f", "argument": {"q": "v"}}],
    },
    "tool_output_text": {
        "role": "user",
        "content": [{"type": "tool_output", "name": "f", "output": "v"}],
    },
    "tool_output_object": {
        "role": "user",
        "content": [{"type": "tool_output", "name": "f", "output": {"a": ["v"]}}],
    },
    "tool_output_nested": {
        "role": "user",
        "content": [{"type": "tool_output", "tool_output": {"name": "f", "output": "v"}}],
    },
    "tool_description": {
        "role": "user",
        "content": [
            {
                "type": "tool_description",
                "name": "f",
                "description": "d",
                "parameters": {"properties": {"q": {"type": "string"}}},
            }
        ],
    },
    "tools": {
        "role": "system",
        "content": "sys",
        "tools": [{"type": "function", "function": {"name": "f", "parameters": {"p": "v"}}}],
    },
    "thinking": {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "hmm", "signature": "s"},
            {"type": "redacted_thinking", "data": "xx"},
        ],
    },
    "refusal": {"role": "assistant", "content": "c", "refusal": "no"},
    "refusal_part": {
        "role": "assistant",
        "content": [{"type": "refusal", "refusal": "no"}, {"type": "output_text", "text": "t"}],
    },
    "image_url": {
        "role": "user",
        "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
    },
    "input_image": {"role": "user", "content": [{"type": "input_image", "file_id": "f1"}]},
    "image_base64": {
        "role": "user",
        "content": [
            {"type": "image", "source": {"type": "base64", "media_type": "p", "data": "iV"}}
        ],
    },
    "image_file": {
        "role": "user",
        "content": [{"type": "image", "source": {"type": "file", "file_id": "f"}}],
    },
    "file": {
        "role": "user",
        "content": [{"type": "file", "file": {"filename": "a.txt", "file_id": "f1"}}],
    },
    "input_file": {
        "role": "user",
        "content": [{"type": "input_file", "file_url": "https://x/a.pdf", "filename": "a"}],
    },
    "document_text": {
        "role": "user",
        "content": [{"type": "document", "title": "T", "source": {"type": "text", "data": "d"}}],
    },
    "document_blocks": {
        "role": "user",
        "content": [
            {
                "type": "document",
                "title": "T",
                "source": {"type": "content", "content": [{"type": "text", "text": "b"}]},
            }
        ],
    },
    "document_url": {
        "role": "user",
        "content": [{"type": "document", "title": "T", "source": {"type": "url", "url": "u"}}],
    },
    "audio": {
        "role": "user",
        "content": [{"type": "input_audio", "input_audio": {"data": "AA", "format": "wav"}}],
    },
}


def string_fields(value: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[tuple[Any, ...], str]]:
    """``(path, "value")`` for every string and ``(path, "key")`` for every mapping key."""
    if isinstance(value, str):
        yield path, "value"
    elif isinstance(value, dict):
        for key, item in value.items():
            yield (*path, key), "key"
            yield from string_fields(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from string_fields(item, (*path, i))


def injected(value: Any, path: tuple[Any, ...], how: str) -> Any:
    """A copy of ``value`` with a lone surrogate added to the string (or key) at ``path``."""
    value = copy.deepcopy(value)
    parent = value
    for step in path[:-1]:
        parent = parent[step]
    if how == "key":
        parent[path[-1] + SURROGATE] = parent.pop(path[-1])
    else:
        parent[path[-1]] += SURROGATE
    return value


def assert_writable(items: list[TextualMemoryItem]) -> None:
    for item in items:
        json.dumps(item.to_dict(), ensure_ascii=False).encode("utf-8")


CASES = [
    pytest.param(name, path, how, id=f"{name}-{how}-{'.'.join(map(str, path))}")
    for name, shape in SHAPES.items()
    for path, how in string_fields(shape)
]


def test_every_shape_reads_cleanly_without_a_surrogate() -> None:
    scenes = [[{"role": "user", "content": "x"}, shape] for shape in SHAPES.values()]
    for items in READER.get_memory(scenes, type="chat", info=INFO):
        assert items
        assert_writable(items)


@pytest.mark.parametrize(("name", "path", "how"), CASES)
def test_a_lone_surrogate_anywhere_is_a_typed_error_naming_where_or_harmless(
    name: str, path: tuple[Any, ...], how: str
) -> None:
    # Tool call arguments given as objects, tool_use_ids, tool output names, document titles and
    # Anthropic file ids used to give items that could not be written as UTF-8.
    scenes = [[{"role": "user", "content": "x"}, injected(SHAPES[name], path, how)]]
    try:
        [items] = READER.get_memory(scenes, type="chat", info=INFO)
    except MemReaderError as exc:
        assert isinstance(exc, InvalidMessageError), exc
        assert (exc.scene_index, exc.message_index) == (0, 1)
        if how == "value" and path[-1] not in ("role", "type"):  # else a missing field, say
            assert "holds a lone surrogate" in str(exc)
        str(exc).encode("utf-8")  # the message is writable too
        return
    assert_writable(items)  # a field the reader does not read (an id, a signature)


def test_tool_call_arguments_as_objects_name_the_argument() -> None:
    message = SHAPES["tool_calls_objects"]
    bad = injected(message, ("tool_calls", 0, "function", "arguments", "o", 1, "k"), "value")
    with pytest.raises(InvalidMessageError) as caught:
        READER.get_memory([[bad]], type="chat", info=INFO)
    assert str(caught.value) == (
        "scene 0, message 0: tool call arguments['o'][1]['k'] holds a lone surrogate "
        "'\\udfff' at character 1 (not valid Unicode text; an unpaired \\ud800-\\udfff "
        "escape in JSON makes one)"
    )


def test_error_messages_quoting_the_callers_keys_are_writable() -> None:
    # A part of an unknown shape is refused naming its keys: a key holding a lone surrogate
    # used to make a message that could not be written (the batch records it).
    part = {"type": "file", "oops" + SURROGATE: 1}
    with pytest.raises(InvalidMessageError) as caught:
        READER.get_memory([[{"role": "user", "content": [part]}]], type="chat", info=INFO)
    assert "oops\\udfff" in str(caught.value)
    str(caught.value).encode("utf-8")
    [scene] = normalize_chat([[{"role": "user", "content": [part]}]], unknown_parts="keep")
    [kept] = scene.messages[0].parts
    json.dumps(kept.payload, ensure_ascii=False).encode("utf-8")
    assert printable("a" + SURROGATE) == "a\\udfff"
    assert str(InputError("bad " + SURROGATE)).encode("utf-8") == b"bad \\udfff"


def test_a_plugin_parser_that_renders_a_surrogate_is_a_typed_error() -> None:
    # The text of every unit is checked where a window is made of it, whoever rendered it.
    def broken(part: Part, message: Message) -> str:
        return "[custom: " + SURROGATE + "]"

    PART_PARSERS.register("h5_custom_part", broken)
    try:
        part = Part(type="h5_custom_part", index=2, exact=False, payload={"x": 1})
        message = Message(index=1, role="user", parts=(part,))
        scene = Scene(index=3, type="chat", messages=(message,))
        with pytest.raises(InvalidMessageError) as caught:
            scene_units(scene)
        assert str(caught.value).startswith(
            "scene 3, message 1, part 2: the text of a h5_custom_part part holds a lone"
        )
        labelled = Part(type="text", text="ok", label="[" + SURROGATE + "] ")
        doc = Scene(index=0, type="doc", messages=(Message(0, None, (labelled,)),))
        with pytest.raises(DocumentError, match="the line prefix of a text part holds a lone"):
            scene_units(doc)
    finally:
        PART_PARSERS.unregister("h5_custom_part")


@pytest.mark.parametrize(
    "doc",
    [
        "text " + SURROGATE,
        {"type": "text", "text": "text " + SURROGATE},
        {"type": "file", "file": {"file_data": "data:text/plain;base64,aGk=", "filename": "a"}},
    ],
)
def test_documents_with_a_lone_surrogate(doc: Any) -> None:
    if isinstance(doc, dict) and doc["type"] == "file":
        doc["file"]["filename"] += SURROGATE
    try:
        [_, items] = READER.get_memory(["fine", doc], type="doc", info=INFO)
    except InputError as exc:
        assert (exc.scene_index, "holds a lone surrogate") == (1, "holds a lone surrogate")
        assert "holds a lone surrogate" in str(exc)
        return
    assert_writable(items)


def _refine_reader() -> SimpleStructMemReader:
    def answer(request: Any) -> Any:
        if request.schema_name == "memory_extraction":
            memory = {"key": "k", "memory_type": "UserMemory", "value": "v", "source_ids": [1]}
            return {"memory_list": [memory], "summary": "s"}
        return {"results": [{"id": 1, "supported": True}]}

    llm = ScriptedLLM(answer)
    return SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=None, llm=llm.config()))


def test_stored_items_to_refine_with_a_lone_surrogate_anywhere() -> None:
    # Refined items copy the stored item's info and sources: a surrogate in info (or a
    # source's type) used to reach the refined items.
    reader = _refine_reader()
    info = {**INFO, "project": {"tags": ["a"]}}
    [[fast]] = reader.get_memory([[{"role": "user", "content": "I like tea"}]], info=info)
    good = fast.to_dict()
    fields = [(p, how) for p, how in string_fields(good) if "embedding" not in p and len(p) > 1]
    assert len(fields) > 20
    for path, how in fields:
        report = ReadReport()
        [items] = reader.fine_transfer_simple_mem([injected(good, path, how)], report=report)
        assert_writable(items)
        for window in report.windows:
            (window.error or "").encode("utf-8")
        if path[:2] == ("metadata", "info") and len(path) > 2:
            assert items == [], path
            [entry] = report.windows
            assert entry.status == "error" and "holds a lone surrogate" in (entry.error or "")


def test_a_batch_records_the_bad_scene_and_goes_on(tmp_path: Path) -> None:
    good = [{"role": "user", "content": "I like tea."}]
    call = {"function": {"name": "f", "arguments": {"q": "tea" + SURROGATE}}}
    bad = [{"role": "assistant", "tool_calls": [call]}]
    lines = [json.dumps(good), json.dumps(bad), json.dumps(good)]  # "\udfff" escapes in JSON
    (tmp_path / "chats.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    job = {"inputs": [{"path": "chats.jsonl"}], "output": {"path": "out"}}
    summary = run_job(load_job(write_job(tmp_path, job)))
    assert summary.exit_code == 1 and summary.counts["failures"] == 1
    [error] = [json.loads(x) for x in (tmp_path / "out" / "_errors.jsonl").read_text().splitlines()]
    assert "tool call arguments['q'] holds a lone surrogate" in error["message"]
    texts = output_items(tmp_path / "out")
    assert len(texts) == 2 and all("I like tea" in t for t in texts)
    for text in texts:
        text.encode("utf-8")


def test_the_cli_names_the_bad_text_and_writes_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # The JSONL writer used to meet the surrogate (UnicodeEncodeError, a traceback).
    from memreader import cli

    call = {"function": {"name": "f", "arguments": {"q": "tea" + SURROGATE}}}
    scenes = [
        [{"role": "user", "content": "I like tea."}],
        [{"role": "assistant", "tool_calls": [call]}],
    ]
    path = tmp_path / "chat.json"
    path.write_text(json.dumps(scenes), encoding="utf-8")  # the surrogate as a JSON escape
    out = tmp_path / "items.jsonl"
    status = cli.main(["read", str(path), "--no-embedding", "--no-progress", "-o", str(out)])
    error = capsys.readouterr().err
    assert status == 2 and not out.exists()
    assert "scene 1, message 0: tool call arguments['q'] holds a lone surrogate" in error


def test_a_batch_reads_a_file_whose_name_is_not_utf8(tmp_path: Path) -> None:
    # os gives the name's bytes as lone surrogates; the manifest used to fail to be written
    # (UnicodeEncodeError) and the job died. The name is written with escapes everywhere.
    folder = tmp_path / "in"
    folder.mkdir()
    scene = json.dumps([{"role": "user", "content": "I like tea."}]) + "\n"
    try:
        with open(os.path.join(os.fsencode(folder), b"caf\xe9.jsonl"), "wb") as out:
            out.write(scene.encode("utf-8"))
    except OSError:
        pytest.skip("this file system refuses names that are not UTF-8")
    job = {"inputs": [{"path": "in"}], "output": {"path": "out"}}
    summary = run_job(load_job(write_job(tmp_path, job)))
    assert summary.exit_code == 0 and summary.counts["items"] == 1
    [item] = [json.loads(line) for line in output_items(tmp_path / "out")]
    assert item["metadata"]["session_id"] == "caf\\udce9"
    manifest = (tmp_path / "out" / "_manifest.json").read_text(encoding="utf-8")
    assert "in/caf\\\\udce9.jsonl" in manifest  # the escape, itself escaped in JSON
    assert run_job(load_job(write_job(tmp_path, job))).skipped == 1, "a rerun knows it"
