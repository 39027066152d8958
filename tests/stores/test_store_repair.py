"""``maintain``'s index repair on both backends (issue 41, class 4): it goes on past a row it
cannot read and names it; vectors stored without a model name, or without a direction (all
zeros; NaN and infinities where the backend can hold them), are embedded again; a vector the
embedder gives without a direction is never stored, on a write or a repair."""

from __future__ import annotations

import logging
import math
from collections.abc import Sequence

import pytest

from memreader.stores import MemoryStore, open_store
from memreader.testing import HashEmbedder
from tests.stores.store_backends import item, sql

pytestmark = pytest.mark.timeout(120)


def _bare(url: str, n: int = 5, *, vectors: bool = False, model: str | None = None) -> None:
    """``n`` memories of u1 written without the store's embedder (``vectors``: each with a
    one-hot vector of its own, of ``model``)."""
    with open_store(url, text_only=True) as store:
        store.write(
            [
                item(
                    f"m{i}",
                    f"fact {i} about the harbour {i}",
                    vector=[float(j == i) for j in range(16)] if vectors else None,
                    model=model,
                )
                for i in range(n)
            ]
        )


class _Broken(HashEmbedder):
    """The hash embedder, except that a text holding ``bad`` gets ``vector``."""

    def __init__(self, bad: str, vector: list[float]) -> None:
        super().__init__()
        self.bad, self.vector = bad, vector

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        good = super().embed(texts)
        return [list(self.vector) if self.bad in t else v for t, v in zip(texts, good, strict=True)]


def test_the_repair_goes_on_past_an_unreadable_row_and_names_it(url: str) -> None:
    _bare(url)
    sql(url, "UPDATE memreader_memories SET item = '{not json' WHERE id IN ('m1', 'm2')")
    with open_store(url, embedder=HashEmbedder(), lifecycle={"repair_batch": 1}) as store:
        assert store.maintain(dry_run=True).repaired == {"u1": 5}
        report = store.maintain()
        assert report.repaired == {"u1": 3}
        assert report.unreadable == {"u1": ["m1", "m2"]} and not report.complete
        assert report.to_dict()["unreadable"] == {"u1": ["m1", "m2"]}
        assert any("unreadable u1: 2 memories" in line for line in report.lines())
        with_vectors = "SELECT id FROM memreader_memories WHERE embedding IS NOT NULL ORDER BY id"
        assert [r[0] for r in sql(url, with_vectors)] == ["m0", "m3", "m4"]
        # What it could not read stays named on every run; nothing else is left to do.
        again = store.maintain()
        assert again.repaired == {} and again.unreadable == {"u1": ["m1", "m2"]}


def test_vectors_stored_without_a_model_name_are_embedded_again(url: str) -> None:
    _bare(url, 3, vectors=True)
    with open_store(url, embedder=HashEmbedder()) as store:
        assert store.embedding_models() == {"": 3}
        assert store.maintain(dry_run=True).repaired == {"u1": 3}
        report = store.maintain()
        assert report.repaired == {"u1": 3} and report.complete
        assert store.embedding_models() == {"hash:16": 3}
        assert store.maintain().repaired == {}


def test_vectors_without_a_direction_are_embedded_again(url: str, backend: str) -> None:
    _bare(url, 4, vectors=True, model="hash:16")
    zero = "[" + ",".join(["0"] * 16) + "]"
    if backend == "sqlite":  # NaN and infinities: only SQLite can hold them
        import numpy as np

        for memory_id, value in (("m0", 0.0), ("m1", math.nan), ("m2", math.inf)):
            blob = np.full(16, value, dtype="<f4").tobytes()
            sql(url, "UPDATE memreader_memories SET embedding = %s WHERE id = %s", blob, memory_id)
        sql(url, "UPDATE memreader_memories SET embedding = X'0000' WHERE id = 'm3'")  # 2 bytes
        broken = 4
    else:
        sql(url, f"UPDATE memreader_memories SET embedding = '{zero}' WHERE id = 'm0'")
        broken = 1
    with open_store(url, embedder=HashEmbedder()) as store:
        assert store.maintain(dry_run=True).repaired == {"u1": broken}
        assert store.maintain().repaired == {"u1": broken}
        assert store.maintain(dry_run=True).repaired == {}
        # A repaired memory is found by its vector again (the hash embedder's vector of its
        # own text is the query's).
        hits = store.search("fact 0 about the harbour 0", user_id="u1", mode="vector", k=1)
        assert [h.id for h in hits] == ["m0"]


def test_an_embedder_giving_no_direction_leaves_the_memory_without_a_vector_and_named(
    url: str, caplog: pytest.LogCaptureFixture
) -> None:
    embedder = _Broken("fact 2 ", [math.nan] * 16)
    with open_store(url, embedder=embedder) as store:
        with caplog.at_level(logging.WARNING, logger="memreader.stores.embedding"):
            events = store.write([item(f"m{i}", f"fact {i} about the dunes") for i in range(4)])
        assert [e.event for e in events] == ["ADD"] * 4  # nothing lost, nothing refused
        assert "'m2'" in caplog.text and "without a direction" in caplog.text
        assert [h.id for h in store.search("fact 2", user_id="u1", mode="text", k=1)] == ["m2"]
        report = store.maintain()
        assert report.unrepaired == {"u1": ["m2"]} and report.repaired == {}
        assert not report.complete
    with open_store(url, embedder=HashEmbedder()) as store:
        fixed = store.maintain()
        assert fixed.repaired == {"u1": 1} and fixed.complete
        assert store.embedding_models() == {"hash:16": 4}


def test_a_zero_vector_from_the_embedder_is_not_stored(store: MemoryStore, url: str) -> None:
    store.embedder = _Broken("dunes", [0.0] * 16)
    store.write([item("z", "fact about the dunes"), item("k", "fact about the cliffs")])
    rows = sql(url, "SELECT id FROM memreader_memories WHERE embedding IS NULL")
    assert rows == [("z",)]
