"""Which of ``context()``'s candidate passages repeat one said later, so that the newest of
them stands for all (see :mod:`memreader.stores.context.packing`).

Two passages repeat each other when their vectors (``Name: content`` for a chat message, the
ones :mod:`memreader.stores.context.scores` embeds to match the query) have a cosine of at
least :data:`REPEAT_COSINE` and share :data:`REPEAT_WORDS` of their terms: the same line said
again in another session ("I need a holiday so badly."), or the same fact restated with a word
changed. Of such a group only the newest is a
candidate on its own (at its own score): a block holds one copy of what is said again and again
instead of filling its budget with it, and where a statement was said again, the later saying
is the one shown. An older copy may still come in as the neighbour of a passage taken, as the
text around that passage.

Measured on benchmarks/evidence_retrieval.py's ``synthetic-en`` (RESULTS.md, "2026-12-02: the
newer of two statements"), share of questions whose block holds an evidence message at
200/500/1,000/2,000 tokens, mean over seeds 0/1/2: without 0.649/0.785/0.863/0.924; the newest
copy alone at its own score, cosine >= 0.95, 0.672/0.851/0.914/0.962 (the "latest value of a
changed fact" questions at 2,000 tokens 0.793 -> 0.914); the best-scored copy kept instead of
the newest 0.664/0.813/0.902/0.952; the newest at the group's best score 0.642/0.806/0.897/0.952;
cosine >= 0.90 / 0.85 a little more (0.677 / 0.692 at 200 tokens) but merging different
sentences ("work was hectic / quiet this week"), so 0.95 (near paraphrases) is kept. Lifting
the later of two similar passages instead made every budget worse: a fact's change and its
first statement are no closer in these vectors than the speaker's chatter.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from memreader.retrieval.passages import Passage, embedding_text
from memreader.retrieval.terms import text_terms
from memreader.stores.context.block import part_when
from memreader.stores.context.scores import Candidate, HitLike

__all__ = ["REPEAT_COSINE", "REPEAT_WORDS", "older_repeats"]

#: Two passages whose vectors have at least this cosine say the same (measured: see the module)
REPEAT_COSINE = 0.95
#: ... when at least this share of their terms is shared too (of the terms either holds): an
#: embedder that cannot read a language gives its texts near-identical vectors (measured: 0.5
#: still took one memorybank-cn question's evidence for a repeat of a look-alike request; 0.8
#: none, synthetic-en unchanged).
REPEAT_WORDS = 0.8


def older_repeats(
    units: Sequence[Sequence[Candidate]], hits: Sequence[HitLike]
) -> set[tuple[int, int]]:
    """``(hit, index)`` of each embedded candidate with a newer one that repeats it (cosine at
    least :data:`REPEAT_COSINE`; of two at the same time, the better-ranked hit's stands)."""
    import numpy as np

    embedded = [unit for row in units for unit in row if unit.vector is not None]
    if len(embedded) < 2:
        return set()
    vectors = np.stack([unit.vector for unit in embedded if unit.vector is not None])
    close = (vectors @ vectors.T) >= REPEAT_COSINE
    terms: dict[int, set[str]] = {}
    for a, b in zip(*np.nonzero(np.triu(close, 1)), strict=True):
        held = [_terms(terms, hits, embedded, int(c)) for c in (a, b)]
        if len(held[0] & held[1]) < REPEAT_WORDS * len(held[0] | held[1]):
            close[a, b] = close[b, a] = False  # close vectors, different words: not a repeat
    # Newest last; of two at the same time, the first (the better hit, earlier text) last.
    order = sorted(
        range(len(embedded)),
        key=lambda a: (_when(hits[embedded[a].hit], embedded[a].passage), -a),
    )
    rank = np.empty(len(embedded), dtype=np.int64)
    rank[order] = np.arange(len(embedded))
    newer = rank[None, :] > rank[:, None]
    older = np.flatnonzero((close & newer).any(axis=1))
    return {(embedded[a].hit, embedded[a].index) for a in older}


def _terms(
    known: dict[int, set[str]], hits: Sequence[HitLike], embedded: Sequence[Candidate], a: int
) -> set[str]:
    """The terms of ``embedded[a]`` as it was embedded, computed once."""
    if a not in known:
        unit = embedded[a]
        known[a] = set(text_terms(embedding_text(hits[unit.hit].memory.item, unit.passage)))
    return known[a]


def _when(hit: HitLike, passage: Passage) -> tuple[datetime, int]:
    """When ``passage`` was said (its message's time, else its memory's), then where in the
    memory's text it starts."""
    sources = [] if passage.source_index is None else [passage.source_index]
    return part_when(hit.memory, sources), passage.start
