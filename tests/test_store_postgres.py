"""The PostgreSQL memory store (issue 19) against a real server (``pgserver``: PostgreSQL with
pgvector, started once for this module on a unix socket in a temporary folder), through the
public API: ``open_store("postgresql://...")``. Each test gets a fresh database.

The behaviours are the embedded store's (tests/test_stores.py), checked here against the
server: idempotent writes, reinforcement, near duplicates, ``replaces``, forget, purge, history,
hybrid search with its score parts, filters, owners as walls, two processes at once.
"""

from __future__ import annotations

import itertools
import json
import math
import multiprocessing
from collections.abc import Iterator
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import psycopg
import pytest
import yaml

from memreader.batch.job import load_job
from memreader.batch.run import run_job
from memreader.batch.sinks import store as store_sink
from memreader.cli import main
from memreader.errors import ConfigError, InputError, StoreError
from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.stores import MemoryStore, SourceSelector, open_store
from memreader.stores.scoring import DEFAULT_GAMMA, DEFAULT_IMPORTANCE_WEIGHT
from memreader.testing import HashEmbedder
from tests.pg_server import create_database, running_server

pytestmark = pytest.mark.timeout(120)

T0 = datetime(2026, 1, 10, 12, 0, tzinfo=timezone.utc)
_NAMES = itertools.count()


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


def events(result: list[Any]) -> list[tuple[str, str]]:
    return [(e.event, e.memory_id) for e in result]


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    """The admin URL of a server for this module (stopped and deleted at the end)."""
    with running_server() as admin_url:
        yield admin_url


@pytest.fixture
def url(server: str) -> str:
    """A fresh, empty database."""
    return create_database(server, f"t{next(_NAMES)}")


@pytest.fixture
def store(url: str) -> Iterator[MemoryStore]:
    with open_store(url, embedder=HashEmbedder()) as opened:
        yield opened


def sql(url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute(query, params).fetchall()


# -- writing -------------------------------------------------------------------------------


def test_writing_the_same_items_twice_changes_nothing(store: MemoryStore, url: str) -> None:
    batch = [item("a", "Ana lives in Porto.", message="m1"), item("b", "Ana likes green tea.")]
    assert events(store.write(batch, now=T0)) == [("ADD", "a"), ("ADD", "b")]
    query = "SELECT id, memory, reinforced, supports FROM memreader_memories ORDER BY id"
    before = sql(url, query)
    again = store.write(batch, now=T0 + timedelta(days=1))
    assert events(again) == [("NONE", "a"), ("NONE", "b")]
    assert sql(url, query) == before
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


def test_near_duplicates_by_cosine_model_and_threshold(server: str) -> None:
    base, close, far = [1.0, 0.0, 0.0, 0.0], [1.0, 0.1, 0.0, 0.0], [0.0, 1.0, 0.0, 0.0]
    with open_store(create_database(server, "near")) as store:
        store.write([item("a", "Ana lives in Porto", vector=base, model="m")], now=T0)
        near = store.write([item("b", "Ana is based in Porto", vector=close, model="m")])
        other_model = store.write([item("c", "Ana resides in Porto", vector=close, model="x")])
        different = store.write([item("d", "Ana owns a cat", vector=far, model="m")])
    assert events(near) == [("REINFORCE", "a")] and "cosine 0.995" in near[0].reason
    assert events(other_model) == [("ADD", "c")]  # vectors of other models are not compared
    assert events(different) == [("ADD", "d")]
    batch = [
        item("a", "Ana lives in Porto", vector=[1.0, 0.0], model="m"),
        item("b", "Ana is based in Porto", vector=[1.0, 0.2], model="m"),  # cosine 0.981
    ]
    with open_store(create_database(server, "strict"), near_duplicate=0.99) as strict:
        assert events(strict.write(batch)) == [("ADD", "a"), ("ADD", "b")]
    with open_store(create_database(server, "loose")) as loose:  # within one transaction
        assert events(loose.write(batch)) == [("ADD", "a"), ("REINFORCE", "a")]


def test_valid_from_is_the_earliest_source_time(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto", at=T0)], now=T0 + timedelta(days=3))
    store.write([item("b", "Ana lives in Porto.", session="s2", at=T0 - timedelta(days=2))])
    stored = store.get("a", user_id="u1")
    assert stored is not None
    assert stored.valid_from == T0 - timedelta(days=2)
    assert stored.recorded_at == T0 + timedelta(days=3)
    assert stored.importance is None and stored.status == "active"


def test_a_resolved_valid_from_wins_over_the_source_time(store: MemoryStore) -> None:
    said = item("a", "Ana moved to Porto yesterday", at=T0)
    meta = said.metadata.model_copy(update={"valid_from": T0 - timedelta(days=1)})
    store.write([said.model_copy(update={"metadata": meta})], now=T0)
    stored = store.get("a", user_id="u1")
    assert stored is not None and stored.valid_from == T0 - timedelta(days=1)


def test_importance_is_kept_and_weighs_in_the_score(store: MemoryStore) -> None:
    scored = item("a", "Ana likes tea")
    meta = scored.metadata.model_copy(update={"importance": 0.9, "importance_reason": "a taste"})
    store.write([scored.model_copy(update={"metadata": meta}), item("b", "Bo likes tea")], now=T0)
    stored = store.get("a", user_id="u1")
    assert stored is not None and (stored.importance, stored.importance_reason) == (0.9, "a taste")
    hits = {h.memory.id: h.score for h in store.search("tea", user_id="u1", now=T0)}
    assert hits["a"].importance == 0.9 and hits["b"].importance == 0.5


def test_the_embedder_embeds_only_items_not_stored(url: str) -> None:
    embedder = HashEmbedder()
    with open_store(url, embedder=embedder) as store:
        store.write([item("a", "Ana lives in Porto"), item("b", "Bo plays chess")])
        store.write([item("a", "Ana lives in Porto"), item("c", "bo plays chess.")])
        stored = store.get("a", user_id="u1")
    assert embedder.calls == [["Ana lives in Porto", "Bo plays chess"]]
    assert stored is not None and stored.item.metadata.embedding_model == "hash:16"
    assert stored.item.metadata.embedding is not None
    assert math.isclose(sum(x * x for x in stored.item.metadata.embedding), 1.0, rel_tol=1e-5)


def test_the_first_vector_fixes_the_dimension(url: str, server: str) -> None:
    with open_store(url) as store:
        store.write([item("t", "no vector yet")])
        store.write([item("a", "Ana lives in Porto", vector=[1.0, 0.0, 0.0])])
        with pytest.raises(InputError, match=r"item 1 \(id 'c'\): the embedding has 2 dim"):
            store.write([item("b", "Bo", vector=[0.0, 1.0, 0.0]), item("c", "Cy", vector=[1, 0])])
        assert store.get("b", user_id="u1") is None  # the failed write left nothing behind
    with pytest.raises(ConfigError, match=r"dimension=4, but .* holds 3-dimension"):
        open_store(url, dimension=4)
    fixed = open_store(create_database(server, "fixed"), dimension=2)
    with fixed, pytest.raises(InputError, match="this store holds 2-dimension vectors"):
        fixed.write([item("a", "Ana", vector=[1.0, 0.0, 0.0])])
    indexes = dict(sql(url, "SELECT indexname, indexdef FROM pg_indexes"))
    assert "USING hnsw (embedding vector_cosine_ops)" in indexes["memreader_memories_hnsw"]
    assert "USING gin (fts)" in indexes["memreader_memories_fts"]
    assert "WHERE (status = 'active'::text)" in indexes["memreader_memories_active_hash"]


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
    only = item("a", "Ana lives in Porto", doc="notes.md", message="m1")
    shared = item("b", "Bo plays chess", doc="notes.md", message="m1")
    store.write([only, shared], replaces=SourceSelector(input_key="in-1"), now=T0)
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
    back = store.write([only], now=T0 + timedelta(days=2))
    assert events(back) == [("ADD", "a")] and "expired" in back[0].reason
    assert [h.event for h in store.history("a", user_id="u1")] == ["ADD", "EXPIRE", "ADD"]


def test_purge_removes_only_retired_rows_older_than_asked(store: MemoryStore, url: str) -> None:
    store.write([item("a", "Ana lives in Porto", doc="d.md"), item("b", "Bo plays chess")])
    store.forget(SourceSelector(doc_path="d.md"), user_id="u1", now=T0)
    assert store.purge(older_than=T0) == 0
    assert store.purge(older_than=T0 + timedelta(seconds=1)) == 1
    assert store.get("a", user_id="u1") is None
    assert store.history("a", user_id="u1") == []
    assert store.get("b", user_id="u1") is not None
    assert store.search("Porto", user_id="u1", include_inactive=True)[0].memory.id == "b"
    assert sql(url, "SELECT count(*) FROM memreader_keys") == [(1,)]


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
    exact = store.search("note number 7 about everyday things", user_id="u1", k=1)
    assert exact[0].memory.id == "i7"
    assert math.isclose(exact[0].score.similarity or 0, 1.0, rel_tol=1e-5)


def test_search_without_an_embedder_is_full_text_and_safe(url: str) -> None:
    with open_store(url) as store:
        store.write([item("a", 'Ana said "NEAR" AND (OR) * -x: col \' & | ! <->')])
        assert store.search("?!*()", user_id="u1") == []
        assert store.search("", user_id="u1") == []
        hits = store.search('"near" AND OR* \' & | !:*', user_id="u1")
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
        [item("old", "Ana likes tea", at=T0 - timedelta(days=100)), item("new", "Bo likes tea")]
    )
    hits = {h.memory.id: h.score for h in store.search("likes tea", user_id="u1", now=T0)}
    assert math.isclose(hits["old"].decay, DEFAULT_GAMMA**100)
    assert hits["new"].decay == 1.0 or hits["new"].decay > hits["old"].decay


def test_both_stores_rank_alike(store: MemoryStore, tmp_path: Any) -> None:
    texts = [f"entry {i} mentions {'tea' if i % 3 else 'coffee'} and day {i}" for i in range(40)]
    batch = [item(f"i{n}", text, at=T0 - timedelta(days=n)) for n, text in enumerate(texts)]
    with open_store(f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder()) as embedded:
        embedded.write(batch, now=T0)
        expected = embedded.search("coffee day 9", user_id="u1", k=8, now=T0)
    store.write(batch, now=T0)
    got = store.search("coffee day 9", user_id="u1", k=8, now=T0)
    # The vector lists and fusion agree; the text lists rank with bm25 there, ts_rank here.
    assert got[0].memory.id == expected[0].memory.id
    assert {h.memory.id for h in got[:5]} & {h.memory.id for h in expected[:5]}
    assert [h.score.similarity for h in got if h.memory.id == "i9"] == pytest.approx(
        [h.score.similarity for h in expected if h.memory.id == "i9"], rel=1e-5
    )


# -- owners --------------------------------------------------------------------------------


def test_owners_are_walls(url: str) -> None:
    with open_store(url) as store:  # no embedder: the 2-dimension vectors below are the store's
        _owners_are_walls(store)


def _owners_are_walls(store: MemoryStore) -> None:
    doc = SourceSelector(doc_path="d.md")
    store.write([item("a", "Ana lives in Porto", doc="d.md", vector=[1.0, 0.0], model="m")])
    other = item("a", "Ana lives in Porto", user="u2", doc="d.md", vector=[1.0, 0.01], model="m")
    assert events(store.write([other])) == [("ADD", "a")]
    assert events(store.write([item("b", "x", user="u3")], replaces=doc)) == [("ADD", "b")]
    assert events(store.forget(doc, user_id="u3")) == [("EXPIRE", "b")]  # u3's own only
    assert store.search("Porto", user_id="u3") == []
    assert store.get("a", user_id="u3") is None and store.history("a", user_id="u3") == []
    for owner in ("u1", "u2"):
        stored = store.get("a", user_id=owner)
        assert stored is not None and stored.status == "active" and stored.reinforced == 0
        hits = store.search("Porto", user_id=owner)
        assert [h.memory.item.metadata.user_id for h in hits] == [owner]
    assert [e.event for e in store.forget(doc, user_id="u2")] == ["EXPIRE"]
    u1 = store.get("a", user_id="u1")
    assert u1 is not None and u1.status == "active"


# -- concurrency -----------------------------------------------------------------------------


def _write_overlapping(url: str, worker: int, rounds: int) -> None:
    with open_store(url, timeout=60) as store:
        for n in range(rounds):
            one_hot = [float(i == n) for i in range(64)]  # different facts, cosine 0
            batch = [item(f"shared-{n}", f"shared fact {n}", vector=one_hot)]
            batch.append(item(f"w{worker}-{n}", f"Fact number {n}.", session=f"s{worker}"))
            store.write(batch)


def test_two_processes_writing_overlapping_items_make_no_duplicates(url: str) -> None:
    open_store(url).close()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_overlapping, args=(url, w, 40)) for w in (1, 2)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=90)
        if process.is_alive():  # pragma: no cover - a hang: stop it and fail
            process.kill()
        assert process.exitcode == 0
    texts = [r[0] for r in sql(url, "SELECT memory FROM memreader_memories WHERE status='active'")]
    assert len(texts) == len(set(texts)) == 80
    assert sql(url, "SELECT sum(reinforced) FROM memreader_memories") == [(40,)]


def test_the_unique_index_refuses_a_second_active_copy(store: MemoryStore, url: str) -> None:
    store.write([item("a", "Ana lives in Porto")])
    with pytest.raises(psycopg.errors.UniqueViolation):
        sql(
            url,
            "INSERT INTO memreader_memories (id, user_id, session_id, memory_type, memory, "
            "content_hash, status, recorded_at, supports, item) SELECT 'z', user_id, "
            "session_id, memory_type, memory, content_hash, 'active', now(), supports, item "
            "FROM memreader_memories WHERE id = 'a'",
        )


# -- bad input, URLs, secrets ----------------------------------------------------------------


def test_bad_items_are_typed_errors_naming_the_item(store: MemoryStore) -> None:
    good = item("a", "Ana lives in Porto")
    with pytest.raises(InputError, match=r"item 1: expected a TextualMemoryItem, got dict"):
        store.write([good, {"id": "x"}])  # type: ignore[list-item]
    with pytest.raises(InputError, match=r"item 1 \(id 'a'\): a stored memory has this id"):
        store.write([good])
        store.write([item("z", "fine"), item("a", "Ana lives in Lisbon")])
    assert store.get("z", user_id="u1") is None  # the failed write left nothing behind
    with pytest.raises(InputError, match="now must be a timezone-aware datetime"):
        store.write([good], now=datetime(2026, 1, 1))
    with pytest.raises(InputError, match="k must be a positive integer"):
        store.search("tea", user_id="u1", k=0)
    with pytest.raises(InputError, match="user_id must be a non-empty string"):
        store.search("tea", user_id="")


def test_urls_options_and_secrets(url: str) -> None:
    secret = "hunter2-s3cret"
    unreachable = f"postgresql://ana:{secret}@127.0.0.1:1/mem?sslmode=disable"
    with pytest.raises(StoreError, match="cannot open the postgresql store") as failed:
        open_store(unreachable, timeout=2)
    assert secret not in str(failed.value) and "ana@127.0.0.1:1/mem" in str(failed.value)
    with pytest.raises(ConfigError, match="unknown postgresql store option") as bad:
        open_store(unreachable, colour="red")
    assert secret not in str(bad.value)
    with pytest.raises(ConfigError, match="near_duplicate must be a number"):
        open_store(unreachable, near_duplicate=1.5)
    # The test server trusts local sockets, so a password in the URL is accepted and ignored.
    with_password = url.replace("postgres:@", f"postgres:{secret}@")
    store = open_store(with_password)
    assert secret not in repr(store) and secret not in str(vars(store).get("url"))
    store.close()
    with pytest.raises(StoreError, match="is closed") as closed:
        store.get("a", user_id="u1")
    assert secret not in str(closed.value)


def test_a_failing_embedder_is_a_store_error(url: str) -> None:
    class Broken:
        def embed(self, texts: Any) -> list[list[float]]:
            raise RuntimeError("model fell over")

    with open_store(url, embedder=Broken()) as store:
        with pytest.raises(StoreError, match="embedder failed: RuntimeError: model fell over"):
            store.write([item("a", "Ana lives in Porto")])
        with pytest.raises(StoreError, match="embedder failed"):
            store.search("Porto", user_id="u1")


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


def test_writing_in_parts_then_retiring_gives_the_rows_of_one_write(server: str) -> None:
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
    whole_url, parts_url = create_database(server, "whole"), create_database(server, "parts")
    with open_store(whole_url) as whole:
        whole_events = [
            whole.write(v1, replaces=key, now=T0),
            whole.write(other, now=T0),
            whole.write(v2, replaces=key, now=T0 + timedelta(days=1)),
        ]
    with open_store(parts_url) as parts:
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


# -- batch jobs into a PostgreSQL store ---------------------------------------------------------


def _scenes(tag: str, n: int, *, changed: int | None = None) -> str:
    """``n`` two-message scenes as JSONL; scene ``changed`` says something else."""
    lines = []
    for k in range(n):
        word = "coffee" if k == changed else "tea"
        scene = [
            {"role": "user", "content": f"{tag}: day {k}, I drank {word} number {k}."},
            {"role": "assistant", "content": f"Noted, {tag} {k}."},
        ]
        lines.append(json.dumps(scene))
    return "\n".join(lines) + "\n"


def _job(folder: Path, store_url: str, **extra: Any) -> Path:
    job = {
        "reader": {"backend": "simple_struct", "config": {"embedder": {"backend": "hash"}}},
        "inputs": [
            {"path": "in", "format": "jsonl", "user_id": {"from": "constant", "value": "u1"}}
        ],
        "output": {"store": store_url, "path": "out"},
        **extra,
    }
    (folder / "in").mkdir(parents=True, exist_ok=True)
    path = folder / "job.yaml"
    path.write_text(yaml.safe_dump(job), encoding="utf-8")
    return path


def _memories(url: str) -> list[tuple[Any, ...]]:
    return sql(url, "SELECT user_id, id, status, memory FROM memreader_memories ORDER BY id")


def test_a_job_into_a_postgresql_store_its_rerun_and_a_changed_input(
    url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    secret = "s3cretpw"  # the test server trusts its socket: the password is ignored
    job_file = _job(tmp_path, url.replace("postgres:@", f"postgres:{secret}@"))
    (tmp_path / "in" / "a.jsonl").write_text(_scenes("a", 3), encoding="utf-8")
    (tmp_path / "in" / "b.jsonl").write_text(_scenes("b", 2), encoding="utf-8")
    assert main(["ingest", str(job_file), "--quiet"]) == 0
    stored = _memories(url)
    assert len(stored) == 5 and {r[2] for r in stored} == {"active"}
    manifest = json.loads((tmp_path / "out" / "_manifest.json").read_text())
    where = url.replace("postgres:@", "postgres:***@")
    assert manifest["inputs"]["in/a.jsonl"]["outputs"] == [f"{where} (input:in/a.jsonl)"]
    for written in (tmp_path / "out").iterdir():
        assert secret not in written.read_text(), written
    with open_store(url) as opened:
        hit = opened.search("b: day 1", user_id="u1", k=1)[0].memory
    assert "b: day 1" in hit.item.memory
    keys = sql(
        url,
        "SELECT DISTINCT k.key FROM memreader_keys k JOIN memreader_memories m "
        "ON m.rowid = k.memory_rowid WHERE m.id = %s AND k.key LIKE 'input:%%'",
        hit.id,
    )
    assert keys == [("input:in/b.jsonl",)]  # every support keyed by its input
    # Re-ingesting what is stored: the same rows, no history, nothing embedded (dedup looks
    # the items up in the PostgreSQL store).
    history = sql(url, "SELECT count(*) FROM memreader_history")
    job = load_job(job_file)
    again = run_job(job, restart=True)
    assert again.read == 2 and again.counts["items"] == 5 and again.counts["embeddings"] == 0
    assert _memories(url) == stored
    assert sql(url, "SELECT count(*) FROM memreader_history") == history
    # A changed input: its changed scene replaces the old memory, which is superseded.
    (tmp_path / "in" / "a.jsonl").write_text(_scenes("a", 3, changed=1), encoding="utf-8")
    changed = run_job(job)
    assert changed.read == 1 and changed.counts["embeddings"] == 1
    now = {r[1]: r for r in _memories(url)}
    old = [r[1] for r in stored if "day 1" in r[3] and r[3].startswith("user: a:")]
    assert len(now) == 6 and [now[i][2] for i in old] == ["superseded"]
    assert [r[2] for r in now.values() if "coffee" in r[3]] == ["active"]
    with open_store(url) as opened:
        assert [h.event for h in opened.history(old[0], user_id="u1")] == ["ADD", "SUPERSEDE"]
    capsys.readouterr()


def test_a_job_killed_before_its_commit_reruns_to_the_rows_of_a_clean_run(
    server: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def run(name: str, *, die: bool) -> list[tuple[Any, ...]]:
        db = create_database(server, name)
        job_file = _job(tmp_path / name, db, scenes_per_call=1)
        data = tmp_path / name / "in" / "a.jsonl"
        data.write_text(_scenes("a", 4), encoding="utf-8")
        job = load_job(job_file)
        run_job(job)
        data.write_text(_scenes("a", 4, changed=0), encoding="utf-8")
        if die:
            with monkeypatch.context() as patch:
                patch.setattr(store_sink, "PART_ITEMS", 1)

                def killed(self: store_sink.StoreInputWriter) -> list[str]:
                    raise SystemExit("killed")

                patch.setattr(store_sink.StoreInputWriter, "commit", killed)
                with pytest.raises(SystemExit):
                    run_job(job)
            # The parts written are there, beside what the first run committed.
            assert [r[2] for r in _memories(db)] == ["active"] * 5
        run_job(job)
        return _memories(db)

    killed, fresh = run("killed", die=True), run("fresh", die=False)
    assert killed == fresh and sorted(r[2] for r in fresh) == ["active"] * 4 + ["superseded"]


def test_text_search_skips_words_past_the_budget(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memreader.stores import postgres_text

    store.write([item(f"t{i}", f"tea note {i}") for i in range(10)], now=T0)
    store.write([item("z", "tea in Zanzibar")], now=T0)

    def found(query: str) -> set[str]:
        return {h.memory.id for h in store.search(query, user_id="u1", k=20, mode="text")}

    assert len(found("tea zanzibar")) == 11  # 11 rows: within the default budget
    monkeypatch.setattr(postgres_text, "TEXT_BUDGET", 5)
    # "tea" is in 11 rows, more than the budget: only the rare word is ranked.
    assert found("tea zanzibar") == {"z"}
    assert found("tea") == set()
    # A write of this store refreshes the counts: "zanzibar" is now past the budget too.
    store.write([item(f"z{i}", f"Zanzibar again {i}") for i in range(5)], now=T0)
    assert found("zanzibar") == set()
    assert found("again zanzibar") == {f"z{i}" for i in range(5)}
    assert found("zanzibar 3") == {"t3", "z3"}


def test_text_budget_reads_postgres_statistics_once_analyzed(
    url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """After ``ANALYZE``, the words' rows are estimated from ``pg_stats`` (no count per
    word), and the budget still keeps a common word out."""
    from memreader.stores import postgres_text

    with open_store(url) as store:
        store.write([item(f"t{i}", f"tea note {i}") for i in range(10)], now=T0)
        store.write([item("z", "tea in Zanzibar")], now=T0)
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("ANALYZE memreader_memories")
    monkeypatch.setattr(postgres_text, "TEXT_BUDGET", 5)
    counted: list[str] = []
    real_get = postgres_text.WordStats.get

    def get(self: Any, conn: Any, owner: str, words: Any, stamp: int) -> Any:
        rows = real_get(self, conn, owner, words, stamp)
        counted.extend([] if rows is not None else words)
        return rows

    monkeypatch.setattr(postgres_text.WordStats, "get", get)
    with open_store(url) as store:
        found = {h.memory.id for h in store.search("tea zanzibar", user_id="u1", mode="text")}
    assert found == {"z"} and counted == []
