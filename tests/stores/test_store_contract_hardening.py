"""The memory stores' shared behaviour under abuse (issue 27, classes 9-12), on both backends
(tests/stores/conftest.py): what is stored is valid and a row that is not is that row's
problem; readers never wait for another process's write lock; the same input twice changes
nothing; a full-text query of common words still finds something, within its budget.

Arguments on every method: tests/stores/test_store_contract_arguments.py.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone

import pytest

from memreader.errors import InputError, StoreError
from memreader.items import TextualMemoryItem
from memreader.stores import MemoryStore, SearchMode, SourceSelector, open_store
from memreader.stores.category_types import CategoryDef
from tests.stores.store_backends import T0, events, item, sql

pytestmark = pytest.mark.timeout(120)

# -- class 9: what is stored is valid ----------------------------------------------------------


def test_an_item_changed_after_validation_is_refused_naming_it_and_its_field(
    store: MemoryStore,
) -> None:
    bad = item("b", "Ana likes tea")
    bad.metadata.importance = 7.0  # pydantic does not check assignments
    with pytest.raises(InputError, match=r"item 1 \(id 'b'\): metadata\.importance: .*7\.0"):
        store.write([item("a", "Ana lives in Porto"), bad], now=T0)
    with pytest.raises(InputError, match=r"item 0 \(id 'b'\): metadata\.importance"):
        store.write_part([bad], source=SourceSelector(input_key="in"), now=T0)
    surrogate = item("s", "Ana")
    surrogate.memory = "s\udfff"
    with pytest.raises(InputError, match=r"item 0 \(id 's'\): .*cannot be stored as UTF-8"):
        store.write([surrogate], now=T0)
    # The refused writes stored nothing, and the owner's reads work.
    assert store.get("a", user_id="u1") is None
    assert store.search("Ana", user_id="u1") == []
    bad.metadata.importance = 0.7
    assert events(store.write([bad], now=T0)) == [("ADD", "b")]


def test_a_row_that_cannot_be_read_is_passed_over_with_a_warning(
    store: MemoryStore, url: str, caplog: pytest.LogCaptureFixture
) -> None:
    store.write([item("a", "Ana drinks tea"), item("b", "Bo drinks tea")], now=T0)
    store.upsert_categories("u1", [CategoryDef(name="drinks", description="what they drink")])
    store.link_categories("u1", {"a": ["drinks"], "b": ["drinks"]})
    # As an older memreader or a hand edit might leave it: valid JSON, an invalid item.
    stored = json.loads(sql(url, "SELECT item FROM memreader_memories WHERE id = 'b'")[0][0])
    stored["metadata"]["importance"] = 7.0
    sql(url, "UPDATE memreader_memories SET item = %s WHERE id = 'b'", json.dumps(stored))
    sql(url, "UPDATE memreader_history SET source_ids = 'not json' WHERE memory_id = 'a'")
    with caplog.at_level(logging.WARNING, logger="memreader.stores.records"):
        modes: tuple[SearchMode, ...] = ("hybrid", "text", "vector")
        for mode in modes:
            hits = store.search("tea", user_id="u1", mode=mode)
            assert [h.memory.id for h in hits] == ["a"]
        assert store.get("b", user_id="u1") is None
        got = store.get("a", user_id="u1")
        assert got is not None and got.item.memory == "Ana drinks tea"
        assert [m.id for m in store.category_memories("u1", "drinks", limit=10)] == ["a"]
        assert store.history("a", user_id="u1") == []
        assert [h.event for h in store.history("b", user_id="u1")] == ["ADD"]
    warned = [r.getMessage() for r in caplog.records]
    assert any("memory 'b' of owner 'u1'" in m and "ValidationError" in m for m in warned)
    assert any("history entry of memory 'a'" in m for m in warned)


# -- class 10: readers never wait for the writer ------------------------------------------------

_HOLD_SQLITE = """
import sqlite3, sys
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("BEGIN EXCLUSIVE")
conn.execute("INSERT INTO memreader_meta (key, value) VALUES ('held', 'x')")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""

_HOLD_POSTGRES = """
import sys, psycopg
conn = psycopg.connect(sys.argv[1], autocommit=True)
conn.execute("BEGIN")
conn.execute("LOCK TABLE memreader_memories, memreader_meta IN EXCLUSIVE MODE")
conn.execute("SELECT pg_advisory_xact_lock(hashtextextended('u1', 0))")
print("locked", flush=True)
sys.stdin.read()
conn.execute("ROLLBACK")
"""


@contextmanager
def write_lock_held(url: str) -> Iterator[None]:
    """Another process holds the store's write lock (SQLite: ``BEGIN EXCLUSIVE``; PostgreSQL:
    the memory table in ``EXCLUSIVE`` mode, which readers pass, and the owner's lock) until
    the block ends."""
    if url.startswith("sqlite:///"):
        script, target = _HOLD_SQLITE, url.removeprefix("sqlite:///")
    else:
        script, target = _HOLD_POSTGRES, url
    holder = subprocess.Popen(
        [sys.executable, "-c", script, target],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        yield
    finally:
        assert holder.stdin is not None
        holder.stdin.close()
        try:
            holder.wait(timeout=30)
        finally:
            if holder.poll() is None:  # pragma: no cover - a hang: stop it
                holder.kill()


def test_opening_and_searching_while_another_process_holds_the_write_lock(url: str) -> None:
    with open_store(url, text_only=True) as first:
        first.write([item("a", "Ana lives in Porto")], now=T0)
    # timeout=1: the old open waited for the lock, then called the file "not usable".
    with write_lock_held(url), open_store(url, timeout=1, text_only=True) as reader:
        assert [h.memory.id for h in reader.search("Porto", user_id="u1")] == ["a"]
        got = reader.get("a", user_id="u1")
        assert got is not None and got.status == "active"
        with pytest.raises(StoreError, match="busy") as refused:
            reader.write([item("b", "Bo plays chess")], now=T0)
        assert "not a usable" not in str(refused.value)
    with open_store(url, timeout=1, text_only=True) as after:
        assert events(after.write([item("b", "Bo plays chess")], now=T0)) == [("ADD", "b")]


def test_a_store_that_needs_its_schema_while_locked_is_busy_not_broken(url: str) -> None:
    open_store(url, text_only=True).close()
    # An older file or database: one index of today's schema is missing (added on open).
    index = (
        "memreader_category_links_memory"
        if url.startswith("postgresql")
        else ("category_links_memory")
    )
    sql(url, f"DROP INDEX {index}")
    with write_lock_held(url), pytest.raises(StoreError, match="busy") as refused:
        open_store(url, timeout=1, text_only=True)
    assert "not a usable" not in str(refused.value) and "retry" in str(refused.value)
    with open_store(url, timeout=5, text_only=True) as store:
        assert store.search("anything", user_id="u1") == []
    assert sql(url, "SELECT count(*) FROM memreader_meta WHERE key = 'schema'") == [(1,)]


# -- class 11: the same input twice changes nothing --------------------------------------------


def _counts(url: str) -> tuple[int, int]:
    history = sql(url, "SELECT count(*) FROM memreader_history")[0][0]
    reinforced = sql(url, "SELECT sum(reinforced) FROM memreader_memories")[0][0]
    return int(history), int(reinforced)


@pytest.mark.parametrize("how", ["write", "replaces", "parts"])
def test_the_same_chat_written_three_times_changes_nothing_after_the_first(
    url: str, how: str
) -> None:
    # One chat: a fact said twice (two items, one text) and reworded (a near duplicate).
    chat = [
        item("a", "Ana lives in Porto", message="m1", vector=[1.0, 0.0], model="m"),
        item("b", "ana lives in porto.", message="m2", vector=[1.0, 0.0], model="m"),
        item("c", "Ana is based in Porto", message="m3", vector=[1.0, 0.05], model="m"),
        item("d", "Bo plays chess", message="m4", vector=[0.0, 1.0], model="m"),
    ]
    key = SourceSelector(input_key="chat.jsonl")
    with open_store(url, text_only=True) as store:

        def write(batch: list[TextualMemoryItem]) -> list[tuple[str, str]]:
            if how == "write":
                return events(store.write(batch, now=T0))
            if how == "replaces":
                return events(store.write(batch, replaces=key, now=T0))
            written = store.write_part(batch, source=key, now=T0)
            seen = {"u1": {e.memory_id for e in written}}
            return events(written + store.retire_unseen(key, seen=seen, now=T0))

        first = write(chat)
        assert first == [("ADD", "a"), ("REINFORCE", "a"), ("REINFORCE", "a"), ("ADD", "d")]
        assert _counts(url) == (4, 2)
        for _ in range(2):
            assert write(chat) == [("NONE", "a"), ("NONE", "a"), ("NONE", "a"), ("NONE", "d")]
            assert _counts(url) == (4, 2)
        # New evidence (the fact said again in another message) reinforces, once.
        again = item("e", "Ana lives in Porto", message="m9", vector=[1.0, 0.0], model="m")
        assert write([*chat, again])[-1] == ("REINFORCE", "a")
        assert _counts(url) == (5, 3)
        assert write([*chat, again])[-1] == ("NONE", "a")
        assert _counts(url) == (5, 3)


# -- class 12: full-text search never silently finds nothing -------------------------------------


def test_a_query_of_words_in_nearly_every_row_ranks_the_newest_rows(
    new_url: Callable[[str], str],
) -> None:
    with open_store(new_url("budget"), text_budget=5, text_only=True) as store:
        store.write([item(f"r{n}", f"river and train number {n}") for n in range(12)], now=T0)
        store.write([item("old", "the river train in Zanzibar")], now=T0)
        store.write([item(f"n{n}", f"a river view {n}", session="s2") for n in range(3)], now=T0)

        def found(query: str, **filters: object) -> list[str]:
            hits = store.search(query, user_id="u1", k=50, mode="text", **filters)  # type: ignore[arg-type]
            return [h.memory.id for h in hits]

        # "river" (16 rows) and "train" (13) are past the budget of 5: they were dropped, and
        # the search found nothing. Now the owner's 5 newest rows holding them are ranked.
        assert sorted(found("river train")) == ["n0", "n1", "n2", "old", "r11"]
        assert len(found("river train")) == 5  # the budget, not the 16 rows holding them
        # A rare word is still ranked over every row holding it (and then only it).
        assert found("river zanzibar") == ["old"]
        # Filters apply before the newest rows are taken.
        assert sorted(found("train", session_id="s1")) == ["old", "r10", "r11", "r8", "r9"]
        assert len(found("river train", types=["UserMemory"])) == 0
        assert len(store.search("river train", user_id="u1", k=2, mode="text")) == 2
    with open_store(
        new_url("default"), text_only=True
    ) as store:  # within the default budget: every row
        store.write([item(f"r{n}", f"river and train number {n}") for n in range(12)], now=T0)
        assert len(store.search("river train", user_id="u1", k=50, mode="text")) == 12


#: 9999-12-31 23:00 five hours west of UTC: year 10000 in UTC, past what a store keeps.
PAST_9999 = datetime(9999, 12, 31, 23, tzinfo=timezone(timedelta(hours=-5)))


def _dated(memory: TextualMemoryItem, at: datetime) -> TextualMemoryItem:
    """``memory`` whose source's time was set after it was built (pydantic does not check an
    assignment): the write's own check must refuse it."""
    memory.metadata.sources[0].timestamp = at
    return memory


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda s: s.add_memory("x", user_id="u1", valid_from=PAST_9999),
            "valid_from 9999-12-31T23:00:00-05:00 is out of range",
        ),
        (
            lambda s: s.write([_dated(item("a", "Ana"), PAST_9999)]),
            "item 0 .*timestamp 9999-12-31T23:00:00-05:00 is out of range",
        ),
        (lambda s: s.search("Ana", user_id="u1", since=PAST_9999), "since .* is out of range"),
        (lambda s: s.search("Ana", user_id="u1", until=PAST_9999), "until .* is out of range"),
        (lambda s: s.search("Ana", user_id="u1", now=PAST_9999), "now .* is out of range"),
    ],
)
def test_a_time_past_year_9999_in_utc_is_an_input_error(
    store: MemoryStore, call: object, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        call(store)  # type: ignore[operator]
