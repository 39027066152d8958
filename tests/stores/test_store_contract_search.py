"""The memory stores' shared behaviour (issue 19), search side, through the public API
``open_store(url)``: each test runs on both backends, a SQLite file and a fresh PostgreSQL
database (tests/stores/conftest.py). Hybrid search with its score parts, modes, filters and
weights; owners as walls; two processes writing at once; bad input.

The writing side: tests/stores/test_store_contract.py.
"""

from __future__ import annotations

import math
import multiprocessing
from datetime import datetime, timedelta
from typing import Any

import pytest

from memreader.errors import ConfigError, InputError, StoreError
from memreader.stores import MemoryStore, SourceSelector, open_store
from memreader.stores.scoring import DEFAULT_GAMMA, DEFAULT_IMPORTANCE_WEIGHT
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, events, item, sql

pytestmark = pytest.mark.timeout(120)

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
    w = DEFAULT_IMPORTANCE_WEIGHT
    factor = (1 + w * (top.importance - 0.5)) / (1 + w / 2)
    assert math.isclose(top.final, top.relevance * factor * top.decay) and 0 < top.relevance <= 1
    # The one passage holding the query's only word matches fully, whatever a hash vector says.
    assert top.passage == 1.0 and top.relevance >= 0.98
    finals = [h.score.final for h in hits]
    assert finals == sorted(finals, reverse=True) and len(hits) == 5
    # The same text as the query: the vector list puts it first (cosine 1).
    exact = store.search("note number 7 about everyday things", user_id="u1", k=1)
    assert exact[0].memory.id == "i7"
    assert math.isclose(exact[0].score.similarity or 0, 1.0, rel_tol=1e-5)


@pytest.mark.parametrize(
    ("text", "query"),
    [
        ('Ana said "NEAR" AND (OR) * -x: col', '"near" AND OR*'),
        # With what PostgreSQL's tsquery syntax gives a meaning to.
        ('Ana said "NEAR" AND (OR) * -x: col \' & | ! <->', '"near" AND OR* \' & | !:*'),
    ],
    ids=["fts5", "tsquery"],
)
def test_search_without_an_embedder_is_full_text_and_safe(url: str, text: str, query: str) -> None:
    with open_store(url, text_only=True) as store:
        store.write([item("a", text)])
        assert store.search("?!*()", user_id="u1") == []
        assert store.search("", user_id="u1") == []
        hits = store.search(query, user_id="u1")
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
            item("undated", "Cy likes tea"),  # its time is when it was recorded: now
        ]
    )
    hits = {h.memory.id: h.score for h in store.search("likes tea", user_id="u1", now=T0)}
    assert math.isclose(hits["old"].decay, DEFAULT_GAMMA**100) and hits["new"].decay == 1.0
    assert hits["undated"].decay == 1.0 or hits["undated"].decay > hits["old"].decay


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


def test_importance_and_decay_weigh_what_the_store_options_say(url: str) -> None:
    old = item("old", "Ana likes green tea", at=T0 - timedelta(days=30))
    meta = old.metadata.model_copy(update={"importance": 1.0})
    items = [old.model_copy(update={"metadata": meta}), item("new", "Bo likes green tea", at=T0)]
    for options, parts in (
        ({}, (DEFAULT_IMPORTANCE_WEIGHT, DEFAULT_GAMMA)),
        ({"importance_weight": 0, "gamma": 1.0}, (0.0, 1.0)),
        ({"importance_weight": 1.5, "gamma": 0.9}, (1.5, 0.9)),
    ):
        with open_store(url, embedder=HashEmbedder(), **options) as store:
            store.write(items, now=T0)
            hits = {h.memory.id: h.score for h in store.search("green tea", user_id="u1", now=T0)}
        weight, gamma = parts
        for score in hits.values():
            factor = (1 + weight * (score.importance - 0.5)) / (1 + weight / 2)
            assert math.isclose(score.final, score.relevance * factor * score.decay)
            assert math.isclose(score.decay, gamma ** (30 if score.importance == 1.0 else 0))
        assert max(s.relevance for s in hits.values()) == 1.0
    for bad in (-0.1, 2, True, "0.1"):
        with pytest.raises(ConfigError, match="importance_weight must be a number in"):
            open_store(url, importance_weight=bad, text_only=True)


# -- owners --------------------------------------------------------------------------------


def test_owners_are_walls(url: str, backend: str) -> None:
    # On PostgreSQL without an embedder: the first vector fixes the store's dimension, and the
    # 2-dimension vectors below are the store's (the hash embedder's have 16). On SQLite with
    # it, as before: the queries are embedded, and the vector half meets the walls too.
    embedder = HashEmbedder() if backend == "sqlite" else None
    with open_store(url, embedder=embedder, text_only=embedder is None) as store:
        doc = SourceSelector(doc_path="d.md")
        store.write([item("a", "Ana lives in Porto", doc="d.md", vector=[1.0, 0.0], model="m")])
        # The same text, id and near vector from another owner: a new memory, not a reinforcement.
        other = item(
            "a", "Ana lives in Porto", user="u2", doc="d.md", vector=[1.0, 0.01], model="m"
        )
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
    with open_store(url, timeout=60, text_only=True) as store:
        for n in range(rounds):
            # The same ids from both workers, and the same texts under each worker's own ids.
            one_hot = [float(i == n) for i in range(64)]  # different facts, cosine 0
            batch = [item(f"shared-{n}", f"shared fact {n}", vector=one_hot)]
            batch.append(item(f"w{worker}-{n}", f"Fact number {n}.", session=f"s{worker}"))
            store.write(batch)


def test_two_processes_writing_overlapping_items_make_no_duplicates(url: str) -> None:
    open_store(url, text_only=True).close()
    ctx = multiprocessing.get_context("spawn")
    workers = [ctx.Process(target=_write_overlapping, args=(url, w, 40)) for w in (1, 2)]
    for process in workers:
        process.start()
    for process in workers:
        process.join(timeout=120)
        if process.is_alive():  # pragma: no cover - a hang: stop it and fail
            process.kill()
        assert process.exitcode == 0
    texts = [r[0] for r in sql(url, "SELECT memory FROM memreader_memories WHERE status='active'")]
    assert len(texts) == len(set(texts)) == 80
    # Each "Fact number n" was written by both: one row, seen twice.
    assert sql(url, "SELECT sum(reinforced) FROM memreader_memories") == [(40,)]


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
    poisoned = item("v", "text")
    poisoned.metadata.embedding = [math.nan, 1.0]  # set after validation, as an embedder's is
    with pytest.raises(InputError, match=r"item 0 \(id 'v'\): the embedding has non-finite"):
        store.write([poisoned])
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


def test_a_failing_embedder_is_a_store_error(url: str) -> None:
    class Broken:
        def embed(self, texts: Any) -> list[list[float]]:
            raise RuntimeError("model fell over")

    with open_store(url, embedder=Broken()) as store:
        with pytest.raises(StoreError, match="embedder failed: RuntimeError: model fell over"):
            store.write([item("a", "Ana lives in Porto")])
        with pytest.raises(StoreError, match="embedder failed"):
            store.search("Porto", user_id="u1")
