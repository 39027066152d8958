"""What MemReaderStore refuses: a namespace that reaches another user (a store is bound to one
user, or to the users a namespace label may name; any user only by name), bindings that say
neither, and bad input (LangGraph's InvalidNamespaceError for namespaces, memreader's
InputError for values JSON cannot keep, listings, filters), each before anything is written."""

from __future__ import annotations

import math
from typing import Any

import pytest
from langgraph.store.base import (
    InvalidNamespaceError,
    ListNamespacesOp,
    MatchCondition,
    PutOp,
)

from memreader import Memory
from memreader.errors import InputError
from memreader.integrations.langgraph import MemReaderStore


@pytest.fixture
def store(memory: Memory) -> MemReaderStore:
    return MemReaderStore(memory, user_id="ana", index={"fields": ["text"]})


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


def test_bad_listing_arguments_are_refused(store: MemReaderStore) -> None:
    with pytest.raises(InputError, match="max_depth must be a positive integer or None, got 0"):
        store.list_namespaces(max_depth=0)
    with pytest.raises(InputError, match="limit must be a non-negative integer, got -1"):
        store.list_namespaces(limit=-1)
    odd = ListNamespacesOp(match_conditions=(MatchCondition("infix", ("a",)),))  # type: ignore[arg-type]
    with pytest.raises(InputError, match="match type must be prefix or suffix, got 'infix'"):
        store.batch([PutOp(("a",), "k", {"text": "x"}), odd])
    assert store.get(("a",), "k") is None  # the batch failed before its put


def test_a_bad_op_fails_the_batch_before_anything_is_written(store: MemReaderStore) -> None:
    ops = [PutOp(("n",), "a", {"text": "kept?"}), PutOp(("n",), "b", {"x": math.nan})]
    with pytest.raises(InputError, match=r"put: value\['x'\] is nan, which JSON cannot hold"):
        store.batch(ops)
    assert store.get(("n",), "a") is None


@pytest.mark.parametrize(
    ("namespace", "message"),
    [
        ((), "Namespace cannot be empty"),
        (("a.b",), "cannot contain periods"),
        (("ok", 3), "must be strings, but got int"),
        (("",), "cannot be empty strings"),
        (("langgraph", "x"), 'cannot be "langgraph"'),
    ],
)
def test_bad_namespaces_are_langgraphs_error(
    store: MemReaderStore, namespace: tuple[Any, ...], message: str
) -> None:
    with pytest.raises(InvalidNamespaceError, match=message):
        store.put(namespace, "k", {"text": "x"})
    with pytest.raises(InvalidNamespaceError, match=message):
        store.batch([PutOp(namespace, "k", {"text": "x"})])  # ops given to batch directly too


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({1: "a"}, "value keys must be strings, got 1 at value"),
        ({"a": {"b": object()}}, r"value\['a'\]\['b'\] is a object, which JSON cannot hold"),
        ({"a": [1, math.inf]}, r"value\['a'\]\[1\] is inf"),
        (["not", "a", "dict"], "value must be a mapping, got list"),
    ],
)
def test_values_json_cannot_keep_are_refused(
    store: MemReaderStore, value: Any, message: str
) -> None:
    with pytest.raises(InputError, match=message):
        store.put(("n",), "k", value)


def test_ttls_and_langgraphs_embedding_config_are_refused(memory: Memory) -> None:
    store = MemReaderStore(memory, user_id="ana")
    with pytest.raises(NotImplementedError, match="TTL is not supported"):
        store.put(("n",), "k", {"text": "x"}, ttl=5)
    with pytest.raises(InputError, match="index takes only 'fields' here, not 'dims'"):
        MemReaderStore(memory, user_id="ana", index={"dims": 384, "embed": "openai:x"})
