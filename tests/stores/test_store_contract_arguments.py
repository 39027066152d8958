"""Arguments are checked on every path of both stores (issue 27, class 13): each bad argument
of each public method is a typed error naming it, ``k`` has a documented cap, a store URL
holding a NUL is a ConfigError, and ``retire_unseen`` naming one owner touches only that
owner's memories (a batch input, which is the job's, excepted).
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

import pytest

from memreader.errors import ConfigError, InputError
from memreader.stores import MemoryStore, SourceSelector, open_store
from memreader.stores.category_types import CategoryDef
from memreader.stores.checks import MAX_K
from tests.stores.store_backends import T0, events, item

pytestmark = pytest.mark.timeout(120)

SESSION = SourceSelector(session_id="s1")

#: (what is called, the message of its InputError). Each runs on both backends.
# The store is typed Any: the calls pass what the signatures refuse, on purpose.
BAD_CALLS: list[tuple[str, Callable[[Any], Any], str]] = [
    ("types ints", lambda s: s.search("tea", user_id="u1", types=[1, 2]), r"types\[0\] must be"),
    ("types None", lambda s: s.search("tea", user_id="u1", types=[None]), r"types\[0\] must be"),
    (
        "types unknown",
        lambda s: s.search("tea", user_id="u1", types=["LongTermMemory", "Nope"]),
        r"types\[1\] must be a memory type \(WorkingMemory, .*got 'Nope'",
    ),
    ("types str", lambda s: s.search("tea", user_id="u1", types="UserMemory"), "types must be"),
    ("session int", lambda s: s.search("t", user_id="u1", session_id=123), "session_id must be"),
    ("session empty", lambda s: s.search("t", user_id="u1", session_id=""), "session_id must be"),
    ("k huge", lambda s: s.search("tea", user_id="u1", k=10**6), f"k must be .*at most {MAX_K}"),
    ("k zero", lambda s: s.search("tea", user_id="u1", k=0), "k must be a positive integer"),
    ("k float", lambda s: s.search("tea", user_id="u1", k=2.0), "k must be a positive integer"),
    ("k bool", lambda s: s.search("tea", user_id="u1", k=True), "k must be a positive integer"),
    ("inactive", lambda s: s.search("t", user_id="u1", include_inactive="no"), "include_inactive"),
    ("query", lambda s: s.search(None, user_id="u1"), "query must be a string"),
    ("mode", lambda s: s.search("t", user_id="u1", mode="fuzzy"), "mode must be one of"),
    ("since", lambda s: s.search("t", user_id="u1", since="2026"), "since must be a timezone"),
    ("until", lambda s: s.search("t", user_id="u1", until=datetime(2026, 1, 1)), "until must"),
    ("category", lambda s: s.search("t", user_id="u1", category="No Such"), "category must be"),
    ("search owner", lambda s: s.search("t", user_id=7), "user_id must be a non-empty string"),
    ("get id", lambda s: s.get(123, user_id="u1"), "memory_id must be a non-empty string"),
    ("get owner", lambda s: s.get("a", user_id=None), "user_id must be a non-empty string"),
    ("history id", lambda s: s.history(None, user_id="u1"), "memory_id must be a non-empty"),
    ("history owner", lambda s: s.history("a", user_id=""), "user_id must be a non-empty"),
    ("forget source", lambda s: s.forget("s1", user_id="u1"), "source must be a SourceSelector"),
    ("forget owner", lambda s: s.forget(SESSION, user_id=123), "user_id must be a non-empty"),
    ("forget now", lambda s: s.forget(SESSION, user_id="u1", now="x"), "now must be a timezone"),
    ("retire seen", lambda s: s.retire_unseen(SESSION, seen=["a"]), "seen must be a mapping"),
    ("retire ids", lambda s: s.retire_unseen(SESSION, seen={"u1": "a"}), r"seen\['u1'\] must"),
    ("retire owner", lambda s: s.retire_unseen(SESSION, seen={"": []}), "user_id must be"),
    ("retire id", lambda s: s.retire_unseen(SESSION, seen={"u1": [3]}), r"seen\['u1'\] entry"),
    ("purge", lambda s: s.purge(older_than="2026-01-01"), "older_than must be a timezone"),
    ("lookup owner", lambda s: s.lookup([item("a", "x")], user_id=1), "user_id must be"),
    ("write owner", lambda s: s.write([], user_id=5), "user_id must be a non-empty string"),
    ("write replaces", lambda s: s.write([], replaces="d.md"), "replaces must be a Source"),
    ("categories", lambda s: s.categories(123), "user_id must be a non-empty string"),
    ("category name", lambda s: s.category("u1", 5), "name must be a category name"),
    ("members limit", lambda s: s.category_memories("u1", "x", limit=0), "limit must be"),
    ("categories_of", lambda s: s.categories_of("u1", "abc"), "memory_ids must be"),
    ("link", lambda s: s.link_categories("u1", {"a": "drinks"}), r"links\['a'\] must be"),
    ("upsert", lambda s: s.upsert_categories("u1", ["drinks"]), "CategoryDef"),
    ("summary", lambda s: s.save_summary("u1", "x", summary=1, kind="llm", note=None), "summary"),
    # PostgreSQL cannot keep a NUL in text, so neither store takes one (the same on both).
    ("nul owner", lambda s: s.search("tea", user_id="u\x001"), "user_id holds a NUL"),
    ("nul session", lambda s: s.search("t", user_id="u1", session_id="s\x00"), "session_id holds"),
    ("nul get", lambda s: s.get("a\x00", user_id="u1"), "memory_id holds a NUL"),
    ("nul text", lambda s: s.write([item("n", "tea\x00time")]), r"item 0 \(id 'n'\): memory: "),
    ("nul item owner", lambda s: s.write([item("n", "t", user="u\x00")]), "metadata.user_id"),
    ("nul source", lambda s: s.forget(SourceSelector(session_id="s\x00"), user_id="u1"), "NUL"),
    ("source int", lambda s: s.forget(SourceSelector(session_id=5), user_id="u1"), "a string"),
]


@pytest.mark.parametrize(
    ("call", "message"), [(c, m) for _, c, m in BAD_CALLS], ids=[n for n, _, _ in BAD_CALLS]
)
def test_each_bad_argument_is_an_input_error_naming_it(
    store: MemoryStore, call: Callable[[MemoryStore], Any], message: str
) -> None:
    store.write([item("a", "Ana drinks tea")], now=T0)
    store.upsert_categories("u1", [CategoryDef(name="drinks", description="what they drink")])
    with pytest.raises(InputError, match=message):
        call(store)
    # Nothing was changed by the refused call.
    stored = store.get("a", user_id="u1")
    assert stored is not None and stored.status == "active"


def test_k_up_to_its_cap_is_served(store: MemoryStore) -> None:
    store.write([item(f"i{n}", f"tea number {n}") for n in range(3)], now=T0)
    assert len(store.search("tea", user_id="u1", k=MAX_K)) == 3
    typed = store.search("tea", user_id="u1", types=["LongTermMemory"], session_id="s1", k=2)
    assert len(typed) == 2


def test_a_nul_in_a_store_url_is_a_config_error(new_url: Callable[[str], str]) -> None:
    good = new_url("nul")
    for bad in (good + "\x00x", good.replace("://", "://\x00", 1), good + "\n"):
        with pytest.raises(ConfigError, match="must not hold control characters"):
            open_store(bad, text_only=True)


def test_retire_unseen_naming_one_owner_touches_only_that_owners_memories(
    store: MemoryStore,
) -> None:
    # Two owners, each with their own session "s1" (session ids are each owner's own).
    store.write_part([item("a", "Ana lives in Porto")], source=SESSION, now=T0)
    store.write_part([item("z", "Zoe plays chess", user="u2")], source=SESSION, now=T0)
    retired = store.retire_unseen(SESSION, seen={"u1": set()}, now=T0)
    assert events(retired) == [("SUPERSEDE", "a")]
    for owner, memory_id, status in (("u1", "a", "superseded"), ("u2", "z", "active")):
        stored = store.get(memory_id, user_id=owner)
        assert stored is not None and stored.status == status
    assert [h.event for h in store.history("z", user_id="u2")] == ["ADD"]
    # A batch input is the job's: an owner absent from its new version is retired too.
    job = SourceSelector(input_key="in/x.jsonl")
    store.write_part([item("b", "Bo sings"), item("y", "Yu runs", user="u2")], source=job)
    assert events(store.retire_unseen(job, seen={"u1": {"b"}})) == [("SUPERSEDE", "y")]
