"""Refining stored fast items whose sources are images (``fine_transfer_simple_mem`` on the
multimodal reader): the images go to the ``image_parser_llm`` slot again, through the same
fetcher and limits as the first read, against a real scripted HTTP server."""

from __future__ import annotations

import asyncio
import io
import json
from base64 import b64decode, b64encode
from pathlib import Path
from typing import Any

import httpx
import pytest
from PIL import Image

from memreader import ReadReport
from memreader.factory import MemReaderConfigFactory
from memreader.items import TextualMemoryItem
from memreader.readers import MultiModalStructMemReader, MultiModalStructMemReaderConfig
from memreader.service import ServiceConfig, ServiceSettings, create_app
from tests.batch.jobs import cli, output_items, write_job
from tests.common import HASH_EMBEDDER, INFO
from tests.llm_server import LLMTestServer, RecordedRequest, Reply, llm_server, openai_completion
from tests.service.http_client import auth, key_entries
from tests.service_server import running

__all__ = ["llm_server"]

pytestmark = pytest.mark.timeout(120)

DESCRIPTIONS = {
    "red": "A receipt from Café Lua showing a total of 42 euros.",
    "blue": "A blue boarding pass for a flight to Lisbon.",
}
VISION_MEMORY = {"red": "The user paid 42 euros at Café Lua.", "blue": "The user flies to Lisbon."}
TEXT_MEMORY = "The user had lunch at Café Lua."


def png(path: Path, color: str) -> Path:
    Image.new("RGB", (64, 48), color).save(path, "PNG")
    return path


def schema_name(request: RecordedRequest) -> str:
    fmt = (request.json or {}).get("response_format") or {}
    return str(fmt.get("json_schema", {}).get("name", ""))


def vision_requests(server: LLMTestServer) -> list[RecordedRequest]:
    return [r for r in server.requests if schema_name(r) == "image_memories"]


def color_of(request: RecordedRequest) -> str:
    """Which test picture a vision request carries (by its pixels)."""
    url = request.json["messages"][-1]["content"][1]["image_url"]["url"]
    pixel = Image.open(io.BytesIO(b64decode(url.split(",", 1)[1]))).getpixel((0, 0))
    return "red" if pixel[0] > 200 else "blue"


def vision_answer(color: str) -> Reply:
    answer = {
        "memory_list": [
            {
                "key": "image fact",
                "memory_type": "UserMemory",
                "value": VISION_MEMORY[color],
                "tags": ["receipt"],
                "source_ids": [1],
            }
        ],
        "summary": DESCRIPTIONS[color],
    }
    return Reply(body=openai_completion(json.dumps(answer)))


def text_answer() -> Reply:
    answer = {
        "memory_list": [
            {
                "key": "lunch",
                "memory_type": "UserMemory",
                "value": TEXT_MEMORY,
                "tags": [],
                "source_ids": [1],
            }
        ],
        "summary": "s",
    }
    return Reply(body=openai_completion(json.dumps(answer)))


def responder(broken: dict[str, Reply] | None = None) -> Any:
    """Vision requests answered by picture (``broken`` overrides a colour), the rest by a
    fixed extraction."""

    def respond(request: RecordedRequest) -> Reply:
        name = schema_name(request)
        if name == "image_memories":
            color = color_of(request)
            return (broken or {}).get(color) or vision_answer(color)
        if name == "memory_extraction":
            return text_answer()
        return Reply(body=openai_completion(json.dumps({"results": []})))

    return respond


def reader_config(server: LLMTestServer, root: Path, **overrides: Any) -> dict[str, Any]:
    llm = {
        "backend": "openai",
        "model": "text-model",
        "base_url": server.url,
        "api_key": "sk-test",
        "max_retries": 0,
        "backoff_base": 0.01,
        "backoff_max": 0.02,
        "timeout": 5,
    }
    config = {
        "embedder": HASH_EMBEDDER,
        "llm": llm,
        "image_parser_llm": {**llm, "model": "vision-model"},
        "allow_local_paths": True,
        "allowed_roots": [str(root)],
        "base_dir": str(root),
        "fine": {"hallucination_filter": False, "rewrite": "off"},
    }
    return {**config, **overrides}


def make_reader(server: LLMTestServer, root: Path, **overrides: Any) -> MultiModalStructMemReader:
    config = MultiModalStructMemReaderConfig(**reader_config(server, root, **overrides))
    return MultiModalStructMemReader(config)


def fast_items(reader: MultiModalStructMemReader, *images: str) -> list[TextualMemoryItem]:
    """The fast items of a chat that shares ``images`` (paths under the reader's base_dir)."""
    content: list[dict[str, Any]] = [{"type": "text", "text": "I had lunch at Café Lua today."}]
    content += [{"type": "image_url", "image_url": {"url": image}} for image in images]
    chat = [{"role": "user", "content": content}, {"role": "assistant", "content": "Noted."}]
    (items,) = reader.get_memory([chat], type="chat", info=INFO)
    return items


@pytest.fixture
def pictures(tmp_path: Path) -> Path:
    png(tmp_path / "receipt.png", "red")
    png(tmp_path / "pass.png", "blue")
    return tmp_path


def test_an_image_item_is_refined_from_the_vision_answer_with_its_provenance(
    llm_server: LLMTestServer, pictures: Path
) -> None:
    llm_server.responder = responder()
    reader = make_reader(llm_server, pictures)
    (fast,) = fast_items(reader, "receipt.png", "pass.png", "receipt.png")
    report = ReadReport()
    (refined,) = reader.fine_transfer_simple_mem([fast], report=report)
    # One request per distinct picture, to the image slot's model, with the item's words.
    vision = vision_requests(llm_server)
    assert sorted(color_of(r) for r in vision) == ["blue", "red"]
    assert {r.json["model"] for r in vision} == {"vision-model"}
    assert "I had lunch at Café Lua today." in vision[0].json["messages"][-1]["content"][0]["text"]
    # The vision model's memories are items of the stored item, citing the image's source.
    by_memory = {i.memory: i for i in refined}
    red = by_memory[VISION_MEMORY["red"]]
    assert "image" in red.metadata.tags and "mode:fine" in red.metadata.tags
    assert red.metadata.refined_from == fast.id
    (source,) = red.metadata.sources
    stored = fast.metadata.sources[1]
    assert (source.type, source.scene_index, source.message_index, source.part_index) == (
        stored.type,
        stored.scene_index,
        stored.message_index,
        stored.part_index,
    )
    assert source.doc_path == "receipt.png"
    assert DESCRIPTIONS["red"] in source.content and source.content.startswith("[image: receipt")
    assert VISION_MEMORY["blue"] in by_memory
    # The text refinement reads the descriptions in the image lines, and keeps its spans.
    (extraction,) = [r for r in llm_server.requests if schema_name(r) == "memory_extraction"]
    prompt = json.dumps(extraction.json, ensure_ascii=False)
    assert DESCRIPTIONS["red"] in prompt and DESCRIPTIONS["blue"] in prompt
    text = by_memory[TEXT_MEMORY]
    assert text.metadata.refined_from == fast.id
    assert text.metadata.sources[0].span == fast.metadata.sources[0].span
    assert [(p.status, p.source) for p in report.parts] == [
        ("ok", "receipt.png"),
        ("ok", "pass.png"),
        ("reused", "receipt.png"),
    ]
    assert report.resources["images_described"] == 2
    # The caller's stored item is not changed; the same items give the same ids.
    assert fast.metadata.sources[1].content == "[image: receipt.png (PNG, 64x48, 136 B)]"
    again = make_reader(llm_server, pictures).fine_transfer_simple_mem([fast])
    assert [i.id for i in again[0]] == [i.id for i in refined]


def test_a_text_item_sends_nothing_to_the_image_slot(
    llm_server: LLMTestServer, pictures: Path
) -> None:
    llm_server.responder = responder()
    reader = make_reader(llm_server, pictures)
    (fast,) = fast_items(reader)
    report = ReadReport()
    (refined,) = reader.fine_transfer_simple_mem([fast.to_dict()], report=report)
    assert vision_requests(llm_server) == []
    assert [i.memory for i in refined] == [TEXT_MEMORY]
    assert report.parts == []


@pytest.mark.parametrize(
    ("ref", "error_type"),
    [
        ("/etc/passwd", "DocumentError"),  # outside allowed_roots
        ("file:///etc/passwd", "BlockedAddressError"),  # a scheme not allowed
        ("../outside.png", "DocumentError"),  # climbs out of the root
        ("http://169.254.169.254/latest/meta-data/x.png", "BlockedAddressError"),
        ("http://127.0.0.1:9/x.png", "BlockedAddressError"),
        ("s3://private-bucket/secret.png", "BlockedBucketError"),
    ],
)
def test_a_stored_source_outside_what_the_operator_allowed_is_not_read(
    llm_server: LLMTestServer, pictures: Path, ref: str, error_type: str
) -> None:
    llm_server.responder = responder()
    png(pictures.parent / "outside.png", "red")
    reader = make_reader(llm_server, pictures)
    (fast,) = fast_items(reader, "receipt.png")
    data = fast.to_dict()
    data["metadata"]["sources"][1]["doc_path"] = ref  # a hostile stored item
    report = ReadReport()
    (refined,) = reader.fine_transfer_simple_mem([data], report=report)
    assert vision_requests(llm_server) == []
    (part,) = report.parts
    assert (part.status, part.error_type) == ("error", error_type)
    assert "refined from its text" in (part.detail or "")
    # The item is refined from its text all the same, with the reason in its window's notes.
    assert [i.memory for i in refined] == [TEXT_MEMORY]
    assert any("image source 1 not described" in n for n in report.windows[0].notes)


def test_an_inline_image_is_kept_as_prepared_and_sent_again(
    llm_server: LLMTestServer, pictures: Path
) -> None:
    llm_server.responder = responder()
    reader = make_reader(llm_server, pictures)
    inline = "data:image/png;base64," + b64encode((pictures / "receipt.png").read_bytes()).decode()
    (fast,) = fast_items(reader, inline)
    (kept,) = [s for s in fast.metadata.sources if s.type == "image_url"]
    assert kept.doc_path == "inline" and (kept.image_data_url or "").startswith("data:image/jpeg")
    report = ReadReport()
    (refined,) = reader.fine_transfer_simple_mem([fast.to_dict()], report=report)
    (vision,) = vision_requests(llm_server)
    assert color_of(vision) == "red"
    assert VISION_MEMORY["red"] in [i.memory for i in refined]
    assert [(p.status, p.source) for p in report.parts] == [("ok", "inline")]


def test_an_inline_image_over_the_keep_limit_is_reported_not_kept(
    llm_server: LLMTestServer, pictures: Path
) -> None:
    llm_server.responder = responder()
    reader = make_reader(llm_server, pictures, images={"keep_inline_bytes": 0})
    inline = "data:image/png;base64," + b64encode((pictures / "receipt.png").read_bytes()).decode()
    (fast,) = fast_items(reader, inline)
    assert fast.metadata.sources[1].image_data_url is None
    report = ReadReport()
    (refined,) = reader.fine_transfer_simple_mem([fast], report=report)
    assert vision_requests(llm_server) == []
    (part,) = report.parts
    assert part.status == "unsupported" and "kept no reference" in (part.detail or "")
    assert [i.memory for i in refined] == [TEXT_MEMORY]


def test_images_describe_off_refines_from_the_text_without_reading(
    llm_server: LLMTestServer, pictures: Path
) -> None:
    llm_server.responder = responder()
    reader = make_reader(llm_server, pictures, images={"describe": False})
    (fast,) = fast_items(reader, "receipt.png")
    report = ReadReport()
    (refined,) = reader.fine_transfer_simple_mem([fast], report=report)
    assert vision_requests(llm_server) == [] and "fetched" not in report.resources
    (part,) = report.parts
    assert part.status == "unsupported" and "images.describe is off" in (part.detail or "")
    assert [i.memory for i in refined] == [TEXT_MEMORY]


def test_a_stored_item_with_a_bad_kept_image_is_that_items_error(
    llm_server: LLMTestServer, pictures: Path
) -> None:
    llm_server.responder = responder()
    reader = make_reader(llm_server, pictures)
    (fast,) = fast_items(reader, "receipt.png")
    (other,) = fast_items(reader)
    bad = fast.to_dict()
    bad["metadata"]["sources"][1]["image_data_url"] = "file:///etc/passwd"
    big = fast.to_dict()  # a kept image over images.max_bytes is not decoded
    big["metadata"]["sources"][1]["image_data_url"] = "data:image/png;base64," + "A" * 4000
    small = make_reader(llm_server, pictures, images={"max_bytes": 1000})
    report = ReadReport()
    refused, refined, too_big = small.fine_transfer_simple_mem([bad, other, big], report=report)
    assert refused == [] and "image_data_url" in (report.windows[0].error or "")
    assert [i.memory for i in refined] == [TEXT_MEMORY]
    assert [i.memory for i in too_big] == [TEXT_MEMORY]
    (part,) = report.parts
    assert (part.status, part.error_type) == ("error", "DocumentError")
    assert "over the" in (part.error or "") and "(1000)" in (part.error or "")
    assert vision_requests(llm_server) == []


@pytest.mark.parametrize(
    "broken",
    [
        Reply(status=500, body={"error": {"message": "vision down"}}),
        Reply(body=openai_completion("{not json")),
        Reply(body=openai_completion(json.dumps({"memory_list": "nope", "summary": 3}))),
        Reply(body=openai_completion(json.dumps({"memory_list": [], "summary": ""}))),
        Reply(delay=3.0, body=openai_completion("{}")),
    ],
    ids=["500", "malformed", "wrong-shape", "empty", "timeout"],
)
def test_a_failing_vision_reply_falls_back_for_that_item_only(
    llm_server: LLMTestServer, pictures: Path, broken: Reply
) -> None:
    llm_server.responder = responder({"blue": broken})
    reader = make_reader(llm_server, pictures)
    (red,) = fast_items(reader, "receipt.png")
    (blue,) = fast_items(reader, "pass.png")
    vision_timeout = {**reader_config(llm_server, pictures)["image_parser_llm"], "timeout": 1}
    reader = make_reader(llm_server, pictures, image_parser_llm=vision_timeout)
    report = ReadReport()
    red_items, blue_items = reader.fine_transfer_simple_mem([red, blue], report=report)
    assert VISION_MEMORY["red"] in [i.memory for i in red_items]
    # The blue item: refined from its text, the image's failure in the report.
    assert [i.memory for i in blue_items] == [TEXT_MEMORY]
    assert not any("image" in i.metadata.tags for i in blue_items)
    statuses = {p.source: p.status for p in report.parts}
    assert statuses == {"receipt.png": "ok", "pass.png": "fallback"}
    blue_part = next(p for p in report.parts if p.source == "pass.png")
    assert blue_part.error and "not described" in (blue_part.detail or "")


def test_async_refinement_matches_sync(llm_server: LLMTestServer, pictures: Path) -> None:
    llm_server.responder = responder()
    reader = make_reader(llm_server, pictures)
    (fast,) = fast_items(reader, "receipt.png")
    (sync,) = reader.fine_transfer_simple_mem([fast])
    llm_server.requests.clear()
    fresh = make_reader(llm_server, pictures)
    (async_items,) = asyncio.run(fresh.afine_transfer_simple_mem([fast]))
    assert len(vision_requests(llm_server)) == 1
    assert [i.id for i in async_items] == [i.id for i in sync]


def test_the_service_refine_route_reads_images_only_where_its_content_rules_allow(
    llm_server: LLMTestServer, pictures: Path
) -> None:
    llm_server.responder = responder()
    config = {**reader_config(llm_server, pictures), "store": "sqlite:///memories.db"}
    factory = MemReaderConfigFactory.from_dict({"backend": "multimodal_struct", "config": config})
    (fast,) = fast_items(make_reader(llm_server, pictures), "receipt.png")
    data = fast.to_dict()
    data["metadata"]["user_id"] = "alice"

    def refine(**content: bool) -> dict[str, Any]:
        settings = ServiceSettings(keys=key_entries(), content=content)
        app = create_app(ServiceConfig(factory, settings, base_dir=str(pictures)))
        with running(app) as url:
            answer = httpx.post(
                f"{url}/v1/refine", json={"items": [data]}, headers=auth("alice"), timeout=60
            )
        assert answer.status_code == 200, answer.text
        body: dict[str, Any] = answer.json()
        return body

    # A body arriving over HTTP may not name server files unless the service allows it.
    closed = refine()
    assert [i["memory"] for i in closed["items"][0]] == [TEXT_MEMORY]
    assert [p["error_type"] for p in closed["report"]["parts"]] == ["DocumentError"]
    assert vision_requests(llm_server) == []
    opened = refine(allow_local_paths=True)
    memories = [i["memory"] for i in opened["items"][0]]
    assert VISION_MEMORY["red"] in memories and TEXT_MEMORY in memories
    assert [p["status"] for p in opened["report"]["parts"]] == ["ok"]
    assert len(vision_requests(llm_server)) == 1


def test_the_cli_refine_job_describes_the_images(llm_server: LLMTestServer, pictures: Path) -> None:
    llm_server.responder = responder()
    (fast,) = fast_items(make_reader(llm_server, pictures), "receipt.png")
    (pictures / "fast").mkdir()
    (pictures / "fast" / "items.jsonl").write_text(json.dumps(fast.to_dict()) + "\n")
    reader = {"backend": "multimodal_struct", "config": reader_config(llm_server, pictures)}
    job = {"reader": reader, "inputs": [{"path": "fast", "format": "jsonl"}]}
    path = write_job(pictures, {**job, "output": {"path": "fine"}}, "refine.yaml")
    result = cli("refine", str(path), "--quiet", cwd=pictures)
    assert result.returncode == 0, result.stderr
    fine = [json.loads(line) for line in output_items(pictures / "fine")]
    assert VISION_MEMORY["red"] in [i["memory"] for i in fine]
    assert {i["metadata"]["refined_from"] for i in fine} == {fast.id}
    assert len(vision_requests(llm_server)) == 1
