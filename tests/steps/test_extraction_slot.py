"""Fine extraction's LLM slot: a document's windows go to ``document_parser_llm`` when that slot is
set (as MemOS sends documents to it), chats and unset slots to ``llm``; refinement of document
items likewise. Each slot is a scripted LLM of its own, so the requests each received are
counted per slot."""

from __future__ import annotations

from typing import Any

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.memos import MemReaderFactory
from memreader.steps.report import ReadReport
from memreader.testing import ScriptedLLM, ScriptedRequest
from tests.common import HASH_EMBEDDER, INFO
from tests.fine_script import kind, scripted_responder
from tests.llm_server import LLMTestServer, llm_server
from tests.memos.shapes import memos_llm, memos_reader_config

__all__ = ["llm_server"]

DOC = ["# Travel\n\nEmily moved to Lisbon in May 2026. She starts piano lessons soon."]
CHAT = [[{"role": "user", "content": "I moved to Lisbon."}]]


def answer(request: ScriptedRequest) -> Any:
    if request.schema_name == "memory_extraction":
        return {
            "memory_list": [
                {
                    "key": "city",
                    "memory_type": "UserMemory",
                    "value": "Emily lives in Lisbon.",
                    "source_ids": [1],
                }
            ],
            "summary": "Emily moved.",
        }
    return {"results": []}


def reader(document: bool) -> tuple[SimpleStructMemReader, ScriptedLLM, ScriptedLLM]:
    main, docs = ScriptedLLM(answer), ScriptedLLM(answer)
    slots: dict[str, Any] = {"llm": main.config()}
    if document:
        slots["document_parser_llm"] = docs.config()
    config = SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER, **slots)
    return SimpleStructMemReader(config), main, docs


def extractions(llm: ScriptedLLM) -> int:
    return sum(r.schema_name == "memory_extraction" for r in llm.requests)


def test_a_fine_document_read_goes_to_document_parser_llm() -> None:
    read, main, docs = reader(document=True)
    report = ReadReport()
    items = read.get_memory(DOC, "doc", dict(INFO), mode="fine", report=report)
    assert [i.memory for i in items[0]] == ["Emily lives in Lisbon."]
    assert (extractions(docs), extractions(main)) == (1, 0)
    assert report.usage.requests_by_slot["document_parser_llm"] == 1


def test_chats_and_an_unset_document_slot_stay_with_llm() -> None:
    read, main, docs = reader(document=True)
    read.get_memory(CHAT, "chat", dict(INFO), mode="fine")
    assert (extractions(docs), extractions(main)) == (0, 1)
    read, main, _ = reader(document=False)
    read.get_memory(DOC, "doc", dict(INFO), mode="fine")
    assert extractions(main) == 1


def test_refining_document_items_goes_to_document_parser_llm() -> None:
    read, main, docs = reader(document=True)
    stored = read.get_memory(DOC, "doc", dict(INFO), mode="fast")[0]
    read.fine_transfer_simple_mem(stored, "doc")
    assert (extractions(docs), extractions(main)) == (1, 0)


def test_a_memos_config_sends_documents_to_its_document_parser_llm(
    llm_server: LLMTestServer,
) -> None:
    llm_server.responder = scripted_responder()
    raw = memos_reader_config(llm_server.url, document_parser_llm=memos_llm(llm_server.url, "docs"))
    read = MemReaderFactory.from_config(raw)
    read.get_memory(DOC, "doc", dict(INFO))  # MemOS's default mode: fine
    models = [(kind(r), r.json["model"]) for r in llm_server.requests]
    assert models == [("memory_extraction", "docs")]
