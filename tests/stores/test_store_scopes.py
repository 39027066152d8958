"""Scopes beyond the owner (memreader.scopes) on both backends (tests/stores/conftest.py): a
task's private memory is never seen by another task, a shared one is; the agent filter works
the same way; an owner-wide search sees every memory of the owner and never another owner's;
the same text in two tasks stays two memories; every list (vector, full text) honours the
filters; a store of schema 2 is upgraded to 3 with its memories kept; bad scopes are refused.
"""

from __future__ import annotations

import pytest

from memreader.errors import InputError
from memreader.items import Reconciliation, TextualMemoryItem
from memreader.scopes import MAX_SCOPE_ID_CHARS
from memreader.stores import MemoryStore, open_store
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, item, sql

pytestmark = pytest.mark.timeout(300)


def scoped(
    item_id: str,
    text: str,
    *,
    agent: str | None = None,
    task: str | None = None,
    visibility: str = "private",
    user: str = "u1",
) -> TextualMemoryItem:
    """An item of ``task`` (and ``agent``) with ``visibility``, embedded by the hash embedder."""
    embedder = HashEmbedder()
    base = item(item_id, text, user=user, vector=embedder.embed([text])[0], model=embedder.name)
    meta = base.metadata.model_copy(
        update={"agent_id": agent, "task_id": task, "visibility": visibility}
    )
    return base.model_copy(update={"metadata": meta})


#: One owner's memories across tasks and agents (and another owner's), all about coffee.
MEMORIES = [
    scoped("none", "coffee notes of nobody in particular"),
    scoped("a-private", "coffee notes private to task A", task="A"),
    scoped("a-shared", "coffee notes task A shares", task="A", visibility="shared"),
    scoped("b-private", "coffee notes private to task B", task="B"),
    scoped("x-private", "coffee notes private to agent X", agent="X"),
    scoped("y-private", "coffee notes private to agent Y", agent="Y"),
    scoped("other-owner", "coffee notes of another owner", task="A", user="u2"),
]


@pytest.fixture
def scoped_store(store: MemoryStore) -> MemoryStore:
    store.write(MEMORIES, now=T0)
    return store


def ids(store: MemoryStore, mode: str = "hybrid", **scope: str) -> set[str]:
    hits = store.search("coffee notes", user_id="u1", k=20, mode=mode, now=T0, **scope)  # type: ignore[arg-type]
    return {h.memory.id for h in hits}


@pytest.mark.parametrize("mode", ["hybrid", "vector", "text"])
def test_a_task_sees_its_own_the_untasked_and_the_shared_never_another_tasks_private(
    scoped_store: MemoryStore, mode: str
) -> None:
    everything = {"none", "a-private", "a-shared", "b-private", "x-private", "y-private"}
    assert ids(scoped_store, mode) == everything  # the owner-wide view; never u2's
    assert ids(scoped_store, mode, task_id="A") == everything - {"b-private"}
    assert ids(scoped_store, mode, task_id="B") == everything - {"a-private"}
    assert ids(scoped_store, mode, task_id="C") == everything - {"a-private", "b-private"}
    assert ids(scoped_store, mode, agent_id="X") == everything - {"y-private"}
    assert ids(scoped_store, mode, agent_id="X", task_id="B") == {
        "none",
        "a-shared",
        "b-private",
        "x-private",
    }


def test_the_filters_hold_after_a_write_patches_the_cached_vectors(
    scoped_store: MemoryStore,
) -> None:
    assert "b2" not in ids(scoped_store, "vector", task_id="A")  # caches the owner's vectors
    scoped_store.write([scoped("b2", "coffee notes B wrote later", task="B")], now=T0)
    assert "b2" not in ids(scoped_store, "vector", task_id="A")
    assert "b2" in ids(scoped_store, "vector", task_id="B")


def test_context_takes_the_scope_filters(scoped_store: MemoryStore) -> None:
    found = scoped_store.context("coffee notes", user_id="u1", task_id="B", now=T0)
    texts = found.text
    assert "private to task B" in texts and "private to task A" not in texts
    assert "task A shares" in texts


def test_the_same_text_in_two_tasks_stays_two_memories(store: MemoryStore) -> None:
    text = "the build uses python 3.12"
    first = store.write([scoped("in-a", text, task="A")], now=T0)
    second = store.write([scoped("in-b", text, task="B")], now=T0)
    third = store.write([scoped("in-a-again", text, task="A")], now=T0)
    assert [e.event for e in first + second] == ["ADD", "ADD"]
    assert [(e.event, e.memory_id) for e in third] == [("NONE", "in-a")]  # same sources
    assert {h.memory.id for h in store.search(text, user_id="u1", task_id="B", now=T0)} == {"in-b"}
    kept = store.get("in-b", user_id="u1")
    assert kept is not None and kept.item.metadata.task_id == "B"


def test_a_near_duplicate_of_another_tasks_private_memory_is_not_merged(
    store: MemoryStore,
) -> None:
    store.write([scoped("a1", "Ana takes the 8:15 train to Porto", task="A")], now=T0)
    found = store.write([scoped("b1", "Ana takes the 8:15 train to Porto!", task="B")], now=T0)
    assert [e.event for e in found] == ["ADD"]


@pytest.mark.parametrize(
    ("scope", "message"),
    [
        ({"task_id": ""}, "task_id must be a non-empty string or null, got ''"),
        ({"agent_id": 7}, "agent_id must be a non-empty string or null, got 7"),
        (
            {"task_id": "t" * (MAX_SCOPE_ID_CHARS + 1)},
            f"task_id must be at most {MAX_SCOPE_ID_CHARS} characters, got "
            f"{MAX_SCOPE_ID_CHARS + 1}",
        ),
    ],
)
def test_a_bad_scope_filter_is_refused(
    store: MemoryStore, scope: dict[str, object], message: str
) -> None:
    with pytest.raises(InputError) as caught:
        store.search("x", user_id="u1", **scope)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_a_direct_memory_takes_a_scope_and_a_bad_visibility_is_refused(
    store: MemoryStore,
) -> None:
    event = store.add_memory("Ana likes tea", user_id="u1", task_id="A", now=T0)
    assert store.search("tea", user_id="u1", task_id="B", now=T0) == []
    assert [h.memory.id for h in store.search("tea", user_id="u1", task_id="A", now=T0)] == [
        event.memory_id
    ]
    with pytest.raises(InputError) as caught:
        store.add_memory("Ana likes tea", user_id="u1", visibility="public")
    assert str(caught.value) == "visibility must be one of private, shared, got 'public'"


# -- a store of schema 2 --------------------------------------------------------------------

#: Schema 2, put back by hand: no scope columns (and their index), the version stamp 2.
_SCHEMA_2 = [
    "DROP INDEX {prefix}memories_owner_scope",
    "ALTER TABLE memreader_memories DROP COLUMN agent_id",
    "ALTER TABLE memreader_memories DROP COLUMN task_id",
    "ALTER TABLE memreader_memories DROP COLUMN visibility",
    "UPDATE memreader_meta SET value = '2' WHERE key = 'schema'",
]


def test_a_store_of_schema_2_is_upgraded_to_3_with_its_memories_kept(
    backend: str, url: str
) -> None:
    with open_store(url, embedder=HashEmbedder()) as store:
        store.write([scoped("old1", "Ana moved to Porto"), scoped("old2", "Bo likes tea")])
    prefix = "memreader_" if backend == "postgresql" else ""
    for statement in _SCHEMA_2:
        sql(url, statement.format(prefix=prefix))
    with open_store(url, embedder=HashEmbedder()) as store:  # upgraded here
        assert sql(url, "SELECT value FROM memreader_meta WHERE key = 'schema'") == [("3",)]
        found = store.search("Porto", user_id="u1", task_id="A", mode="text")
        assert [h.memory.id for h in found] == ["old1"]  # unscoped: every task sees it
        again = store.write([scoped("old1", "Ana moved to Porto")])
        assert [e.event for e in again] == ["NONE"]  # its dedup key did not move
        store.write([scoped("new", "Ana moved to Porto", task="A")])
        found = store.search("Porto", user_id="u1", task_id="B", mode="text")
        assert [h.memory.id for h in found] == ["old1"]
    rows = sql(url, "SELECT id, agent_id, task_id, visibility FROM memreader_memories")
    assert sorted(rows) == [
        ("new", "", "A", "private"),
        ("old1", "", "", "private"),
        ("old2", "", "", "private"),
    ]
    with open_store(url, embedder=HashEmbedder()) as store:  # nothing left to upgrade
        assert store.get("old2", user_id="u1") is not None


def test_a_reconcile_decision_never_retires_another_scopes_memory(store: MemoryStore) -> None:
    store.write([scoped("b-home", "Ana lives in Lisbon", task="B")], now=T0)
    moved = scoped("a-home", "Ana moved to Porto", task="A")
    decision = Reconciliation(event="SUPERSEDE", target_id="b-home", reason="model: moved")
    moved.metadata.reconcile = decision
    [event] = store.write([moved], now=T0)
    assert (event.event, event.memory_id) == ("ADD", "a-home")
    assert event.reason.endswith(
        "not applied: b-home is not a stored memory of this owner and scope"
    )
    kept = store.get("b-home", user_id="u1")
    assert kept is not None and kept.status == "active"
