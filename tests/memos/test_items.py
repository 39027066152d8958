"""MemOS items read as memreader's (``TextualMemoryItem.from_dict``), memreader's written in
MemOS's shape (``to_memos_dict()``, validated by the mirror of MemOS's model in
:mod:`tests.memos.memos_model`), both ways without loss, and the store's lifecycle as MemOS's
status on both store backends."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone
from typing import Any

import pytest

from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.errors import InputError, MemOSItemError
from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.memos import LIFECYCLE_STATUS, stored_to_memos_dict
from memreader.stores import SourceSelector, open_store
from memreader.testing import HashEmbedder
from tests.common import HASH_EMBEDDER
from tests.memos import memos_model
from tests.memos.shapes import INFO, memos_fast_item

T0 = datetime(2026, 5, 10, 9, 0, tzinfo=timezone.utc)


def read_items() -> list[TextualMemoryItem]:
    """memreader items of every kind of source: chat (a developer role MemOS has not) and doc."""
    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER))
    chat = [
        [
            {"role": "user", "content": "I love tea.", "chat_time": "2026-01-01T10:00:00"},
            {"role": "developer", "content": "Be brief.", "name": "ops"},
        ]
    ]
    items = reader.get_memory(chat, "chat", dict(INFO))[0]
    items += reader.get_memory(["# Notes\n\nTea is a drink."], "doc", dict(INFO))[0]
    items[0].metadata.importance = 0.5
    items[0].metadata.categories = ["food"]
    return items


def test_memreader_items_round_trip_through_memos_shape() -> None:
    for item in read_items():
        memos = item.to_memos_dict()
        model = memos_model.TextualMemoryItem.from_dict(memos)  # MemOS accepts it
        assert isinstance(model.metadata, memos_model.TreeNodeTextualMemoryMetadata)
        assert model.metadata.status == "activated" and model.metadata.is_fast is True
        assert TextualMemoryItem.from_dict(memos) == item
        assert TextualMemoryItem.from_dict(model.to_dict()) == item


def test_scoped_items_round_trip_and_memos_visibility_is_kept_apart() -> None:
    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER))
    chat = [[{"role": "user", "content": "I love tea."}, {"role": "assistant", "content": "Nice."}]]
    info = dict(INFO, agent_id="a1", task_id="t1", visibility="shared")
    item = reader.get_memory(chat, "chat", info)[0][0]
    memos = item.to_memos_dict()
    model = memos_model.TextualMemoryItem.from_dict(memos)  # MemOS accepts it
    assert model.metadata.visibility is None  # memreader's scope travels in internal_info
    back = TextualMemoryItem.from_dict(memos)
    assert back == item
    assert (back.metadata.agent_id, back.metadata.task_id, back.metadata.visibility) == (
        "a1",
        "t1",
        "shared",
    )
    # MemOS's own visibility (another meaning) is kept as a MemOS field, never read as ours.
    memos["metadata"]["visibility"] = "public"
    read = TextualMemoryItem.from_dict(memos)
    assert read.metadata.visibility == "shared"
    assert read.metadata.info["memos"]["fields"]["visibility"] == "public"
    assert memos_model.TextualMemoryItem.from_dict(read.to_memos_dict()).metadata.visibility == (
        "public"
    )


def test_memreader_metadata_validates_as_memos_metadata_as_it_is() -> None:
    reader = SimpleStructMemReader(SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER))
    chat = [[{"role": "user", "content": "I love tea."}, {"role": "assistant", "content": "Nice."}]]
    for item in reader.get_memory(chat, "chat", dict(INFO))[0]:
        meta = memos_model.TreeNodeTextualMemoryMetadata.model_validate(item.to_dict()["metadata"])
        assert meta.user_id == "u1" and meta.sources and meta.sources[0].content == "I love tea."


def test_the_core_reader_refines_memos_item_objects() -> None:
    from memreader.testing import ScriptedLLM

    extraction = {
        "memory_list": [
            {
                "key": "city",
                "memory_type": "UserMemory",
                "value": "Emily lives in Lisbon.",
                "source_ids": [1],
            }
        ],
        "summary": "",
    }
    llm = ScriptedLLM(
        lambda r: extraction if r.schema_name == "memory_extraction" else {"results": []}
    )
    config = SimpleStructMemReaderConfig(embedder=HASH_EMBEDDER, llm=llm.config())
    reader = SimpleStructMemReader(config)
    item = memos_model.TextualMemoryItem.from_dict(memos_fast_item())
    refined = reader.fine_transfer_simple_mem([item, memos_fast_item()], "chat")
    assert [[i.memory for i in group] for group in refined] == [["Emily lives in Lisbon."]] * 2


def test_memos_shape_keeps_exact_provenance_beside_memos_fields() -> None:
    item = read_items()[0]
    sources = item.to_memos_dict()["metadata"]["sources"]
    assert sources[1]["role"] == "system" and sources[1]["memreader_role"] == "developer"
    assert sources[0]["index"] == 0 and sources[0]["span"] == [0, 11]
    assert sources[0]["content"] == "I love tea."


def test_a_non_uuid_id_gets_a_stable_uuid_and_comes_back() -> None:
    meta = TextualMemoryItemMetadata(
        user_id="u1", session_id="s1", sources=[SourceMessage(scene_index=0, message_index=0)]
    )
    item = TextualMemoryItem(id="note-1", memory="m", metadata=meta)
    memos = item.to_memos_dict(status="archived")
    assert memos["id"] == item.to_memos_dict()["id"] != "note-1"
    assert memos_model.TextualMemoryItem.from_dict(memos).metadata.status == "archived"
    assert TextualMemoryItem.from_dict(memos) == item


def test_a_memos_item_is_read_keeping_what_memreader_has_no_field_for() -> None:
    item = TextualMemoryItem.from_dict(memos_fast_item())
    meta = item.metadata
    assert meta.created_at == datetime(2026, 5, 10, 9, 0, tzinfo=timezone.utc)
    assert (meta.key, meta.confidence, meta.memory_type.value) == ("I'm Emily", 0.99, "UserMemory")
    source = meta.sources[0]
    assert (source.scene_index, source.message_index, source.span) == (0, 4, None)
    memos = meta.info["memos"]
    assert memos["fields"] == {
        "version": 3,
        "history": memos_fast_item()["metadata"]["history"],
        "working_binding": "wm-7",
        "visibility": "private",
        "updated_at": "2026-05-11T08:00:00",
        "covered_history": ["old-1"],
        "usage": ["2026-05-12 recall"],
        "internal_info": {"rank": 2},
    }
    assert memos["sources"] == [{"file_info": {"name": "note.txt"}}]
    assert memos["unrecovered"] == [
        "created_at: the MemOS time has no zone; read as UTC",
        "scene_index: MemOS sources name no scene; 0 assumed",
        "span: a MemOS source has no character span",
    ]
    assert (meta.info["manager_user_id"], meta.info["project_id"]) == ("boss", "p9")
    # ...and written back, MemOS gets its item again.
    back = memos_model.TextualMemoryItem.from_dict(item.to_memos_dict()).to_dict()
    original = memos_model.TextualMemoryItem.from_dict(memos_fast_item()).to_dict()
    original["metadata"]["created_at"] = "2026-05-10T09:00:00Z"
    back["metadata"].pop("internal_info")["memreader"]  # the unrecovered notes travel there
    original["metadata"].pop("internal_info")
    back["metadata"]["sources"][0].pop("scene_index")
    back["metadata"]["sources"][0].pop("message_index")
    assert back == original
    assert TextualMemoryItem.from_dict(item.to_memos_dict()) == item


@pytest.mark.parametrize(
    "metadata",
    [
        {"user_id": None, "sources": None},  # MemOS allows both; the memory stands as the source
        {"user_id": "u1", "session_id": "s1", "sources": ["a note"]},
        {"user_id": "u1", "session_id": "s1", "sources": [{"role": "user", "content": None}]},
    ],
)
def test_sparse_memos_items_are_read_and_say_what_is_missing(metadata: dict[str, Any]) -> None:
    item = TextualMemoryItem.from_dict(
        {"id": "x", "memory": "Emily likes tea.", "metadata": metadata}
    )
    assert any(s.content for s in item.metadata.sources)
    if metadata["user_id"] is None:
        assert "user_id: the MemOS item names none" in item.metadata.info["memos"]["unrecovered"]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (
            {"memory": 3, "metadata": {"version": 1}},
            "a MemOS item's memory must be a string, got int",
        ),
        (
            {"memory": "m", "metadata": {"version": 1, "created_at": "yesterday"}},
            "a MemOS item's created_at 'yesterday' is not an ISO 8601 time",
        ),
        (
            {"memory": "m", "metadata": {"version": 1, "created_at": 5}},
            "a MemOS item's created_at must be an ISO 8601 string, got int",
        ),
        (
            {"memory": "m", "metadata": {"version": 1, "sources": [3]}},
            "source 0 of a MemOS item must be a mapping",
        ),
        (
            {"memory": "m", "metadata": {"version": 1, "sources": {"a": 1}}},
            "a MemOS item's sources must be a list, got dict",
        ),
    ],
)
def test_bad_memos_items_raise_a_typed_error(data: dict[str, Any], message: str) -> None:
    with pytest.raises(MemOSItemError) as caught:
        TextualMemoryItem.from_dict(data)
    assert str(caught.value) == message
    assert isinstance(caught.value, InputError)


def test_the_stores_lifecycle_is_memos_status(url: str) -> None:
    items = read_items()[:1]
    newer = items[0].model_copy(update={"id": "b" * 32, "memory": "user: I love coffee."})
    with open_store(url, embedder=HashEmbedder()) as store:
        store.write(items, replaces=SourceSelector(input_key="in-1"), now=T0)
        stored = store.get(items[0].id, user_id="u1")
        assert stored is not None
        active = stored_to_memos_dict(stored)
        store.write([newer], replaces=SourceSelector(input_key="in-1"), now=T0 + timedelta(days=1))
        superseded = stored_to_memos_dict(store.get(items[0].id, user_id="u1"))  # type: ignore[arg-type]
        store.forget(SourceSelector(input_key="in-1"), user_id="u1", now=T0 + timedelta(days=2))
        expired = stored_to_memos_dict(store.get(newer.id, user_id="u1"))  # type: ignore[arg-type]
    statuses = [d["metadata"]["status"] for d in (active, superseded, expired)]
    assert (
        statuses
        == ["activated", "archived", "deleted"]
        == [LIFECYCLE_STATUS[s] for s in ("active", "superseded", "expired")]
    )
    facts = superseded["metadata"]["internal_info"]["memreader_store"]
    assert facts["lifecycle"] == "superseded" and facts["retired_at"].startswith("2026-05-11")
    for memos in (active, superseded, expired):
        memos_model.TextualMemoryItem.from_dict(memos)
    back = TextualMemoryItem.from_dict(superseded)
    kept = back.metadata.info.pop("memos")  # the store's facts, kept beside the item
    assert kept["fields"]["internal_info"]["memreader_store"]["lifecycle"] == "superseded"
    assert back == stored.item
