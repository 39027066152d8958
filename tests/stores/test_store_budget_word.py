"""Budgets and restores keep their word (issue 41, part 3), on both backends: pins never starve
new memories (pins are capped at the budget's ``pin_limit``; pins past it, made before the
budget, raise the marks instead), a write's event says what became of its memory (``EXPIRE``,
never ``ADD``, when the same call expired it), a restore at the watermark sticks, and
``maintain`` takes any ``now``."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime, timedelta, timezone

import pytest

from memreader.errors import ConfigError, InputError
from memreader.stores import MemoryStore, open_store
from memreader.stores.lifecycle import BUDGET_REASON, check_lifecycle
from memreader.testing import HashEmbedder
from tests.stores.store_backends import T0, item, sql

BUDGET = {"max_active": 10}  # watermark 8, target 6, pin_limit 3


@pytest.fixture
def budgeted(url: str) -> Iterator[MemoryStore]:
    with open_store(url, embedder=HashEmbedder(), lifecycle=BUDGET) as opened:
        yield opened


def active(url: str, owner: str = "u1") -> set[str]:
    rows = sql(
        url, "SELECT id FROM memreader_memories WHERE user_id = %s AND status = 'active'", owner
    )
    return {r[0] for r in rows}


def add(store: MemoryStore, n: int, start: int = 0, **kw: object) -> list[str]:
    return [
        store.add_memory(f"fact {i} about the river {i * 7}", user_id="u1", **kw).memory_id  # type: ignore[arg-type]
        for i in range(start, start + n)
    ]


def test_pins_stop_at_the_pin_limit_and_nothing_of_a_refused_call_is_pinned(
    budgeted: MemoryStore,
) -> None:
    ids = add(budgeted, 5)
    assert budgeted.pin(ids[:3], user_id="u1") == 3
    with pytest.raises(InputError) as caught:
        budgeted.pin(ids[3:5], user_id="u1")
    assert str(caught.value) == (
        "pin(): 'u1' would have 5 pinned active memories, past the budget's pin_limit 3 "
        "(max_pinned, else half the target): pins would starve new memories; unpin some, or "
        "raise max_pinned or max_active"
    )
    assert budgeted.pinned(user_id="u1") == sorted(ids[:3])
    assert budgeted.unpin(ids[:1], user_id="u1") == 1 and budgeted.pin(ids[3:4], user_id="u1") == 1


def test_pins_made_before_the_budget_never_starve_a_new_memory(url: str) -> None:
    with open_store(url, embedder=HashEmbedder()) as plain:  # no budget yet: no pin limit
        pinned = add(plain, 8, importance=1.0)
        assert plain.pin(pinned, user_id="u1") == 8
    with open_store(url, embedder=HashEmbedder(), lifecycle=BUDGET) as store:
        for i in range(12):
            event = store.add_memory(f"new fact {i} of the lake", user_id="u1", importance=1.0)
            assert event.event == "ADD" and event.memory_id in active(url)  # never at once
        kept = active(url)
        assert set(pinned) <= kept
        # 5 pins past the limit raise the marks by 5: unpinned memories keep 3 to 5 places.
        assert 3 <= len(kept - set(pinned)) <= 5
        expiry = sql(url, "SELECT reason FROM memreader_history WHERE event = 'EXPIRE' LIMIT 1")
        assert "raised by 5 pins past pin_limit 3" in expiry[0][0]


def test_a_memory_the_same_call_expired_is_reported_expired(
    budgeted: MemoryStore, url: str
) -> None:
    add(budgeted, 8, importance=1.0)  # fresh and important: the watermark, reached
    event = budgeted.add_memory("a stale trifle", user_id="u1", importance=0.0, now=T0)
    assert (event.event, event.item_id) == ("EXPIRE", event.memory_id)
    assert event.reason.startswith(BUDGET_REASON)
    assert budgeted.get(event.memory_id, user_id="u1").status == "expired"  # type: ignore[union-attr]
    assert [e.event for e in budgeted.history(event.memory_id, user_id="u1")] == ["ADD", "EXPIRE"]


def test_a_write_past_the_watermark_reports_each_memory_once(
    budgeted: MemoryStore, url: str
) -> None:
    kept = add(budgeted, 4)
    items = [item(f"m{i}", f"fact {i} about the harbour {i * 3}") for i in range(6)]
    events = budgeted.write(items, now=T0)  # 10 active: 4 expire, the oldest (these) first
    mine = events[: len(items)]
    assert [e.item_id for e in mine] == [i.id for i in items]
    for e in mine:
        assert e.event == ("ADD" if e.memory_id in active(url) else "EXPIRE")
    assert [e.event for e in mine].count("EXPIRE") == 4 and events[len(items) :] == []
    assert set(kept) <= active(url)


def test_a_restore_at_the_watermark_sticks(budgeted: MemoryStore, url: str) -> None:
    events = budgeted.write(
        [item(f"m{i}", f"fact {i} about the bay {i}") for i in range(9)], now=T0
    )
    gone = sorted(e.memory_id for e in events if e.event == "EXPIRE")
    assert len(gone) == 3 and len(active(url)) == 6
    add(budgeted, 2, start=40)  # 8 active: at the watermark
    restored = budgeted.restore(gone[0], user_id="u1")
    assert gone[0] in active(url) and len(active(url)) == 6  # the others made room
    assert (restored.event, restored.memory_id) == ("ADD", gone[0])
    assert "3 other memories expired over the budget to make room" in restored.reason
    budgeted.maintain()
    assert gone[0] in active(url)
    assert budgeted.usage([gone[0]], user_id="u1")[gone[0]].access_count == 1  # a use


def test_maintain_takes_a_now_near_the_first_year(url: str) -> None:
    early = datetime(1, 1, 2, tzinfo=timezone.utc)  # 30 days before it: before year 1
    far = {"max_active": 10, "purge_after_days": 36_500.0}
    with open_store(url, embedder=HashEmbedder(), lifecycle=far) as store:
        retired = add(store, 2)[0]
        store.delete(retired, user_id="u1")
        assert store.maintain(now=early, dry_run=True).purged == {}
        assert store.maintain(now=early + timedelta(days=400)).purged == {}
        assert store.maintain(lifecycle={"purge_after_days": 30.0}).purged == {}
        later = datetime.now(timezone.utc) + timedelta(days=31)
        assert store.maintain(now=later, lifecycle={"purge_after_days": 30.0}).purged == {"u1": 1}


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"max_active": True}, "max_active: Input should be a valid integer"),
        ({"max_active": "10"}, "max_active: Input should be a valid integer"),
        ({"max_active": 10.0}, "max_active: Input should be a valid integer"),
        ({"trigger_ratio": True}, "trigger_ratio: Input should be a valid number"),
        ({"expire_fraction": "0.1"}, "expire_fraction: Input should be a valid number"),
        ({"repair_batch": "9"}, "repair_batch: Input should be a valid integer"),
        ({"max_pinned": False}, "max_pinned: Input should be a valid integer"),
        (
            {"purge_after_days": 1e12},
            "purge_after_days: Input should be less than or equal to 36500",
        ),
        ({"purge_after_days": float("inf")}, "purge_after_days: Input should be a finite number"),
        (
            {"max_active": 1},
            "max_active 1 x (trigger_ratio 0.8 - expire_fraction 0.2) leaves a target of 0",
        ),
        (
            {"max_active": 10, "max_pinned": 6},
            "max_pinned (6) must be below the target (6): pins would take every place",
        ),
    ],
)
def test_a_lifecycle_setting_of_the_wrong_kind_or_range_is_refused(
    settings: dict[str, object], message: str
) -> None:
    with pytest.raises(ConfigError) as caught:
        check_lifecycle(settings)
    assert str(caught.value).startswith("invalid LifecycleConfig: ")
    assert message in str(caught.value)


def test_the_pin_limit_is_max_pinned_else_half_the_target() -> None:
    assert check_lifecycle({"max_active": 10}).pin_limit == 3  # type: ignore[union-attr]
    assert check_lifecycle({"max_active": 10, "max_pinned": 5}).pin_limit == 5  # type: ignore[union-attr]
    assert check_lifecycle({"max_active": 2, "trigger_ratio": 1.0}).pin_limit == 0  # type: ignore[union-attr]
    assert check_lifecycle({}).pin_limit is None  # type: ignore[union-attr]  # no budget: none


def test_a_tasks_write_never_expires_another_tasks_private_memories(url: str) -> None:
    with open_store(url, embedder=HashEmbedder()) as plain:  # task b's, before the budget
        b_private = add(plain, 8, importance=0.0, task_id="b")
        shared = add(plain, 1, start=10, importance=0.0, task_id="b", visibility="shared")
    with open_store(url, embedder=HashEmbedder(), lifecycle=BUDGET) as store:
        # Task a writes past the watermark: b's private memories are the least important of
        # the owner's, yet a may expire only its own and the shared one.
        event = store.add_memory("a's note on the harbour", user_id="u1", task_id="a")
        kept = active(url)
        assert set(b_private) <= kept and shared[0] not in kept
        assert event.event == "EXPIRE" and event.memory_id not in kept  # a paid for its write
        # A write of no task (the owner's own) weighs all of the owner's memories.
        store.add_memory("the owner's own note", user_id="u1", importance=1.0)
        assert len(active(url)) == 6 and len(set(b_private) & active(url)) == 5


def test_maintain_is_the_owners_and_weighs_every_task(url: str) -> None:
    with open_store(url, embedder=HashEmbedder()) as plain:
        b_private = add(plain, 9, importance=0.0, task_id="b")
    with open_store(url, embedder=HashEmbedder(), lifecycle=BUDGET) as store:
        store.maintain()
    assert len(set(b_private) & active(url)) == 6
