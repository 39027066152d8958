"""Concurrent updates of one memory (issue 41) on both backends: one successor per version,
whatever the interleaving; the losers get :class:`~memreader.errors.ConflictError` and store
nothing; the same update made again once applied (a retry whose answer was lost) is ``NONE``.

Each updater opens the store on its own, as two service workers or two processes do."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memreader.errors import ConflictError
from memreader.stores import MemoryStore, WriteEvent, open_store
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, item

pytestmark = pytest.mark.timeout(180)
_EXAMPLES = itertools.count()


def _race(url: str, texts: list[str], read_first: bool) -> list[WriteEvent | ConflictError]:
    """Update memory "a" to each of ``texts`` at once, each from its own store. With
    ``read_first`` every updater has read the old version before any writes."""
    stores = [open_store(url, embedder=HashEmbedder()) for _ in texts]
    gate = threading.Barrier(len(texts))
    out: list[Any] = [None] * len(texts)

    def updater(n: int) -> None:
        store = stores[n]
        if read_first:
            looked = store.lookup

            def lookup(*args: Any, **kwargs: Any) -> Any:
                found = looked(*args, **kwargs)
                gate.wait(30)  # every updater read the old version: now they all write
                return found

            store.lookup = lookup  # type: ignore[method-assign]
        else:
            gate.wait(30)
        try:
            out[n] = store.update("a", texts[n], user_id="u1", now=T0)
        except ConflictError as exc:
            out[n] = exc

    threads = [threading.Thread(target=updater, args=(n,)) for n in range(len(texts))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    for store in stores:
        store.close()
    return out


def _active_versions(store: MemoryStore, ids: list[str]) -> list[str]:
    found = [store.get(i, user_id="u1") for i in ids]
    return [m.id for m in found if m is not None and m.status == "active"]


@pytest.mark.parametrize("read_first", [True, False], ids=["read-then-race", "race"])
def test_concurrent_updates_give_one_successor(
    store: MemoryStore, url: str, read_first: bool
) -> None:
    store.write([item("a", "Ana lives in Porto.")], now=T0)
    texts = [f"Ana lives in {city}." for city in ("Lisbon", "Faro", "Braga", "Evora")]
    results = _race(url, texts, read_first)
    won = [r for r in results if isinstance(r, WriteEvent)]
    lost = [r for r in results if isinstance(r, ConflictError)]
    assert len(won) == 1 and len(lost) == 3, results
    assert (won[0].event, won[0].previous_id) == ("UPDATE", "a")
    old = store.get("a", user_id="u1")
    assert old is not None and (old.status, old.superseded_by) == ("superseded", won[0].memory_id)
    # The losers stored nothing: the only active version is the winner's.
    hits = store.search("Ana lives", user_id="u1", k=20, mode="text")
    texts_stored = {h.memory.item.memory for h in hits}
    assert texts_stored == {texts[results.index(won[0])]}
    assert all("nothing was stored" in str(exc) for exc in lost)


@settings(
    max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    cities=st.lists(st.sampled_from(["Lisbon", "Faro", "Braga"]), min_size=2, max_size=3),
    read_first=st.booleans(),
)
def test_any_interleaving_leaves_one_active_version(
    new_url: Callable[[str], str], cities: list[str], read_first: bool
) -> None:
    url = new_url(f"race{next(_EXAMPLES)}")  # a fresh store per example
    with open_store(url, embedder=HashEmbedder()) as store:
        store.write([item("a", "Ana lives in Porto.")], now=T0)
    results = _race(url, [f"Ana lives in {city}." for city in cities], read_first)
    made = {r.memory_id for r in results if isinstance(r, WriteEvent)}
    with open_store(url, embedder=HashEmbedder()) as store:
        assert len(_active_versions(store, ["a", *made])) == 1
        old = store.get("a", user_id="u1")
        assert old is not None and old.superseded_by in made
    # Updaters that sent the same text share its one version (NONE for all but the first).
    assert len(made) == 1


def test_an_update_made_again_once_applied_names_its_version(store: MemoryStore) -> None:
    store.write([item("a", "Ana lives in Porto.")], now=T0)
    first = store.update("a", "Ana lives in Lisbon.", user_id="u1", now=T0)
    again = store.update("a", "Ana lives in Lisbon.", user_id="u1", now=T0)
    assert (again.event, again.memory_id, again.previous_id) == (
        "NONE",
        first.memory_id,
        "a",
    )
    assert [h.event for h in store.history(first.memory_id, user_id="u1")] == ["UPDATE"]
    with pytest.raises(ConflictError, match=f"superseded by '{first.memory_id}'"):
        store.update("a", "Ana lives in Faro.", user_id="u1", now=T0)
