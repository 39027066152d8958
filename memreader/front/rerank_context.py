"""``Memory.context(..., rerank=True)``: the block packed in an LLM's order of the memories
(:mod:`memreader.front.rerank` ranks them).

``context()`` packs passages best first across all the memories it searched
(:mod:`memreader.stores.context`). With a rerank, the memories the LLM put higher are packed
first: each passage's score is lifted into its memory's band, ``(score + n - r) / (n + 1)``
for the memory at place ``r`` (0 = first) of ``n``, so every passage of a higher-ranked memory
outranks every passage of a lower one, and within one memory the search's passage scores still
decide. When the rerank fell back, the search's scores pack the block as without a rerank and
``Context.rerank_fallback`` says why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Sequence
from typing import Any

from memreader.front.rerank import rerank_hits, rerank_router, reranked_search
from memreader.retrieval.passages import PassageHit, passages_of
from memreader.stores.context import Context, search_context
from memreader.stores.hits import SearchHit

__all__ = ["Reranking", "lifted", "reranked_context", "searched_by"]


def searched_by(memory: Any, rerank: bool, call: str) -> Any:
    """What ``memory``'s ``call`` (a search or a context) reads: its working memory or its
    store, reranked when ``rerank``.

    Raises:
        LLMRequiredError: ``rerank`` and no LLM is configured.
    """
    searched = memory.working or memory.store
    return Reranking(searched, rerank_router(memory.reader, call), memory) if rerank else searched


class Reranking:
    """What ``Memory.search``/``context`` read with ``rerank=True``: ``searched`` (the store,
    or working memory over it) with its hits reranked by ``router``'s LLM; ``memory``: the
    ``Memory`` (its ``store`` records the use of what a context shows, its ``working`` memory
    holds what is not stored yet)."""

    def __init__(self, searched: Any, router: Any, memory: Any) -> None:
        self.searched, self.router, self.memory = searched, router, memory

    def search(self, query: str, *, user_id: str, k: int = 10, **options: Any) -> list[SearchHit]:
        """:func:`~memreader.front.rerank.reranked_search` of ``searched``."""
        return reranked_search(self.searched, self.router, query, user_id=user_id, k=k, **options)

    def context(self, query: str, *, user_id: str, **options: Any) -> Context:
        """:func:`reranked_context` of ``searched``."""
        working = self.memory.working
        held = {item.id for item in working.held(user_id)} if working is not None else set()
        store = self.memory.store
        return reranked_context(
            self.searched, store, self.router, query, user_id=user_id, held=held, **options
        )


def reranked_context(
    searched: Any,
    store: Any,
    router: Any,
    query: str,
    *,
    user_id: str,
    held: Collection[str] = (),
    **options: Any,
) -> Context:
    """What ``searched.context`` answers (``searched``: a store, or working memory over
    ``store``), the hits reranked before packing; the use of the memories shown is recorded in
    ``store`` (not of those ``held`` in working memory). ``options``: ``context()``'s."""
    ranked: list[SearchHit] = []

    def search(q: str, *, user_id: str, k: int, **filters: Any) -> list[SearchHit]:
        ranked.extend(
            rerank_hits(router, q, searched.search(q, user_id=user_id, k=k, **filters), k)
        )
        return lifted(ranked)

    block = search_context(search, query, user_id=user_id, **options)
    shown = [part.memory_id for part in block.parts if part.memory_id not in held]
    store.record_use(list(dict.fromkeys(shown)), user_id=user_id)
    fallback = next((h.rerank.fallback for h in ranked if h.rerank and h.rerank.fallback), None)
    return dataclasses.replace(
        block, reranked=bool(ranked) and fallback is None, rerank_fallback=fallback
    )


def lifted(hits: Sequence[SearchHit]) -> list[SearchHit]:
    """``hits`` (in the LLM's order) with their passage scores in bands (see the module);
    unchanged when the rerank fell back."""
    if not hits or any(hit.rerank is None or hit.rerank.fallback for hit in hits):
        return list(hits)
    n = len(hits)
    out = []
    for r, hit in enumerate(hits):
        passages = hit.passages or tuple(
            PassageHit(p.start, p.end, 0.0, p.source_index) for p in passages_of(hit.memory.item)
        )
        banded = tuple(
            dataclasses.replace(p, score=(min(1.0, max(0.0, p.score)) + n - r) / (n + 1))
            for p in passages
        )
        out.append(dataclasses.replace(hit, passages=banded))
    return out
