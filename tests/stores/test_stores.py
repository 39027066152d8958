"""The SQLite memory store's own behaviour (issue 19), through its public API:
``open_store("sqlite:///...")``: its URLs, options and files, the word budget of its full-text
index, the vectors it caches per owner, and an in-memory store under any order of writes.

What both backends share (writing, replacing, forgetting, search, owners, bad input, two
processes at once) runs on both: tests/stores/test_store_contract.py and
tests/stores/test_store_contract_search.py.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader.errors import ConfigError, StoreError
from memreader.items import TextualMemoryItem
from memreader.stores import STORES, MemoryStore, SearchMode, SourceSelector, open_store
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, item


def open_db(tmp_path: Path, name: str = "m.db", **options: Any) -> MemoryStore:
    """The store ``name`` in ``tmp_path``: text only unless ``options`` give an embedder."""
    options.setdefault("text_only", "embedder" not in options)
    return open_store("sqlite:///" + str(tmp_path / name), **options)


# -- URLs, options, files --------------------------------------------------------------------


def test_bad_urls_options_and_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"unknown memory store 'redis'; known: .*sqlite"):
        open_store("redis://localhost", text_only=True)
    # A built-in whose module cannot be imported here is a ConfigError too, not ImportError.
    monkeypatch.setitem(STORES._lazy, "ghost", "memreader.stores.no_such_module")
    with pytest.raises(ConfigError, match="'ghost' memory store is not available"):
        open_store("ghost://somewhere", text_only=True)
    with pytest.raises(ConfigError, match="a store URL looks like"):
        open_store("memories.db", text_only=True)
    with pytest.raises(ConfigError, match="unknown sqlite store option"):
        open_db(tmp_path, colour="red")
    with pytest.raises(ConfigError, match="near_duplicate must be a number"):
        open_db(tmp_path, near_duplicate=1.5)
    with pytest.raises(ConfigError, match="names no file"):
        open_store("sqlite:///", text_only=True)
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database, just bytes " * 200)
    with pytest.raises(StoreError, match="not a usable memreader store"):
        open_store("sqlite:///" + str(junk), text_only=True)
    store = open_db(tmp_path)
    store.close()
    with pytest.raises(StoreError):
        store.get("a", user_id="u1")


# -- the word budget, the vector cache ------------------------------------------------------


def test_words_in_too_many_rows_are_ranked_within_the_budget(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The module's budget (what the ``text_budget`` option overrides; the contract suite
    tests the option on both stores): a word past it is not ranked over all its rows; a query
    of such words only ranks the owner's newest rows holding them."""
    from memreader.stores.sqlite import operations as sqlite_ops

    with open_db(tmp_path) as store:
        store.write([item(f"i{n}", f"tea number {n}") for n in range(20)], now=T0)
        store.write([item("z", "tea in Zanzibar")], now=T0)
        assert len(store.search("tea zanzibar", user_id="u1", k=50)) == 21
        # A budget of 5 index entries: "tea" (21 rows) is not ranked over its rows; "zanzibar"
        # (1 row) is.
        monkeypatch.setattr(sqlite_ops, "TEXT_BUDGET", 5)
        assert [h.memory.id for h in store.search("tea zanzibar", user_id="u1", k=50)] == ["z"]
        # Only common words: the 5 newest rows holding them are ranked (it found nothing).
        tea = {h.memory.id for h in store.search("tea", user_id="u1", k=50)}
        assert tea == {"i16", "i17", "i18", "i19", "z"}
        # Written since: the counts are taken again ("zanzibar" is in 6 rows now).
        store.write([item(f"z{n}", f"Zanzibar again {n}") for n in range(5)], now=T0)
        found = [h.memory.id for h in store.search("zanzibar", user_id="u1", k=50)]
        assert sorted(found) == [f"z{n}" for n in range(5)]


def test_cached_vectors_follow_this_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that searched before each change answers as a freshly opened one, without
    reading its vectors again (this process's writes patch them)."""
    from memreader.stores.sqlite.operations import StoreOps

    loads: list[str] = []
    read = StoreOps._vector_rows

    def counted(self: StoreOps, owner: str) -> Any:
        loads.append(owner)
        return read(self, owner)

    monkeypatch.setattr(StoreOps, "_vector_rows", counted)

    def snapshot(store: MemoryStore) -> list[tuple[str, str, float | None]]:
        found = []
        options: list[dict[str, Any]] = [
            {},
            {"include_inactive": True},
            {"session_id": "s2"},
            {"until": T0},
        ]
        for filters in options:  # ids and cosines: each filter is checked by the vector half
            for hit in store.search("tea", user_id="u1", k=20, now=T0, **filters):
                found.append((str(filters), hit.memory.id, hit.score.similarity))
        return sorted(found)

    def fresh() -> list[tuple[str, str, float | None]]:
        with open_db(tmp_path, embedder=HashEmbedder()) as other:
            return snapshot(other)

    with open_db(tmp_path, embedder=HashEmbedder()) as store:
        doc = SourceSelector(doc_path="d.md")
        steps: list[Callable[[], object]] = [
            lambda: store.write(
                [item(f"a{n}", f"tea {n}", doc="d.md", at=T0) for n in range(6)], now=T0
            ),
            lambda: store.write([item("late", "tea later", session="s2", at=T0)], now=T0),
            # Seen again, said earlier: its time moves back (the "until" filter sees it).
            lambda: store.write([item("b1", "tea 1", at=T0 - timedelta(days=4))], now=T0),
            lambda: store.write(
                [item(f"a{n}", f"tea {n}", doc="d.md", at=T0) for n in (0, 2)],
                replaces=doc,
                now=T0,
            ),
            lambda: store.forget(SourceSelector(session_id="s2"), user_id="u1", now=T0),
            # Active again, embedded again (it used to come back without its vector).
            lambda: store.write([item("a3", "tea 3", at=T0)], now=T0),
            lambda: store.purge(older_than=T0 + timedelta(days=1)),
        ]
        for step in steps:
            snapshot(store)
            step()
            assert snapshot(store) == fresh()
        store.write([item("other", "tea for u2", user="u2")], now=T0)
        assert snapshot(store) == fresh()
        again = store.get("a3", user_id="u1")
        assert again is not None and again.status == "active"
        assert again.item.metadata.embedding is not None
    # One load per store opened (the purge drops rows: then the vectors are read again).
    assert loads.count("u1") == 1 + len(steps) + 1 + 1


def test_a_hand_edited_time_is_that_rows_problem(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """SQLite keeps times as text: one edited into something else fails neither the owner's
    vectors nor its search (PostgreSQL's columns are typed: the contract suite covers the
    item JSON on both)."""
    import sqlite3

    with open_db(tmp_path, embedder=HashEmbedder()) as store:
        store.write([item("a", "Ana drinks tea"), item("b", "Bo drinks tea")], now=T0)
        with sqlite3.connect(tmp_path / "m.db") as conn:
            conn.execute("UPDATE memories SET recorded_at = 'last tuesday' WHERE id = 'b'")
        with caplog.at_level("WARNING", logger="memreader.stores.records"):
            modes: tuple[SearchMode, ...] = ("hybrid", "vector", "text")
            for mode in modes:
                hits = store.search("tea", user_id="u1", mode=mode)
                assert [h.memory.id for h in hits] == ["a"]
    assert any("last tuesday" in r.getMessage() for r in caplog.records)


# -- any order of writes (an in-memory store) ----------------------------------------------


POOL = [
    item("a", "Ana lives in Porto", doc="d.md"),
    item("b", "ana lives in porto.", session="s2"),
    item("c", "Bo plays chess", message="m1"),
    item("d", "Cy sings", user="u2"),
]


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(first=st.permutations(POOL), extra=st.lists(st.sampled_from(POOL), max_size=6))
def test_any_order_or_repetition_leaves_the_same_memories(
    first: list[TextualMemoryItem], extra: list[TextualMemoryItem]
) -> None:
    with open_store("sqlite://:memory:", text_only=True) as store:
        store.write(first + extra)
        store.write(list(reversed(first)))
        for owner in ("u1", "u2"):
            hits = store.search("porto chess sings", user_id=owner, k=10)
            texts = sorted(h.memory.item.memory.lower().rstrip(".") for h in hits)
            assert texts == (
                ["ana lives in porto", "bo plays chess"] if owner == "u1" else ["cy sings"]
            )
            sources = sum(len(h.memory.item.metadata.sources) for h in hits)
            assert sources == (3 if owner == "u1" else 1)
