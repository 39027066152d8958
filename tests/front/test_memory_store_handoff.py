"""``Memory`` hands its open store to its reader: the ``reconcile`` and ``dedup`` steps read the
store the Memory writes to, never one reopened by URL (a ``sqlite://:memory:`` store reopened is
a second, empty database: reconcile then saw no neighbour and dedup found nothing). The LLM and
the embedder are the scripted HTTP server of ``tests/llm_server.py``."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from memreader import AddResult, AsyncMemory, ConfigError, Memory, SimpleStructMemReader
from memreader import SimpleStructMemReaderConfig as ReaderConfig
from memreader.stores import open_store
from tests.fine_script import kind
from tests.llm_server import (
    LLMTestServer,
    RecordedRequest,
    Reply,
    llm_server,
    openai_completion,
    openai_embeddings,
)

__all__ = ["llm_server"]

MEMORY_STORE = "sqlite://:memory:"


def _respond(request: RecordedRequest) -> Reply:
    """Extraction: the user's last words as one user memory; reconcile: the new memory
    supersedes the first neighbour shown (``S1``)."""
    if request.api == "openai_embed":
        return Reply(body=openai_embeddings(request.inputs))
    if kind(request) == "memory_reconcile":
        decision = {"id": 1, "event": "SUPERSEDE", "target": "S1", "reason": "moved"}
        return Reply(body=openai_completion(json.dumps({"decisions": [decision]})))
    said = request.messages[-1]["content"].rsplit(": ", 1)[-1].strip()
    memory = {"key": "home", "memory_type": "UserMemory", "value": said, "source_ids": [1]}
    return Reply(body=openai_completion(json.dumps({"memory_list": [memory], "summary": "s"})))


def _config(server: LLMTestServer, **fine: Any) -> dict[str, Any]:
    http = {"base_url": server.url, "api_key": "sk-test", "max_retries": 0, "timeout": 5}
    return {
        "config": {
            "embedder": {"backend": "openai", "config": {"model": "embed", **http}},
            "llm": {"backend": "openai", "model": "m", **http},
            "fine": fine or {"passes": ["extract", "reconcile"]},
        }
    }


def _reconcile_calls(server: LLMTestServer) -> int:
    return sum(kind(r) == "memory_reconcile" for r in server.requests if r.api == "openai")


def _embed_calls(server: LLMTestServer) -> int:
    return sum(r.api == "openai_embed" for r in server.requests)


@pytest.mark.parametrize("store", [MEMORY_STORE, "file"])
def test_reconcile_reads_the_memory_store_it_writes_to(
    llm_server: LLMTestServer, store: str, tmp_path: Any
) -> None:
    llm_server.responder = _respond
    url = MEMORY_STORE if store == MEMORY_STORE else f"sqlite:///{tmp_path / 'm.db'}"
    with Memory(_config(llm_server), store=url) as m:
        first = m.add("I live in Lisbon.", user_id="ana", mode="fine")
        assert first.counts == {"ADD": 1} and _reconcile_calls(llm_server) == 0
        moved = m.add("I moved to Porto.", user_id="ana", mode="fine")
        assert _reconcile_calls(llm_server) == 1
        [event] = moved.events
        assert (event.event, event.previous_id) == ("SUPERSEDE", first.events[0].memory_id)
        assert [hit.text for hit in m.search("where does ana live", user_id="ana")] == [
            "I moved to Porto."
        ]


def test_async_memory_reconciles_against_its_own_store(llm_server: LLMTestServer) -> None:
    llm_server.responder = _respond

    async def run() -> AddResult:
        async with AsyncMemory(_config(llm_server), store=MEMORY_STORE) as m:
            await m.add("I live in Lisbon.", user_id="ana", mode="fine")
            return await m.add("I moved to Porto.", user_id="ana", mode="fine")

    moved = asyncio.run(run())
    assert _reconcile_calls(llm_server) == 1 and moved.counts == {"SUPERSEDE": 1}


def test_dedup_finds_what_the_memory_store_holds(llm_server: LLMTestServer) -> None:
    llm_server.responder = _respond
    with Memory(_config(llm_server), store=MEMORY_STORE) as m:
        m.add("I live in Lisbon.", user_id="ana")
        embedded = _embed_calls(llm_server)
        again = m.add("I live in Lisbon.", user_id="ana")
    # The stored item is found before embedding: no vector is asked for it again.
    assert again.counts == {"NONE": 1} and again.report.resources["already_stored"] == 1
    assert _embed_calls(llm_server) == embedded


def test_a_reader_without_a_memory_opens_its_config_store_once(
    llm_server: LLMTestServer, tmp_path: Any
) -> None:
    llm_server.responder = _respond
    url = f"sqlite:///{tmp_path / 'r.db'}"
    reader = SimpleStructMemReader(ReaderConfig(**_config(llm_server)["config"], store=url))
    try:
        assert reader.runtime.store() is reader.runtime.store()  # opened once, kept
        with pytest.raises(ConfigError, match="already opened its config's store"):
            reader.runtime.use_store(open_store(MEMORY_STORE, text_only=True))
    finally:
        reader.close()
