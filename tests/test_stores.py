"""The memory store (issue 19), through its public API: ``open_store("sqlite:///...")``.

Items are built by hand (one source each unless a test says otherwise); vectors come from the
``hash`` test embedder or are given explicitly where a test needs a chosen cosine.
"""

from __future__ import annotations

import math
import multiprocessing
import sqlite3
from collections.abc import Callable
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader.errors import ConfigError, InputError, StoreError
from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.stores import STORES, MemoryStore, SourceSelector, open_store
from memreader.stores.scoring import DEFAULT_GAMMA, DEFAULT_IMPORTANCE_WEIGHT
from memreader.testing import HashEmbedder

T0 = datetime(2026, 1, 10, 12, 0, tzinfo=timezone.utc)


def item(
    item_id: str,
    text: str,
    *,
    user: str = "u1",
    session: str = "s1",
    doc: str | None = None,
    message: str | None = None,
    at: datetime | None = None,
    vector: list[float] | None = None,
    model: str | None = None,
    memory_type: str = "LongTermMemory",
) -> TextualMemoryItem:
    """A memory item citing one source (the whole text of message 0)."""
    source = SourceMessage(
        scene_index=0,
        message_index=0,
        span=(0, len(text)),
        content=text,
        doc_path=doc,
        message_id=message,
        timestamp=at,
    )
    meta = TextualMemoryItemMetadata(
        user_id=user,
        session_id=session,
        memory_type=memory_type,
        sources=[source],
        embedding=vector,
        embedding_model=model,
    )
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)


def open_db(tmp_path: Path, name: str = "m.db", **options: Any) -> MemoryStore:
    return open_store("sqlite:///" + str(tmp_path / name), **options)


@pytest.fixture
def store(tmp_path: Path) -> Any:
    with open_db(tmp_path, embedder=HashEmbedder()) as opened:
        yield opened


def events(result: list[Any]) -> list[tuple[str, str]]:
    return [(e.event, e.memory_id) for e in result]


def active_rows(path: Path) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as conn:
        return conn.execute(
            "SELECT user_id, id, memory, reinforced, supports FROM memories "
            "WHERE status = 'active' ORDER BY user_id, id"
        ).fetchall()


# -- writing -------------------------------------------------------------------------------


def test_writing_the_same_items_twice_changes_nothing(store: MemoryStore, tmp_path: Path) -> None:
    batch = [item("a", "Ana lives in Porto.", message="m1"), item("b", "Ana likes green tea.")]
    assert events(store.write(batch, now=T0)) == [("ADD", "a"), ("ADD", "b")]
    before = active_rows(tmp_path / "m.db")
    again = store.write(batch, now=T0 + timedelta(days=1))
    assert events(again) == [("NONE", "a"), ("NONE", "b")]
    assert active_rows(tmp_path / "m.db") == before
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


def test_a_near_duplicate_reinforces_and_says_its_cosine(tmp_path: Path) -> None:
    base = [1.0, 0.0, 0.0, 0.0]
    close = [1.0, 0.1, 0.0, 0.0]  # cosine 0.995
    far = [0.0, 1.0, 0.0, 0.0]
    with open_db(tmp_path) as store:
        store.write([item("a", "Ana lives in Porto", vector=base, model="m")], now=T0)
        near = store.write([item("b", "Ana is based in Porto", vector=close, model="m")])
        other_model = store.write([item("c", "Ana resides in Porto", vector=close, model="x")])
        different = store.write([item("d", "Ana owns a cat", vector=far, model="m")])
    assert events(near) == [("REINFORCE", "a")] and "cosine 0.995" in near[0].reason
    assert events(other_model) == [("ADD", "c")]  # vectors of other models are not compared
    assert events(different) == [("ADD", "d")]


def test_near_duplicates_within_one_write_and_the_threshold_option(tmp_path: Path) -> None:
    batch = [
        item("a", "Ana lives in Porto", vector=[1.0, 0.0], model="m"),
        item("b", "Ana is based in Porto", vector=[1.0, 0.2], model="m"),  # cosine 0.981
    ]
    with open_db(tmp_path, "strict.db", near_duplicate=0.99) as strict:
        assert events(strict.write(batch)) == [("ADD", "a"), ("ADD", "b")]
    with open_db(tmp_path, "loose.db") as loose:
        assert events(loose.write(batch)) == [("ADD", "a"), ("REINFORCE", "a")]


def test_valid_from_is_the_earliest_source_time(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto", at=T0)], now=T0 + timedelta(days=3))
    store.write([item("b", "Ana lives in Porto.", session="s2", at=T0 - timedelta(days=2))])
    stored = store.get("a", user_id="u1")
    assert stored is not None
    assert stored.valid_from == T0 - timedelta(days=2)
    assert stored.recorded_at == T0 + timedelta(days=3)
    assert stored.importance is None and stored.status == "active"


def test_the_embedder_embeds_only_items_not_stored(tmp_path: Path) -> None:
    embedder = HashEmbedder()
    with open_db(tmp_path, embedder=embedder) as store:
        store.write([item("a", "Ana lives in Porto"), item("b", "Bo plays chess")])
        store.write([item("a", "Ana lives in Porto"), item("c", "bo plays chess.")])
        stored = store.get("a", user_id="u1")
    assert embedder.calls == [["Ana lives in Porto", "Bo plays chess"]]
    assert stored is not None and stored.item.metadata.embedding_model == "hash:16"
    assert stored.item.metadata.embedding is not None
    assert math.isclose(sum(x * x for x in stored.item.metadata.embedding), 1.0, rel_tol=1e-5)


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
    store: MemoryStore, tmp_path: Path
) -> None:
    store.write([item("a", "Ana lives in Porto", doc="d.md"), item("b", "Bo plays chess")])
    store.forget(SourceSelector(doc_path="d.md"), user_id="u1", now=T0)
    assert store.purge(older_than=T0) == 0
    assert store.purge(older_than=T0 + timedelta(seconds=1)) == 1
    assert store.get("a", user_id="u1") is None
    assert store.history("a", user_id="u1") == []
    assert store.get("b", user_id="u1") is not None
    assert store.search("Porto", user_id="u1", include_inactive=True)[0].memory.id == "b"
    with sqlite3.connect(tmp_path / "m.db") as conn:
        assert conn.execute("SELECT count(*) FROM memory_keys").fetchone()[0] == 1
        assert conn.execute("SELECT count(*) FROM memories_fts").fetchone()[0] == 1


def test_every_change_is_a_history_row(store: MemoryStore, tmp_path: Path) -> None:
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
    with sqlite3.connect(tmp_path / "m.db") as conn:
        assert conn.execute("SELECT count(*) FROM history").fetchone()[0] == changes == 6


# -- search --------------------------------------------------------------------------------


def test_hybrid_search_finds_a_rare_word_and_explains_its_score(store: MemoryStore) -> None:
    texts = [f"note number {i} about everyday things" for i in range(30)]
    texts.append("We met in Zanzibar last spring")
    store.write([item(f"i{n}", text) for n, text in enumerate(texts)], now=T0)
    hits = store.search("zanzibar", user_id="u1", k=5, now=T0 + timedelta(days=10))
    assert hits[0].memory.item.memory == "We met in Zanzibar last spring"
    top = hits[0].score
    assert top.text_rank == 1 and top.similarity is not None
    assert top.importance == 0.5 and math.isclose(top.decay, DEFAULT_GAMMA**10)
    factor = 1 + DEFAULT_IMPORTANCE_WEIGHT * (top.importance - 0.5)
    assert math.isclose(top.final, top.relevance * factor * top.decay) and 0 < top.relevance <= 1
    finals = [h.score.final for h in hits]
    assert finals == sorted(finals, reverse=True) and len(hits) == 5
    # The same text as the query: the vector list puts it first (cosine 1).
    exact = store.search("note number 7 about everyday things", user_id="u1", k=1)
    assert exact[0].memory.id == "i7" and math.isclose(
        exact[0].score.similarity or 0, 1.0, rel_tol=1e-5
    )


def test_search_without_an_embedder_is_full_text_and_safe(tmp_path: Path) -> None:
    with open_db(tmp_path) as store:
        store.write([item("a", 'Ana said "NEAR" AND (OR) * -x: col')])
        assert store.search("?!*()", user_id="u1") == []
        assert store.search("", user_id="u1") == []
        hits = store.search('"near" AND OR*', user_id="u1")
    assert [h.memory.id for h in hits] == ["a"] and hits[0].score.similarity is None


def test_search_filters(store: MemoryStore) -> None:
    store.write(
        [
            item("old", "tea in January", at=T0 - timedelta(days=9)),
            item("new", "tea in February", at=T0 + timedelta(days=20), session="s2"),
            item("pref", "tea preferred", memory_type="UserMemory"),
        ],
        now=T0,
    )

    def ids(**filters: Any) -> set[str]:
        return {h.memory.id for h in store.search("tea", user_id="u1", **filters)}

    assert ids() == {"old", "new", "pref"}
    assert ids(since=T0 + timedelta(days=1)) == {"new"}
    assert ids(until=T0 - timedelta(days=1)) == {"old"}
    assert ids(until=T0) == {"old", "pref"}  # pref's time is when it was recorded
    assert ids(types=["UserMemory"]) == {"pref"}
    assert ids(session_id="s2") == {"new"}
    store.forget(SourceSelector(session_id="s2"), user_id="u1")
    assert ids() == {"old", "pref"}
    assert ids(include_inactive=True) == {"old", "new", "pref"}


def test_newer_memories_decay_less(store: MemoryStore) -> None:
    store.write(
        [
            item("old", "Ana likes tea", at=T0 - timedelta(days=100)),
            item("new", "Bo likes tea", at=T0),
        ]
    )
    hits = {h.memory.id: h.score for h in store.search("likes tea", user_id="u1", now=T0)}
    assert math.isclose(hits["old"].decay, DEFAULT_GAMMA**100) and hits["new"].decay == 1.0


# -- owners --------------------------------------------------------------------------------


def test_owners_are_walls(store: MemoryStore) -> None:
    doc = SourceSelector(doc_path="d.md")
    store.write([item("a", "Ana lives in Porto", doc="d.md", vector=[1.0, 0.0], model="m")])
    # The same text, id and near vector from another owner: a new memory, not a reinforcement.
    other = item("a", "Ana lives in Porto", user="u2", doc="d.md", vector=[1.0, 0.01], model="m")
    assert events(store.write([other])) == [("ADD", "a")]
    assert events(store.write([item("b", "x", user="u3")], replaces=doc)) == [("ADD", "b")]
    assert events(store.forget(doc, user_id="u3")) == [("EXPIRE", "b")]  # u3's own only
    assert store.search("Porto", user_id="u3") == []
    assert store.get("a", user_id="u3") is None and store.history("a", user_id="u3") == []
    for owner in ("u1", "u2"):
        stored = store.get("a", user_id=owner)
        assert stored is not None and stored.status == "active" and stored.reinforced == 0
        assert [h.memory.item.metadata.user_id for h in store.search("Porto", user_id=owner)] == [
            owner
        ]
    assert [e.event for e in store.forget(doc, user_id="u2")] == ["EXPIRE"]
    u1 = store.get("a", user_id="u1")
    assert u1 is not None and u1.status == "active"


# -- concurrency and properties --------------------------------------------------------------


def _write_overlapping(path: str, worker: int, rounds: int) -> None:
    with open_store("sqlite:///" + path, timeout=60) as store:
        for n in range(rounds):
            # The same ids from both workers, and the same texts under each worker's own ids.
            batch = [item(f"shared-{n}", f"shared fact {n}")]
            batch.append(item(f"w{worker}-{n}", f"Fact number {n}.", session=f"s{worker}"))
            store.write(batch)


def test_two_processes_writing_overlapping_items_make_no_duplicates(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    open_store("sqlite:///" + path).close()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_overlapping, args=(path, w, 40)) for w in (1, 2)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
        assert process.exitcode == 0
    with sqlite3.connect(path) as conn:
        texts = [r[0] for r in conn.execute("SELECT memory FROM memories WHERE status='active'")]
        reinforced = conn.execute("SELECT sum(reinforced) FROM memories").fetchone()[0]
    assert len(texts) == len(set(texts)) == 80
    assert reinforced == 40  # each "Fact number n" was written by both: one row, seen twice


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
    with open_store("sqlite://:memory:") as store:
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


# -- bad input -----------------------------------------------------------------------------


def test_bad_items_are_typed_errors_naming_the_item(store: MemoryStore) -> None:
    good = item("a", "Ana lives in Porto")
    with pytest.raises(InputError, match=r"item 1: expected a TextualMemoryItem, got dict"):
        store.write([good, {"id": "x"}])  # type: ignore[list-item]
    with pytest.raises(InputError, match=r"item 0 \(id 'n'\): no user_id"):
        store.write([item("n", "text", user=" ")])
    with pytest.raises(InputError, match=r"item 1 \(id 'a'\): a stored memory has this id"):
        store.write([good])
        store.write([item("z", "fine"), item("a", "Ana lives in Lisbon")])
    assert store.get("z", user_id="u1") is None  # the failed write left nothing behind
    with pytest.raises(InputError, match=r"item 0 \(id 'v'\): the embedding has non-finite"):
        store.write([item("v", "text", vector=[math.nan, 1.0])])
    with pytest.raises(InputError, match="items must be a list"):
        store.write("Ana")  # type: ignore[arg-type]
    with pytest.raises(InputError, match="now must be a timezone-aware datetime"):
        store.write([good], now=datetime(2026, 1, 1))
    with pytest.raises(InputError, match="k must be a positive integer"):
        store.search("tea", user_id="u1", k=0)
    with pytest.raises(InputError, match="user_id must be a non-empty string"):
        store.search("tea", user_id="")
    with pytest.raises(InputError, match="types must be a list"):
        store.search("tea", user_id="u1", types="UserMemory")
    with pytest.raises(ValueError, match="exactly one source"):
        SourceSelector(doc_path="a", session_id="b")


def test_bad_urls_options_and_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ConfigError, match=r"unknown memory store 'redis'; known: .*sqlite"):
        open_store("redis://localhost")
    # A built-in whose module cannot be imported here is a ConfigError too, not ImportError.
    monkeypatch.setitem(STORES._lazy, "ghost", "memreader.stores.no_such_module")
    with pytest.raises(ConfigError, match="'ghost' memory store is not available"):
        open_store("ghost://somewhere")
    with pytest.raises(ConfigError, match="a store URL looks like"):
        open_store("memories.db")
    with pytest.raises(ConfigError, match="unknown sqlite store option"):
        open_db(tmp_path, colour="red")
    with pytest.raises(ConfigError, match="near_duplicate must be a number"):
        open_db(tmp_path, near_duplicate=1.5)
    with pytest.raises(ConfigError, match="names no file"):
        open_store("sqlite:///")
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"this is not a database, just bytes " * 200)
    with pytest.raises(StoreError, match="not a usable memreader store"):
        open_store("sqlite:///" + str(junk))
    store = open_db(tmp_path)
    store.close()
    with pytest.raises(StoreError):
        store.get("a", user_id="u1")


def test_a_failing_embedder_is_a_store_error(tmp_path: Path) -> None:
    class Broken:
        def embed(self, texts: Any) -> list[list[float]]:
            raise RuntimeError("model fell over")

    with open_db(tmp_path, embedder=Broken()) as store:
        with pytest.raises(StoreError, match="embedder failed: RuntimeError: model fell over"):
            store.write([item("a", "Ana lives in Porto")])
        with pytest.raises(StoreError, match="embedder failed"):
            store.search("Porto", user_id="u1")


# -- importance, valid_from, search modes, speed paths ---------------------------------------


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


def test_search_modes(store: MemoryStore) -> None:
    store.write([item(f"i{n}", f"note {n} about tea") for n in range(5)], now=T0)
    hybrid = store.search("tea", user_id="u1", now=T0)
    vector = store.search("tea", user_id="u1", now=T0, mode="vector")
    text = store.search("tea", user_id="u1", now=T0, mode="text")
    assert all(h.score.text_rank is not None and h.score.similarity is not None for h in hybrid)
    assert vector and all(h.score.text_rank is None for h in vector)
    assert all(h.score.similarity is not None for h in vector)
    assert text and all(h.score.similarity is None for h in text)
    assert store.search("zzz", user_id="u1", mode="text") == []
    with pytest.raises(InputError, match="mode must be one of hybrid, vector, text"):
        store.search("tea", user_id="u1", mode="both")  # type: ignore[arg-type]


def test_words_in_too_many_rows_are_not_ranked(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memreader.stores import sqlite_ops

    with open_db(tmp_path) as store:
        store.write([item(f"i{n}", f"tea number {n}") for n in range(20)], now=T0)
        store.write([item("z", "tea in Zanzibar")], now=T0)
        assert len(store.search("tea zanzibar", user_id="u1", k=50)) == 21
        # A budget of 5 index entries: "tea" (21 rows) is dropped, "zanzibar" (1 row) kept.
        monkeypatch.setattr(sqlite_ops, "TEXT_BUDGET", 5)
        assert [h.memory.id for h in store.search("tea zanzibar", user_id="u1", k=50)] == ["z"]
        assert store.search("tea", user_id="u1") == []
        # Written since: the counts are taken again.
        store.write([item(f"z{n}", f"Zanzibar again {n}") for n in range(5)], now=T0)
        assert store.search("zanzibar", user_id="u1") == []


def test_cached_vectors_follow_this_process_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store that searched before each change answers as a freshly opened one, without
    reading its vectors again (this process's writes patch them)."""
    from memreader.stores.sqlite_ops import StoreOps

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


def test_importance_and_decay_weigh_what_the_store_options_say(tmp_path: Path) -> None:
    old = item("old", "Ana likes green tea", at=T0 - timedelta(days=30))
    meta = old.metadata.model_copy(update={"importance": 1.0})
    items = [old.model_copy(update={"metadata": meta}), item("new", "Bo likes green tea", at=T0)]
    for options, parts in (
        ({}, (DEFAULT_IMPORTANCE_WEIGHT, DEFAULT_GAMMA)),
        ({"importance_weight": 0, "gamma": 1.0}, (0.0, 1.0)),
        ({"importance_weight": 1.5, "gamma": 0.9}, (1.5, 0.9)),
    ):
        url = f"sqlite:///{tmp_path / 'w.db'}"
        with open_store(url, embedder=HashEmbedder(), **options) as store:
            store.write(items, now=T0)
            hits = {h.memory.id: h.score for h in store.search("green tea", user_id="u1", now=T0)}
        weight, gamma = parts
        for score in hits.values():
            factor = 1 + weight * (score.importance - 0.5)
            assert math.isclose(score.final, score.relevance * factor * score.decay)
            assert math.isclose(score.decay, gamma ** (30 if score.importance == 1.0 else 0))
        assert max(s.relevance for s in hits.values()) == 1.0
    for bad in (-0.1, 2, True, "0.1"):
        with pytest.raises(ConfigError, match="importance_weight must be a number in"):
            open_store(f"sqlite:///{tmp_path / 'w.db'}", importance_weight=bad)
