"""The user wall of MemReaderStore: a store bound to one user, or to the users a namespace
label may name (any other refused with LangGraph's InvalidNamespaceError), any user only by
name, and bindings that say neither refused."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langgraph.store.base import InvalidNamespaceError

from memreader import Memory
from memreader.errors import InputError
from memreader.integrations.langgraph import MemReaderStore


@pytest.fixture
def memory() -> Iterator[Memory]:
    with Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:") as m:
        yield m


def test_a_namespace_cannot_reach_another_users_memories(memory: Memory) -> None:
    store = MemReaderStore(memory, user_label=1, users=["ana", "bob"])
    store.put(("memories", "ana"), "k", {"text": "Ana's PIN is 4321"})
    store.put(("memories", "bob"), "k", {"text": "Bob likes jazz"})
    assert ["PIN" in h.text for h in memory.search("PIN", user_id="ana")] == [True]
    assert all("PIN" not in h.text for h in memory.search("PIN", user_id="bob"))
    for call in (
        lambda: store.get(("memories", "eve"), "k"),
        lambda: store.put(("memories", "eve"), "k", {"text": "x"}),
        lambda: store.search(("memories", "eve"), query="PIN"),
        lambda: store.list_namespaces(prefix=("memories", "eve")),
        lambda: store.get(("memories",), "k"),  # too short to name a user
    ):
        with pytest.raises(InvalidNamespaceError):
            call()
    both = store.search(("memories",), query="jazz PIN")  # every user the store names
    assert {item.namespace for item in both} == {("memories", "ana"), ("memories", "bob")}
    one = MemReaderStore(memory, user_id="bob")  # bound to bob: a namespace is only a path
    assert one.get(("memories", "ana"), "k") is None
    assert [i.value for i in one.search(("memories",), query="PIN")] == [{"text": "Bob likes jazz"}]


def test_any_user_is_an_opt_in_by_name(memory: Memory) -> None:
    store = MemReaderStore(memory, user_label=0, any_user=True)
    store.put(("zoë", "notes"), "k", {"text": "Zoë paints"})
    assert ["Zoë paints" in h.text for h in memory.search("paints", user_id="zoë")] == [True]
    with pytest.raises(InvalidNamespaceError, match="names no user"):
        store.search(("*",))


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({}, "exactly one of user_id= .* and user_label="),
        ({"user_id": "a", "user_label": 0}, "exactly one of"),
        ({"user_label": 1}, "needs users= .* or any_user=True"),
        ({"user_label": -1, "users": ["a"]}, "user_label must be a non-negative integer"),
        ({"user_label": 1, "users": "ana"}, "not one string"),
        ({"user_id": "a", "any_user": True}, "go with user_label="),
        ({"user_id": ""}, "user_id must be a non-empty string"),
    ],
)
def test_a_bad_binding_is_refused(memory: Memory, arguments: Any, message: str) -> None:
    with pytest.raises(InputError, match=message):
        MemReaderStore(memory, **arguments)
