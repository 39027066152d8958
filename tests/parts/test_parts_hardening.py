"""Issue 17, "fetching and parts" items 16-19: tool traffic clipped and rendered as JSON (with
a note saying what was cut), bounded nesting, clipped unknown parts; one liberal decoder for
inline data on every path; relative doc paths under ``base_dir``; no never-awaited coroutine
and no task outliving a cancelled async call."""

from __future__ import annotations

import asyncio
import base64
import gc
import io
import json
import logging
import warnings
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from memreader import ReadReport, SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.errors import DocumentError, InvalidMessageError, UnknownRoleError
from memreader.fetch.data_urls import decode_inline
from memreader.fetch.fetcher import Fetcher
from memreader.fetch.settings import FetchConfig
from memreader.items import MemoryType
from memreader.llms.hooks import LLMHooks
from memreader.llms.ollama_client import ollama_message
from memreader.pipeline.hooks import StepHooks
from memreader.readers import MultiModalStructMemReader, MultiModalStructMemReaderConfig
from memreader.scenes.clipping import MAX_TOOL_TEXT, render_json
from memreader.scenes.scene import normalize_chat
from memreader.testing import ScriptedLLM
from memreader.windowing.parsers import scene_units
from tests.common import HASH_EMBEDDER, INFO
from tests.llm_server import LLMTestServer
from tests.work_counting import lines_executed

pytestmark = pytest.mark.timeout(120)


def simple(**settings: Any) -> SimpleStructMemReader:
    return SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER, **settings))


def multimodal(**settings: Any) -> MultiModalStructMemReader:
    config = MultiModalStructMemReaderConfig(embedder=HASH_EMBEDDER, **settings)
    return MultiModalStructMemReader(config)


def tool_call_chat(arguments: Any) -> list[dict[str, Any]]:
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": arguments}}
    return [
        {"role": "user", "content": "find tea"},
        {"role": "assistant", "content": None, "tool_calls": [call]},
    ]


def nested(depth: int) -> dict[str, Any]:
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


# -- 16: tool traffic ------------------------------------------------------------------------


def test_tool_call_arguments_are_clipped_with_a_marker_and_a_note() -> None:
    arguments = json.dumps({"q": "x" * 400_000})
    report = ReadReport()
    (items,) = simple().get_memory(
        [tool_call_chat(arguments)], type="chat", info=INFO, report=report
    )
    assert len(items) == 1, "400 KB of arguments is one clipped line, not 121 items"
    line = items[0].memory.splitlines()[-1]
    assert line.startswith('assistant: [tool calls: search({"q": "xxx')
    payload = line[len("assistant: [tool calls: ") : -1]
    total = len("search(") + len(arguments) + len(")")
    assert len(payload) <= MAX_TOOL_TEXT
    cut = total - len(payload.partition("…")[0])
    assert payload.endswith(f"… [clipped {cut:,} of {total:,} characters]")
    (note,) = report.windows[0].notes
    assert note.startswith("message 1: tool call arguments clipped to")


def test_megabytes_of_tool_arguments_take_no_more_work() -> None:
    # Work counted, not timed: the lines of Python a read executes do not grow with the
    # arguments (they are clipped before anything else sees them).
    reader = simple()

    def read(size: int) -> list[Any]:
        arguments = json.dumps({"q": "y" * size})
        (items,) = reader.get_memory([tool_call_chat(arguments)], type="chat", info=INFO)
        return items

    read(10_000)  # the first clipped read loads what clipping needs, once
    work = {size: lines_executed(lambda size=size: read(size)) for size in (1_250_000, 5_000_000)}
    assert work[5_000_000] <= 1.25 * work[1_250_000], work
    assert len(read(5_000_000)) <= 3  # 4,000 characters, clipped


def test_dict_arguments_are_rendered_as_json_not_python() -> None:
    (items,) = simple().get_memory(
        [tool_call_chat({"q": "tea", "n": None, "ok": True})], type="chat", info=INFO
    )
    assert '[tool calls: search({"q": "tea", "n": null, "ok": true})]' in items[0].memory


def test_every_tool_part_is_clipped_the_same_way() -> None:
    huge = {"rows": list(range(100_000))}
    scene = [
        {
            "role": "assistant",
            "content": [
                {"type": "tool_input", "name": "db", "argument": huge},
                # Output given as text is text (verbatim, with spans:
                # tests/scenes/test_part_shapes.py);
                # any other value is rendered on one line and clipped.
                {"type": "tool_output", "name": "db", "output": {"log": "z" * 50_000}},
                {"type": "tool_description", "name": "db", "description": "d" * 9000},
            ],
        }
    ]
    report = ReadReport()
    (items,) = multimodal().get_memory([scene], type="chat", info=INFO, report=report)
    units = scene_units(normalize_chat([scene], unknown_parts="keep")[0])
    heads = ("[tool input: db ", "[tool output: db ", "[tool description: db: ")
    for unit, head in zip(units, heads, strict=True):
        assert unit.text.startswith(head) and "… [clipped " in unit.text
        assert len(unit.text) <= MAX_TOOL_TEXT + len("[tool description: ]")
    assert items and '[tool output: db {"log": ' in "".join(i.memory for i in items)
    notes = [note for window in report.windows for note in window.notes]
    assert any(n.startswith("message 0, part 0: tool input clipped") for n in notes)
    assert any(n.startswith("message 0, part 1: tool output clipped") for n in notes)
    assert any(n.startswith("message 0, part 2: tool description clipped") for n in notes)


@pytest.mark.parametrize("reader", [simple, multimodal])
def test_tool_input_nested_990_deep_is_rendered_not_a_recursion_error(reader: Any) -> None:
    scene = [
        {
            "role": "assistant",
            "content": [{"type": "tool_input", "name": "t", "argument": nested(990)}],
        }
    ]
    report = ReadReport()
    (items,) = reader().get_memory([scene], type="chat", info=INFO, report=report)
    assert '{"a": {"a": ' in items[0].memory and "{…}" in items[0].memory
    assert any("nesting deeper than 64 levels" in note for note in report.windows[0].notes)


def test_a_deep_tool_schema_makes_a_schema_item_in_fine_mode() -> None:
    script = ScriptedLLM(lambda request: {"memory_list": [], "summary": "tools"})
    reader = simple(llm=script.config())
    tool = {"type": "function", "function": {"name": "deep", "parameters": nested(990)}}
    scene = [
        {"role": "system", "content": "tools", "tools": [tool]},
        {"role": "user", "content": "hi"},
    ]
    report = ReadReport()
    (items,) = reader.get_memory([scene], type="chat", info=INFO, mode="fine", report=report)
    (schema,) = [i for i in items if i.metadata.memory_type == MemoryType.TOOL_SCHEMA]
    assert schema.memory.startswith("Tool deep Parameters: {") and "{…}" in schema.memory
    assert len(schema.memory) <= MAX_TOOL_TEXT + 40
    assert not [e for w in report.windows for e in w.pass_errors if "tool_schema" in e]


def test_render_json_is_json_dumps_for_plain_values_and_survives_cycles() -> None:
    value = {"b": [1, 2.5, None, True, {"é": 'q"'}], "a": (1, 2), 3: "int key"}
    expected = json.dumps(value, ensure_ascii=False, default=str)
    assert render_json(value, limit=None).text == expected
    loop: list[Any] = [1]
    loop.append(loop)
    assert render_json(loop).text == '[1, "[circular]"]'


def test_an_unknown_part_of_100000_characters_is_clipped() -> None:
    kind = "v" * 100_000
    report = ReadReport()
    scene = [{"role": "user", "content": [{"type": "text", "text": "hi"}, {"type": kind}]}]
    (items,) = multimodal().get_memory([scene], type="chat", info=INFO, report=report)
    assert len(items) == 1 and len(items[0].memory) < 400
    assert "[unsupported part: vvv" in items[0].memory and "… [clipped" in items[0].memory
    (part,) = report.parts
    assert len(part.type) <= 200 and len(part.detail or "") < 300
    (issue,) = report.windows[0].part_issues
    assert len(issue["reason"]) < 300
    assert any("type name clipped" in note for note in report.windows[0].notes)
    # The simple reader refuses it, with a message that does not quote it whole.
    with pytest.raises(InvalidMessageError, match="unknown content part type") as caught:
        simple().get_memory([scene], type="chat", info=INFO)
    assert len(str(caught.value)) < 400
    with pytest.raises(UnknownRoleError) as role:
        simple().get_memory([[{"role": "r" * 100_000, "content": "x"}]], type="chat", info=INFO)
    assert len(str(role.value)) < 500


# -- 17: data: URLs --------------------------------------------------------------------------


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (40, 30), "blue").save(buffer, "PNG")
    return buffer.getvalue()


def wrapped(data: bytes) -> str:
    """MIME-style base64: lines of 76 characters, CRLF."""
    return base64.encodebytes(data).decode().replace("\n", "\r\n")


@pytest.mark.parametrize(
    "text",
    [
        "data:text/plain;base64,dGVhIHRpbWU=",
        "DATA:text/plain;BASE64,dGVhIHRpbWU=",
        "data:text/plain ; Base64 ,dGVh\r\nIHRp\r\nbWU=",
        "data:text/plain;base64,dGVhIHRpbWU",  # no padding
        "data:text/plain;base64,dGVhIHRpbWU%3D",  # percent-encoded base64
        "data:text/plain;charset=utf-8,tea%20time",
        "data:,tea%20time",
        "dGVh IHRp bWU=",  # bare base64, with spaces
    ],
)
def test_one_liberal_decoder(text: str) -> None:
    assert decode_inline(text, 100).data == b"tea time"


def test_url_safe_base64_and_media_types() -> None:
    data = bytes(range(250, 256)) * 3
    urlsafe = base64.urlsafe_b64encode(data).decode().rstrip("=")
    inline = decode_inline(f"data:Image/PNG;base64,{urlsafe}", 100)
    assert (inline.data, inline.media_type) == (data, "image/png")
    assert decode_inline("data:;base64,YQ==", 10).media_type == "text/plain"
    assert decode_inline("YQ==", 10).media_type is None


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("data:;base64,!!!", "not valid base64"),
        ("data:;base64,Y", "cannot be base64"),
        ("data:image/png;base64", r"no ',' before the data"),
    ],
)
def test_bad_inline_data_is_a_located_document_error(text: str, message: str) -> None:
    where = {"scene_index": 1, "message_index": 2, "part_index": 3}
    with pytest.raises(DocumentError, match=message) as caught:
        decode_inline(text, 100, what="inline image data", where=where)
    assert (caught.value.scene_index, caught.value.part_index) == (1, 3)
    assert "inline image data" in str(caught.value)


def test_the_limit_is_checked_from_the_encoded_length_before_decoding(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def no_decoding(*args: Any, **kwargs: Any) -> bytes:
        raise AssertionError("decoded a payload that is too big")

    monkeypatch.setattr(base64, "b64decode", no_decoding)
    for text in ("data:;base64," + "QUJD" * 1000, "QUJD" * 1000, "data:," + "a" * 4000):
        with pytest.raises(DocumentError, match=r"over the max_file_bytes limit \(100\): \d+ enc"):
            decode_inline(text, 100)
    monkeypatch.undo()
    # Whitespace is not data: wrapped base64 is held to its real size.
    assert decode_inline("YWJj" + "\r\n" * 5000, 3).data == b"abc"


def test_wrapped_and_uppercase_base64_images_are_read_like_files() -> None:
    image = png()
    url = "data:image/png;BASE64," + wrapped(image)
    csv = "data:text/csv;BASE64," + wrapped(b"name,price\ntea,3\n")
    scene = [
        {
            "role": "user",
            "content": [
                {"type": "image_url", "image_url": {"url": url}},
                {"type": "file", "file": {"file_data": csv, "filename": "p.csv"}},
                {
                    "type": "file",
                    "file": {"file_data": wrapped(b"a,b\n1,2\n"), "filename": "q.csv"},
                },
            ],
        }
    ]
    report = ReadReport()
    (items,) = multimodal().get_memory([scene], type="chat", info=INFO, report=report)
    assert [(p.type, p.status) for p in report.parts] == [
        ("image_url", "ok"),
        ("file", "ok"),
        ("file", "ok"),
    ]
    assert "PNG, 40x30" in items[0].memory and "| tea | 3 |" in items[0].memory
    with Fetcher(FetchConfig(), max_bytes=10_000) as fetcher:
        assert fetcher.fetch("DATA:image/png;Base64," + wrapped(image), kind="image").data == image
    # The Ollama backend decodes its image parts with the same decoder.
    message = {"role": "user", "content": [{"type": "image_url", "image_url": {"url": url}}]}
    assert ollama_message(message)["images"] == [image]


# -- 18: relative doc paths ------------------------------------------------------------------


def test_relative_doc_paths_are_resolved_under_base_dir(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    docs, elsewhere = tmp_path / "docs", tmp_path / "elsewhere"
    docs.mkdir()
    elsewhere.mkdir()
    (docs / "ok.txt").write_text("tea at four, from the docs folder")
    (elsewhere / "ok.txt").write_text("not this one")
    (elsewhere / "only_here.txt").write_text("the working directory's file")
    monkeypatch.chdir(elsewhere)
    reader = multimodal(allow_local_paths=True, allowed_roots=[str(docs)], base_dir=str(docs))
    report = ReadReport()
    (items,), (plain,) = (
        reader.get_memory(["ok.txt"], type="doc", info=INFO, report=report),
        reader.get_memory(["only_here.txt"], type="doc", info=INFO),
    )
    assert items[0].memory == "tea at four, from the docs folder"
    assert report.parts[0].status == "ok"
    assert plain[0].memory == "only_here.txt", "a name not under base_dir is text, not a cwd file"


def test_a_base_dir_file_outside_the_roots_is_an_error_not_text(tmp_path: Path) -> None:
    (tmp_path / "ok.txt").write_text("secret-ish")
    reader = multimodal(
        allow_local_paths=True,
        allowed_roots=[str(tmp_path / "nowhere")],
        base_dir=str(tmp_path),
        strict_parts=True,
    )
    with pytest.raises(DocumentError, match="outside the allowed roots"):
        reader.get_memory(["ok.txt"], type="doc", info=INFO)


# -- 19: cancellation ------------------------------------------------------------------------


def big_scenes(n: int = 40) -> list[list[dict[str, str]]]:
    return [[{"role": "user", "content": f"I keep {i} bee hives. " * 300}] for i in range(n)]


def test_an_async_interceptor_of_a_cancelled_call_is_awaited_not_leaked() -> None:
    seen: list[str] = []

    async def on_error(event: Any) -> None:
        await asyncio.sleep(0)
        seen.append(type(event.error).__name__)

    reader = SimpleStructMemReader(
        SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER),
        step_hooks=StepHooks(on_step_error=[on_error]),
    )

    async def main() -> None:
        call = asyncio.ensure_future(reader.aget_memory(big_scenes(), type="chat", info=INFO))
        await asyncio.sleep(0.01)
        call.cancel()
        with pytest.raises(asyncio.CancelledError):
            await call

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a never-awaited coroutine is an error here
        asyncio.run(main())
        gc.collect()
    assert seen == ["CancelledError"]


def test_async_hooks_run_in_async_calls_and_are_skipped_in_sync_ones(
    caplog: pytest.LogCaptureFixture,
) -> None:
    calls: list[str] = []

    async def after_call(event: Any) -> None:
        calls.append(event.slot)

    async def after_step(event: Any) -> None:
        calls.append(event.step)

    script = ScriptedLLM(lambda request: {"memory_list": [], "summary": "s"})
    reader = SimpleStructMemReader(
        SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER, llm=script.config()),
        hooks=LLMHooks(after_call=[after_call]),
        step_hooks=StepHooks(after_step=[after_step]),
    )
    scene = [[{"role": "user", "content": "I keep bees."}]]
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        asyncio.run(reader.aget_memory(scene, type="chat", info=INFO, mode="fine"))
        assert "llm" in calls and "extract" in calls
        calls.clear()
        with caplog.at_level(logging.WARNING, logger="memreader.calls.observers"):
            reader.get_memory(scene, type="chat", info=INFO, mode="fine")
        gc.collect()
    assert calls == []
    assert any("runs only in async calls" in r.getMessage() for r in caplog.records)


def test_no_llm_task_outlives_a_cancelled_call() -> None:
    # Cancelled while its window tasks are being started (early) or run (later): none may go
    # on asking the LLM for a caller that has gone.
    with LLMTestServer(latency=0.05) as server:
        llm = {"model": "m", "base_url": server.url, "timeout": 5, "max_retries": 0}
        reader = simple(llm=llm, llm_max_concurrency=2)
        scenes = [[{"role": "user", "content": f"I keep {i} bee hives."}] for i in range(30)]

        async def cancelled_after(seconds: float) -> int:
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(
                    reader.aget_memory(scenes, type="chat", info=INFO, mode="fine"), seconds
                )
            return len(asyncio.all_tasks()) - 1  # this one

        async def main() -> list[int]:
            left = [await cancelled_after(seconds) for seconds in (0.005, 0.01, 0.02, 0.04, 0.2)]
            await asyncio.sleep(0.2)  # requests sent before the cancel may still arrive
            asked = len(server.requests)
            await asyncio.sleep(0.3)
            assert len(server.requests) == asked, "requests went on after the call was cancelled"
            await reader.aclose()
            return left

        assert asyncio.run(main()) == [0, 0, 0, 0, 0]
