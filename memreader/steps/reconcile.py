"""The ``reconcile`` fine pass: each window's new memories against the stored memories they
resemble, one LLM call per window that has any, and the decision carried on each item.

=========  ============================  ==============  =====
step       requires                      produces        modes
=========  ============================  ==============  =====
reconcile  fine_windows, items, emitted  items, emitted  fine
=========  ============================  ==============  =====

Off by default (``fine.passes: [..., reconcile]`` turns it on; it needs the reader's store,
the one a :class:`~memreader.Memory` hands it or its config's ``store``, or the call is a
``ConfigError`` naming both). It runs after fine mode's items are
built and before ``dedup`` and ``embed``, so an ``UPDATE``'s merged memory is what gets
embedded. For each window, the memories of the kinds that state facts (long-term, user and
preference memories) not already in the store (:meth:`~memreader.stores.MemoryStore.lookup`)
are searched in the store, per owner and type (``k`` = :data:`NEIGHBOURS_PER_MEMORY`); a hit is
a neighbour when it shares a word with the memory (the full-text list found it) or its cosine
is at least :data:`MIN_SIMILARITY`. A window whose new memories have neighbours gets one call
of :func:`~memreader.extraction.reconcile.reconcile_plan` (``general_llm`` slot, within the
reader's LLM budget, windows at once); a window without neighbours gets no call and its
memories are ``ADD``. Neighbours come from what the store held when the call began: two windows
of one call are not reconciled with each other.

Each decided item carries it in ``metadata.reconcile`` (the event, the neighbour's store id,
the reason), which the store applies when the item is written
(:mod:`memreader.stores.write_decisions`); an ``UPDATE`` also replaces the item's memory with the
merged text (its id stays). Each decided item is tagged ``reconcile:<EVENT>``, and its window
report gets a note (``item <id>: reconcile SUPERSEDE of <target>: <reason>``); ``passes``
says ``ok`` or ``failed`` per window with a call, and ``report.passes["reconcile"]`` counts the
calls and their tokens. A failed call makes every memory of the window ``ADD``, with the
reason; a store that cannot be searched leaves the items without decisions (one warning).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memreader.calls.deadlines import in_thread
from memreader.errors import ConfigError, StoreError
from memreader.extraction import short_error
from memreader.extraction.language import Language
from memreader.extraction.reconcile import MAX_SHOWN, Neighbour, ReconcileDecision, reconcile_plan
from memreader.items import MemoryType, Reconciliation, TextualMemoryItem
from memreader.pipeline import Step
from memreader.scopes import scope_columns
from memreader.steps.chain import PerWindowStep, WindowWork, arun_chain, count_pass, run_chain
from memreader.steps.registry import STEPS
from memreader.steps.report import WindowReport
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState

if TYPE_CHECKING:
    from memreader.stores import MemoryStore

__all__ = ["MIN_SIMILARITY", "NEIGHBOURS_PER_MEMORY", "RECONCILED_TYPES", "Reconcile"]

logger = logging.getLogger(__name__)

#: The memory kinds reconciled: those that state facts about the owner.
RECONCILED_TYPES = frozenset({MemoryType.LONG_TERM, MemoryType.USER, MemoryType.PREFERENCE})
#: Stored memories searched per new memory.
NEIGHBOURS_PER_MEMORY = 5
#: The cosine at which a hit the full-text search did not find counts as a neighbour.
#: Provisional, not measured: below it a vector hit is taken as unrelated (no call for it).
MIN_SIMILARITY = 0.5


@dataclass
class _Group:
    """One call: the new memories of one owner in one window, and their neighbours."""

    items: list[TextualMemoryItem]
    neighbours: list[Neighbour]
    language: Language


@STEPS.register("reconcile")
class Reconcile(Step):
    """Decides each new memory against the stored ones it resembles (see the module
    docstring): one LLM call per window with neighbours."""

    name = "reconcile"
    requires = ("fine_windows", "items", "emitted")
    produces = ("items", "emitted")
    modes = frozenset({"fine"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        groups = self.groups(state, runtime)
        if groups:
            run_chain([_Calls(groups)], state, runtime)

    async def arun(self, state: ReadState, runtime: ReaderRuntime) -> None:
        groups = await in_thread(self.groups, state, runtime, on_cancel=state.cancel)
        if groups:
            await arun_chain([_Calls(groups)], state, runtime)

    def groups(self, state: ReadState, runtime: ReaderRuntime) -> dict[int, list[_Group]]:
        """The calls to make, by fine window; memories without neighbours are marked ``ADD``
        here (they need no call).

        Raises:
            ConfigError: the reader has no store.
        """
        if not runtime.has_store:
            raise ConfigError(
                "fine.passes lists reconcile, which needs the reader's store: set `store:` "
                "(sqlite:///memories.db or postgresql://...) in the reader config, or take "
                "reconcile out of fine.passes"
            )
        by_report = {id(fw.report): index for index, fw in enumerate(state.fine_windows)}
        pending: dict[tuple[int, str], list[TextualMemoryItem]] = {}
        for item, entry in state.emitted:
            index = by_report.get(id(entry))
            meta = item.metadata
            if (
                index is not None
                and meta.memory_type in RECONCILED_TYPES
                and meta.user_id.strip()
                and meta.reconcile is None
            ):
                pending.setdefault((index, meta.user_id), []).append(item)
        if not pending:
            return {}
        try:
            store = runtime.store()
            assert store is not None  # the reader has a store (checked above)
            return self._search(state, store, pending)
        except StoreError as exc:
            logger.warning("reconcile: the store failed, no memory gets a decision: %s", exc)
            for index, _ in pending:
                state.fine_windows[index].report.passes[self.name] = "failed"
            return {}

    def _search(
        self,
        state: ReadState,
        store: MemoryStore,
        pending: dict[tuple[int, str], list[TextualMemoryItem]],
    ) -> dict[int, list[_Group]]:
        groups: dict[int, list[_Group]] = {}
        for (index, owner), items in pending.items():
            found = store.lookup(items, user_id=owner)
            new = [item for item, event in zip(items, found, strict=True) if event is None]
            neighbours = _neighbours(store, new, owner)
            fw = state.fine_windows[index]
            if neighbours:
                groups.setdefault(index, []).append(_Group(new, neighbours, fw.input.language))
                continue
            for item in new:
                _mark(item, ReconcileDecision("ADD", "no stored memory resembles it"), None, None)
        return groups


def _neighbours(
    store: MemoryStore, items: Sequence[TextualMemoryItem], owner: str
) -> list[Neighbour]:
    """The stored memories of ``owner`` that ``items`` resemble, best first per item, each
    once, at most :data:`~memreader.extraction.reconcile.MAX_SHOWN`; only those of the item's
    own scope (:mod:`memreader.scopes`): the store applies a decision only to a memory of the
    same agent, task and visibility, and another task's private text never reaches a prompt
    (the search is filtered by the item's agent and task)."""
    own = {item.id for item in items}
    found: dict[str, Neighbour] = {}
    for item in items:
        meta = item.metadata
        hits = store.search(
            item.memory,
            user_id=owner,
            k=NEIGHBOURS_PER_MEMORY,
            types=[meta.memory_type.value],
            agent_id=meta.agent_id,
            task_id=meta.task_id,
        )
        for hit in hits:
            score, memory = hit.score, hit.memory
            related = score.text_rank is not None or (score.similarity or 0.0) >= MIN_SIMILARITY
            same_scope = scope_columns(memory.item.metadata) == scope_columns(meta)
            if not related or not same_scope or memory.id in own or memory.id in found:
                continue
            since = memory.valid_from.date().isoformat() if memory.valid_from else None
            found[memory.id] = Neighbour(memory.id, memory.item.memory, since)
    return list(found.values())[:MAX_SHOWN]


def _mark(
    item: TextualMemoryItem,
    decision: ReconcileDecision,
    target: str | None,
    report: WindowReport | None,
) -> None:
    """Put ``decision`` on ``item`` (its metadata, a tag, and a note in ``report``)."""
    meta = item.metadata
    meta.reconcile = Reconciliation(event=decision.event, target_id=target, reason=decision.reason)
    if decision.event == "UPDATE" and decision.memory:
        item.memory = decision.memory
    tag = f"reconcile:{decision.event}"
    if tag not in meta.tags:
        meta.tags.append(tag)
    if report is not None:
        of = f" of {target}" if target else ""
        report.notes.append(f"item {item.id}: reconcile {decision.event}{of}: {decision.reason}")


class _Calls(PerWindowStep):
    """The reconcile calls of one read, chained per window (counted as the ``reconcile``
    pass)."""

    name = "reconcile"
    requires = ("fine_windows",)
    produces = ("items",)
    modes = frozenset({"fine"})

    def __init__(self, groups: dict[int, list[_Group]]) -> None:
        self.groups = groups

    def window(self, state: ReadState, runtime: ReaderRuntime, index: int) -> WindowWork:
        groups = self.groups.get(index)
        if not groups:
            return
        report = state.fine_windows[index].report
        failed = False
        for group in groups:
            texts = [item.memory for item in group.items]
            decisions = yield from reconcile_plan(texts, group.neighbours, group.language)
            failed |= all(d.reason.startswith("reconcile failed") for d in decisions)
            for item, decision in zip(group.items, decisions, strict=True):
                chosen = decision.target
                target = group.neighbours[chosen].memory_id if chosen is not None else None
                _mark(item, decision, target, report)
        report.passes[self.name] = "failed" if failed else "ok"
        decided = sum(len(group.items) for group in groups)
        count_pass(state, self.name, windows=1, items=decided, failed=int(failed))

    def failed(self, state: ReadState, index: int, error: Exception) -> None:
        report = state.fine_windows[index].report
        reason = f"reconcile failed ({short_error(error, 120)}); kept as a new memory"
        for group in self.groups.get(index, ()):
            for item in group.items:
                if item.metadata.reconcile is None:
                    _mark(item, ReconcileDecision("ADD", reason), None, report)
        report.passes[self.name] = "failed"
        report.pass_errors.append(f"reconcile: {short_error(error)}")
        count_pass(state, self.name, failed=1)
