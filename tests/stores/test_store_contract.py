"""The memory stores' shared behaviour (issue 19), writing side, through the public API
``open_store(url)``: each test runs on both backends, a SQLite file and a fresh PostgreSQL
database (tests/stores/conftest.py). Idempotent writes, reinforcement, near duplicates,
``replaces``, forget, purge, history, and what the batch sink and the dedup step use
(``lookup``, ``write_part`` + ``retire_unseen``).

Search, owners and bad input: tests/stores/test_store_contract_search.py. What is one backend's own:
tests/stores/test_stores.py (SQLite), tests/stores/test_store_postgres.py (PostgreSQL).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import pytest

from memreader.errors import InputError
from memreader.stores import MemoryStore, SourceSelector, open_store
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, events, item, sql

pytestmark = pytest.mark.timeout(120)

# -- writing -------------------------------------------------------------------------------


def test_writing_the_same_items_twice_changes_nothing(store: MemoryStore, url: str) -> None:
    batch = [item("a", "Ana lives in Porto.", message="m1"), item("b", "Ana likes green tea.")]
    assert events(store.write(batch, now=T0)) == [("ADD", "a"), ("ADD", "b")]
    active = (
        "SELECT user_id, id, memory, reinforced, supports FROM memreader_memories "
        "WHERE status = 'active' ORDER BY user_id, id"
    )
    every = "SELECT id, memory, reinforced, supports FROM memreader_memories ORDER BY id"
    before = sql(url, active), sql(url, every)
    again = store.write(batch, now=T0 + timedelta(days=1))
    assert events(again) == [("NONE", "a"), ("NONE", "b")]
    assert (sql(url, active), sql(url, every)) == before
    assert [h.event for h in store.history("a", user_id="u1")] == ["ADD"]


def test_the_same_memory_again_is_reinforced_with_its_sources_joined(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto.", message="m1")], now=T0)
    result = store.write([item("b", "  ana lives in PORTO ", session="s2", message="m9")], now=T0)
    assert events(result) == [("REINFORCE", "a")]
    assert "the same memory" in result[0].reason and result[0].item_id == "b"
    stored = store.get("a", user_id="u1")
    assert stored is not None and store.get("b", user_id="u1") is None
    assert stored.reinforced == 1
    assert [s.message_id for s in stored.item.metadata.sources] == ["m1", "m9"]
    assert [h.event for h in store.history("a", user_id="u1")] == ["ADD", "REINFORCE"]


def test_a_near_duplicate_reinforces_and_says_its_cosine(url: str) -> None:
    base = [1.0, 0.0, 0.0, 0.0]
    close = [1.0, 0.1, 0.0, 0.0]  # cosine 0.995
    far = [0.0, 1.0, 0.0, 0.0]
    with open_store(url, text_only=True) as store:
        store.write([item("a", "Ana lives in Porto", vector=base, model="m")], now=T0)
        near = store.write([item("b", "Ana is based in Porto", vector=close, model="m")])
        other_model = store.write([item("c", "Ana resides in Porto", vector=close, model="x")])
        different = store.write([item("d", "Ana owns a cat", vector=far, model="m")])
    assert events(near) == [("REINFORCE", "a")] and "cosine 0.995" in near[0].reason
    assert events(other_model) == [("ADD", "c")]  # vectors of other models are not compared
    assert events(different) == [("ADD", "d")]


def test_near_duplicates_within_one_write_and_the_threshold_option(
    new_url: Callable[[str], str],
) -> None:
    batch = [
        item("a", "Ana lives in Porto", vector=[1.0, 0.0], model="m"),
        item("b", "Ana is based in Porto", vector=[1.0, 0.2], model="m"),  # cosine 0.981
    ]
    with open_store(new_url("strict"), near_duplicate=0.99, text_only=True) as strict:
        assert events(strict.write(batch)) == [("ADD", "a"), ("ADD", "b")]
    with open_store(
        new_url("loose"), text_only=True
    ) as loose:  # within one write (one transaction)
        assert events(loose.write(batch)) == [("ADD", "a"), ("REINFORCE", "a")]


def test_valid_from_is_the_earliest_source_time(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto", at=T0)], now=T0 + timedelta(days=3))
    store.write([item("b", "Ana lives in Porto.", session="s2", at=T0 - timedelta(days=2))])
    stored = store.get("a", user_id="u1")
    assert stored is not None
    assert stored.valid_from == T0 - timedelta(days=2)
    assert stored.recorded_at == T0 + timedelta(days=3)
    assert stored.importance is None and stored.status == "active"


def test_valid_from_prefers_the_items_own_date(store: MemoryStore) -> None:
    resolved = item("a", "Ana moved to Porto", at=T0)  # said at T0 about "yesterday"
    meta = resolved.metadata.model_copy(update={"valid_from": T0 - timedelta(days=1)})
    store.write([resolved.model_copy(update={"metadata": meta})], now=T0)
    store.write([item("b", "Bo moved to Lisbon", at=T0)], now=T0)
    got = store.get("a", user_id="u1")
    assert got is not None and got.valid_from == T0 - timedelta(days=1)
    fallback = store.get("b", user_id="u1")
    assert fallback is not None and fallback.valid_from == T0  # the earliest source time
    assert {
        h.memory.id for h in store.search("moved", user_id="u1", until=T0 - timedelta(hours=1))
    } == {"a"}


def test_importance_is_kept_and_weighs_in_the_score(store: MemoryStore) -> None:
    scored = item("a", "Ana likes tea")
    meta = scored.metadata.model_copy(update={"importance": 0.9, "importance_reason": "a taste"})
    store.write([scored.model_copy(update={"metadata": meta}), item("b", "Bo likes tea")], now=T0)
    stored = store.get("a", user_id="u1")
    assert stored is not None and (stored.importance, stored.importance_reason) == (0.9, "a taste")
    assert stored.item.metadata.importance == 0.9
    plain = store.get("b", user_id="u1")
    assert plain is not None and plain.importance is None and plain.importance_reason is None
    hits = {h.memory.id: h.score for h in store.search("tea", user_id="u1", now=T0)}
    assert hits["a"].importance == 0.9 and hits["b"].importance == 0.5
    assert hits["a"].final > hits["b"].final


def test_the_embedder_embeds_only_items_not_stored(url: str) -> None:
    embedder = HashEmbedder()
    with open_store(url, embedder=embedder) as store:
        store.write([item("a", "Ana lives in Porto"), item("b", "Bo plays chess")])
        store.write([item("a", "Ana lives in Porto"), item("c", "bo plays chess.")])
        stored = store.get("a", user_id="u1")
        [hit] = [h for h in store.search("Porto", user_id="u1") if h.memory.id == "a"]
    assert embedder.calls[0] == ["Ana lives in Porto", "Bo plays chess"]
    assert all(
        call in (["Porto"], ["Ana lives in Porto", "Bo plays chess"]) for call in embedder.calls
    )
    assert stored is not None and stored.item.metadata.embedding_model == "hash:16"
    assert stored.item.metadata.embedding is not None
    assert math.isclose(sum(x * x for x in stored.item.metadata.embedding), 1.0, rel_tol=1e-5)
    # A search hit's memory is the stored one, vector and all (set once the item is read).
    assert hit.memory.item == stored.item
    assert "embedding" in hit.memory.item.metadata.model_fields_set


# -- replacing, forgetting, purging ----------------------------------------------------------


def test_rewriting_a_changed_document_supersedes_what_it_no_longer_says(
    store: MemoryStore,
) -> None:
    doc = SourceSelector(doc_path="notes.md")
    v1 = [
        item("a", "The budget is 10k", doc="notes.md"),
        item("b", "Launch in May", doc="notes.md"),
        item("old", "The office is in Lisbon", doc="notes.md"),
    ]
    store.write(v1, replaces=doc, now=T0)
    # "Launch in May" is also said by another document: it survives, losing notes.md's source.
    store.write([item("x", "Launch in May", doc="plan.md")], now=T0)
    v2 = [
        item("a", "The budget is 10k", doc="notes.md"),
        item("c", "Launch in June", doc="notes.md"),
    ]
    result = store.write(v2, replaces=doc, now=T0 + timedelta(days=1))
    assert events(result) == [("NONE", "a"), ("ADD", "c"), ("UPDATE", "b"), ("SUPERSEDE", "old")]
    old = store.get("old", user_id="u1")
    assert old is not None and old.status == "superseded"
    assert old.retired_at == T0 + timedelta(days=1)
    kept = store.get("b", user_id="u1")
    assert kept is not None and kept.status == "active"
    assert [s.doc_path for s in kept.item.metadata.sources] == ["plan.md"]
    assert [h.event for h in store.history("old", user_id="u1")] == ["ADD", "SUPERSEDE"]
    assert [h.event for h in store.history("b", user_id="u1")] == ["ADD", "REINFORCE", "UPDATE"]
    key = SourceSelector(input_key="batch/part-1")
    store.write([item("p", "Pia paints")], replaces=key)
    assert events(store.write([], replaces=key, user_id="u1")) == [("SUPERSEDE", "p")]


def test_a_source_that_now_yields_nothing_supersedes_everything_it_said(
    store: MemoryStore,
) -> None:
    key = SourceSelector(input_key="batch/part-1")
    store.write([item("a", "Ana lives in Porto")], replaces=key)
    assert events(store.write([], replaces=key, user_id="u1")) == [("SUPERSEDE", "a")]


@pytest.mark.parametrize(
    "selector",
    [
        SourceSelector(doc_path="notes.md"),
        SourceSelector(session_id="s1"),
        SourceSelector(message_id="m1"),
        SourceSelector(input_key="in-1"),
    ],
    ids=["doc", "session", "message", "input"],
)
def test_forget_expires_what_only_that_source_supports(
    store: MemoryStore, selector: SourceSelector
) -> None:
    replaces = SourceSelector(input_key="in-1")
    only = item("a", "Ana lives in Porto", doc="notes.md", message="m1")
    shared = item("b", "Bo plays chess", doc="notes.md", message="m1")
    store.write([only, shared], replaces=replaces, now=T0)
    store.write([item("c", "Bo plays chess", session="s2", doc="other.md", message="m2")])
    result = store.forget(selector, user_id="u1", now=T0 + timedelta(days=1))
    assert events(result) == [("EXPIRE", "a"), ("UPDATE", "b")]
    assert "still supported by 1 other source" in result[1].reason
    expired = store.get("a", user_id="u1")
    assert expired is not None and expired.status == "expired"
    assert expired.retired_at == T0 + timedelta(days=1)
    shared_now = store.get("b", user_id="u1")
    assert shared_now is not None and shared_now.status == "active"
    assert [s.message_id for s in shared_now.item.metadata.sources] == ["m2"]
    assert [h.event for h in store.history("a", user_id="u1")] == ["ADD", "EXPIRE"]
    assert store.forget(selector, user_id="u1") == []  # forgetting twice changes nothing
    # Stored again, a forgotten memory comes back (the row is reused, its history kept).
    back = store.write([only], now=T0 + timedelta(days=2))
    assert events(back) == [("ADD", "a")] and "expired" in back[0].reason
    assert [h.event for h in store.history("a", user_id="u1")] == ["ADD", "EXPIRE", "ADD"]


def test_purge_removes_only_retired_rows_older_than_asked(
    store: MemoryStore, url: str, backend: str
) -> None:
    store.write([item("a", "Ana lives in Porto", doc="d.md"), item("b", "Bo plays chess")])
    store.forget(SourceSelector(doc_path="d.md"), user_id="u1", now=T0)
    assert store.purge(older_than=T0) == 0
    assert store.purge(older_than=T0 + timedelta(seconds=1)) == 1
    assert store.get("a", user_id="u1") is None
    assert store.history("a", user_id="u1") == []
    assert store.get("b", user_id="u1") is not None
    assert store.search("Porto", user_id="u1", include_inactive=True)[0].memory.id == "b"
    assert sql(url, "SELECT count(*) FROM memreader_keys") == [(1,)]
    if backend == "sqlite":  # its full-text index is a table of its own
        assert sql(url, "SELECT count(*) FROM memories_terms") == [(1,)]


def test_every_change_is_a_history_row(store: MemoryStore, url: str) -> None:
    doc = SourceSelector(doc_path="d.md")
    changes = 0
    for result in (
        store.write([item("a", "Ana lives in Porto", doc="d.md"), item("b", "Bo plays")]),
        store.write([item("c", "ana lives in porto", doc="e.md")]),
        store.write([item("a", "Ana lives in Porto", doc="d.md")]),
        store.write([item("d", "Cy sings", doc="d.md")], replaces=doc),
        store.forget(SourceSelector(doc_path="e.md"), user_id="u1"),
    ):
        changes += sum(e.event != "NONE" for e in result)
    assert sql(url, "SELECT count(*) FROM memreader_history") == [(changes,)] == [(6,)]


# -- what the batch sink and the dedup step use: lookup, writing in parts -------------------


def test_lookup_finds_what_writing_would_find_without_writing(store: MemoryStore, url: str) -> None:
    store.write(
        [
            item("a", "Ana lives in Porto"),
            item("g", "Ana lives in Porto", memory_type="UserMemory"),
            item("e", "Eve owns a cat", doc="d.md"),
            item("o", "Ana lives in Porto", user="u2"),
        ],
        now=T0,
    )
    store.forget(SourceSelector(doc_path="d.md"), user_id="u1", now=T0)
    history = sql(url, "SELECT count(*) FROM memreader_history")
    asked = [
        item("a", "ana lives in porto."),  # its own id, stored active: NONE
        item("b", "Ana lives in  Porto", session="s2"),  # another id, the same memory
        item("w", "Ana lives in Porto", memory_type="WorkingMemory"),  # no memory of that type
        item("e", "Eve owns a cat"),  # stored, but expired: writing brings it back
        item("a", "Ana lives in Lisbon"),  # the id holds other text: write() refuses it
        item("n", "Nobody said this"),
    ]
    found = store.lookup(asked, user_id="u1")
    assert [(e.event, e.memory_id, e.item_id) if e else None for e in found] == [
        ("NONE", "a", "a"),
        ("REINFORCE", "a", "b"),
        None,
        None,
        None,
        None,
    ]
    assert found[0] is not None and found[0].reason == "already stored"
    assert found[1] is not None and "the same memory is stored as a" in found[1].reason
    # Owners are walls: u2's copy is u2's alone.
    assert store.lookup([item("x", "Ana lives in Porto", user="u3")], user_id="u3") == [None]
    assert store.lookup([], user_id="u1") == []
    assert sql(url, "SELECT count(*) FROM memreader_history") == history  # nothing written
    with pytest.raises(InputError, match=r"item 0 \(id 'o'\): owner 'u2' is not 'u1'"):
        store.lookup([item("o", "Ana lives in Porto", user="u2")], user_id="u1")
    # An item found here is written without a vector; the store keeps its own.
    assert events(store.write([asked[0], asked[1]])) == [("NONE", "a"), ("REINFORCE", "a")]


def _rows_and_history(url: str) -> tuple[list[tuple[Any, ...]], ...]:
    memories = sql(
        url,
        "SELECT user_id, id, status, memory, supports, reinforced, valid_from, recorded_at, "
        "retired_at, valid_to, superseded_by FROM memreader_memories ORDER BY user_id, id",
    )
    keys = sql(
        url,
        "SELECT m.id, k.key FROM memreader_keys k JOIN memreader_memories m "
        "ON m.rowid = k.memory_rowid ORDER BY m.id, k.key",
    )
    history = sql(
        url,
        "SELECT user_id, memory_id, event, old_memory, new_memory, at, reason, source_ids "
        "FROM memreader_history ORDER BY id",
    )
    return memories, keys, history


def test_writing_in_parts_then_retiring_gives_the_rows_of_one_write(
    new_url: Callable[[str], str],
) -> None:
    """Each version of an input written at once (``replaces``) or in parts then retired
    (``write_part`` + ``retire_unseen``): the same rows, keys, history and events."""
    key = SourceSelector(input_key="in/a.jsonl")
    v1 = [
        item("a", "The budget is 10k", message="m1"),
        item("b", "Launch in May", message="m2"),
        item("old", "The office is in Lisbon", message="m3"),
    ]
    v2 = [
        item("a", "The budget is 10k", message="m1"),
        item("c", "Launch in June", message="m4"),
        # The same memory again in a later part: it keeps what the earlier part gave it.
        item("c2", "launch in june.", message="m5"),
    ]
    other = [item("x", "Launch in May", doc="plan.md")]
    whole_url, parts_url = new_url("whole"), new_url("parts")
    with open_store(whole_url, text_only=True) as whole:
        whole_events = [
            whole.write(v1, replaces=key, now=T0),
            whole.write(other, now=T0),
            whole.write(v2, replaces=key, now=T0 + timedelta(days=1)),
        ]
    with open_store(parts_url, text_only=True) as parts:
        parts_events = []
        for version, at in ((v1, T0), (v2, T0 + timedelta(days=1))):
            written = parts.write_part(version[:2], source=key, now=at)
            written += parts.write_part(version[2:], source=key, now=at)
            seen = {"u1": {e.memory_id for e in written}}
            if version is v2:
                # Before the retirement, the earlier run's memories stay beside the new ones.
                before = [parts.get(i, user_id="u1") for i in ("b", "old")]
                assert [m.status if m else None for m in before] == ["active", "active"]
            parts_events.append(written + parts.retire_unseen(key, seen=seen, now=at))
            if version is v1:
                parts_events.append(parts.write(other, now=at))
    assert [events(e) for e in parts_events] == [events(e) for e in whole_events]
    assert events(parts_events[2]) == [
        ("NONE", "a"),
        ("ADD", "c"),
        ("REINFORCE", "c"),
        ("UPDATE", "b"),
        ("SUPERSEDE", "old"),
    ]
    assert [e.reason for e in parts_events[2]] == [e.reason for e in whole_events[2]]
    assert _rows_and_history(parts_url) == _rows_and_history(whole_url)
    c = sql(parts_url, "SELECT supports FROM memreader_memories WHERE id = 'c'")[0][0]
    assert "m4" in c and "m5" in c


def test_retire_unseen_spans_owners_and_touches_nothing_else(store: MemoryStore) -> None:
    key = SourceSelector(input_key="in/b.jsonl")
    first = [item("a", "Ana lives in Porto"), item("z", "Zoe plays chess", user="u2")]
    assert events(store.write_part(first, source=key, now=T0)) == [("ADD", "a"), ("ADD", "z")]
    store.write([item("k", "Kim sings")], replaces=SourceSelector(input_key="other"), now=T0)
    assert store.retire_unseen(key, seen={"u1": {"a"}, "u2": {"z"}}, now=T0) == []
    # The input read again yields nothing of u2's: u2's memory is retired too.
    again = store.write_part([item("a", "Ana lives in Porto")], source=key, now=T0)
    retired = store.retire_unseen(key, seen={"u1": {"a"}}, now=T0 + timedelta(days=1))
    assert events(again) == [("NONE", "a")] and events(retired) == [("SUPERSEDE", "z")]
    assert retired[0].reason == "input:in/b.jsonl was written again without this memory"
    gone = store.get("z", user_id="u2")
    assert gone is not None and gone.status == "superseded"
    assert gone.retired_at == T0 + timedelta(days=1)
    assert [h.event for h in store.history("z", user_id="u2")] == ["ADD", "SUPERSEDE"]
    assert store.retire_unseen(key, seen={"u1": {"a"}}) == []  # twice changes nothing
    for kept in ("a", "k"):
        stored = store.get(kept, user_id="u1")
        assert stored is not None and stored.status == "active"
    with pytest.raises(InputError, match="source must be a SourceSelector"):
        store.write_part([], source="in/b.jsonl")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="source must be a SourceSelector"):
        store.retire_unseen("in/b.jsonl", seen={})  # type: ignore[arg-type]
