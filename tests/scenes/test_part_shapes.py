"""Issue 22, item 5: the content-part shapes OpenAI (Chat Completions, Responses) and Anthropic
(Messages) send are read, in chats and in doc input, with exact provenance for any text inside
them; anything not recognised is a part issue (multimodal reader) or a typed refusal naming
scene, message and part (simple reader), never a silent gap."""

from __future__ import annotations

import base64
import io
from collections.abc import Callable
from typing import Any

import pytest
from PIL import Image

from memreader import ReadReport, SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.errors import InvalidMessageError
from memreader.items import SourceMessage, TextualMemoryItem
from memreader.readers import MultiModalStructMemReader, MultiModalStructMemReaderConfig
from tests.common import HASH_EMBEDDER, INFO
from tests.docgen import make_pdf

pytestmark = pytest.mark.timeout(120)

Reader = SimpleStructMemReader | MultiModalStructMemReader


def simple() -> SimpleStructMemReader:
    return SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER))


def multimodal() -> MultiModalStructMemReader:
    return MultiModalStructMemReader(MultiModalStructMemReaderConfig(embedder=HASH_EMBEDDER))


READERS = [pytest.param(simple, id="simple"), pytest.param(multimodal, id="multimodal")]


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (8, 6), "red").save(buffer, "PNG")
    return buffer.getvalue()


# Long enough to be cut into several windows: every character must still reach some item.
LONG = " ".join(f"Result line {i}: the parcel for Anna left Oslo on day {i}." for i in range(90))
NOTE = "Lunch at Cafe Lua costs 12 euros on Fridays."


def read(
    reader: Reader, data: Any, kind: str = "chat"
) -> tuple[list[TextualMemoryItem], ReadReport]:
    report = ReadReport()
    (items,) = reader.get_memory(data, type=kind, info=INFO, report=report)
    return items, report


def sources(items: list[TextualMemoryItem]) -> list[SourceMessage]:
    return [s for item in items for s in item.metadata.sources]


def issues(report: ReadReport) -> list[dict[str, Any]]:
    return [issue for window in report.windows for issue in window.part_issues]


def assert_covers(found: list[SourceMessage], original: str) -> None:
    """Each source is an exact slice of ``original``, and together they cover all of it."""
    assert found, "the text reached no item"
    covered: set[int] = set()
    for source in found:
        assert source.span is not None
        start, end = source.span
        assert original[start:end] == source.content
        covered.update(range(start, end))
    assert covered >= set(range(len(original))) - {i for i, c in enumerate(original) if c == " "}


# -- text inside parts: verbatim, with a span into the part's own field ---------------------------

Get = Callable[[Any], str]
TEXT_SHAPES: list[tuple[str, Any, Get, str]] = [
    ("string", LONG, lambda p: p, "chat"),
    ("openai text", {"type": "text", "text": LONG}, lambda p: p["text"], "chat"),
    ("responses input_text", {"type": "input_text", "text": LONG}, lambda p: p["text"], "chat"),
    (
        "responses output_text",
        {"type": "output_text", "text": LONG, "annotations": []},
        lambda p: p["text"],
        "chat",
    ),
    (
        "anthropic text",
        {"type": "text", "text": LONG, "citations": None},
        lambda p: p["text"],
        "chat",
    ),
    ("refusal", {"type": "refusal", "refusal": LONG}, lambda p: p["refusal"], "refusal"),
    (
        "anthropic tool_result string",
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": LONG},
        lambda p: p["content"],
        "tool_output",
    ),
    (
        "anthropic tool_result blocks",
        {
            "type": "tool_result",
            "tool_use_id": "toolu_1",
            "is_error": True,
            "content": [{"type": "text", "text": LONG}],
        },
        lambda p: p["content"][0]["text"],
        "tool_output",
    ),
    (
        "memreader tool_output nested",
        {"type": "tool_output", "tool_output": {"name": "search", "output": LONG}},
        lambda p: p["tool_output"]["output"],
        "tool_output",
    ),
    (
        "memreader tool_output flat",
        {"type": "tool_output", "name": "search", "output": LONG},
        lambda p: p["output"],
        "tool_output",
    ),
    (
        "anthropic thinking",
        {"type": "thinking", "thinking": LONG, "signature": "c2ln"},
        lambda p: p["thinking"],
        "thinking",
    ),
    (
        "anthropic document text",
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": LONG},
            "title": "Notes",
        },
        lambda p: p["source"]["data"],
        "file",
    ),
]


@pytest.mark.parametrize("make", READERS)
@pytest.mark.parametrize(
    ("part", "get", "source_type"),
    [pytest.param(part, get, kind, id=name) for name, part, get, kind in TEXT_SHAPES],
)
def test_text_inside_a_part_keeps_exact_provenance(
    make: Callable[[], Reader], part: Any, get: Get, source_type: str
) -> None:
    scene = [
        {"role": "user", "content": "what happened to the parcel?"},
        {"role": "assistant", "content": [{"type": "text", "text": "Here:"}, part]},
    ]
    items, report = read(make(), [scene])
    found = [s for s in sources(items) if s.message_index == 1 and s.part_index == 1]
    assert {s.type for s in found} == {source_type}
    assert_covers(found, get(part))
    assert not issues(report)


def test_tool_result_lines_are_labelled_outside_the_span() -> None:
    part = {"type": "tool_result", "tool_use_id": "toolu_9", "is_error": True, "content": "boom"}
    items, _ = read(simple(), [[{"role": "user", "content": [part]}]])
    assert items[0].memory == "user: [tool error: toolu_9] boom"
    (source,) = sources(items)
    assert (source.content, source.span, source.part_index) == ("boom", (0, 4), 0)


@pytest.mark.parametrize("make", READERS)
def test_openai_tool_messages_and_tool_calls(make: Callable[[], Reader]) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "search", "arguments": "{}"}}
    scene = [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "green tea"},
        {"role": "tool", "tool_call_id": "c1", "content": [{"type": "text", "text": "oolong"}]},
    ]
    items, _ = read(make(), [scene])
    got = {(s.message_index, s.part_index, s.type, s.role, s.content) for s in sources(items)}
    assert (0, None, "tool_calls", "assistant", "[tool calls: search({})]") in got
    assert (1, None, "chat", "tool", "green tea") in got
    assert (2, 0, "chat", "tool", "oolong") in got


@pytest.mark.parametrize("make", READERS)
def test_anthropic_tool_use_is_a_tool_call(make: Callable[[], Reader]) -> None:
    part = {"type": "tool_use", "id": "toolu_1", "name": "search", "input": {"q": "tea"}}
    items, _ = read(make(), [[{"role": "assistant", "content": [part]}]])
    (source,) = sources(items)
    assert source.type == "tool_calls" and source.part_index == 0 and source.span is None
    assert source.content == '[tool calls: search({"q": "tea"})]'


@pytest.mark.parametrize("make", READERS)
def test_responses_function_call_items(make: Callable[[], Reader]) -> None:
    scene: list[dict[str, Any]] = [
        {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "tea?"}]},
        {"type": "function_call", "call_id": "call_1", "name": "search", "arguments": '{"q":1}'},
        {"type": "function_call_output", "call_id": "call_1", "output": LONG},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [{"type": "input_text", "text": NOTE}],
        },
    ]
    items, report = read(make(), [scene])
    found = sources(items)
    (call,) = [s for s in found if s.message_index == 1]
    assert (call.role, call.type, call.content) == (
        "assistant",
        "tool_calls",
        '[tool calls: search({"q":1})]',
    )
    output = [s for s in found if s.message_index == 2]
    assert {(s.role, s.type, s.part_index) for s in output} == {("tool", "tool_output", None)}
    assert_covers(output, scene[2]["output"])
    (listed,) = [s for s in found if s.message_index == 3]
    assert (listed.part_index, listed.content) == (0, NOTE)
    assert "[tool output: call_1] Result line 0" in items[0].memory
    assert not issues(report)


# -- images --------------------------------------------------------------------------------------

IMAGE = b64(png())
IMAGE_SHAPES = [
    pytest.param(
        {
            "type": "image_url",
            "image_url": {"url": "data:image/png;base64," + IMAGE, "detail": "low"},
        },
        id="openai image_url",
    ),
    pytest.param(
        {"type": "input_image", "image_url": "data:image/png;base64," + IMAGE, "detail": "auto"},
        id="responses input_image",
    ),
    pytest.param(
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": IMAGE}},
        id="anthropic image base64",
    ),
]


@pytest.mark.parametrize("part", IMAGE_SHAPES)
def test_image_shapes(part: dict[str, Any]) -> None:
    scene = [[{"role": "user", "content": [{"type": "text", "text": "look"}, part]}]]
    items, _ = read(simple(), scene)
    assert "user: [image: inline image/png, " in items[0].memory
    items, report = read(multimodal(), scene)
    (image,) = report.parts
    assert (image.type, image.status, image.part_index) == ("image_url", "ok", 1)
    assert "[image: " in items[0].memory and "(PNG, 8x6" in items[0].memory
    (source,) = [s for s in sources(items) if s.part_index == 1]
    assert source.type == "image_url" and source.span is None


def test_an_image_url_source_is_shown_by_the_simple_reader() -> None:
    part = {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}}
    items, _ = read(simple(), [[{"role": "user", "content": [part]}]])
    assert items[0].memory == "user: [image: https://example.com/a.png]"


# -- files and documents -------------------------------------------------------------------------

TEXT_FILE = "data:text/plain;base64," + b64(NOTE.encode())
FILE_SHAPES = [
    pytest.param(
        {"type": "file", "file": {"file_data": TEXT_FILE, "filename": "a.txt"}}, id="file"
    ),
    pytest.param(
        {"type": "file", "file": {"file_data": b64(NOTE.encode()), "filename": "a.txt"}},
        id="file plain base64",
    ),
    pytest.param(
        {"type": "input_file", "file_data": TEXT_FILE, "filename": "a.txt"}, id="input_file"
    ),
    pytest.param(
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "text/plain", "data": b64(NOTE.encode())},
            "title": "Lunch",
        },
        id="anthropic document base64",
    ),
]


@pytest.mark.parametrize("part", FILE_SHAPES)
def test_file_shapes_in_a_chat(part: dict[str, Any]) -> None:
    scene = [[{"role": "user", "content": ["the note:", part]}]]
    items, report = read(multimodal(), scene)
    (file,) = report.parts
    assert (file.type, file.status, file.part_index) == ("file", "ok", 1)
    (source,) = [s for s in sources(items) if s.part_index == 1]
    assert (source.type, source.content, source.span) == ("file", NOTE, (0, len(NOTE)))
    # The simple reader reads no inline files in a chat: a placeholder naming the file.
    items, _ = read(simple(), scene)
    assert items[0].memory.splitlines()[1] in ("user: [file: a.txt]", "user: [file: Lunch]")


BY_ID = [
    pytest.param({"type": "file", "file": {"file_id": "file-123"}}, id="openai file_id"),
    pytest.param({"type": "input_file", "file_id": "file-123"}, id="responses input_file"),
    pytest.param({"type": "input_image", "file_id": "file-123"}, id="responses input_image"),
    pytest.param(
        {"type": "document", "source": {"type": "file", "file_id": "file-123"}},
        id="anthropic document file",
    ),
    pytest.param(
        {"type": "image", "source": {"type": "file", "file_id": "file-123"}},
        id="anthropic image file",
    ),
]


@pytest.mark.parametrize("part", BY_ID)
def test_file_ids_are_a_part_issue(part: dict[str, Any]) -> None:
    items, report = read(multimodal(), [[{"role": "user", "content": ["hi", part]}]])
    (entry,) = report.parts
    assert entry.status == "unsupported" and entry.part_index == 1
    assert (entry.detail or "").startswith("file_id parts cannot be read: 'file-123'")
    (issue,) = issues(report)
    assert issue["part_index"] == 1 and issue["reason"].startswith("file_id parts cannot be read")
    assert any(s.part_index == 1 for s in sources(items))
    items, _ = read(simple(), [[{"role": "user", "content": ["hi", part]}]])
    assert "file-123" in items[0].memory


def test_a_file_url_follows_the_fetch_rules() -> None:
    part = {"type": "input_file", "file_url": "http://127.0.0.1/report.pdf"}
    items, report = read(multimodal(), [[{"role": "user", "content": [part]}]])
    (entry,) = report.parts
    assert (entry.status, entry.error_type) == ("error", "BlockedAddressError")
    assert issues(report)[0]["status"] == "error"
    items, _ = read(simple(), [[{"role": "user", "content": [part]}]])
    assert items[0].memory == "user: [file: http://127.0.0.1/report.pdf]"


# -- doc input -----------------------------------------------------------------------------------

DOC_SHAPES = [
    pytest.param({"file_data": b64(NOTE.encode()), "filename": "a.txt"}, id="bare file_data"),
    pytest.param({"file_data": TEXT_FILE, "filename": "a.txt"}, id="bare data url"),
    pytest.param({"type": "input_file", "file_data": TEXT_FILE, "filename": "a.txt"}, id="input"),
    pytest.param({"type": "file", "file": {"file_data": TEXT_FILE}}, id="file"),
    pytest.param(
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "text/plain", "data": b64(NOTE.encode())},
        },
        id="anthropic document base64",
    ),
]


@pytest.mark.parametrize("make", READERS)
@pytest.mark.parametrize("part", DOC_SHAPES)
def test_doc_input_shapes(make: Callable[[], Reader], part: dict[str, Any]) -> None:
    items, _ = read(make(), [part], kind="doc")
    (source,) = sources(items)
    assert (source.type, source.content, source.span) == ("file", NOTE, (0, len(NOTE)))


@pytest.mark.parametrize("make", READERS)
def test_doc_input_text_shapes(make: Callable[[], Reader]) -> None:
    document = {
        "type": "document",
        "source": {"type": "text", "media_type": "text/plain", "data": LONG},
    }
    items, _ = read(make(), [[{"type": "input_text", "text": NOTE}, document]], kind="doc")
    found = sources(items)
    assert [s.content for s in found if s.message_index == 0] == [NOTE]
    assert_covers([s for s in found if s.message_index == 1], LONG)


# -- anything unrecognised: a part issue, or the simple reader's typed refusal --------------------

UNKNOWN = [
    pytest.param(
        {"type": "video", "video": {}}, "video", "no parser for part type 'video'", id="type"
    ),
    pytest.param(
        {"type": "input_file"}, "input_file", "input_file part needs file_data", id="file"
    ),
    pytest.param(
        {"type": "file", "file": {"oops": 1}},
        "file",
        "file part needs file_data, file_url, file_id, path or url (it has: oops)",
        id="file keys",
    ),
    pytest.param({"type": "text"}, "text", "text part needs a string 'text'", id="text"),
    pytest.param(
        {"type": "image", "source": {"type": "weird"}},
        "image",
        "image source type 'weird' is not known",
        id="image source",
    ),
    pytest.param(
        {"type": "document", "source": {"type": "weird"}},
        "document",
        "document source type 'weird' is not known",
        id="document source",
    ),
    pytest.param(
        {"type": "tool_output", "tool_output": {"name": "x"}},
        "tool_output",
        "tool_output part has no output",
        id="tool_output",
    ),
    pytest.param(
        {"type": "tool_result", "content": {"a": 1}},
        "tool_result",
        "tool_result content must be a string or a list of blocks, got dict",
        id="tool_result",
    ),
    pytest.param({"foo": 1}, "untyped", "mapping with a string 'type' (got foo)", id="untyped"),
    pytest.param(5, "untyped", "mapping with a string 'type' (got int)", id="not a mapping"),
]


@pytest.mark.parametrize(("part", "kind", "reason"), UNKNOWN)
def test_unrecognised_parts_are_part_issues(part: Any, kind: str, reason: str) -> None:
    scene = [[{"role": "user", "content": ["before", part]}]]
    items, report = read(multimodal(), scene)
    assert f"[unsupported part: {kind}]" in items[0].memory
    (entry,) = report.parts
    assert (entry.status, entry.type, entry.part_index) == ("unsupported", kind, 1)
    assert reason in (entry.detail or "")
    (issue,) = issues(report)
    assert (issue["message_index"], issue["part_index"], issue["type"]) == (0, 1, kind)
    assert reason in issue["reason"]


@pytest.mark.parametrize(("part", "kind", "reason"), UNKNOWN)
def test_the_simple_reader_refuses_them_naming_where(part: Any, kind: str, reason: str) -> None:
    with pytest.raises(InvalidMessageError) as caught:
        read(
            simple(),
            [[{"role": "user", "content": "fine"}, {"role": "user", "content": ["x", part]}]],
        )
    error = caught.value
    assert (error.scene_index, error.message_index, error.part_index) == (0, 1, 1)
    assert str(error).startswith("scene 0, message 1, part 1: ")


def test_an_image_inside_a_tool_result_is_a_part_issue_not_a_gap() -> None:
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": IMAGE},
    }
    part = {
        "type": "tool_result",
        "tool_use_id": "t1",
        "content": [{"type": "text", "text": NOTE}, image],
    }
    items, report = read(multimodal(), [[{"role": "user", "content": [part]}]])
    found = sources(items)
    assert (found[0].type, found[0].content) == ("tool_output", NOTE)
    (issue,) = issues(report)
    assert issue["reason"] == "a 'image' block inside [tool result: t1] is not read"
    # The simple reader reads no images anyway: the image's placeholder stands in its place.
    items, _ = read(simple(), [[{"role": "user", "content": [part]}]])
    assert "[image: inline image/png" in items[0].memory


def test_redacted_thinking_is_a_placeholder() -> None:
    part = {"type": "redacted_thinking", "data": "ZW5jcnlwdGVk"}
    items, _ = read(simple(), [[{"role": "assistant", "content": [part]}]])
    assert items[0].memory == "assistant: [redacted thinking]"


# -- the three cases of the issue, exactly -------------------------------------------------------


@pytest.mark.parametrize("make", READERS)
def test_issue_a_top_level_doc_file_data_part_is_read(make: Callable[[], Reader]) -> None:
    pdf = make_pdf(["The warehouse in Bergen closes at noon on Saturdays."])
    items, _ = read(make(), [{"file_data": b64(pdf), "filename": "a.pdf"}], kind="doc")
    (source,) = sources(items)
    assert "warehouse in Bergen closes at noon" in source.content
    assert source.type == "file" and source.doc_path == "a.pdf" and source.span is not None


@pytest.mark.parametrize("make", READERS)
def test_issue_an_input_file_with_top_level_file_data_is_read(make: Callable[[], Reader]) -> None:
    part = {"type": "input_file", "file_data": TEXT_FILE, "filename": "a.txt"}
    items, report = read(make(), [[{"role": "user", "content": [part]}]])
    if isinstance(make(), MultiModalStructMemReader):
        assert items[0].memory == f"user: {NOTE}"
        assert [p.status for p in report.parts] == ["ok"]
    else:
        assert items[0].memory == "user: [file: a.txt]"


@pytest.mark.parametrize("make", READERS)
def test_issue_a_5000_character_tool_output_reaches_items(make: Callable[[], Reader]) -> None:
    output = ("tool says: " + "0123456789 " * 500)[:5000]
    part = {"type": "tool_output", "tool_output": {"name": "search", "output": output}}
    items, report = read(make(), [[{"role": "tool", "content": [part]}]])
    assert items[0].memory.startswith("tool: [tool output: search] tool says: 0123456789")
    found = sources(items)
    assert {(s.type, s.part_index) for s in found} == {("tool_output", 0)}
    assert_covers(found, output)
    assert not issues(report) and not report.parts
