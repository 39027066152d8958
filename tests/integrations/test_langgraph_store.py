"""MemReaderStore through LangGraph's own BaseStore API: items put, got, searched, deleted and
listed (sync and async, and in one batch), a compiled StateGraph reading the store it is given,
the user wall, LangGraph's namespace errors, and where each item came from."""

from __future__ import annotations

import asyncio
from typing import Any, TypedDict

import pytest
from langgraph.graph import END, START, StateGraph
from langgraph.runtime import Runtime
from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
    SearchItem,
    SearchOp,
)

from memreader import AsyncMemory, Memory
from memreader.errors import InputError
from memreader.integrations.langgraph import MemReaderItem, MemReaderStore

NESTED = {
    "text": "Ana drinks green tea every morning",
    "stars": 5,
    "ratio": 0.25,
    "ok": True,
    "none": None,
    "tags": ["tea", "morning", 3],
    "where": {"city": "Lisboa", "café": {"name": "Pão & Chá", "since": 2019}},
}


@pytest.fixture
def store(memory: Memory) -> MemReaderStore:
    return MemReaderStore(memory, user_id="ana", index={"fields": ["text"]})


def test_a_put_value_comes_back_exactly_as_an_item(store: MemReaderStore) -> None:
    store.put(("notes", "ana"), "tea", NESTED)
    item = store.get(("notes", "ana"), "tea")
    assert isinstance(item, Item)
    assert item.value == NESTED
    assert (item.namespace, item.key) == (("notes", "ana"), "tea")
    assert item.created_at.tzinfo is not None and item.created_at == item.updated_at
    assert store.get(("notes", "ana"), "coffee") is None
    assert store.get(("notes",), "tea") is None  # a key lives in its own namespace only


def test_put_of_an_existing_key_replaces_its_value_and_keeps_the_old_one(
    store: MemReaderStore, memory: Memory
) -> None:
    store.put(("notes",), "drink", {"text": "Ana drinks tea"})
    first = store.get(("notes",), "drink")
    assert isinstance(first, MemReaderItem)
    store.put(("notes",), "drink", {"text": "Ana drinks coffee now"})
    second = store.get(("notes",), "drink")
    assert isinstance(second, MemReaderItem)
    assert second.value == {"text": "Ana drinks coffee now"}
    assert second.created_at == first.created_at and second.updated_at >= first.updated_at
    assert second.provenance["id"] != first.memory_id
    old = memory.get(first.memory_id, user_id="ana", used=False)
    assert old is not None and old.status == "expired"  # kept, with its history
    assert [e.event for e in memory.history(first.memory_id, user_id="ana")] == ["ADD", "EXPIRE"]
    new = memory.get(second.memory_id, user_id="ana", used=False)
    assert new is not None and new.item.metadata.info["langgraph"]["replaces"] == first.memory_id
    assert [item.key for item in store.search(("notes",))] == ["drink"]


def test_a_new_value_with_the_same_text_replaces_the_old_one(store: MemReaderStore) -> None:
    store.put(("notes",), "drink", {"text": "Ana drinks tea", "cups": 1})
    store.put(("notes",), "drink", {"text": "Ana drinks tea", "cups": 2})
    item = store.get(("notes",), "drink")
    assert item is not None and item.value == {"text": "Ana drinks tea", "cups": 2}
    assert len(store.search(("notes",), query="tea")) == 1


def test_a_text_memreader_takes_for_the_old_one_still_replaces_it(
    store: MemReaderStore, memory: Memory
) -> None:
    # memreader knows a memory by its text once normalised (case, spaces, a final full stop):
    # a put whose text differs only so must still leave the new value, in one active memory.
    store.put(("n",), "k", {"text": "Ana drinks tea", "v": 1})
    store.put(("n",), "k", {"text": "ANA DRINKS  TEA.", "v": 2})
    item = store.get(("n",), "k")
    assert item is not None and item.value == {"text": "ANA DRINKS  TEA.", "v": 2}
    store.put(("n",), "k", {"text": "Ana drinks green tea daily", "v": 3})
    store.put(("n",), "other", {"text": "Ana drinks green tea daily", "v": 4})
    assert [(i.key, i.value["v"]) for i in store.search(("n",))] == [("other", 4), ("k", 3)]
    assert len(memory.search("tea", user_id="ana")) == 2  # one active memory per key


def test_a_search_without_query_lists_the_most_recently_put_first(store: MemReaderStore) -> None:
    store.put(("n",), "a", {"text": "Ana drinks tea", "v": 1})
    store.put(("n",), "b", {"text": "Ana reads poetry"})
    store.put(("n",), "a", {"text": "Ana drinks tea", "v": 2})  # the same text: its row again
    assert [item.key for item in store.search(("n",), limit=1)] == ["a"]
    assert [item.key for item in store.search(("n",))] == ["a", "b"]


def test_the_same_put_twice_changes_nothing(store: MemReaderStore, memory: Memory) -> None:
    store.put(("notes",), "drink", {"text": "Ana drinks tea"})
    first = store.get(("notes",), "drink")
    store.put(("notes",), "drink", {"text": "Ana drinks tea"})
    again = store.get(("notes",), "drink")
    assert isinstance(first, MemReaderItem) and isinstance(again, MemReaderItem)
    assert again.memory_id == first.memory_id and again.updated_at == first.updated_at
    assert len(memory.history(first.memory_id, user_id="ana")) == 1


def test_two_keys_with_one_value_stay_two_items(store: MemReaderStore) -> None:
    store.put(("notes",), "a", {"text": "Ana drinks tea"})
    store.put(("notes",), "b", {"text": "Ana drinks tea"})
    store.delete(("notes",), "a")
    assert store.get(("notes",), "a") is None
    kept = store.get(("notes",), "b")
    assert kept is not None and kept.value == {"text": "Ana drinks tea"}


def test_delete_expires_the_memory_and_a_missing_key_is_no_error(
    store: MemReaderStore, memory: Memory
) -> None:
    store.put(("notes",), "tea", {"text": "Ana drinks tea"})
    held = store.get(("notes",), "tea")
    assert isinstance(held, MemReaderItem)
    store.delete(("notes",), "tea")
    store.delete(("notes",), "never-put")
    assert store.get(("notes",), "tea") is None
    assert store.search(("notes",)) == []
    gone = memory.get(held.memory_id, user_id="ana", used=False)
    assert gone is not None and gone.status == "expired"


def test_a_query_ranks_the_indexed_text_and_the_memory_search_finds_it(
    store: MemReaderStore, memory: Memory
) -> None:
    store.put(("notes",), "tea", {"text": "Ana drinks green tea", "noise": "volcano"})
    store.put(("notes",), "cat", {"text": "Ana's cat is called Miso"})
    hits = store.search(("notes",), query="what is the cat called?")
    assert hits[0].key == "cat"
    assert all(isinstance(hit, SearchItem) and 0 <= (hit.score or 0) <= 1 for hit in hits)
    # Only the indexed field is the memory's text: what every face of memreader ranks and shows.
    assert memory.search("Miso", user_id="ana")[0].text == "Ana's cat is called Miso"
    assert {hit.text for hit in memory.search("volcano", user_id="ana")} == {
        "Ana drinks green tea",
        "Ana's cat is called Miso",
    }


def test_the_whole_value_is_ranked_by_default_and_index_false_is_only_listed(
    memory: Memory,
) -> None:
    store = MemReaderStore(memory, user_id="ana")
    store.put(("n",), "k1", {"nested": {"deep": "saxophone lessons on Tuesday"}})
    store.put(("n",), "k2", {"text": "saxophone"}, index=False)
    assert [hit.key for hit in store.search(("n",), query="saxophone")] == ["k1"]
    assert {item.key for item in store.search(("n",))} == {"k1", "k2"}


def test_search_covers_deeper_namespaces_filters_and_pages(store: MemReaderStore) -> None:
    for i in range(5):
        store.put(("docs", "ana", "a"), f"k{i}", {"text": f"note {i}", "i": i, "kind": "n"})
    store.put(("docs", "ana", "b", "c"), "deep", {"text": "deep note", "i": 9, "kind": "n"})
    store.put(("docs", "anab"), "sibling", {"text": "not under the prefix", "i": 1})
    under = store.search(("docs", "ana"), limit=10)
    assert {item.key for item in under} == {"k0", "k1", "k2", "k3", "k4", "deep"}
    assert [item.key for item in store.search(("docs", "ana"), limit=2)] == ["deep", "k4"]
    assert [item.key for item in store.search(("docs", "ana"), limit=2, offset=2)] == ["k3", "k2"]
    big = store.search(("docs",), filter={"i": {"$gte": 3}, "kind": "n"}, limit=10)
    assert {item.key for item in big} == {"k3", "k4", "deep"}
    assert [i.key for i in store.search(("docs",), filter={"i": {"$ne": 9}, "kind": "n"})] == [
        "k4",
        "k3",
        "k2",
        "k1",
        "k0",
    ]
    ranked = store.search(("docs", "ana"), query="deep note", filter={"i": 9})
    assert [item.key for item in ranked] == ["deep"]
    with pytest.raises(InputError, match=r"filter operator '\$regex' is unknown"):
        store.search(("docs",), filter={"i": {"$regex": "x"}})


def test_nested_filter_values_match_key_by_key(store: MemReaderStore) -> None:
    store.put(("n",), "k", NESTED)
    assert store.search(("n",), filter={"where": {"city": "Lisboa"}})
    assert not store.search(("n",), filter={"where": {"city": "Porto"}})
    assert store.search(("n",), filter={"tags": ["tea", "morning", 3]})


def test_list_namespaces_by_prefix_suffix_depth_and_page(store: MemReaderStore) -> None:
    for namespace in [("a", "b", "c"), ("a", "b", "d", "e"), ("a", "b", "d", "i"), ("a", "b", "f")]:
        store.put(namespace, "k", {"text": "x " + "/".join(namespace)})
    store.put(("a", "c", "f"), "k", {"text": "y"})
    assert store.list_namespaces(prefix=("a", "b"), max_depth=3) == [
        ("a", "b", "c"),
        ("a", "b", "d"),
        ("a", "b", "f"),
    ]
    assert store.list_namespaces(suffix=("f",)) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(prefix=("a", "*", "f")) == [("a", "b", "f"), ("a", "c", "f")]
    assert store.list_namespaces(limit=2, offset=1) == [("a", "b", "d", "e"), ("a", "b", "d", "i")]
    store.delete(("a", "c", "f"), "k")
    assert ("a", "c", "f") not in store.list_namespaces()


def test_the_async_twins_do_the_same(store: MemReaderStore) -> None:
    async def run() -> tuple[Any, ...]:
        await store.aput(("n", "ana"), "k", NESTED)
        got = await store.aget(("n", "ana"), "k")
        hits = await store.asearch(("n",), query="green tea")
        spaces = await store.alist_namespaces(prefix=("n",))
        await store.adelete(("n", "ana"), "k")
        return got, hits, spaces, await store.aget(("n", "ana"), "k")

    got, hits, spaces, after = asyncio.run(run())
    assert got.value == NESTED and [hit.key for hit in hits] == ["k"]
    assert spaces == [("n", "ana")] and after is None


def test_a_batch_of_mixed_ops_runs_in_order(store: MemReaderStore) -> None:
    ops = [
        PutOp(("n",), "a", {"text": "Ana plays chess"}),
        GetOp(("n",), "a"),
        PutOp(("n",), "b", {"text": "Ana reads poetry"}),
        SearchOp(("n",), query="chess", limit=1),
        PutOp(("n",), "a", None),
        GetOp(("n",), "a"),
        ListNamespacesOp(match_conditions=(MatchCondition("prefix", ("n",)),)),
    ]
    put, got, put_b, found, deleted, gone, spaces = store.batch(ops)
    assert put is None and put_b is None and deleted is None
    assert got.value == {"text": "Ana plays chess"}
    assert [hit.key for hit in found] == ["a"]
    assert gone is None and spaces == [("n",)]
    assert [r.key for r in asyncio.run(store.abatch([SearchOp(("n",))]))[0]] == ["b"]


def test_items_say_where_they_came_from(store: MemReaderStore, memory: Memory) -> None:
    store.put(("notes", "ana"), "tea", {"text": "Ana drinks tea"})
    item = store.get(("notes", "ana"), "tea")
    assert isinstance(item, MemReaderItem)
    seen = item.provenance
    assert seen["session_id"] == 'langgraph:["notes","ana"]' and seen["status"] == "active"
    assert seen["id"] == item.memory_id and seen["written_by"] == {}  # not put in a graph
    # The namespace is a session: forgetting it forgets the namespace's items.
    memory.forget(f"session:{seen['session_id']}", user_id="ana")
    assert store.get(("notes", "ana"), "tea") is None


class State(TypedDict):
    question: str
    answer: str


def test_a_compiled_graph_reads_and_writes_the_store_it_is_given(memory: Memory) -> None:
    store = MemReaderStore(memory, user_label=1, users=["ana"], index={"fields": ["text"]})
    store.put(("memories", "ana"), "cat", {"text": "Ana's cat is called Miso"})

    def recall(state: State, runtime: Runtime[Any]) -> dict[str, str]:
        assert runtime.store is not None
        hits = runtime.store.search(("memories", "ana"), query=state["question"], limit=1)
        return {"answer": hits[0].value["text"] if hits else "nothing"}

    def note(state: State, *, store: BaseStore) -> dict[str, str]:
        store.put(("memories", "ana"), "last", {"text": f"Ana asked: {state['question']}"})
        return {}

    builder = StateGraph(State)
    builder.add_node("recall", recall)
    builder.add_node("note", note)
    builder.add_edge(START, "recall")
    builder.add_edge("recall", "note")
    builder.add_edge("note", END)
    graph = builder.compile(store=store)
    config = {"configurable": {"thread_id": "thread-7"}}
    out = graph.invoke({"question": "what is my cat called?", "answer": ""}, config)
    assert out["answer"] == "Ana's cat is called Miso"
    written = store.get(("memories", "ana"), "last")
    assert isinstance(written, MemReaderItem)
    assert written.value == {"text": "Ana asked: what is my cat called?"}
    assert written.provenance["written_by"]["thread_id"] == "thread-7"
    again = asyncio.run(graph.ainvoke({"question": "cat name?", "answer": ""}, config))
    assert again["answer"] == "Ana's cat is called Miso"


def test_langmem_shaped_calls_work(memory: Memory) -> None:
    # LangMem's memory tools: namespace ("memories", user), a uuid key, a {"kind", "content"} value
    store = MemReaderStore(memory, user_label=1, users=["ana"])
    value = {"kind": "Memory", "content": {"content": "Ana prefers window seats"}}
    store.put(("memories", "ana"), "0b6f3c1e-8a47-4c1e-9a55-6f1d2e7a9c31", value)
    hits = store.search(("memories", "ana"), query="window seats", limit=10)
    assert [hit.value for hit in hits] == [value]
    key = hits[0].key
    assert store.get(("memories", "ana"), key).value == value  # type: ignore[union-attr]
    store.delete(("memories", "ana"), key)
    assert store.search(("memories", "ana"), query="window") == []


def test_unicode_namespaces_and_keys_and_json_shapes_round_trip() -> None:
    held = AsyncMemory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
    store = MemReaderStore(held, user_id="ana")  # an AsyncMemory's Memory serves the store
    namespace = ("記憶", "ana", "café ☕")
    store.put(namespace, "clé/1 ü", {"tuple": (1, 2.5), "big": 2**62, "s": "日本語 🎉"})
    item = store.get(namespace, "clé/1 ü")
    assert item is not None and item.value == {"tuple": [1, 2.5], "big": 2**62, "s": "日本語 🎉"}
    assert store.list_namespaces(prefix=("記憶",)) == [namespace]
    assert [hit.key for hit in store.search(("記憶",), query="日本語")] == ["clé/1 ü"]
    assert store.get((), "k") is None  # nothing is ever put there
    store.delete((), "k")
    held.memory.close()
