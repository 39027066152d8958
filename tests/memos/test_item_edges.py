"""MemOS items at their edges: the owner of an exported memory is the store's (never what a
caller's metadata says), ``info["memos"]`` of any shape writes out, hostile MemOS items are a
``MemOSItemError`` naming the field (never a raw exception), and NaN or infinite confidence and
embeddings are refused."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader import Memory
from memreader.errors import MemOSItemError
from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.memos import stored_to_memos_dict
from tests.memos import memos_model
from tests.memos.shapes import memos_fast_item

CONFIG = {"config": {"embedder": {"backend": "hash"}}}


def an_item(info: dict[str, Any]) -> TextualMemoryItem:
    meta = TextualMemoryItemMetadata(
        user_id="alice",
        session_id="s1",
        info=info,
        sources=[SourceMessage(scene_index=0, message_index=0, span=(0, 3), content="tea")],
    )
    return TextualMemoryItem(id="m-1", memory="tea", metadata=meta)


@pytest.mark.parametrize(
    "fields",
    [
        {"user_id": "bob"},
        {"session_id": "bob-session", "user_id": "bob"},
        {"agent_id": "bob-agent", "task_id": "bob-task"},
        {"sources": [], "status": "deleted", "manager_user_id": "bob"},
    ],
)
def test_an_exported_memory_is_its_owners_whatever_its_metadata_says(
    url: str, fields: dict[str, Any]
) -> None:
    with Memory(CONFIG, store=url) as memory:
        added = memory.add(
            "I live in Porto.",
            user_id="alice",
            session_id="s1",
            metadata={"memos": {"fields": fields}},
        )
        stored = memory.store.get(added.events[0].memory_id, user_id="alice")
        assert stored is not None
        exported = stored_to_memos_dict(stored)
        meta = exported["metadata"]
        assert (meta["user_id"], meta["session_id"], meta["status"]) == ("alice", "s1", "activated")
        assert meta.get("manager_user_id") is None and meta["sources"]
        memos_model.TextualMemoryItem.from_dict(exported)  # MemOS accepts it
        back = TextualMemoryItem.from_dict(exported)  # ...and a re-import reads alice's
        assert (back.metadata.user_id, back.metadata.session_id) == ("alice", "s1")
        assert (back.metadata.agent_id, back.metadata.task_id) == (None, None)


def test_a_memos_item_naming_another_owner_where_memreader_carries_its_fields_is_refused() -> None:
    data = an_item({}).to_memos_dict()
    data["metadata"]["internal_info"]["memreader"]["user_id"] = "bob"
    with pytest.raises(MemOSItemError) as caught:
        TextualMemoryItem.from_dict(data)
    assert str(caught.value) == (
        "a MemOS item's internal_info.memreader holds 'user_id', which is not a field memreader "
        "carries there (the owner and session are the item's own user_id and session_id)"
    )


def test_kept_source_keys_never_stand_in_for_provenance() -> None:
    item = an_item({"memos": {"sources": [{"span": [0, 99], "scene_index": 7, "file": "a"}]}})
    exported = item.to_memos_dict()
    source = exported["metadata"]["sources"][0]
    assert (source["span"], source["scene_index"], "file" in source) == ([0, 3], 0, False)
    assert TextualMemoryItem.from_dict(exported) == item  # the caller's info, as it was


@pytest.mark.parametrize(
    "memos",
    [
        3,
        "a note",
        None,
        [1, 2],
        {"fields": 3},
        {"fields": {"internal_info": 3}},
        {"sources": 5},
        {"sources": [1]},
        {"unrecovered": 5},
        {"unrecovered": [5]},
        {"fields": {}, "color": "red"},
        {"fields": {"user_id": "bob", "color": "red"}},
    ],
)
def test_info_memos_of_any_shape_writes_out_and_comes_back(memos: Any) -> None:
    item = an_item({"memos": memos})
    exported = item.to_memos_dict()
    assert (exported["metadata"]["user_id"], exported["metadata"]["session_id"]) == ("alice", "s1")
    memos_model.TextualMemoryItem.from_dict(exported)
    assert TextualMemoryItem.from_dict(exported) == item


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"confidence": math.nan},
            "a MemOS item's metadata.confidence: Input should be a finite number",
        ),
        (
            {"confidence": "inf"},
            "a MemOS item's metadata.confidence: Input should be a finite number",
        ),
        ({"embedding": [0.1, math.nan]}, "a MemOS item's metadata.embedding: Value error, "),
        ({"embedding": [math.inf, 1.0]}, "a MemOS item's metadata.embedding: Value error, "),
        ({"info": 5}, "a MemOS item's info must be a mapping, got int"),
        ({"internal_info": "x"}, "a MemOS item's internal_info must be a mapping, got str"),
        (
            {"internal_info": {"memreader": 5}},
            "a MemOS item's internal_info.memreader must be a mapping, got int",
        ),
        (
            {"internal_info": {"memreader": {"unrecovered": 5}}},
            "a MemOS item's internal_info.memreader.unrecovered must be a list of strings",
        ),
        ({"tags": "mode:fast"}, "a MemOS item's tags must be a list of strings"),
        ({"file_ids": [1]}, "a MemOS item's file_ids must be a list of strings"),
        ({"background": 4}, "a MemOS item's background must be a string, got int"),
        (
            {"sources": [{"role": "user", "content": {"text": "hi"}}]},
            "source 0 of a MemOS item: content must be a string, got dict",
        ),
        (
            {"sources": [{"role": "user", "content": "hi", "span": "abc"}]},
            "a MemOS item's metadata.sources.0.span: Input should be a valid tuple",
        ),
        ({"memory_type": "Dream"}, "a MemOS item's metadata.memory_type: Input should be"),
    ],
)
def test_hostile_memos_items_raise_a_typed_error_naming_the_field(
    change: dict[str, Any], message: str
) -> None:
    data = memos_fast_item()
    data["metadata"].update(change)
    with pytest.raises(MemOSItemError) as caught:
        TextualMemoryItem.from_dict(data)
    assert str(caught.value).startswith(message)


def test_a_memos_item_with_an_id_that_is_not_a_string_is_refused() -> None:
    data = memos_fast_item()
    data["id"] = {"a": 1}
    with pytest.raises(MemOSItemError, match="a MemOS item's id must be a string, got dict"):
        TextualMemoryItem.from_dict(data)


@pytest.mark.parametrize("field", ["confidence", "embedding"])
def test_memreader_items_refuse_nan_too(field: str) -> None:
    value: Any = math.nan if field == "confidence" else [1.0, math.nan]
    with pytest.raises(ValueError, match=field):
        TextualMemoryItemMetadata(user_id="u", session_id="s", **{field: value})


_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-3, 3)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=6),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=6,
)
_FIELDS = [*memos_fast_item()["metadata"], "internal_info.memreader", "source", "id", "memory"]


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(_FIELDS), value=_JSON)
def test_any_value_anywhere_reads_or_is_a_memos_item_error(field: str, value: Any) -> None:
    # The invariant a server importing strangers' MemOS items relies on: an item, or the typed
    # error; and what was read writes back out for its owner.
    data = memos_fast_item()
    meta = data["metadata"]
    if field in ("id", "memory"):
        data[field] = value
    elif field == "internal_info.memreader":
        meta["internal_info"] = {"memreader": value}
    elif field == "source":
        meta["sources"] = [value]
    else:
        meta[field] = value
    try:
        item = TextualMemoryItem.from_dict(data)
    except MemOSItemError:
        return
    exported = item.to_memos_dict()
    assert exported["metadata"]["user_id"] == item.metadata.user_id
    assert TextualMemoryItem.from_dict(exported) == item
