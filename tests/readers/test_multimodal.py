"""The multimodal reader through its public API: parts in their places, reuse by content,
documents by path and URL with chunk provenance, images in fine mode (vision shape, fallback),
raw file items, audio, strict errors, and the CLI."""

from __future__ import annotations

import asyncio
import base64
import io
import itertools
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from memreader import ReadReport
from memreader.errors import DocumentError, FetchError, ImageError
from memreader.items import MemoryType, TextualMemoryItem
from memreader.readers import MultiModalStructMemReader, MultiModalStructMemReaderConfig
from tests.common import HASH_EMBEDDER, INFO
from tests.docgen import (
    corrupt_pdf,
    decompression_bomb_png,
    make_docx,
    make_pdf,
    zip_bomb_docx,
)
from tests.http_fixtures import FetchTestServer, answer
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, llm_server, openai_completion
from tests.s3_server import moto_s3

__all__ = ["llm_server", "moto_s3"]

pytestmark = pytest.mark.timeout(120)


def png(width: int = 64, height: int = 48, color: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), color).save(buffer, "PNG")
    return buffer.getvalue()


def data_url(data: bytes, media: str = "image/png") -> str:
    return f"data:{media};base64," + base64.b64encode(data).decode()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


CSV = b"name,price\ntea,3\ncoffee,4\n"


def reader(**overrides: Any) -> MultiModalStructMemReader:
    overrides.setdefault("embedder", HASH_EMBEDDER)
    return MultiModalStructMemReader(MultiModalStructMemReaderConfig(**overrides))


def sources(items: list[TextualMemoryItem]) -> list[Any]:
    return [s for item in items for s in item.metadata.sources]


# -- chat parts in fast mode --------------------------------------------------------------------


def test_parts_keep_their_place_and_unknown_parts_are_reported() -> None:
    scene = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Here is my receipt"},
                {"type": "image_url", "image_url": {"url": data_url(png())}},
                {"type": "text", "text": "and the prices"},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "file", "file": {"filename": "prices.csv", "file_data": b64(CSV)}},
                {"type": "video", "video": {"url": "https://example.com/v.mp4"}},
            ],
        },
        {"role": "assistant", "content": None, "refusal": "I can't help with that."},
    ]
    report = ReadReport()
    (items,) = reader().get_memory([scene], type="chat", info=INFO, report=report)
    text = items[0].memory
    # The image line sits between the two texts the user wrote around it.
    assert text.index("Here is my receipt") < text.index("[image:") < text.index("and the prices")
    assert "PNG, 64x48" in text
    assert "| tea | 3 |" in text  # the csv, converted, in its place
    assert "[unsupported part: video]" in text
    assert "I can't help with that." in text
    kinds = [(s.type, s.message_index, s.part_index) for s in sources(items)]
    assert ("image_url", 0, 1) in kinds and ("file", 1, 0) in kinds
    assert ("unsupported", 1, 1) in kinds and ("refusal", 2, None) in kinds
    file_source = next(s for s in sources(items) if s.type == "file")
    assert file_source.doc_path == "prices.csv"
    assert file_source.chunk_index == 0 and file_source.chunk_count == 1
    # Every message is in some source; the unknown part is reported where it is.
    assert {s.message_index for s in sources(items)} == {0, 1, 2}
    issues = [i for w in report.windows for i in w.part_issues]
    assert issues == [
        {
            "scene_index": 0,
            "message_index": 1,
            "part_index": 1,
            "type": "video",
            "status": "unsupported",
            "reason": "no parser for part type 'video'",
        }
    ]
    statuses = {(p.type, p.status) for p in report.parts}
    assert statuses == {("image_url", "ok"), ("file", "ok"), ("video", "unsupported")}


def test_tool_parts_are_rendered() -> None:
    scene = [
        {
            "role": "system",
            "content": [
                {
                    "type": "tool_description",
                    "name": "weather",
                    "description": "Weather by city",
                    "parameters": {"city": "string"},
                }
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_input", "name": "weather", "argument": {"city": "Oslo"}}],
        },
        {
            "role": "tool",
            "content": [{"type": "tool_output", "name": "weather", "output": {"temp": -3}}],
        },
    ]
    (items,) = reader().get_memory([scene], type="chat", info=INFO)
    text = items[0].memory
    assert "[tool description: weather: Weather by city; parameters" in text
    assert '[tool input: weather {"city": "Oslo"}]' in text
    assert '[tool output: weather {"temp": -3}]' in text


def test_repeated_file_is_converted_once_and_reused_across_calls() -> None:
    part = {"type": "file", "file": {"filename": "prices.csv", "file_data": b64(CSV)}}
    other_ref = {"type": "file", "file": {"file_data": "data:text/csv;base64," + b64(CSV)}}
    scene = [
        {"role": "user", "content": [part]},
        {"role": "user", "content": [part]},
        {"role": "user", "content": [other_ref]},
    ]
    mm = reader()
    report = ReadReport()
    mm.get_memory([scene], type="chat", info=INFO, report=report)
    # Two distinct references (the same one twice, and a data URL of the same bytes): the
    # first is read once, the bytes are converted once.
    assert report.resources["converted"] == 1
    assert report.resources["fetch_reused"] == 1
    assert report.resources["conversion_reused"] == 1
    assert [p.status for p in report.parts] == ["ok", "reused", "ok"]
    again = ReadReport()
    mm.get_memory([scene], type="chat", info=INFO, report=again)
    assert "converted" not in again.resources
    assert again.resources["conversion_reused"] == 2


def test_failed_parts_are_placeholders_with_typed_reasons(tmp_path: Path) -> None:
    truncated = png(200, 200)[:150]
    scene = [
        {"role": "user", "content": [{"type": "text", "text": "files follow"}]},
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": data_url(truncated)}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "file", "file": {"filename": "a.pdf", "file_data": b64(corrupt_pdf())}}
            ],
        },
        {
            "role": "user",
            "content": [{"type": "file", "file": {"path": str(tmp_path / "missing.txt")}}],
        },
        {"role": "user", "content": [{"type": "file", "file": {"file_id": "file-123"}}]},
    ]
    report = ReadReport()
    (items,) = reader(allow_local_paths=True, allowed_roots=[str(tmp_path)]).get_memory(
        [scene], type="chat", info=INFO, report=report
    )
    by_message = {p.message_index: p for p in report.parts}
    assert by_message[1].status == "error" and by_message[1].error_type == "ImageError"
    assert by_message[2].status == "error" and by_message[2].error_type == "DocumentError"
    assert by_message[3].status == "error" and by_message[3].error_type == "FetchError"
    assert by_message[4].status == "unsupported" and "file_id" in (by_message[4].detail or "")
    text = "\n".join(i.memory for i in items)
    assert "not read (ImageError" in text and "not read (FetchError" in text
    assert {s.message_index for s in sources(items)} == {0, 1, 2, 3, 4}
    issues = {i["message_index"]: i["status"] for w in report.windows for i in w.part_issues}
    assert issues == {1: "error", 2: "error", 3: "error", 4: "unsupported"}


@pytest.mark.parametrize(
    ("content", "error"),
    [
        ({"type": "image_url", "image_url": {"url": data_url(png(100, 100)[:120])}}, ImageError),
        (
            {"type": "file", "file": {"filename": "x.pdf", "file_data": b64(corrupt_pdf())}},
            DocumentError,
        ),
        ({"type": "file", "file": {"path": "/nonexistent/missing.docx"}}, FetchError),
        (
            {"type": "image_url", "image_url": {"url": data_url(decompression_bomb_png())}},
            ImageError,
        ),
        (
            {"type": "file", "file": {"filename": "bomb.docx", "file_data": b64(zip_bomb_docx())}},
            DocumentError,
        ),
    ],
    ids=["truncated-image", "corrupt-pdf", "missing-file", "decompression-bomb", "zip-bomb-docx"],
)
def test_strict_parts_raise_the_typed_error(content: dict[str, Any], error: type) -> None:
    mm = reader(strict_parts=True, allow_local_paths=True)
    with pytest.raises(error) as caught:
        mm.get_memory([[{"role": "user", "content": [content]}]], type="chat", info=INFO)
    assert type(caught.value) is error
    assert caught.value.message_index == 0


def test_async_matches_sync() -> None:
    scene = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": data_url(png())}},
                {"type": "file", "file": {"filename": "p.csv", "file_data": b64(CSV)}},
            ],
        }
    ]
    mm = reader()
    sync = mm.get_memory([scene], type="chat", info=INFO)
    async_ = asyncio.run(mm.aget_memory([scene], type="chat", info=INFO))
    assert [i.id for i in sync[0]] == [i.id for i in async_[0]]
    assert [i.memory for i in sync[0]] == [i.memory for i in async_[0]]


# -- documents ----------------------------------------------------------------------------------


def long_docx(tmp_path: Path) -> Path:
    paragraphs, headings = [], []
    for section in range(4):
        headings.append((len(paragraphs), 1, f"Section {section}"))
        for k in range(6):
            topic = section * 10 + k
            paragraphs.append(f"Paragraph {k} of section {section} talks about topic {topic}. " * 4)
    path = tmp_path / "report.docx"
    path.write_bytes(make_docx(paragraphs, headings))
    return path


def test_document_chunks_carry_index_count_heading_and_exact_spans(tmp_path: Path) -> None:
    path = long_docx(tmp_path)
    mm = reader(
        allow_local_paths=True,
        allowed_roots=[str(tmp_path)],
        window={"max_tokens": 128, "overlap_tokens": 16},
    )
    report = ReadReport()
    (items,) = mm.get_memory([str(path)], type="doc", info=INFO, report=report)
    assert len(items) > 3
    file_sources = sources(items)
    assert {s.chunk_count for s in file_sources} == {len(items)}
    for position, item in enumerate(items):
        assert {s.chunk_index for s in item.metadata.sources} == {position}
    assert all(s.doc_path == str(path) for s in file_sources)
    assert any(s.heading and s.heading.startswith("Section") for s in file_sources[1:])
    (part,) = report.parts
    assert part.status == "ok" and part.source == str(path)
    # Spans index the converted text: read it again and check each.
    from memreader.documents.loader import convert_bytes

    converted = convert_bytes(path.read_bytes(), ".docx")
    for s in file_sources:
        assert s.span is not None
        assert converted[s.span[0] : s.span[1]] == s.content


def test_local_paths_are_off_by_default(tmp_path: Path) -> None:
    path = long_docx(tmp_path)
    report = ReadReport()
    (items,) = reader().get_memory(
        [[{"type": "file", "file": {"path": str(path)}}]], type="doc", info=INFO, report=report
    )
    (part,) = report.parts
    assert part.status == "error" and "local paths are disabled" in (part.error or "")
    # The placeholder of a file that was not read is no memory: its window is dropped.
    assert items == [] and [w.status for w in report.windows] == ["dropped"]
    assert report.windows[0].part_issues[0]["status"] == "error"


@pytest.fixture
def file_server() -> Iterator[FetchTestServer]:
    with FetchTestServer() as server:
        yield server


def _serve(server: FetchTestServer, files: dict[str, tuple[bytes, str]]) -> str:
    """Serve each ``path: (body, type)`` of ``files``; the server's base URL."""
    for path, (body, kind) in files.items():
        server.route(path, answer(body, kind))
    return server.url("")


def test_documents_by_url_record_a_clean_source(file_server: FetchTestServer) -> None:
    base = _serve(
        file_server,
        {
            "/docs/zh.pdf": (make_pdf(["我喜欢在杭州喝龙井茶。"], chinese=True), "application/pdf"),
            "/img/cat.png": (png(), "image/png"),
        },
    )
    mm = reader(fetch={"allow_hosts": ["127.0.0.1"]})
    report = ReadReport()
    url = f"{base}/docs/zh.pdf?X-Amz-Signature=secret"
    result = mm.get_memory(
        [url, [{"type": "image_url", "image_url": {"url": f"{base}/img/cat.png"}}]],
        type="doc",
        info=INFO,
        report=report,
    )
    (pdf_source,) = sources(result[0])
    assert pdf_source.doc_path == f"{base}/docs/zh.pdf"
    assert "龙井" in result[0][0].memory and "\ufffd" not in result[0][0].memory
    assert "secret" not in json.dumps([i.to_dict() for r in result for i in r])
    assert "from " + f"{base}/img/cat.png" in result[1][0].memory
    assert report.resources["fetched"] == 2


def test_private_addresses_are_refused_by_default(file_server: FetchTestServer) -> None:
    base = _serve(file_server, {"/a.csv": (CSV, "text/csv")})
    report = ReadReport()
    reader().get_memory([f"{base}/a.csv"], type="doc", info=INFO, report=report)
    (part,) = report.parts
    assert part.status == "error" and part.error_type == "BlockedAddressError"


# -- fine mode ----------------------------------------------------------------------------------

IMAGE_ANSWER = {
    "memory_list": [
        {
            "key": "receipt total",
            "memory_type": "UserMemory",
            "value": "The user paid 42 euros at Café Lua.",
            "tags": ["receipt"],
            "source_ids": [1],
        }
    ],
    "summary": "A receipt from Café Lua showing a total of 42 euros.",
}


def schema_name(request: RecordedRequest) -> str:
    fmt = (request.json or {}).get("response_format") or {}
    return str(fmt.get("json_schema", {}).get("name", ""))


def fine_responder(*, image_status: int = 200) -> Any:
    def respond(request: RecordedRequest) -> Reply:
        name = schema_name(request)
        if name == "image_memories":
            if image_status != 200:
                return Reply(status=image_status, body={"error": {"message": "vision down"}})
            return Reply(body=openai_completion(json.dumps(IMAGE_ANSWER)))
        if name == "memory_extraction":
            answer = {
                "memory_list": [
                    {
                        "key": "doc fact",
                        "memory_type": "LongTermMemory",
                        "value": "The document discusses topics.",
                        "tags": [],
                        "source_ids": [1],
                    }
                ],
                "summary": "s",
            }
            return Reply(body=openai_completion(json.dumps(answer)))
        return Reply(body=openai_completion(json.dumps({"results": []})))

    return respond


def fine_reader(server: LLMTestServer, **overrides: Any) -> MultiModalStructMemReader:
    llm = {
        "backend": "openai",
        "model": "text-model",
        "base_url": server.url,
        "api_key": "sk-test",
        "max_retries": 1,
        "backoff_base": 0.01,
        "backoff_max": 0.02,
        "timeout": 5,
    }
    image_llm = {**llm, "model": "vision-model"}
    overrides.setdefault("embedder", HASH_EMBEDDER)
    return MultiModalStructMemReader(
        MultiModalStructMemReaderConfig(llm=llm, image_parser_llm=image_llm, **overrides)
    )


def image_chat(image: bytes) -> list[list[dict[str, Any]]]:
    return [
        [
            {"role": "user", "content": "I had lunch at Café Lua today."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "here is the receipt"},
                    {"type": "image_url", "image_url": {"url": data_url(image)}},
                ],
            },
            {"role": "assistant", "content": "Thanks, noted."},
        ]
    ]


def test_fine_mode_describes_an_image_with_the_vision_shape(llm_server: LLMTestServer) -> None:
    llm_server.responder = fine_responder()
    mm = fine_reader(llm_server)
    report = ReadReport()
    (items,) = mm.get_memory(
        image_chat(png(3000, 1500)), type="chat", info=INFO, mode="fine", report=report
    )
    vision = [r for r in llm_server.requests if schema_name(r) == "image_memories"]
    assert len(vision) == 1
    body = vision[0].json
    assert body["model"] == "vision-model"
    user = body["messages"][-1]
    assert [p["type"] for p in user["content"]] == ["text", "image_url"]
    assert "I had lunch at Café Lua today." in user["content"][0]["text"]  # the context
    sent = base64.b64decode(user["content"][1]["image_url"]["url"].split(",", 1)[1])
    assert max(Image.open(io.BytesIO(sent)).size) == 1568  # downsized before sending
    image_items = [i for i in items if "image" in i.metadata.tags]
    assert [i.memory for i in image_items] == ["The user paid 42 euros at Café Lua."]
    (source,) = image_items[0].metadata.sources
    assert (source.type, source.message_index, source.part_index) == ("image_url", 1, 1)
    # The description joins the image's line in the window the extraction pass reads.
    extraction = next(r for r in llm_server.requests if schema_name(r) == "memory_extraction")
    assert "A receipt from Café Lua" in json.dumps(extraction.json, ensure_ascii=False)
    assert report.resources["images_described"] == 1
    # The same image again (another call): described from the cache, not asked again.
    llm_server.requests.clear()
    again = ReadReport()
    mm.get_memory(image_chat(png(3000, 1500)), type="chat", info=INFO, mode="fine", report=again)
    assert not [r for r in llm_server.requests if schema_name(r) == "image_memories"]
    assert again.resources["description_reused"] == 1


def test_a_failing_vision_model_gives_a_tagged_fallback_not_a_caption(
    llm_server: LLMTestServer,
) -> None:
    llm_server.responder = fine_responder(image_status=500)
    report = ReadReport()
    (items,) = fine_reader(llm_server).get_memory(
        image_chat(png()), type="chat", info=INFO, mode="fine", report=report
    )
    (fallback,) = [i for i in items if "image" in i.metadata.tags]
    assert "fallback:llm_error" in fallback.metadata.tags
    assert fallback.memory.startswith("[image:") and "PNG, 64x48" in fallback.memory
    assert "Café Lua" not in fallback.memory
    # The text windows' items survive.
    assert any(i.memory == "The document discusses topics." for i in items)
    (part,) = report.parts
    assert part.status == "fallback" and "vision down" in (part.error or "")


def test_an_image_in_two_overlapping_windows_is_described_once(llm_server: LLMTestServer) -> None:
    llm_server.responder = fine_responder()
    filler = [{"role": "user", "content": f"Message {i} about the trip " * 6} for i in range(6)]
    scene = [
        *filler,
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": data_url(png())}}]},
        *filler,
    ]
    mm = fine_reader(llm_server, window={"max_tokens": 128, "overlap_tokens": 64})
    report = ReadReport()
    (items,) = mm.get_memory([scene], type="chat", info=INFO, mode="fine", report=report)
    holding = [w for w in report.windows]
    assert len(holding) > 2
    assert len([r for r in llm_server.requests if schema_name(r) == "image_memories"]) == 1
    assert len([i for i in items if "image" in i.metadata.tags]) == 1


def test_raw_file_items_are_chained_and_point_at_their_summaries(
    llm_server: LLMTestServer, tmp_path: Path
) -> None:
    llm_server.responder = fine_responder()
    path = long_docx(tmp_path)
    mm = fine_reader(
        llm_server,
        allow_local_paths=True,
        allowed_roots=[str(tmp_path)],
        window={"max_tokens": 128, "overlap_tokens": 16},
    )
    (items,) = mm.get_memory([str(path)], type="doc", info=INFO, mode="fine")
    raw = [i for i in items if i.metadata.memory_type == MemoryType.RAW_FILE]
    fine = {i.id: i for i in items if i.metadata.memory_type != MemoryType.RAW_FILE}
    assert len(raw) > 3
    assert raw[0].metadata.preceding_id is None and raw[-1].metadata.following_id is None
    for before, after in itertools.pairwise(raw):
        assert before.metadata.following_id == after.id
        assert after.metadata.preceding_id == before.id
    for chunk in raw:
        assert chunk.metadata.summary_ids
        assert all(i in fine for i in chunk.metadata.summary_ids)
        assert chunk.metadata.sources[0].chunk_index == raw.index(chunk)
    # A single-chunk document gets one, unchained.
    (single,) = [
        i
        for i in mm.get_memory(["A short note."], type="doc", info=INFO, mode="fine")[0]
        if i.metadata.memory_type == MemoryType.RAW_FILE
    ]
    assert single.metadata.preceding_id is None and single.metadata.following_id is None


# -- audio --------------------------------------------------------------------------------------


def test_audio_without_a_transcription_model_is_a_reported_placeholder() -> None:
    scene = [
        {
            "role": "user",
            "content": [
                {
                    "type": "input_audio",
                    "input_audio": {"data": b64(b"RIFF....WAVE"), "format": "wav"},
                }
            ],
        }
    ]
    report = ReadReport()
    (items,) = reader().get_memory([scene], type="chat", info=INFO, report=report)
    assert "not transcribed: no transcription model is configured" in items[0].memory
    (part,) = report.parts
    assert part.status == "unsupported" and part.type == "input_audio"
    assert report.windows[0].part_issues[0]["status"] == "unsupported"


def test_audio_is_transcribed_in_its_place(llm_server: LLMTestServer) -> None:
    llm_server.script([Reply(body={"text": "Remind me to call Ana at five."})])
    scene = [
        {"role": "user", "content": "voice note:"},
        {
            "role": "user",
            "content": [
                {
                    "type": "input_audio",
                    "input_audio": {"data": b64(b"RIFF....WAVE"), "format": "wav"},
                }
            ],
        },
    ]
    mm = reader(transcription={"model": "whisper-1", "base_url": llm_server.url, "api_key": "k"})
    report = ReadReport()
    (items,) = mm.get_memory([scene], type="chat", info=INFO, report=report)
    assert "user: Remind me to call Ana at five." in items[0].memory
    audio = next(s for s in sources(items) if s.type == "input_audio")
    assert audio.span == (0, len("Remind me to call Ana at five."))
    assert report.resources["transcribed"] == 1
    request = next(r for r in llm_server.requests if r.path.endswith("/audio/transcriptions"))
    assert request.form["model"].text == "whisper-1"


# -- CLI ----------------------------------------------------------------------------------------


def run_cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    return subprocess.run(
        [sys.executable, "-m", "memreader.cli", *args],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_cli_reads_a_multimodal_chat_file_with_files_beside_it(tmp_path: Path) -> None:
    (tmp_path / "prices.csv").write_bytes(CSV)
    (tmp_path / "cat.png").write_bytes(png())
    chat = [
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "my cat and my prices"},
                    {"type": "image_url", "image_url": {"url": "cat.png"}},
                    {"type": "file", "file": {"path": "prices.csv"}},
                    {"type": "file", "file": {"path": "/etc/hostname"}},
                ],
            }
        ]
    ]
    (tmp_path / "chat.json").write_text(json.dumps(chat))
    result = run_cli(
        "read",
        "chat.json",
        "--reader",
        "multimodal_struct",
        "--allow-root",
        ".",
        "--no-embedding",
        "--report",
        "report.json",
        "--json",
        cwd=tmp_path,
    )
    assert result.returncode == 1, result.stderr  # /etc/hostname is not read: a failure
    (item,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert "| tea | 3 |" in item["memory"] and "PNG, 64x48" in item["memory"]
    assert "outside the allowed roots" in item["memory"]  # its placeholder, beside the text
    assert result.stderr.splitlines()[-1] == (
        "memreader: 1 of 3 files, images or audio parts could not be read (see --report)"
    )
    report = json.loads((tmp_path / "report.json").read_text())
    assert [p["status"] for p in report["parts"]] == ["ok", "ok", "error"]


def test_cli_reads_a_document_by_url(tmp_path: Path, file_server: FetchTestServer) -> None:
    base = _serve(file_server, {"/r.csv": (CSV, "text/csv")})
    (tmp_path / "cfg.yaml").write_text(
        "config:\n  embedder: null\n  fetch:\n    allow_hosts: [127.0.0.1]\n"
    )
    result = run_cli(
        "read",
        f"{base}/r.csv",
        "--type",
        "doc",
        "--config",
        "cfg.yaml",
        "--json",
        cwd=tmp_path,
    )
    assert result.returncode == 0, result.stderr
    (item,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert "| coffee | 4 |" in item["memory"]
    assert item["metadata"]["sources"][0]["doc_path"] == f"{base}/r.csv"


# -- S3 -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def s3_docs(moto_s3: str) -> str:
    import boto3

    client = boto3.client("s3", endpoint_url=moto_s3, region_name="us-east-1")
    client.create_bucket(Bucket="docs")
    client.put_object(
        Bucket="docs", Key="notes/report.docx", Body=make_docx(["Emily likes oolong."])
    )
    client.put_object(Bucket="docs", Key="pics/cat.png", Body=png(), ContentType="image/png")
    return moto_s3


def test_documents_and_images_from_s3(s3_docs: str) -> None:
    mm = reader(
        fetch={
            "s3": {"endpoint_url": s3_docs, "addressing_style": "path", "allow_buckets": ["docs"]}
        }
    )
    report = ReadReport()
    result = mm.get_memory(
        [
            "s3://docs/notes/report.docx",
            [{"type": "image_url", "image_url": {"url": "s3://docs/pics/cat.png"}}],
            "s3://docs/notes/missing.docx",
        ],
        type="doc",
        info=INFO,
        report=report,
    )
    assert "Emily likes oolong." in result[0][0].memory
    assert result[0][0].metadata.sources[0].doc_path == "s3://docs/notes/report.docx"
    assert "[image: cat.png (PNG, 64x48" in result[1][0].memory
    missing = report.parts[-1]
    assert missing.status == "error" and missing.error_type == "FetchError"
    assert "no such key" in (missing.error or "")


def test_cli_reads_a_document_from_s3(tmp_path: Path, s3_docs: str) -> None:
    root = Path(__file__).resolve().parents[2]
    env_config = tmp_path / "s3.yaml"
    env_config.write_text((root / "configs" / "multimodal.yaml").read_text() + "  embedder: null\n")
    os.environ["MEMREADER_S3_ENDPOINT"] = s3_docs
    try:
        result = run_cli(
            "read",
            "s3://docs/notes/report.docx",
            "--type",
            "doc",
            "--config",
            str(env_config),
            "--json",
            cwd=tmp_path,
        )
    finally:
        del os.environ["MEMREADER_S3_ENDPOINT"]
    assert result.returncode == 0, result.stderr
    (item,) = [json.loads(line) for line in result.stdout.splitlines()]
    assert "Emily likes oolong." in item["memory"]
