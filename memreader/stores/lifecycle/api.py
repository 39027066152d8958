"""The life-cycle methods of :class:`~memreader.stores.base.MemoryStore` (plain functions
over the store, each bound there by name): an owner's budget of active memories, pins that
keep a memory out of it, and the restore of a memory the budget expired. Each backend answers
the budget hooks of :class:`~memreader.stores.contract.StoreBackend` with its own SQL; the
rules are here, shared.

The budget (:class:`~memreader.stores.lifecycle.config.LifecycleConfig`) is enforced after every
write that added a memory (one ``count`` of the owner's active rows: the budget does nothing
more until the watermark is passed) and by ``maintain`` for every owner. Past the watermark,
the owner's unpinned active memories of lowest priority
(:mod:`~memreader.stores.lifecycle.priority`) expire down to the target, :data:`EXPIRE_BATCH` per
transaction, each with an ``EXPIRE`` history row whose reason starts with
:data:`BUDGET_REASON`: nothing is deleted, and :func:`restore` brings one back
until ``maintain`` purges it. Each batch counts the owner's active rows again inside its
transaction, so two processes enforcing at once never expire more than the target asks.

**Events say what became of a memory.** A memory a call added and the same call's budget
expired (a write past the watermark whose new memory is among the lowest) is reported once, as
``EXPIRE`` (its ``item_id`` the item written), never as ``ADD``.

**Pins never starve new memories.** Pinned memories count in the budget but never expire, so
an owner may pin at most :attr:`~memreader.stores.lifecycle.config.LifecycleConfig.pin_limit`
active memories (below the target): :func:`pin` past it is refused. Pins
beyond it (made before a budget was set, or under a larger one) raise the owner's watermark and
target by their excess, so the unpinned memories always keep ``target - pin_limit`` places.

**A task's write stays in its task.** A write whose memories all belong to tasks (a key or
call limited to task ``a``) may expire, over the budget, only memories of those tasks, of no
task, or shared: never another task's private memories, which that task cannot even see. The
owner may then stay past the watermark until a write of no task, or ``maintain`` (the owner's
own call, over all of their memories), brings them down.

**A restore sticks.** The restored memory is active when :func:`restore`
returns: if the owner is then past the watermark, the budget expires others (never it) down to
the target, and the restore counts as a use of it (:mod:`~memreader.stores.usage`), so the next
enforcement weighs it as a memory used now.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memreader.errors import InputError
from memreader.stores.checks import check_memory_id, check_owner, moment
from memreader.stores.direct_writes import UnknownMemoryError
from memreader.stores.events import WriteEvent
from memreader.stores.lifecycle.config import LifecycleConfig
from memreader.stores.lifecycle.priority import PriorityFacts, lowest, priority
from memreader.stores.usage import record_use, usage

if TYPE_CHECKING:
    from memreader.stores.contract import StoreBackend
    from memreader.stores.events import Change

__all__ = [
    "BUDGET_REASON",
    "EXPIRE_BATCH",
    "MAX_PIN_IDS",
    "RESTORED_REASON",
    "check_ids",
    "check_pin_limit",
    "check_restorable",
    "enforce_budget",
    "expire_over_budget",
    "pin",
    "pinned",
    "restore",
    "unpin",
]

#: How the reason of a memory the budget expired starts (what :meth:`restore` looks for).
BUDGET_REASON = "over budget"
#: The reason of the ``ADD`` history row of a restored memory.
RESTORED_REASON = "restored: it had expired over the budget"
#: Memories one budget transaction expires at most.
EXPIRE_BATCH = 500
#: Ids one :meth:`~memreader.stores.base.MemoryStore.pin` call takes at most.
MAX_PIN_IDS = 10_000


def check_ids(ids: Any, call: str) -> list[str]:
    """``ids``: a list of memory ids, without repeats (order kept).

    Raises:
        InputError: not a list or tuple of non-empty strings, empty, or over
            :data:`MAX_PIN_IDS` (the message names ``call``).
    """
    if isinstance(ids, str) or not isinstance(ids, (list, tuple)):
        raise InputError(f"{call}: ids must be a list of memory ids, got {type(ids).__name__}")
    if not ids or len(ids) > MAX_PIN_IDS:
        raise InputError(f"{call}: give 1 to {MAX_PIN_IDS} memory ids, got {len(ids)}")
    return list(dict.fromkeys(check_memory_id(i, f"{call} id") for i in ids))


def pin(
    store: StoreBackend, ids: Sequence[str], *, user_id: str, now: datetime | None = None
) -> int:
    """Pin ``user_id``'s memories ``ids``: the budget never expires them (a forget, a
    newer memory or a delete still retire them). One transaction; returns how many were
    not pinned before.

    Raises:
        UnknownMemoryError: the owner has no memory of one of the ids (nothing is pinned).
        InputError: bad ``ids`` or ``user_id``; with a budget, the owner would have more
            pinned active memories than its ``pin_limit`` (nothing is pinned; the message
            says how many and the limit).
    """
    owner, checked = check_owner(user_id), check_ids(ids, "pin()")
    limit = store.lifecycle.pin_limit if store.lifecycle is not None else None
    return store._set_pins(owner, checked, True, moment(now), limit)


def unpin(store: StoreBackend, ids: Sequence[str], *, user_id: str) -> int:
    """Unpin ``user_id``'s memories ``ids`` (ids not pinned are passed over); returns how
    many were pinned."""
    owner, checked = check_owner(user_id), check_ids(ids, "unpin()")
    return store._set_pins(owner, checked, False, moment(None), None)


def pinned(store: StoreBackend, *, user_id: str) -> list[str]:
    """The ids of ``user_id``'s pinned memories, sorted."""
    return store._pinned(check_owner(user_id))


def restore(
    store: StoreBackend, memory_id: str, *, user_id: str, now: datetime | None = None
) -> WriteEvent:
    """Bring back ``user_id``'s memory ``memory_id`` that the budget expired (its last
    change an ``EXPIRE`` for :data:`BUDGET_REASON`): it is active again (an ``ADD`` history
    row says it was restored) and stays so: past the watermark, the budget expires others
    (the event's reason says how many), and the restore counts as a use. A later
    enforcement may still take it when it is again among the lowest: pin what must stay.

    Raises:
        UnknownMemoryError: the owner has no such memory (or it was purged).
        InputError: it is not a memory the budget expired, or an active memory of the
            owner has its text now (the message names it).
    """
    owner, checked = check_owner(user_id), check_memory_id(memory_id)
    at = moment(now)
    event = store._restore(owner, checked, at)
    record_use(store, [checked], user_id=owner)
    events = store._after_change([event], [], keep=frozenset({checked}), now=at)
    others = sum(1 for e in events if e.event == "EXPIRE")
    if others:
        why = f"{event.reason}; {others} other memories expired over the budget to make room"
        return replace(events[0], reason=why)
    return events[0]


def enforce_budget(
    store: StoreBackend,
    *,
    user_id: str | None = None,
    now: datetime | None = None,
    dry_run: bool = False,
    lifecycle: LifecycleConfig | None = None,
) -> dict[str, int]:
    """Bring every owner (or ``user_id``) past the watermark down to the target; returns
    how many memories expired (``dry_run``: would expire) per owner past it. The budget is
    ``lifecycle``'s (default: the store's); nothing happens without a ``max_active``."""
    owners = [check_owner(user_id)] if user_id is not None else None
    config = lifecycle or store.lifecycle
    counts, events = _enforce(store, owners, moment(now), dry_run, config)
    if events:
        store._after_change(events, [])
    return counts


def expire_over_budget(store: StoreBackend, change: Change) -> list[WriteEvent]:
    """The first step of the after-write list (:mod:`memreader.stores.after_write`):
    ``change.events``, with the budget's ``EXPIRE`` events when the change added memories to
    an owner now past the watermark: a memory of the change that expired is reported by its
    ``EXPIRE`` in its place (never ``ADD``), the others' follow; ``change.keep``: ids the
    budget spares (a restore's)."""
    events, items = change.events, change.items
    config = store.lifecycle
    budget = config is not None and config.max_active is not None
    if budget and any(e.event == "ADD" for e in events):
        owners = {i.metadata.user_id for i in items}
        owners |= {e.user_id for e in events if e.user_id}
        tasks = {i.metadata.task_id or "" for i in items}
        # A write of tasks only never expires another task's private memories.
        within = frozenset(tasks) if tasks and "" not in tasks else None
        if owners:
            at = moment(change.now)
            found = _enforce(store, sorted(owners), at, False, config, change.keep, within)
            events = _in_place(events, found[1])
    return events


def _enforce(
    store: StoreBackend,
    owners: Collection[str] | None,
    now: datetime,
    dry_run: bool,
    config: LifecycleConfig | None,
    keep: Collection[str] = (),
    within: frozenset[str] | None = None,
) -> tuple[dict[str, int], list[WriteEvent]]:
    """Expire each owner's lowest-priority memories past the watermark down to the target
    (``keep``: ids spared; ``within``: the tasks a write was made in, whose change may
    expire only their own memories and those of no task or shared, never another task's
    private ones); how many per owner, and the events."""
    if config is None or config.watermark is None or config.target is None:
        return {}, []
    done: dict[str, int] = {}
    events: list[WriteEvent] = []
    for owner, count in sorted(store._active_counts(owners).items()):
        if count <= config.watermark:
            continue
        # Pins past the limit (made before this budget) raise the owner's marks by their
        # excess: the unpinned memories keep their places (see the module docstring).
        excess = max(0, store._pinned_active(owner) - (config.pin_limit or 0))
        watermark, target = config.watermark + excess, config.target + excess
        if count <= watermark:
            continue
        facts = _with_usage(store, owner, store._budget_facts(owner))
        facts = [f for f in facts if f.memory_id not in keep and _may_expire(f, within)]
        chosen = lowest(facts, count - target, now)
        if dry_run:
            done[owner] = len(chosen)
            continue
        expired: list[WriteEvent] = []
        for start in range(0, len(chosen), EXPIRE_BATCH):
            batch = chosen[start : start + EXPIRE_BATCH]
            why = [(f.memory_id, _reason(owner, count, config, f, now, excess)) for f in batch]
            expired += store._expire_for_budget(owner, why, target, now)
        done[owner] = len(expired)
        events += expired
    return done, events


def _with_usage(store: StoreBackend, owner: str, facts: list[PriorityFacts]) -> list[PriorityFacts]:
    """``facts`` with each memory's recorded use
    (:meth:`~memreader.stores.base.MemoryStore.usage`)."""
    if not facts:
        return facts
    found = usage(store, [f.memory_id for f in facts], user_id=owner)
    out = []
    for f in facts:
        used = found.get(f.memory_id)
        if used is not None:
            f = replace(f, access_count=used.access_count, last_used_at=used.last_accessed_at)
        out.append(f)
    return out


def check_restorable(
    owner: str,
    memory_id: str,
    row: Sequence[Any] | None,
    last: Sequence[Any] | None,
    same: Sequence[Any] | None,
) -> None:
    """Refuse to restore ``owner``'s memory ``memory_id`` unless the budget expired it: ``row``
    is its row (``None``: no such memory; its second column its status), ``last`` its latest
    history row (event, reason), ``same`` an active memory of the owner with its text (its
    first column the id), each as the backend read them in the restore's transaction.

    Raises:
        UnknownMemoryError: no such memory.
        InputError: it is not expired, its last change is not the budget's, or its text is
            active again (the message says which).
    """
    if row is None:
        raise UnknownMemoryError(f"user {owner!r} has no memory {memory_id!r}")
    status = row[1]
    if status != "expired":
        raise InputError(f"memory {memory_id!r} is {status}: only an expired memory is restored")
    if last is None or last[0] != "EXPIRE" or not str(last[1]).startswith(BUDGET_REASON):
        why = last[1] if last else "no history"
        raise InputError(
            f"memory {memory_id!r} was not expired by the budget ({why}); write it again instead"
        )
    if same is not None:
        raise InputError(
            f"memory {memory_id!r} cannot be restored: the active memory {same[0]!r} has its text"
        )


def check_pin_limit(owner: str, before: int, after: int, limit: int | None) -> None:
    """Refuse a pin that took ``owner`` from ``before`` to ``after`` pinned active memories
    past ``limit`` (``None``: no budget, no limit); the backend raises it inside the pin's
    transaction, so nothing is pinned.

    >>> check_pin_limit("ana", 2, 3, 3)
    >>> check_pin_limit("ana", 3, 4, 3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    memreader.errors.InputError: pin(): 'ana' would have 4 pinned active memories, past ...

    Raises:
        InputError: the pin adds pinned active memories past ``limit``.
    """
    if limit is not None and after > limit and after > before:
        raise InputError(
            f"pin(): {owner!r} would have {after} pinned active memories, past the budget's "
            f"pin_limit {limit} (max_pinned, else half the target): pins would starve new "
            "memories; unpin some, or raise max_pinned or max_active"
        )


def _in_place(events: list[WriteEvent], expired: list[WriteEvent]) -> list[WriteEvent]:
    """``events`` with each ``ADD`` whose memory ``expired`` holds replaced by that ``EXPIRE``
    (keeping the item it wrote), then the other expiries: one event per memory, saying what
    became of it."""
    gone = {e.memory_id: e for e in expired}
    out = []
    for event in events:
        after = gone.pop(event.memory_id, None) if event.event == "ADD" else None
        out.append(event if after is None else replace(after, item_id=event.item_id))
    return out + list(gone.values())


def _reason(
    owner: str,
    count: int,
    config: LifecycleConfig,
    facts: PriorityFacts,
    now: datetime,
    excess: int,
) -> str:
    pins = f", raised by {excess} pins past pin_limit {config.pin_limit}" if excess else ""
    assert config.watermark is not None and config.target is not None  # a budget is set
    return (
        f"{BUDGET_REASON}: {owner!r} had {count} active memories, past the watermark "
        f"{config.watermark + excess} (max_active {config.max_active} x trigger_ratio "
        f"{config.trigger_ratio:g}{pins}); among the lowest by priority "
        f"({priority(facts, now):.3f}), expired down to {config.target + excess}"
    )


def _may_expire(facts: PriorityFacts, within: frozenset[str] | None) -> bool:
    """Whether a change made in the tasks ``within`` (``None``: not limited to tasks) may
    expire the memory of ``facts``: not when it is another task's private memory.

    >>> f = PriorityFacts("m", None, 0, datetime(2026, 1, 1), task_id="b")
    >>> _may_expire(f, frozenset({"a"})), _may_expire(f, frozenset({"b"})), _may_expire(f, None)
    (False, True, True)
    """
    if within is None or facts.visibility != "private" or not facts.task_id:
        return True
    return facts.task_id in within
