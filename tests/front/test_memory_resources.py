"""Files and URLs handed to ``Memory.add``: a ``Path`` is read as ``memreader read`` reads it
(a JSON chat, else a document converted by markitdown), a ``pydantic.AnyUrl`` is fetched through
the reader's fetch settings; a plain string stays a message."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import AnyUrl

from memreader import AsyncMemory, Memory
from memreader.errors import BlockedAddressError, DocumentError, InputError
from tests.docgen import make_docx
from tests.http_fixtures import FetchTestServer, answer

HASH = {"embedder": {"backend": "hash"}}


@pytest.fixture
def memory() -> Iterator[Memory]:
    with Memory({"config": HASH}, store="sqlite://:memory:") as m:
        yield m


def test_a_path_to_a_document_is_read_and_keeps_its_path(memory: Memory, tmp_path: Path) -> None:
    notes = tmp_path / "trip notes.docx"
    notes.write_bytes(make_docx(["Ana flies to Oslo on Friday.", "Her seat is 14C."]))
    result = memory.add(notes, user_id="ana")
    assert result.type == "doc" and result.counts == {"ADD": 1}
    source = result.items[0].metadata.sources[0]
    assert source.doc_path == str(notes)
    assert "Oslo" in result.items[0].memory  # converted from DOCX, not the bytes
    assert memory.search("which seat", user_id="ana")[0].id == result.events[0].memory_id
    assert memory.add(notes, user_id="ana").counts == {"NONE": 1}  # same file, same session


def test_a_json_chat_file_is_a_chat(memory: Memory, tmp_path: Path) -> None:
    chat = tmp_path / "chat.json"
    chat.write_text(json.dumps([{"role": "user", "content": "I play the cello."}]), "utf-8")
    result = memory.add(chat, user_id="ana")
    assert result.type == "chat" and [i.memory for i in result.items] == ["user: I play the cello."]
    scenes = tmp_path / "scenes.json"
    two = [[{"role": "user", "content": "I live in Porto."}], [{"role": "user", "content": "Hi"}]]
    scenes.write_text(json.dumps(two), "utf-8")
    assert memory.add(scenes, user_id="ana").type == "chat"


def test_json_that_is_no_chat_is_a_document_unless_chat_was_asked(
    memory: Memory, tmp_path: Path
) -> None:
    settings = tmp_path / "settings.json"
    settings.write_text(json.dumps({"theme": "dark", "language": "pt"}), "utf-8")
    assert memory.add(settings, user_id="ana").type == "doc"
    with pytest.raises(InputError, match="holds no chat"):
        memory.add(settings, user_id="ana", type="chat")
    text = tmp_path / "notes.txt"
    text.write_text("not json", "utf-8")
    with pytest.raises(InputError, match="not a JSON chat file"):
        memory.add(text, user_id="ana", type="chat")


def test_bad_paths_are_typed_errors_naming_them(memory: Memory, tmp_path: Path) -> None:
    with pytest.raises(InputError, match=r"missing\.md"):
        memory.add(tmp_path / "missing.md", user_id="ana")
    with pytest.raises(InputError, match="is not a file"):
        memory.add(tmp_path, user_id="ana")
    bank = tmp_path / "bank.json"
    bank.write_text(json.dumps({"ana": {"history": {"2024-01-01": []}}}), "utf-8")
    with pytest.raises(InputError, match="MemoryBank file"):
        memory.add(bank, user_id="ana")
    with pytest.raises(InputError, match="user_id"):
        memory.add(tmp_path / "missing.md")  # the owner is checked before anything is read


def test_the_readers_byte_limit_holds_for_a_path(tmp_path: Path) -> None:
    big = tmp_path / "big.md"
    big.write_text("word " * 400, "utf-8")
    config = {"config": {**HASH, "max_file_bytes": 1000}}
    with Memory(config, store="sqlite://:memory:") as m, pytest.raises(DocumentError, match="1000"):
        m.add(big, user_id="ana")


def test_a_path_string_in_content_is_still_a_message(memory: Memory, tmp_path: Path) -> None:
    secret = tmp_path / "secret.md"
    secret.write_text("the launch code is 0000", "utf-8")
    result = memory.add(str(secret), user_id="ana")
    assert [i.memory for i in result.items] == [f"user: {secret}"]
    doc = memory.add(str(secret), user_id="ana", type="doc")
    assert "launch code" not in doc.items[0].memory  # a string is text, never read as a path


@pytest.fixture
def served() -> Iterator[str]:
    body = b"# Packing list\n\nAna packs her blue raincoat.\n"
    with FetchTestServer() as server:
        yield server.route("/packing.md", answer(body, "text/markdown")) + "?token=x"


def test_a_url_is_fetched_only_where_the_fetch_settings_allow(memory: Memory, served: str) -> None:
    with pytest.raises(BlockedAddressError):  # loopback is not public: the default guard
        memory.add(AnyUrl(served), user_id="ana")
    config = {
        "backend": "multimodal_struct",
        "config": {**HASH, "fetch": {"allow_hosts": ["127.0.0.1"]}},
    }
    with Memory(config, store="sqlite://:memory:") as m:
        result = m.add(AnyUrl(served), user_id="ana")
        assert result.type == "doc" and "blue raincoat" in result.items[0].memory
        doc_path = result.items[0].metadata.sources[0].doc_path
        assert doc_path is not None and doc_path.endswith("/packing.md")  # no query, no token
        with pytest.raises(InputError, match="URL is read as a document"):
            m.add(AnyUrl(served), user_id="ana", type="chat")


def test_async_memory_reads_a_path_too(tmp_path: Path) -> None:
    notes = tmp_path / "notes.md"
    notes.write_text("Ana's gate is B12.", "utf-8")

    async def run() -> list[str]:
        async with AsyncMemory({"config": HASH}, store="sqlite://:memory:") as m:
            await m.add(notes, user_id="ana")
            return [hit.text for hit in await m.search("gate", user_id="ana")]

    assert asyncio.run(run()) == ["Ana's gate is B12."]
