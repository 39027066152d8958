"""``Memory.recall``: tiered recall (memU's ``category_recall`` and ``sufficiency_check``):
categories first, then the items of the chosen categories, then the resources those items
came from, with a sufficiency check after each tier that stops early.

The tiers, in this order (``tiers=`` names a subset; ``resource`` needs ``item``):

- ``category``: the owner's categories that hold memories (:mod:`memreader.categories`),
  the :data:`MAX_CATEGORIES` nearest the query (its vector against each category's name,
  description and summary, embedded by the store's embedder; all of them when the store has no
  embedder). Recalled: their summaries.
- ``item``: a search for the query within the chosen categories (one search per category,
  merged by score; the whole store when no category was chosen or the tier was left out),
  ``k`` hits, reranked by the LLM when ``rerank=True`` (:mod:`memreader.front.rerank`).
- ``resource``: the sources the items point to (the messages and document spans they were
  read from, verbatim; at most :data:`MAX_SOURCES_PER_ITEM` per item, a message held by two
  items once).

After each tier but the last, the ``rerank_llm`` slot is asked whether what was recalled so far
answers the query (:mod:`memreader.front.sufficiency`); ``true`` stops there. Without an LLM
(or with ``sufficiency=False``) every tier runs and each tier's note says it was not checked;
a failed check is "not known" and the next tier runs. Every tier is the owner's own: a
category, a search and a source are all read under the one checked ``user_id``.

>>> from memreader import Memory
>>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
>>> _ = m.add("I adopted a cat named Miso.", user_id="ana")
>>> found = m.recall("what is my cat called?", user_id="ana")
>>> [(t.tier, t.sufficient) for t in found.tiers], found.stopped_early
([('category', None), ('item', None), ('resource', None)], False)
>>> found.resources[0].text
'I adopted a cat named Miso.'
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from memreader.errors import InputError
from memreader.front.call_deadline import answered_in_time
from memreader.front.rerank import candidate_count, has_llm, rerank_hits, rerank_router
from memreader.front.sufficiency import Verdict, judge_sufficiency
from memreader.items import SourceMessage
from memreader.stores.category_types import StoredCategory
from memreader.stores.checks import check_k
from memreader.stores.embedding import embed
from memreader.stores.filters import SearchFilters
from memreader.stores.hits import SearchHit

__all__ = [
    "MAX_CATEGORIES",
    "MAX_SOURCES_PER_ITEM",
    "TIERS",
    "RecallResult",
    "RecalledSource",
    "TierName",
    "TierReport",
    "check_tiers",
    "recall",
    "recall_json",
]

TierName = Literal["category", "item", "resource"]
#: Every tier, in the order they run.
TIERS: tuple[TierName, ...] = ("category", "item", "resource")
#: How many categories the category tier chooses.
MAX_CATEGORIES = 3
#: How many sources of one item the resource tier recalls.
MAX_SOURCES_PER_ITEM = 5


@dataclass(frozen=True)
class RecalledSource:
    """One resource: source ``source_index`` of memory ``memory_id`` (the message or document
    span it was read from, verbatim in ``text``)."""

    memory_id: str
    source_index: int
    source: SourceMessage

    @property
    def text(self) -> str:
        """The source's text (``source.content``)."""
        return self.source.content


@dataclass(frozen=True)
class TierReport:
    """What one tier did: how many things it ``recalled``, the check's verdict
    (``sufficient``: ``None`` when not checked or the check failed) and a ``note`` saying how
    the tier chose and why it was or was not checked."""

    tier: TierName
    recalled: int
    sufficient: bool | None
    note: str


@dataclass(frozen=True)
class RecallResult:
    """What :class:`Recall` found: the chosen ``categories``, the ``items`` (search hits, best
    first), the ``resources`` they came from, and the ``tiers`` that ran, in order (the last
    one is where it stopped); ``stopped_early``: a tier before the last was judged sufficient,
    so the tiers after it did not run."""

    query: str
    categories: tuple[StoredCategory, ...] = ()
    items: tuple[SearchHit, ...] = ()
    resources: tuple[RecalledSource, ...] = ()
    tiers: tuple[TierReport, ...] = ()
    stopped_early: bool = False


def check_tiers(tiers: Any) -> tuple[TierName, ...]:
    """``tiers`` as a tuple in :data:`TIERS` order.

    Raises:
        InputError: not a non-empty sequence of known tier names without repeats, or
            ``resource`` without ``item``.
    """
    if isinstance(tiers, str) or not isinstance(tiers, Sequence) or not tiers:
        raise InputError(f"recall(): tiers must be a non-empty list of {TIERS}, got {tiers!r:.80}")
    unknown = [t for t in tiers if t not in TIERS]
    if unknown or len(set(tiers)) != len(tiers):
        raise InputError(f"recall(): tiers must be distinct names of {TIERS}, got {tiers!r:.80}")
    if "resource" in tiers and "item" not in tiers:
        raise InputError("recall(): the 'resource' tier reads the items' sources: add 'item'")
    return tuple(t for t in TIERS if t in tiers)


def recall(
    memory: Any,
    query: str,
    *,
    user_id: str | None = None,
    k: int = 10,
    tiers: Sequence[TierName] = TIERS,
    sufficiency: bool = True,
    rerank: bool = False,
    filters: SearchFilters | Mapping[str, Any] | None = None,
) -> RecallResult:
    """``Memory.recall`` (a method of :class:`~memreader.front.memory.Memory`, written here):
    recall ``user_id``'s memory of ``query`` tier by tier (see the module): ``k`` items
    at most; ``rerank``: the items reranked by the LLM; ``filters``: the item search's
    (``Memory.search``'s; a ``category`` of its own replaces the category tier's choice).
    A scope (``agent_id``, ``task_id``) skips the category tier: a category's summary
    speaks of every scope of its owner.

    Raises:
        InputError: no ``user_id``, an empty query, a bad ``k``, ``tiers`` or filter.
        LLMRequiredError: ``rerank=True`` with no LLM configured.
    """
    owner = memory._owner(user_id, "recall()")
    if not isinstance(query, str) or not query.strip():
        raise InputError(f"recall(): query must be a non-empty string, got {query!r:.80}")
    k, order = check_k(k), check_tiers(tiers)
    checked = SearchFilters.of(filters, call="recall()")
    llm = has_llm(memory.reader)
    router = rerank_router(memory.reader, "recall()") if rerank or llm else None
    run = _Run(memory, router, query, owner, k, rerank, checked)
    checking = bool(sufficiency) and llm
    reports: list[TierReport] = []
    for i, tier in enumerate(order):
        lines, note = run.tier(tier)
        if i == len(order) - 1:
            verdict = Verdict(None, "the last tier: not checked")
        elif not checking:
            why = "sufficiency=False" if not sufficiency else "no LLM configured"
            verdict = Verdict(None, f"not checked ({why})")
        else:
            verdict = judge_sufficiency(router, query, tier, lines)
        reports.append(TierReport(tier, len(lines), verdict.sufficient, f"{note}; {verdict.note}"))
        if verdict.sufficient:
            break
    result = RecallResult(
        query,
        tuple(run.categories),
        tuple(run.items),
        tuple(run.resources),
        tuple(reports),
        stopped_early=len(reports) < len(order),
    )
    return answered_in_time(result, "recall()")


class _Run:
    """The state of one recall: what each tier chose, for the tiers after it."""

    def __init__(
        self, memory: Any, router: Any, query: str, owner: str, k: int, rerank: bool, checked: Any
    ) -> None:
        self.memory, self.router, self.query, self.owner = memory, router, query, owner
        self.k, self.rerank, self.filters = k, rerank, checked
        self.categories: list[StoredCategory] = []
        self.items: list[SearchHit] = []
        self.resources: list[RecalledSource] = []

    def tier(self, tier: TierName) -> tuple[list[str], str]:
        """Run ``tier``: the lines it recalled (what the check reads) and how it chose."""
        if tier == "category":
            return self._categories()
        if tier == "item":
            return self._items()
        return self._resources()

    def _categories(self) -> tuple[list[str], str]:
        if self.filters.agent_id is not None or self.filters.task_id is not None:
            return [], "skipped: a scope was given, and categories summarise every scope"
        if self.filters.category is not None:
            return [], f"skipped: the filter names the category {self.filters.category!r}"
        held = [c for c in self.memory.store.categories(self.owner) if c.item_ids]
        if not held:
            return [], "no category holds a memory of this owner"
        embedder = getattr(self.memory.store, "embedder", None)
        if embedder is None or len(held) <= MAX_CATEGORIES:
            self.categories = held[:MAX_CATEGORIES] if embedder is not None else held
            how = "every category" if len(self.categories) == len(held) else "the first"
        else:
            texts = [f"{c.name}: {c.description} {c.summary}" for c in held]
            vectors = np.asarray(embed(embedder, [self.query, *texts]), dtype=np.float64)
            norms = np.linalg.norm(vectors, axis=1)
            norms[norms == 0] = 1.0
            cosines = (vectors[1:] @ vectors[0]) / (norms[1:] * norms[0])
            best = sorted(range(len(held)), key=lambda i: (-cosines[i], held[i].name))
            self.categories = [held[i] for i in best[:MAX_CATEGORIES]]
            how = f"the {MAX_CATEGORIES} nearest the query"
        lines = [f"{c.name}: {c.summary or c.description}" for c in self.categories]
        return lines, f"{how} of {len(held)} categories"

    def _items(self) -> tuple[list[str], str]:
        searched = self.memory.working or self.memory.store
        names = [c.name for c in self.categories]
        given = self.filters
        filters = [dataclasses.replace(given, category=name) for name in names] or [given]
        size = max(self.k, candidate_count(self.k)) if self.rerank else self.k
        pool: dict[str, SearchHit] = {}
        for checked in filters:
            for hit in searched.search(self.query, user_id=self.owner, k=size, filters=checked):
                pool.setdefault(hit.id, hit)
        hits = sorted(pool.values(), key=lambda hit: -hit.score.final)
        self.items = rerank_hits(self.router, self.query, hits, self.k) if self.rerank else hits
        self.items = self.items[: self.k]
        where = f"in {', '.join(names)}" if names else "in all memories"
        reranked = "; reranked" if self.rerank else ""
        return [hit.text for hit in self.items], f"{len(self.items)} searched {where}{reranked}"

    def _resources(self) -> tuple[list[str], str]:
        seen: set[tuple[object, ...]] = set()
        for hit in self.items:
            for index, source in enumerate(hit.memory.item.metadata.sources):
                if index >= MAX_SOURCES_PER_ITEM:
                    break
                where = (source.scene_index, source.message_index, source.part_index, source.span)
                key = (hit.session_id, source.doc_path, *where)
                if key in seen or not source.content:
                    continue
                seen.add(key)
                self.resources.append(RecalledSource(hit.id, index, source))
        lines = [
            f"{r.source.name or r.source.role or r.source.type}: {r.text}" for r in self.resources
        ]
        return lines, f"the sources of {len(self.items)} items"


def recall_json(result: RecallResult) -> dict[str, Any]:
    """``result`` as a JSON-ready dict: what ``POST /v1/recall``, ``memreader recall --json``
    and the MCP tool answer (hits as ``POST /v1/memories/search`` shows them)."""
    from memreader.stores.shapes import hit_json

    return {
        "query": result.query,
        "stopped_early": result.stopped_early,
        "tiers": [dataclasses.asdict(tier) for tier in result.tiers],
        "categories": [
            {"name": c.name, "description": c.description, "summary": c.summary}
            for c in result.categories
        ],
        "items": [hit_json(hit) for hit in result.items],
        "resources": [
            {
                "memory_id": r.memory_id,
                "source_index": r.source_index,
                "source": r.source.model_dump(mode="json", exclude_none=True),
            }
            for r in result.resources
        ],
    }
