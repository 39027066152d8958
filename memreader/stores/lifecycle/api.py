"""The life-cycle methods of :class:`~memreader.stores.base.MemoryStore`
(:class:`LifecycleStorage`): an owner's budget of active memories, pins that keep a memory out
of it, and the restore of a memory the budget expired. Each backend answers the hooks marked
below with its own SQL; the rules are here, shared.

The budget (:class:`~memreader.stores.lifecycle.config.LifecycleConfig`) is enforced after every
write that added a memory (one ``count`` of the owner's active rows: the budget does nothing
more until the watermark is passed) and by ``maintain`` for every owner. Past the watermark,
the owner's unpinned active memories of lowest priority
(:mod:`~memreader.stores.lifecycle.priority`) expire down to the target, :data:`EXPIRE_BATCH` per
transaction, each with an ``EXPIRE`` history row whose reason starts with
:data:`BUDGET_REASON`: nothing is deleted, and :meth:`LifecycleStorage.restore` brings one back
until ``maintain`` purges it. Each batch counts the owner's active rows again inside its
transaction, so two processes enforcing at once never expire more than the target asks.

**Events say what became of a memory.** A memory a call added and the same call's budget
expired (a write past the watermark whose new memory is among the lowest) is reported once, as
``EXPIRE`` (its ``item_id`` the item written), never as ``ADD``.

**Pins never starve new memories.** Pinned memories count in the budget but never expire, so
an owner may pin at most :attr:`~memreader.stores.lifecycle.config.LifecycleConfig.pin_limit`
active memories (below the target): :meth:`LifecycleStorage.pin` past it is refused. Pins
beyond it (made before a budget was set, or under a larger one) raise the owner's watermark and
target by their excess, so the unpinned memories always keep ``target - pin_limit`` places.

**A task's write stays in its task.** A write whose memories all belong to tasks (a key or
call limited to task ``a``) may expire, over the budget, only memories of those tasks, of no
task, or shared: never another task's private memories, which that task cannot even see. The
owner may then stay past the watermark until a write of no task, or ``maintain`` (the owner's
own call, over all of their memories), brings them down.

**A restore sticks.** The restored memory is active when :meth:`LifecycleStorage.restore`
returns: if the owner is then past the watermark, the budget expires others (never it) down to
the target, and the restore counts as a use of it (:mod:`~memreader.stores.usage`), so the next
enforcement weighs it as a memory used now.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace
from datetime import datetime
from typing import TYPE_CHECKING, Any

from memreader.errors import InputError, StoreError
from memreader.items import TextualMemoryItem
from memreader.stores.checks import check_memory_id, check_owner, moment
from memreader.stores.direct_writes import UnknownMemoryError
from memreader.stores.events import WriteEvent
from memreader.stores.lifecycle.config import LifecycleConfig
from memreader.stores.lifecycle.priority import PriorityFacts, lowest, priority

if TYPE_CHECKING:
    from memreader.stores.usage import Usage

__all__ = [
    "BUDGET_REASON",
    "EXPIRE_BATCH",
    "MAX_PIN_IDS",
    "RESTORED_REASON",
    "LifecycleStorage",
    "check_ids",
    "check_pin_limit",
    "check_restorable",
]

#: How the reason of a memory the budget expired starts (what :meth:`restore` looks for).
BUDGET_REASON = "over budget"
#: The reason of the ``ADD`` history row of a restored memory.
RESTORED_REASON = "restored: it had expired over the budget"
#: Memories one budget transaction expires at most.
EXPIRE_BATCH = 500
#: Ids one :meth:`LifecycleStorage.pin` call takes at most.
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


class LifecycleStorage:
    """Budgets, pins and restores (see the module docstring)."""

    #: The store's life-cycle settings (``open_store(url, lifecycle=...)``, or set on the open
    #: store); ``None``: no budget, and ``maintain`` purges after the default delay.
    lifecycle: LifecycleConfig | None = None

    # -- public ------------------------------------------------------------------------------

    def pin(self, ids: Sequence[str], *, user_id: str, now: datetime | None = None) -> int:
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
        limit = self.lifecycle.pin_limit if self.lifecycle is not None else None
        return self._set_pins(owner, checked, True, moment(now), limit)

    def unpin(self, ids: Sequence[str], *, user_id: str) -> int:
        """Unpin ``user_id``'s memories ``ids`` (ids not pinned are passed over); returns how
        many were pinned."""
        owner, checked = check_owner(user_id), check_ids(ids, "unpin()")
        return self._set_pins(owner, checked, False, moment(None), None)

    def pinned(self, *, user_id: str) -> list[str]:
        """The ids of ``user_id``'s pinned memories, sorted."""
        return self._pinned(check_owner(user_id))

    def restore(self, memory_id: str, *, user_id: str, now: datetime | None = None) -> WriteEvent:
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
        event = self._restore(owner, checked, at)
        self.record_use([checked], user_id=owner)
        events = self._after_change([event], [], keep=frozenset({checked}), now=at)
        others = sum(1 for e in events if e.event == "EXPIRE")
        if others:
            why = f"{event.reason}; {others} other memories expired over the budget to make room"
            return replace(events[0], reason=why)
        return events[0]

    def enforce_budget(
        self,
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
        config = lifecycle or self.lifecycle
        counts, events = self._enforce(owners, moment(now), dry_run, config)
        if events:
            self._after_change(events, [])
        return counts

    # -- the rules ---------------------------------------------------------------------------

    def _after_change(
        self,
        events: list[WriteEvent],
        items: Sequence[TextualMemoryItem],
        *,
        keep: Collection[str] = (),
        now: datetime | None = None,
    ) -> list[WriteEvent]:
        """``events``, with the budget's ``EXPIRE`` events when the change added memories to
        an owner now past the watermark: a memory of ``events`` that expired is reported by its
        ``EXPIRE`` in its place (never ``ADD``), the others' follow; ``keep``: ids the budget
        spares (a restore's). Then the next class's hook: the category keeper sees them all."""
        config = self.lifecycle
        budget = config is not None and config.max_active is not None
        if budget and any(e.event == "ADD" for e in events):
            owners = {i.metadata.user_id for i in items}
            owners |= {e.user_id for e in events if e.user_id}
            tasks = {i.metadata.task_id or "" for i in items}
            # A write of tasks only never expires another task's private memories.
            within = frozenset(tasks) if tasks and "" not in tasks else None
            if owners:
                found = self._enforce(sorted(owners), moment(now), False, config, keep, within)
                events = _in_place(events, found[1])
        after: Any = super()._after_change  # type: ignore[misc]  # the store's next class
        return list(after(events, items))

    def _enforce(
        self,
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
        for owner, count in sorted(self._active_counts(owners).items()):
            if count <= config.watermark:
                continue
            # Pins past the limit (made before this budget) raise the owner's marks by their
            # excess: the unpinned memories keep their places (see the module docstring).
            excess = max(0, self._pinned_active(owner) - (config.pin_limit or 0))
            watermark, target = config.watermark + excess, config.target + excess
            if count <= watermark:
                continue
            facts = self._with_usage(owner, self._budget_facts(owner))
            facts = [f for f in facts if f.memory_id not in keep and _may_expire(f, within)]
            chosen = lowest(facts, count - target, now)
            if dry_run:
                done[owner] = len(chosen)
                continue
            expired: list[WriteEvent] = []
            for start in range(0, len(chosen), EXPIRE_BATCH):
                batch = chosen[start : start + EXPIRE_BATCH]
                why = [(f.memory_id, _reason(owner, count, config, f, now, excess)) for f in batch]
                expired += self._expire_for_budget(owner, why, target, now)
            done[owner] = len(expired)
            events += expired
        return done, events

    def _with_usage(self, owner: str, facts: list[PriorityFacts]) -> list[PriorityFacts]:
        """``facts`` with each memory's recorded use
        (:meth:`~memreader.stores.usage.UseRecords.usage`)."""
        if not facts:
            return facts
        found = self.usage([f.memory_id for f in facts], user_id=owner)
        out = []
        for f in facts:
            used = found.get(f.memory_id)
            if used is not None:
                f = replace(f, access_count=used.access_count, last_used_at=used.last_accessed_at)
            out.append(f)
        return out

    # -- each backend's ----------------------------------------------------------------------

    if TYPE_CHECKING:  # the store's use records (UseRecords)

        def usage(self, ids: Sequence[str], *, user_id: str) -> dict[str, Usage]: ...

        def record_use(self, ids: Sequence[str], *, user_id: str) -> int: ...

    def _set_pins(
        self, owner: str, ids: list[str], on: bool, now: datetime, limit: int | None
    ) -> int:
        """Pin (``on``) or unpin ``owner``'s ``ids`` in one transaction; how many changed.
        Pinning checks the owner's pinned active memories against ``limit`` in that
        transaction (:func:`check_pin_limit`, which raises: nothing is pinned)."""
        raise StoreError(f"{type(self).__name__} cannot pin memories")

    def _pinned_active(self, owner: str) -> int:
        """How many of ``owner``'s active memories are pinned."""
        raise StoreError(f"{type(self).__name__} cannot pin memories")

    def _pinned(self, owner: str) -> list[str]:
        """``owner``'s pinned ids, sorted."""
        raise StoreError(f"{type(self).__name__} cannot pin memories")

    def _active_counts(self, owners: Collection[str] | None) -> dict[str, int]:
        """How many active memories each owner of ``owners`` (every owner: ``None``) has;
        owners with none may be left out."""
        raise StoreError(f"{type(self).__name__} has no budget")

    def _budget_facts(self, owner: str) -> list[PriorityFacts]:
        """The priority facts of ``owner``'s unpinned active memories (without usage)."""
        raise StoreError(f"{type(self).__name__} has no budget")

    def _expire_for_budget(
        self, owner: str, chosen: list[tuple[str, str]], target: int, now: datetime
    ) -> list[WriteEvent]:
        """One transaction: of ``chosen`` (id, reason), in order, expire those still active
        and unpinned while ``owner`` has more than ``target`` active memories."""
        raise StoreError(f"{type(self).__name__} has no budget")

    def _restore(self, owner: str, memory_id: str, now: datetime) -> WriteEvent:
        """What :meth:`restore` does, its arguments checked."""
        raise StoreError(f"{type(self).__name__} cannot restore memories")


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
