"""Passage-level hits (issue 30), on both backends: search scores each message of a memory
and says which matched; passages are stored beside the memory at write time, removed with it,
never written twice; memories stored before passages were still search. The scores' scale
and the ``min_score`` cut: tests/stores/test_passage_scoring.py."""

from __future__ import annotations

from datetime import timedelta

import pytest

from memreader.errors import InputError
from memreader.stores import MemoryStore, open_store
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, chat, item, sql

pytestmark = pytest.mark.timeout(120)


FILLER = [
    ("user", "The weather was grey all week, so I stayed in."),
    ("assistant", "Grey weeks are good for reading."),
    ("user", "I finished two novels and started a third one."),
    ("assistant", "Which one did you like best?"),
]


def passage_rows(url: str, memory_id: str) -> list[tuple[object, ...]]:
    return sql(
        url,
        "SELECT p.memory_rowid FROM memreader_passages p JOIN memreader_memories m "
        "ON m.rowid = p.memory_rowid WHERE m.id = %s",
        memory_id,
    )


def embedding_bytes(url: str, memory_id: str) -> int:
    ((size,),) = sql(
        url,
        "SELECT length(p.embeddings) FROM memreader_passages p JOIN memreader_memories m "
        "ON m.rowid = p.memory_rowid WHERE m.id = %s",
        memory_id,
    )
    return int(size)


def test_a_hit_names_the_message_that_matched_by_its_exact_span(store: MemoryStore) -> None:
    window = chat(
        "w", [*FILLER[:2], ("user", "We adopted a beagle and named him Biscuit."), *FILLER[2:]]
    )
    store.write([window, chat("other", FILLER)], now=T0)
    hits = store.search("Biscuit the beagle", user_id="u1", k=2, now=T0)
    assert hits[0].memory.id == "w"
    best, *rest = hits[0].passages
    text = hits[0].memory.item.memory
    assert text[best.start : best.end] == "user: [9:02]: We adopted a beagle and named him Biscuit."
    assert best.source_index == 2 and hits[0].memory.item.metadata.sources[2].message_index == 2
    # Every passage is an exact span of the memory's text, one per message, best first.
    assert len(rest) == 4 and all(best.score > p.score for p in rest)
    assert sorted((p.start, p.end) for p in hits[0].passages) == [
        (text.index(line), text.index(line) + len(line)) for line in text.split("\n")
    ]
    assert all(0.0 <= p.score <= 1.0 for h in hits for p in h.passages)


def test_one_message_that_matches_outranks_a_window_matching_only_diffusely(
    store: MemoryStore,
) -> None:
    focused = chat("focused", [*FILLER, ("user", "The Zanzibar ferry leaves at dawn.")])
    diffuse = chat(
        "diffuse", [("user", "Zanzibar was hot."), *FILLER, ("user", "The ferry was late.")]
    )
    store.write([diffuse, focused], now=T0)
    for mode in ("hybrid", "text"):
        hits = store.search("zanzibar ferry", user_id="u1", k=2, now=T0, mode=mode)
        assert [h.memory.id for h in hits] == ["focused", "diffuse"], mode
        assert hits[0].score.relevance > hits[1].score.relevance


def test_min_score_keeps_the_hits_at_least_that_relevant(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto"), item("b", "Bo plays chess on Sundays")], now=T0)
    every = store.search("Porto", user_id="u1", now=T0)
    assert {h.memory.id for h in every} == {"a", "b"}
    kept = store.search("Porto", user_id="u1", now=T0, min_score=0.9)
    assert [h.memory.id for h in kept] == ["a"] and kept[0].score.relevance >= 0.9
    assert store.search("chess", user_id="u1", now=T0, min_score=0.0)  # 0 cuts nothing
    for bad in (-0.1, 1.5, "high", True):
        with pytest.raises(InputError, match="min_score must be a number in"):
            store.search("Porto", user_id="u1", min_score=bad)  # type: ignore[arg-type]


def test_passages_are_stored_once_and_removed_with_their_memory(url: str) -> None:
    embedder = HashEmbedder()
    with open_store(url, embedder=embedder) as store:
        store.write([chat("w", FILLER), item("fact", "Ana lives in Porto")], now=T0)
        # The window's four messages were embedded once each as ``Name: content`` (no time)
        # and once with the messages next to them (``Name: content`` lines); the one-passage
        # fact kept the vector it was written with.
        named = [f"{role}: {content}" for role, content in FILLER]
        assert sorted(embedder.calls[-1]) == sorted(
            named + ["\n".join(named[max(0, i - 1) : i + 2]) for i in range(len(FILLER))]
        )
        calls = len(embedder.calls)
        assert len(passage_rows(url, "w")) == len(passage_rows(url, "fact")) == 1
        # A message's row holds two float32 vectors (alone, and with its neighbours); the
        # fact's one passage reads alone: one vector.
        assert embedding_bytes(url, "w") == len(FILLER) * 2 * embedder.dimension * 4
        assert embedding_bytes(url, "fact") == embedder.dimension * 4
        store.write([chat("w", FILLER), item("fact", "Ana lives in Porto")], now=T0)
        assert len(embedder.calls) == calls  # written again: nothing embedded, no row added
        assert len(passage_rows(url, "w")) == 1
        store.delete("w", user_id="u1", erase=True)
        assert passage_rows(url, "w") == []
        store.delete("fact", user_id="u1", now=T0)  # retired: its passages stay until purge
        assert len(passage_rows(url, "fact")) == 1
        assert store.purge(older_than=T0 + timedelta(days=1)) == 1
        assert passage_rows(url, "fact") == []
        assert sql(url, "SELECT count(*) FROM memreader_passages") == [(0,)]


def test_memories_stored_before_passages_still_search(url: str) -> None:
    with open_store(url, embedder=HashEmbedder()) as store:
        window = chat(
            "w", [*FILLER[:2], ("user", "We adopted a beagle named Biscuit."), *FILLER[2:]]
        )
        store.write([window, chat("other", FILLER)], now=T0)
    sql(url, "DELETE FROM memreader_passages")  # what a store written before passages holds
    with open_store(url, embedder=HashEmbedder()) as store:
        hits = store.search("Biscuit the beagle", user_id="u1", k=2, now=T0)
    assert [h.memory.id for h in hits] == ["w", "other"]
    best = hits[0].passages[0]
    assert best.source_index == 2 and 0.0 <= hits[1].score.final <= hits[0].score.final <= 1.0
    assert "Biscuit" in hits[0].memory.item.memory[best.start : best.end]


def test_passages_read_by_a_search_are_never_served_stale(store: MemoryStore) -> None:
    store.write([chat("old", FILLER)], now=T0)
    assert store.search("novels", user_id="u1", now=T0)[0].memory.id == "old"
    store.delete("old", user_id="u1", erase=True)  # its row id may be reused by the next add
    lines = [("user", "Our cat Pepper broke the laptop."), ("assistant", "Oh no!")]
    store.write([chat("new", lines)], now=T0)
    [hit] = store.search("Pepper laptop", user_id="u1", now=T0)
    text = hit.memory.item.memory
    assert hit.memory.id == "new" and len(hit.passages) == 2
    assert text[hit.passages[0].start : hit.passages[0].end] == text.split("\n")[0]
