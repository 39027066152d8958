"""The index checked on open, on both backends: ``store.index_health()`` counts, per cause,
the active memories the vector search cannot find (no vector; another model's); and
``store.repair_index()`` embeds them again, a text the embedder fails on being that memory's
result (named in the report), an embedder that fails on every text an error."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from memreader.calls.deadlines import Deadline
from memreader.errors import DeadlineExceeded, InputError, StoreError
from memreader.stores import MemoryStore, open_store, public_url
from memreader.testing import HashEmbedder
from tests.stores.store_backends import item

pytestmark = pytest.mark.timeout(120)


class _Renamed(HashEmbedder):
    """The same vectors under another model's name: the store's embedder was changed."""

    def __init__(self) -> None:
        super().__init__()
        self.name = "hash-v2:16"


class _Refusing(HashEmbedder):
    """The hash embedder, failing (as a remote one does) on every batch holding ``bad``."""

    def __init__(self, bad: str) -> None:
        super().__init__()
        self.bad = bad
        self.tries = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.tries += 1
        if any(self.bad in text for text in texts):
            raise ValueError(f"the embedder refused a text holding {self.bad!r}")
        return super().embed(texts)


def _bare(url: str, n: int) -> None:
    """``n`` memories of u1 written without an embedder (``text_only``): no vectors."""
    with open_store(url, text_only=True) as store:
        store.write([item(f"m{i}", f"fact {i} about the harbour {i}") for i in range(n)])


def test_counts_rows_without_a_vector_and_with_another_models(url: str) -> None:
    _bare(url, 3)
    with open_store(url, embedder=HashEmbedder()) as store:
        store.write([item("v0", "the lighthouse keeper"), item("v1", "the night ferry")])
        health = store.index_health()
        assert (health.active, health.missing, health.foreign) == (5, 3, {})
        assert (health.embedder, health.unindexed, health.ok) == ("hash:16", 3, False)
        assert (
            health.command == f"memreader maintain --store {public_url(url)} --config READER.yaml"
        )
        assert "3 of 5 active memories are not in the vector index" in health.message()
    with open_store(url, embedder=_Renamed()) as store:  # the embedder was changed
        health = store.index_health()
        assert (health.missing, health.foreign, health.unindexed) == (3, {"hash:16": 2}, 5)
        assert health.to_dict()["foreign"] == {"hash:16": 2}
        assert "2 embedded with another model than 'hash-v2:16'" in health.message()
        assert store.repair_index(dry_run=True).repaired == {"u1": 5}
        report = store.repair_index()
        assert report.repaired == {"u1": 5} and report.complete
        assert store.index_health().ok and store.embedding_models() == {"hash-v2:16": 5}
        hits = store.search("fact 1 about the harbour 1", user_id="u1", mode="vector", k=1)
        assert [h.id for h in hits] == ["m1"]


def test_a_text_only_store_has_no_index_to_miss(url: str) -> None:
    _bare(url, 2)
    with open_store(url, text_only=True) as store:
        health = store.index_health()
        assert (health.text_only, health.active, health.ok, health.missing) == (True, 2, True, 0)
        assert health.to_dict()["command"] is None


def test_one_text_the_embedder_fails_on_is_that_memorys_result(url: str) -> None:
    _bare(url, 5)
    with open_store(url, embedder=_Refusing("fact 2 ")) as store:
        report = store.repair_index()
        assert report.repaired == {"u1": 4} and report.unrepaired == {"u1": ["m2"]}
        assert not report.complete
        assert any(line.startswith("unrepaired u1: 1 memories") for line in report.lines())
        assert store.index_health().missing == 1
    with open_store(url, embedder=_Refusing("fact")) as store:  # one text left, refused again
        assert store.repair_index().unrepaired == {"u1": ["m2"]}
    _bare(url, 7)  # m5, m6 join m2: failing on each of several texts is the embedder's failure
    with open_store(url, embedder=_Refusing("about")) as store:
        with pytest.raises(StoreError, match="ValueError"):
            store.repair_index()
        assert store.index_health().missing == 3  # nothing half-written


def test_an_embedder_that_is_down_is_tried_alone_on_three_texts_only(url: str) -> None:
    _bare(url, 10)
    down = _Refusing("fact")
    with open_store(url, embedder=down) as store:
        with pytest.raises(StoreError, match="the embedder refused"):
            store.repair_index()
        assert down.tries == 1 + 3  # the batch, then three texts alone: not ten
        assert store.index_health().missing == 10


def test_the_repair_stops_at_its_deadline(store: MemoryStore, url: str) -> None:
    _bare(url, 2)
    with pytest.raises(DeadlineExceeded):
        store.repair_index(deadline=Deadline(0))
    assert store.index_health().missing == 2


@pytest.mark.parametrize("bad", [{"batch": 0}, {"batch": "3"}, {"batch": True}, {"dry_run": 1}])
def test_a_bad_repair_argument_is_refused(store: MemoryStore, bad: dict[str, object]) -> None:
    name = next(iter(bad))
    with pytest.raises(InputError, match=name.replace("_", "_")):
        store.repair_index(**bad)  # type: ignore[arg-type]
