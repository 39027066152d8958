"""Which of ``context()``'s candidate passages repeat one said later, so that the newest of
them stands for all (see :mod:`memreader.stores.context.packing`).

Two passages repeat each other when at least :data:`REPEAT_WORDS` of their terms are shared
(of the terms either holds; a chat message read as ``Name: content``, so two speakers saying
"Thanks!" do not repeat each other): the same line said again in another session ("I need a
holiday so badly."), or the same fact restated with a word changed. Of such a group only the
newest is a candidate on its own (at its own score): a block holds one copy of what is said
again and again instead of filling its budget with it, and where a statement was said again,
the later saying is the one shown. An older copy may still come in as the neighbour of a
passage taken, as the text around that passage. Only the :data:`REPEAT_POOL` best candidates
are compared (the rest would not fit a block anyway).

Measured on benchmarks/evidence_retrieval.py's ``synthetic-en`` (RESULTS.md, "2026-12-02: the
newer of two statements"; then with vectors' cosine >= 0.95 as a second condition, which the
shared words alone now decide: nothing is embedded at packing time), share of questions whose
block holds an evidence message at 200/500/1,000/2,000 tokens, mean over seeds 0/1/2: without
0.649/0.785/0.863/0.924; the newest copy alone at its own score 0.672/0.851/0.914/0.962 (the
"latest value of a changed fact" questions at 2,000 tokens 0.793 -> 0.914).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memreader.retrieval.passages import Passage, embedding_text
from memreader.retrieval.terms import text_terms
from memreader.stores.context.parts import part_when
from memreader.stores.context.scores import Candidate, HitLike

__all__ = ["REPEAT_POOL", "REPEAT_WORDS", "older_repeats"]

#: Two passages sharing at least this share of their terms (of the terms either holds) say the
#: same: "work was hectic this week" and "work was quiet this week" share 4 of 6 (0.67), and
#: are not repeats.
REPEAT_WORDS = 0.8
#: How many of the best candidates are compared.
REPEAT_POOL = 320


def older_repeats(
    units: Sequence[Sequence[Candidate]], hits: Sequence[HitLike]
) -> set[tuple[int, int]]:
    """``(hit, index)`` of each of the best candidates with a newer one that repeats it (of
    two at the same time, the better-ranked hit's stands)."""
    import numpy as np

    pool = sorted(
        (unit for row in units for unit in row),
        key=lambda unit: (-unit.score, unit.hit, unit.index),
    )[:REPEAT_POOL]
    if len(pool) < 2:
        return set()
    terms = [
        set(text_terms(embedding_text(hits[unit.hit].memory.item, unit.passage))) for unit in pool
    ]
    vocabulary: dict[str, int] = {}
    for held in terms:
        for term in held:
            vocabulary.setdefault(term, len(vocabulary))
    if not vocabulary:
        return set()
    incidence = np.zeros((len(pool), len(vocabulary)), dtype=np.float32)
    for row, held in enumerate(terms):
        incidence[row, [vocabulary[t] for t in held]] = 1.0
    shared = incidence @ incidence.T
    sizes = incidence.sum(axis=1)
    either = sizes[:, None] + sizes[None, :] - shared
    close = (shared >= REPEAT_WORDS * either) & (either > 0)
    np.fill_diagonal(close, False)
    # Newest last; of two at the same time, the better-ranked (earlier in the pool) last.
    order = sorted(range(len(pool)), key=lambda a: (_when(hits[pool[a].hit], pool[a].passage), -a))
    rank = np.empty(len(pool), dtype=np.int64)
    rank[order] = np.arange(len(pool))
    newer = rank[None, :] > rank[:, None]
    older = np.flatnonzero((close & newer).any(axis=1))
    return {(pool[a].hit, pool[a].index) for a in older}


def _when(hit: HitLike, passage: Passage) -> tuple[datetime, int]:
    """When ``passage`` was said (its message's time, else its memory's), then where in the
    memory's text it starts."""
    sources = [] if passage.source_index is None else [passage.source_index]
    return part_when(hit.memory, sources), passage.start
