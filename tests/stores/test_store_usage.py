"""Use records (issue 34, part 1) on both backends: ``mark_used`` and ``usage`` through
``open_store(url)``, what removes them (purge, erase), what never writes them (search), and
what does (``context``)."""

from __future__ import annotations

import logging
from datetime import datetime, timedelta, timezone

import pytest

from memreader.errors import ConfigError, InputError, StoreError
from memreader.stores import MemoryStore, SourceSelector, open_store
from memreader.stores.usage import Usage
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, item, sql

pytestmark = pytest.mark.timeout(120)


def _use_table(url: str) -> str:
    return "memory_use" if url.startswith("sqlite") else "memreader_memory_use"


def test_mark_used_counts_each_owned_memory_once_per_call(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto"), item("b", "Bo plays chess")])
    store.write([item("a", "Ana lives in Porto", user="u2")])
    assert store.usage(["a", "b"], user_id="u1") == {}
    # Unknown ids and another owner's ids are not counted; a repeated id counts once.
    assert store.mark_used(["a", "a", "nope"], user_id="u1", at=T0) == 1
    assert store.mark_used(["a", "b"], user_id="u1", at=T0 + timedelta(hours=1)) == 2
    assert store.usage(["a", "b", "nope"], user_id="u1") == {
        "a": Usage(2, T0 + timedelta(hours=1)),
        "b": Usage(1, T0 + timedelta(hours=1)),
    }
    assert store.usage(["a"], user_id="u2") == {}  # owners are walls
    # A use recorded late (an earlier ``at``) counts but never moves the last use back.
    assert store.mark_used(["a"], user_id="u1", at=T0 - timedelta(days=1)) == 1
    assert store.usage(["a"], user_id="u1")["a"] == Usage(3, T0 + timedelta(hours=1))
    assert store.mark_used([], user_id="u1") == 0


def test_use_rows_go_with_their_memory(store: MemoryStore, url: str) -> None:
    store.write([item("a", "Ana lives in Porto", doc="d.md"), item("b", "Bo plays chess")])
    store.add_memory("Cy likes tea.", user_id="u1", now=T0)
    ids = ["a", "b"]
    assert store.mark_used(ids, user_id="u1", at=T0) == 2
    store.forget(SourceSelector(doc_path="d.md"), user_id="u1", now=T0)
    # Expired, not purged: the use row stays (a memory that comes back keeps its use).
    assert store.usage(ids, user_id="u1").keys() == {"a", "b"}
    assert store.purge(older_than=T0 + timedelta(seconds=1)) == 1
    assert store.usage(ids, user_id="u1").keys() == {"b"}
    store.delete("b", user_id="u1", erase=True)
    assert store.usage(ids, user_id="u1") == {}
    assert sql(url, f"SELECT count(*) FROM {_use_table(url)}") == [(0,)]


def test_search_never_writes_use_and_context_marks_what_it_shows(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto"), item("b", "Bo plays chess in Lyon")])
    hits = store.search("Porto", user_id="u1")
    assert hits and store.usage(["a", "b"], user_id="u1") == {}
    block = store.context("where does Ana live, Porto?", user_id="u1", max_tokens=300)
    shown = {part.memory_id for part in block.parts}
    assert "a" in shown
    assert store.usage(["a", "b"], user_id="u1").keys() == shown
    assert all(u.access_count == 1 for u in store.usage(["a", "b"], user_id="u1").values())


def test_an_older_store_gains_the_use_table_on_open(url: str) -> None:
    with open_store(url, embedder=HashEmbedder()) as store:
        store.write([item("a", "Ana lives in Porto")])
    sql(url, f"DROP TABLE {_use_table(url)}")
    with open_store(url, embedder=HashEmbedder()) as store:
        assert store.mark_used(["a"], user_id="u1", at=T0) == 1
        assert store.usage(["a"], user_id="u1") == {"a": Usage(1, T0)}


FAR = datetime(9999, 12, 31, tzinfo=timezone.utc)  # a use dated there would never decay
SOON = datetime.now(timezone.utc) + timedelta(hours=1)
PAST_9999 = datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))


def test_a_use_a_little_ahead_of_the_stores_clock_is_recorded(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto")])
    ahead = datetime.now(timezone.utc) + timedelta(minutes=1)  # another host's clock
    assert store.mark_used(["a"], user_id="u1", at=ahead) == 1


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda s: s.mark_used("a", user_id="u1"), "ids must be a list of memory ids, got str"),
        (lambda s: s.mark_used({"a"}, user_id="u1"), "ids must be a list of memory ids, got set"),
        (lambda s: s.mark_used([1], user_id="u1"), "each id must be a non-empty string, got 1"),
        (lambda s: s.usage(None, user_id="u1"), "ids must be a list of memory ids, got NoneType"),
        (lambda s: s.mark_used(["a"], user_id=""), "user_id must be a non-empty string"),
        (lambda s: s.mark_used(["a"], user_id="u1", at="now"), "at must be a timezone-aware"),
        (
            lambda s: s.mark_used(["a"], user_id="u1", at=FAR),
            r"at \(9999-12-31T00:00:00\+00:00\) is later than now",
        ),
        (lambda s: s.mark_used(["a"], user_id="u1", at=SOON), "at .* is later than now"),
        (lambda s: s.mark_used(["a"], user_id="u1", at=PAST_9999), "at .* is out of range"),
    ],
)
def test_bad_use_arguments_are_input_errors(store: MemoryStore, call: object, message: str) -> None:
    with pytest.raises(InputError, match=message):
        call(store)  # type: ignore[operator]


def test_context_answers_when_use_cannot_be_recorded(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A store that cannot write (a read-only file or replica) still answers context(): the
    failure to record is a warning, not the call's error."""
    store.write([item("a", "Ana lives in Porto")])

    def refuse(ids: list[str], owner: str, at: object) -> int:
        raise StoreError("attempt to write a readonly database")

    monkeypatch.setattr(store, "_mark_used", refuse)
    with caplog.at_level(logging.WARNING, logger="memreader.stores.usage"):
        block = store.context("Porto", user_id="u1", max_tokens=300)
    assert [p.memory_id for p in block.parts] == ["a"]
    assert "could not record the use of 1 memories" in caplog.text
    with pytest.raises(StoreError, match="readonly"):
        store.mark_used(["a"], user_id="u1")  # asked for explicitly, the failure is raised


def test_mark_used_is_one_statement_per_call(tmp_path: object) -> None:
    with open_store(f"sqlite:///{tmp_path}/m.db", embedder=HashEmbedder()) as store:
        store.write([item(f"m{i}", f"memory number {i}") for i in range(30)])
        seen: list[str] = []
        commits = store._ops._commits  # type: ignore[attr-defined]
        store._conn.set_trace_callback(seen.append)  # type: ignore[attr-defined]
        assert store.mark_used([f"m{i}" for i in range(30)], user_id="u1") == 30
        assert sum("memory_use" in s for s in seen) == 1
        # Not a change of the memories: the search caches keyed by the store's commits stay.
        assert store._ops._commits == commits  # type: ignore[attr-defined]


def _twins(store: MemoryStore) -> None:
    """Two memories that match "tea" equally (same words, one more: a near-tie)."""
    store.write([item("a", "Ana drinks green tea"), item("b", "Ana drinks black tea")], now=T0)


def test_heat_lifts_used_memories_and_changes_nothing_without_use(store: MemoryStore) -> None:
    _twins(store)
    plain = store.search("Ana tea", user_id="u1", now=T0, mode="text")
    heated = store.search("Ana tea", user_id="u1", now=T0, mode="text", heat_weight=0.5)
    # Nothing used: the weight changes no score, no order.
    assert [(h.id, h.score) for h in heated] == [(h.id, h.score) for h in plain]
    assert all(h.score.heat == 0.0 for h in plain)
    last = plain[-1].id
    for _ in range(10):
        store.mark_used([last], user_id="u1", at=T0)
    assert store.usage([last], user_id="u1")[last].access_count == 10
    again = store.search("Ana tea", user_id="u1", now=T0, mode="text")
    assert [h.id for h in again] == [h.id for h in plain]  # the store's weight: 0
    lifted = store.search("Ana tea", user_id="u1", now=T0, mode="text", heat_weight=0.5)
    assert lifted[0].id == last and 0.6 < lifted[0].score.heat < 0.62  # log1p(10)/log1p(50)
    before = next(h for h in plain if h.id == last).score.final
    assert lifted[0].score.final == pytest.approx(
        min(1.0, before * (1 + 0.5 * lifted[0].score.heat))
    )
    # A month without use halves the heat.
    month = store.search("Ana tea", user_id="u1", now=T0 + timedelta(days=30), heat_weight=0.5)
    assert next(h for h in month if h.id == last).score.heat == pytest.approx(0.305, abs=0.01)
    assert store.usage([last], user_id="u1")[last].access_count == 10  # searches wrote nothing


def test_the_store_option_sets_the_default_heat_weight(url: str) -> None:
    with open_store(url, embedder=HashEmbedder(), heat_weight=0.5) as store:
        _twins(store)
        last = store.search("Ana tea", user_id="u1", now=T0, mode="text")[-1].id
        store.mark_used([last], user_id="u1", at=T0)
        assert store.search("Ana tea", user_id="u1", now=T0, mode="text")[0].id == last
        first = store.search("Ana tea", user_id="u1", now=T0, mode="text", heat_weight=0)[0]
        assert first.id != last and first.score.heat == 0.0  # weight 0: use is not read


def test_bad_heat_weights_are_typed_errors(store: MemoryStore, url: str) -> None:
    with pytest.raises(InputError, match=r"heat_weight must be a number in \[0, 1\], got 2"):
        store.search("tea", user_id="u1", heat_weight=2)
    with pytest.raises(InputError, match=r"heat_weight must be a number in \[0, 1\], got True"):
        store.search("tea", user_id="u1", heat_weight=True)
    with pytest.raises(
        ConfigError, match=r"store option heat_weight must be a number in \[0, 1\], got -0.1"
    ):
        open_store(url, embedder=HashEmbedder(), heat_weight=-0.1)
