"""Forgetting's second step and the index's repair: :func:`maintain` (the store's method), what
``memreader maintain`` and the service's background task run.

One run, in this order, each step in bounded transactions:

1. **purge**: the rows of memories expired or superseded more than ``purge_after_days`` ago
   are removed, with their history, keys, text index, passages, category links and pins
   (:meth:`~memreader.stores.base.MemoryStore.purge`, one transaction);
2. **budget**: every owner past the watermark is brought down to the target
   (:meth:`~memreader.stores.base.MemoryStore.enforce_budget`, a few hundred
   memories per transaction);
3. **repair**: active memories without a vector, with a vector that has no direction (a NaN,
   an infinity, all zeros: what a broken embedder gives), with a vector stored without a model
   name, or of another model than the store's embedder
   (:func:`~memreader.stores.embedder_rules.foreign_models`), are embedded again with it,
   their passages too, ``repair_batch`` per transaction. A row that cannot be read is passed
   over and named in the report (``unreadable``), as is one the embedder gave no usable vector
   for, or failed on (``unrepaired``: when a batch fails, its texts are embedded one by one,
   so one text the embedder refuses is that memory's result; a batch where every text fails
   is the embedder's failure, raised): the run goes on, and :attr:`MaintainReport.complete`
   is false.

:func:`repair_index` runs the third step alone: what ``Memory`` runs on open with
``index: {on_open: repair}`` and the service at start-up (it purges nothing).

Every step acts on what the rows say now, so a run killed between (or inside) transactions
leaves a consistent store and the next run does the rest: running twice does nothing more
than running once. ``dry_run`` counts what each step would do, per owner, and writes nothing.
"""

from __future__ import annotations

import logging
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import TYPE_CHECKING, Any

from memreader.calls.deadlines import Deadline, check_deadline
from memreader.errors import InputError, StoreError
from memreader.items import TextualMemoryItem
from memreader.stores.checks import moment
from memreader.stores.embedder_rules import embedding_models, foreign_models
from memreader.stores.embedding import QueryEmbedder, embed, usable_vector
from memreader.stores.lifecycle.api import enforce_budget
from memreader.stores.lifecycle.config import LifecycleConfig, check_lifecycle
from memreader.stores.passages.rows import plan_passages
from memreader.stores.records import Unindexed

if TYPE_CHECKING:
    from memreader.stores.contract import StoreBackend

__all__ = ["MaintainReport", "Unindexed", "maintain", "repair_index"]

#: The steps of a run, in order (a report's keys).
STEPS = ("purged", "expired", "repaired")

logger = logging.getLogger(__name__)

#: Texts of a failed repair batch that, tried alone and all failing, mean the embedder is
#: down (the run stops) rather than refusing one text (that memory is named, the rest repaired).
DOWN_AFTER = 3


@dataclass
class MaintainReport:
    """What one run did (``dry_run``: would do): per step (:data:`STEPS`), how many memories
    of each owner; what the repair could not do, per owner, by memory id: rows it could not
    read (``unreadable``) and memories the embedder gave no usable vector for
    (``unrepaired``); ``notes`` say what was skipped and why."""

    dry_run: bool
    purged: dict[str, int] = field(default_factory=dict)
    expired: dict[str, int] = field(default_factory=dict)
    repaired: dict[str, int] = field(default_factory=dict)
    unreadable: dict[str, list[str]] = field(default_factory=dict)
    unrepaired: dict[str, list[str]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def complete(self) -> bool:
        """Whether the run did all it found to do (nothing unreadable or unrepaired)."""
        return not self.unreadable and not self.unrepaired

    def totals(self) -> dict[str, int]:
        """Each step's count over every owner."""
        return {step: sum(getattr(self, step).values()) for step in STEPS}

    def to_dict(self) -> dict[str, Any]:
        """The report as JSON-ready data."""
        return {
            "dry_run": self.dry_run,
            "complete": self.complete,
            "totals": self.totals(),
            **{step: dict(sorted(getattr(self, step).items())) for step in STEPS},
            **{kind: _by_owner(getattr(self, kind)) for kind in _LEFT},
            "notes": list(self.notes),
        }

    def lines(self) -> list[str]:
        """The report as text: one line per step, then one per owner and step, then what the
        repair could not do."""
        verb = "would be " if self.dry_run else ""
        out = [f"{step}: {n} memories {verb}{step}" for step, n in self.totals().items()]
        for step in STEPS:
            for owner, n in sorted(getattr(self, step).items()):
                out.append(f"  {step} {owner}: {n}")
        for kind, why in _LEFT.items():
            for owner, ids in _by_owner(getattr(self, kind)).items():
                shown = ", ".join(ids[:10]) + (
                    f" and {len(ids) - 10} more" if len(ids) > 10 else ""
                )
                out.append(f"{kind} {owner}: {len(ids)} memories {why}: {shown}")
        return out + [f"note: {note}" for note in self.notes]


#: What the repair could not do, and why (the report's fields).
_LEFT = {
    "unreadable": "whose rows cannot be read (fix or delete them)",
    "unrepaired": "the embedder failed on or gave no usable vector for (NaN, infinite, zeros)",
}


def _by_owner(found: dict[str, list[str]]) -> dict[str, list[str]]:
    return {owner: sorted(ids) for owner, ids in sorted(found.items())}


def maintain(
    store: StoreBackend,
    *,
    dry_run: bool = False,
    now: datetime | None = None,
    lifecycle: LifecycleConfig | None = None,
    deadline: Deadline | None = None,
) -> MaintainReport:
    """Purge, enforce the budgets and repair the index (see the module docstring), with
    ``lifecycle`` (default: the store's, else the defaults). ``deadline`` is checked
    before each step and each repair batch (the service's: its maintain lease, lost when
    another worker took it back); past it the run stops there, what it committed stays.

    Raises:
        InputError: ``dry_run`` is not true or false.
        StoreError: the store or its embedder failed (the batches committed before stay).
        DeadlineExceeded: ``deadline`` passed (or was cancelled) before the run ended.
    """
    if not isinstance(dry_run, bool):
        raise InputError(f"dry_run must be true or false, got {dry_run!r}")
    config = check_lifecycle(lifecycle) or store.lifecycle or LifecycleConfig()
    at = moment(now)
    report = MaintainReport(dry_run)
    check_deadline(deadline, "before the purge")
    if config.purge_after_days is None:
        report.notes.append("purge: off (purge_after_days is null)")
    else:
        cutoff = _cutoff(at, config.purge_after_days)
        report.purged = store._retired_counts(cutoff)
        if not dry_run and report.purged:
            store.purge(older_than=cutoff)
    check_deadline(deadline, "before the budget")
    if config.max_active is None:
        report.notes.append("budget: off (no max_active)")
    else:
        report.expired = enforce_budget(store, now=at, dry_run=dry_run, lifecycle=config)
    check_deadline(deadline, "before the repair")
    report.repaired = _repair(store, config.repair_batch, report, deadline)
    return report


def repair_index(
    store: StoreBackend,
    *,
    dry_run: bool = False,
    batch: int | None = None,
    deadline: Deadline | None = None,
) -> MaintainReport:
    """Only :func:`maintain`'s repair: embed again, ``batch`` per transaction (default: the
    store's ``repair_batch``), the active memories without a vector or with another model's;
    nothing is purged or expired. ``deadline`` is checked before each batch.

    Raises:
        InputError: ``dry_run`` is not true or false, or ``batch`` not a count >= 1.
        StoreError: the store or its embedder failed (the batches committed before stay).
        DeadlineExceeded: ``deadline`` passed before the run ended.
    """
    if not isinstance(dry_run, bool):
        raise InputError(f"dry_run must be true or false, got {dry_run!r}")
    if batch is None:
        batch = (store.lifecycle or LifecycleConfig()).repair_batch
    if isinstance(batch, bool) or not isinstance(batch, int) or batch < 1:
        raise InputError(f"repair batch must be a count >= 1, got {batch!r}")
    report = MaintainReport(dry_run)
    report.repaired = _repair(store, batch, report, deadline)
    return report


def _repair(
    store: StoreBackend, batch: int, report: MaintainReport, deadline: Deadline | None = None
) -> dict[str, int]:
    embedder = store.embedder
    if embedder is None:
        report.notes.append("repair: off (the store is open text only: no embedder)")
        return {}
    name = getattr(embedder, "name", None)
    model = name if isinstance(name, str) else None
    foreign: list[str] = []
    if model is None:
        report.notes.append(
            "repair: the embedder has no name; only missing vectors and vectors without a "
            "direction are repaired"
        )
    else:  # "": vectors stored without a model name, whatever made them
        found = embedding_models(store)
        foreign = sorted(set(foreign_models(model, found)) | ({""} & set(found)))
    if report.dry_run:
        return store._unindexed_counts(foreign)
    done: Counter[str] = Counter()
    after = 0
    while rows := store._unindexed(foreign, after, batch):
        check_deadline(deadline, "before a repair batch")
        after = rows[-1].rowid
        for row in rows:
            if row.memory is None:
                report.unreadable.setdefault(row.owner, []).append(row.memory_id)
        readable = [(row.rowid, row.memory) for row in rows if row.memory is not None]
        vectors = _embed_each(embedder, [m.item.memory for _, m in readable])
        fixed: list[tuple[int, TextualMemoryItem]] = []
        for (rowid, memory), vector in zip(readable, vectors, strict=True):
            if vector is not None and usable_vector(vector):
                fixed.append((rowid, _with_vector(memory.item, vector, model)))
            else:
                report.unrepaired.setdefault(memory.item.metadata.user_id, []).append(memory.id)
        if fixed:
            plan = plan_passages([item for _, item in fixed], embedder)
            done.update(store._reindex(fixed, foreign, plan))
    return dict(done)


def _embed_each(embedder: QueryEmbedder, texts: list[str]) -> list[list[float] | None]:
    """One vector per text, ``None`` for a text the embedder failed on: the batch at once,
    else (it failed) one text at a time, so one text it refuses does not fail the others.

    Raises:
        StoreError: the embedder failed on each of the first texts of a batch of several,
            tried alone (:data:`DOWN_AFTER` of them, or all): it is down, and one call per
            text would only repeat that (each call perhaps waiting out its timeout).
    """
    if not texts:
        return []
    try:
        return list(embed(embedder, texts))
    except StoreError as exc:
        logger.warning("repair: a batch of %d failed (%s); embedding one by one", len(texts), exc)
        if len(texts) == 1:
            return [None]
    out: list[list[float] | None] = []
    last: StoreError | None = None
    for text in texts:
        try:
            out.append(embed(embedder, [text])[0])
        except StoreError as exc:
            last = exc
            out.append(None)
            if len(out) == DOWN_AFTER and all(v is None for v in out):
                raise  # the first texts all failed alone too: the embedder is down
    if last is not None and all(v is None for v in out):
        raise last
    return out


def _cutoff(at: datetime, days: float) -> datetime:
    """``days`` before ``at``; the earliest time there is when that is before year 1 (a
    ``now`` given near year 1: nothing retired that long ago)."""
    try:
        return at - timedelta(days=days)
    except OverflowError:
        return datetime.min.replace(tzinfo=timezone.utc)


def _with_vector(
    item: TextualMemoryItem, vector: list[float], model: str | None
) -> TextualMemoryItem:
    meta = item.metadata.model_copy(
        update={"embedding": [float(x) for x in vector], "embedding_model": model}
    )
    return item.model_copy(update={"metadata": meta})
