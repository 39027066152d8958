"""The life cycle on both backends: the budget per owner (one write, many writes), pins,
restores, the delayed purge, ``maintain`` (dry run, killed then rerun, the index repaired)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from datetime import timedelta
from typing import Any

import pytest

from memreader.errors import ConfigError, InputError, StoreError
from memreader.stores import LifecycleConfig, MemoryStore, UnknownMemoryError, open_store
from memreader.stores.lifecycle import BUDGET_REASON, api
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, item, sql

BUDGET = {"max_active": 10}  # watermark 8, target 6


@pytest.fixture
def budgeted(url: str) -> Iterator[MemoryStore]:
    with open_store(url, embedder=HashEmbedder(), lifecycle=BUDGET) as opened:
        yield opened


def active(store: MemoryStore, url: str, owner: str = "u1") -> set[str]:
    rows = sql(
        url, "SELECT id FROM memreader_memories WHERE user_id = %s AND status = 'active'", owner
    )
    return {r[0] for r in rows}


def expiries(url: str) -> list[tuple[str, str]]:
    return sql(
        url, "SELECT memory_id, reason FROM memreader_history WHERE event = 'EXPIRE' ORDER BY id"
    )


def add(store: MemoryStore, n: int, *, owner: str = "u1", start: int = 0, **kw: Any) -> list[str]:
    return [
        store.add_memory(f"fact {i} about the river {i * 7}", user_id=owner, now=T0, **kw).memory_id
        for i in range(start, start + n)
    ]


def test_a_watermark_crossed_in_one_write(budgeted: MemoryStore, url: str) -> None:
    items = [item(f"m{i}", f"fact {i} about the harbour {i * 3}") for i in range(12)]
    events = budgeted.write(items, now=T0)
    expired = [e for e in events if e.event == "EXPIRE"]
    # One event per item, saying what became of it: the six the same call expired say so.
    assert len(events) == 12 and [e.item_id for e in events] == [i.id for i in items]
    assert sorted(e.event for e in events) == ["ADD"] * 6 + ["EXPIRE"] * 6
    assert {e.memory_id for e in expired} == set(i.id for i in items) - active(budgeted, url)
    assert len(expired) == 6 and len(active(budgeted, url)) == 6
    assert all(e.reason.startswith(BUDGET_REASON) for e in expired)
    assert len(expiries(url)) == 6  # one history row each
    assert budgeted.get(expired[0].memory_id, user_id="u1").status == "expired"  # type: ignore[union-attr]


def test_a_watermark_crossed_in_many_writes(budgeted: MemoryStore, url: str) -> None:
    counts = []
    for i in range(20):
        add(budgeted, 1, start=i)
        counts.append(len(active(budgeted, url)))
    assert max(counts) <= 8  # never past the watermark after a write returns
    assert counts[7] == 8 and counts[8] == 6  # the 9th write crossed it: down to the target
    assert len(expiries(url)) == 20 - counts[-1]


def test_the_lowest_priority_expires_and_a_pinned_memory_never_does(
    budgeted: MemoryStore, url: str
) -> None:
    low = add(budgeted, 3, importance=0.0)
    high = add(budgeted, 5, start=10, importance=1.0)
    assert budgeted.pin([low[0]], user_id="u1") == 1
    assert budgeted.pin([low[0]], user_id="u1") == 0  # pinned already
    assert budgeted.pinned(user_id="u1") == [low[0]]
    add(budgeted, 1, start=20, importance=1.0)  # 9 active: past the watermark
    kept = active(budgeted, url)
    assert low[0] in kept and low[1] not in kept and low[2] not in kept
    assert len(kept) == 6 and len(set(high) - kept) == 1  # then one of the equally high
    assert budgeted.unpin([low[0]], user_id="u1") == 1 and budgeted.pinned(user_id="u1") == []


def test_a_used_memory_outlives_an_unused_one(budgeted: MemoryStore, url: str) -> None:
    ids = add(budgeted, 8)
    budgeted.mark_used(ids[:3], user_id="u1", at=T0 + timedelta(days=1))
    budgeted.mark_used(ids[:3], user_id="u1", at=T0 + timedelta(days=2))
    add(budgeted, 1, start=30)  # 9 active: three expire, none of the used ones
    kept = active(budgeted, url)
    assert set(ids[:3]) <= kept and len(kept) == 6


def test_pin_refuses_an_unknown_memory_and_pins_nothing(budgeted: MemoryStore) -> None:
    ids = add(budgeted, 1)
    with pytest.raises(UnknownMemoryError, match="user 'u1' has no memory 'nope'"):
        budgeted.pin([ids[0], "nope"], user_id="u1")
    assert budgeted.pinned(user_id="u1") == []
    with pytest.raises(InputError, match=r"pin\(\): ids must be a list of memory ids, got str"):
        budgeted.pin("m1", user_id="u1")  # type: ignore[arg-type]


def test_a_memory_the_budget_expired_is_restored_until_purged(
    budgeted: MemoryStore, url: str
) -> None:
    events = budgeted.write([item(f"m{i}", f"fact {i} about the bay {i}") for i in range(9)])
    gone = next(e.memory_id for e in events if e.event == "EXPIRE")
    restored = budgeted.restore(gone, user_id="u1")
    assert (restored.event, restored.memory_id) == ("ADD", gone)
    assert budgeted.get(gone, user_id="u1").status == "active"  # type: ignore[union-attr]
    assert budgeted.history(gone, user_id="u1")[-1].reason == api.RESTORED_REASON
    with pytest.raises(InputError, match=f"memory '{gone}' is active: only an expired"):
        budgeted.restore(gone, user_id="u1")
    deleted = add(budgeted, 1, start=50)[0]
    budgeted.delete(deleted, user_id="u1")
    with pytest.raises(InputError, match="was not expired by the budget \\(deleted by the caller"):
        budgeted.restore(deleted, user_id="u1")
    with pytest.raises(UnknownMemoryError):
        budgeted.restore("nope", user_id="u1")


def test_purge_after_the_delay_and_not_before(budgeted: MemoryStore, url: str) -> None:
    ids = add(budgeted, 3)
    budgeted.pin([ids[0]], user_id="u1")
    for memory_id in ids[:2]:
        budgeted.delete(memory_id, user_id="u1", now=T0)
    early = budgeted.maintain(now=T0 + timedelta(days=29))
    assert early.purged == {} and len(sql(url, "SELECT id FROM memreader_memories")) == 3
    late = budgeted.maintain(now=T0 + timedelta(days=31))
    assert late.purged == {"u1": 2}
    assert {r[0] for r in sql(url, "SELECT id FROM memreader_memories")} == {ids[2]}
    assert budgeted.pinned(user_id="u1") == []  # the purged memory's pin went with it
    assert sql(url, "SELECT count(*) FROM memreader_history WHERE memory_id = %s", ids[0]) == [(0,)]


def _snapshot(url: str) -> list[Any]:
    return [
        sql(url, "SELECT id, status, embedding_model FROM memreader_memories ORDER BY id"),
        sql(url, "SELECT count(*) FROM memreader_history"),
    ]


def test_a_dry_run_reports_and_writes_nothing(url: str) -> None:
    with open_store(url, text_only=True) as bare:  # rows without vectors
        bare.write([item(f"m{i}", f"fact {i} about the dunes {i}") for i in range(12)], now=T0)
        bare.delete("m0", user_id="u1", now=T0)
    with open_store(url, embedder=HashEmbedder(), lifecycle=BUDGET) as store:
        before = _snapshot(url)
        report = store.maintain(dry_run=True, now=T0 + timedelta(days=40))
        assert _snapshot(url) == before
        assert report.to_dict()["totals"] == {"purged": 1, "expired": 5, "repaired": 11}
        assert report.expired == {"u1": 5} and report.lines()[0] == (
            "purged: 1 memories would be purged"
        )
        done = store.maintain(now=T0 + timedelta(days=40))
        assert done.totals() == {"purged": 1, "expired": 5, "repaired": 6}
        assert store.maintain(now=T0 + timedelta(days=40)).totals() == {
            "purged": 0,
            "expired": 0,
            "repaired": 0,
        }


def test_a_store_whose_rows_lost_their_vectors_is_repaired(url: str) -> None:
    with open_store(url, embedder=HashEmbedder()) as store:
        store.write([item(f"m{i}", f"fact {i} about the cliffs {i}") for i in range(5)])
        clean = sql(url, f"SELECT id, {_vectors(url)} FROM memreader_memories ORDER BY id")
    sql(url, "UPDATE memreader_memories SET embedding = NULL, embedding_model = NULL")
    sql(url, "DELETE FROM memreader_passages")
    with open_store(url, embedder=HashEmbedder(), lifecycle={"repair_batch": 2}) as store:
        assert store.maintain().repaired == {"u1": 5}
        assert store.embedding_models() == {"hash:16": 5}
        assert store.search("cliffs", user_id="u1", mode="vector", k=5)
    repaired = sql(url, f"SELECT id, {_vectors(url)} FROM memreader_memories ORDER BY id")
    assert repaired == clean  # the same vectors the write gave them
    assert sql(url, "SELECT count(*) FROM memreader_passages") == [(5,)]


def _one_hot(i: int) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(16)]


def _vectors(url: str) -> str:
    """The vector column as each backend's SQL reads it back comparably."""
    return "embedding" if url.startswith("sqlite") else "embedding::text"


def test_another_models_vectors_are_embedded_again(url: str) -> None:
    with open_store(url, text_only=True) as bare:
        bare.write(
            [
                item(f"m{i}", f"fact {i} about the pier {i}", vector=_one_hot(i), model="other:m")
                for i in range(3)
            ]
        )
    with open_store(url, embedder=HashEmbedder()) as store:
        assert store.maintain(dry_run=True).repaired == {"u1": 3}
        assert store.maintain().repaired == {"u1": 3}
        assert store.embedding_models() == {"hash:16": 3}


class _Failing(HashEmbedder):
    """Fails from its ``fail_at``-th call on (a run killed between batches)."""

    def __init__(self, fail_at: int) -> None:
        super().__init__()
        self.fail_at, self.seen = fail_at, 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.seen += 1
        if self.seen >= self.fail_at:
            raise RuntimeError("killed")
        return super().embed(texts)


def _messy_store(url: str) -> None:
    with open_store(url, text_only=True) as bare:
        bare.write([item(f"m{i}", f"fact {i} about the lagoon {i}") for i in range(14)], now=T0)
        bare.delete("m13", user_id="u1", now=T0)


def _state(url: str) -> list[Any]:
    return [
        sql(url, f"SELECT id, status, {_vectors(url)} FROM memreader_memories ORDER BY id"),
        sql(url, "SELECT memory_id, event FROM memreader_history ORDER BY memory_id, event"),
    ]


def test_maintain_killed_mid_run_then_rerun_equals_a_clean_run(
    new_url: Callable[[str], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    clean, killed = new_url("clean"), new_url("killed")
    later = T0 + timedelta(days=31)
    settings = {"max_active": 10, "repair_batch": 2}
    monkeypatch.setattr(api, "EXPIRE_BATCH", 2)
    for url in (clean, killed):
        _messy_store(url)
    with open_store(clean, embedder=HashEmbedder(), lifecycle=settings) as store:
        store.maintain(now=later)
    with open_store(killed, embedder=_Failing(fail_at=2), lifecycle=settings) as store:
        with pytest.raises(StoreError, match="the store's embedder failed: RuntimeError: killed"):
            store.maintain(now=later)  # purged, expired, then one batch repaired, then killed
        assert len(sql(killed, "SELECT id FROM memreader_memories")) == 13
    with open_store(killed, embedder=HashEmbedder(), lifecycle=settings) as store:
        rerun = store.maintain(now=later)
        assert rerun.purged == {} and rerun.expired == {} and rerun.repaired == {"u1": 4}
    assert _state(killed) == _state(clean)


def test_a_budget_enforcement_killed_between_batches_finishes_on_rerun(
    budgeted: MemoryStore, url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    budgeted.lifecycle = None
    add(budgeted, 12)
    monkeypatch.setattr(api, "EXPIRE_BATCH", 2)
    calls = []
    original = type(budgeted)._expire_for_budget

    def dying(self: Any, *args: Any) -> Any:
        calls.append(1)
        if len(calls) == 2:
            raise StoreError("killed")
        return original(self, *args)

    monkeypatch.setattr(type(budgeted), "_expire_for_budget", dying)
    with pytest.raises(StoreError, match="killed"):
        budgeted.maintain(lifecycle=LifecycleConfig(**BUDGET))
    assert len(active(budgeted, url)) == 10  # one batch of two committed
    assert budgeted.maintain(lifecycle=LifecycleConfig(**BUDGET)).expired == {"u1": 4}
    assert len(active(budgeted, url)) == 6


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_active": 0}, "max_active: Input should be greater than or equal to 1"),
        ({"trigger_ratio": 1.5}, "trigger_ratio: Input should be less than or equal to 1"),
        (
            {"max_active": 5, "expire_fraction": 0.9},
            "expire_fraction (0.9) must be below trigger_ratio (0.8)",
        ),
        ({"max_activ": 5}, "max_activ: Extra inputs are not permitted"),
        ({"purge_after_days": -1}, "purge_after_days: Input should be greater than or equal to 0"),
    ],
)
def test_a_bad_lifecycle_config_is_refused(
    url: str, settings: dict[str, Any], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        open_store(url, embedder=HashEmbedder(), lifecycle=settings)
    assert str(caught.value).startswith("invalid LifecycleConfig: ")
    assert message in str(caught.value)


def test_a_lifecycle_that_is_not_a_mapping_is_refused(url: str) -> None:
    with pytest.raises(
        ConfigError, match="the store's lifecycle must be a mapping of settings, got int"
    ):
        open_store(url, embedder=HashEmbedder(), lifecycle=3)
