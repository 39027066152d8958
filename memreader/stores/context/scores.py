"""How ``context()`` scores the passages of search hits (see :mod:`memreader.stores.context`):
each passage of each hit, as a :class:`Candidate` with a score in ``[0, 1]``.

``score = weight * (FLOOR + (1 - FLOOR) * match)``: ``weight`` is the square root of the hit's
``relevance`` (its rank fusion over the best hit's, without the decay that would make an old
chat lose to a new note by years alone), ``match`` how well the passage itself answers:

- the mean of two in ``[0, 1]``: the share of the query's terms the passage holds, each
  weighted by how rare it is among the candidates (``what`` and ``did`` count for little, a
  name for much), and the cosine of the query with the passage over the best passage's, for
  the passages of the best hits up to :data:`EMBEDDED_PASSAGES` (a chat message embedded as
  ``Name: content``, without its time) when the store has an embedder (not for a ``text``
  search);
- else the term share alone;

then, where the store scored the passage itself (``SearchHit.passages``), the mean of that and
the store's score.

Measured on a LoCoMo-like set (benchmarks/evidence_retrieval.py's ``synthetic-en``: 132
paraphrased questions over 16 dated sessions, the local embedder; share of questions whose
block holds an evidence message at 200/500/1,000/2,000 tokens), default windows: whole
windows in rank order 0.07/0.26/0.39/0.55; passages by term share alone 0.42/0.49/0.61/0.74;
with the cosine of message contents 0.39/0.60/0.83/0.91; of ``Name: content`` (the name in
the question finds its speaker's messages) 0.59/0.74/0.78/0.89, and with the square root of
the hit's relevance instead of itself 0.61/0.75/0.82/0.89 (128-token windows: 0.59/0.67/
0.75/0.85 -> 0.61/0.70/0.80/0.87; whole windows there 0.47/0.61/0.71/0.82). Embedding 80 or
160 passages instead of 320 cost 0.11-0.21 at 2,000 tokens; searching 20, 40 or 60 memories,
a floor of 0.1 or 0.5, neighbours at 0.8 of their passage's score or none changed little.

Before the store read messages with their neighbours, its own passage scores
(``SearchHit.passages``: 0.8 of a calibrated cosine of the whole chat line, time included, and
0.2 of a word share) did not help here: measured on the merged code (same set, seeds 0 and 2),
packing by them gave 0.56/0.68/0.75/0.81
and 0.53/0.66/0.73/0.80, by the mean above 0.56/0.74/0.81/0.90 and 0.53/0.71/0.75/0.88; their
mean with the store's 0.58/0.71/0.80/0.89. Embedding the store's passages as ``Name: content``
instead cost search recall@3 0.04 (0.64 -> 0.60) for 0.70/0.78/0.86 here, so each keeps its own.

Once the store read each chat message with its neighbours (its passage score the better of the
message's own cosine and the mean over the three-message texts that hold it; RESULTS.md,
"2026-12-02: recall, a message read with its neighbours"), the mean of the match above and the
store's score won on every seed (0/1/2): 0.652/0.795/0.871/0.939, 0.674/0.795/0.886/0.932,
0.621/0.765/0.833/0.902 against the match above alone 0.606/0.780/0.841/0.939,
0.606/0.750/0.886/0.924, 0.568/0.742/0.788/0.886 (their maximum: 0.606/0.773/0.864/0.932,
seed 1), so it is kept.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

from memreader.retrieval.passages import Passage, embedding_text, passages_of
from memreader.retrieval.terms import text_terms
from memreader.stores.embedder_rules import QueryEmbedder
from memreader.stores.embedding import embed

if TYPE_CHECKING:
    import numpy as np
    from numpy.typing import NDArray

    from memreader.retrieval.passages import PassageHit
    from memreader.stores.records import StoredMemory
    from memreader.stores.scoring import ScoreParts

__all__ = ["EMBEDDED_PASSAGES", "FLOOR", "Candidate", "HitLike", "QueryEmbedder", "candidates"]

#: A passage that matches nothing keeps this share of its hit's weight.
FLOOR = 0.25
#: How many passages of the best hits are embedded (about 8 default chat windows; a cached
#: embedder remembers them, so asking again embeds only the query).
EMBEDDED_PASSAGES = 320

_ASCII_WORD = re.compile(r"\w+")


class HitLike(Protocol):
    """What scoring reads of a hit (:class:`memreader.stores.base.SearchHit` fits; this module
    sits below ``base``, which calls it)."""

    @property
    def memory(self) -> StoredMemory: ...

    @property
    def score(self) -> ScoreParts: ...

    @property
    def passages(self) -> tuple[PassageHit, ...]: ...


@dataclass
class Candidate:
    """Passage ``index`` of hit ``hit``: its span, score and match (see the module)."""

    hit: int
    index: int
    passage: Passage
    score: float
    match: float
    #: Its unit vector (``Name: content`` for a chat message), for the passages embedded
    #: (:mod:`memreader.stores.context.repeats` compares them); else ``None``.
    vector: NDArray[np.float64] | None = None


def candidates(
    query: str, hits: Sequence[HitLike], embedder: QueryEmbedder | None
) -> list[list[Candidate]]:
    """Every passage of every hit, scored (see the module), one list per hit.

    Raises:
        StoreError: the embedder failed.
    """
    cuts = [passages_of(hit.memory.item) for hit in hits]
    texts = [
        [hit.memory.item.memory[p.start : p.end] for p in row]
        for hit, row in zip(hits, cuts, strict=True)
    ]
    lexical = _term_shares(query, texts)
    similar, vectors = ({}, {}) if embedder is None else _similarities(query, hits, cuts, embedder)
    found: list[list[Candidate]] = []
    for h, weight in enumerate(_weights(hits)):
        stored = {(p.start, p.end): p.score for p in hits[h].passages}
        row = []
        for i, passage in enumerate(cuts[h]):
            found_match = similar.get((h, i))
            match = lexical[h][i] if found_match is None else (lexical[h][i] + found_match) / 2
            scored = stored.get((passage.start, passage.end))
            if scored is not None:  # the store's own score of the passage (see the module)
                match = (match + scored) / 2
            match = min(1.0, max(0.0, match))
            score = weight * (FLOOR + (1 - FLOOR) * match)
            row.append(Candidate(h, i, passage, score, match, vectors.get((h, i))))
        found.append(row)
    return found


def _weights(hits: Sequence[HitLike]) -> list[float]:
    """Each hit's weight: the square root of its ``relevance`` (else, a store that gave none in
    ``(0, 1]``, of a weight by rank): the passage's own match decides more than its window's
    (measured: see the module)."""
    weights = [hit.score.relevance for hit in hits]
    if not all(0 < w <= 1 for w in weights):
        weights = [1.0 / (1 + rank / 10) for rank in range(len(hits))]
    return [math.sqrt(w) for w in weights]


def _term_shares(query: str, texts: list[list[str]]) -> list[list[float]]:
    """Per hit, per passage: the IDF-weighted share of the query's terms it holds."""
    wanted = text_terms(query)
    if not wanted:
        return [[0.0] * len(row) for row in texts]
    held = [[_terms(text) for text in row] for row in texts]
    total = sum(len(row) for row in held)
    idf = {}
    for term in wanted:
        found = sum(term in terms for row in held for terms in row)
        idf[term] = math.log(1.0 + (total + 1) / (found + 0.5))
    whole = sum(idf.values())
    return [[sum(idf[t] for t in wanted if t in terms) / whole for terms in row] for row in held]


def _terms(text: str) -> set[str]:
    """:func:`~memreader.retrieval.terms.text_terms` of ``text`` as a set; ASCII text (most
    passages, in English) takes a shortcut with the same result, ~10x faster: its words are
    its terms (no NFKC change, no CJK run, case-folding is lower-casing)."""
    if text.isascii():
        return set(_ASCII_WORD.findall(text.lower()))
    return set(text_terms(text))


def _similarities(
    query: str, hits: Sequence[HitLike], cuts: list[list[Passage]], embedder: QueryEmbedder
) -> tuple[dict[tuple[int, int], float], dict[tuple[int, int], NDArray[np.float64]]]:
    """The cosine of the query with each passage of the best hits (whole hits, up to
    :data:`EMBEDDED_PASSAGES` passages), over the best passage's; and each such passage's unit
    vector."""
    import numpy as np

    keys: list[tuple[int, int]] = []
    texts: list[str] = []
    for h, hit in enumerate(hits):
        if texts and len(texts) + len(cuts[h]) > EMBEDDED_PASSAGES:
            break
        for i, passage in enumerate(cuts[h]):
            keys.append((h, i))
            texts.append(embedding_text(hit.memory.item, passage))
    if not texts:
        return {}, {}
    vectors = np.asarray(embed(embedder, [query, *texts]), dtype=np.float64)
    norms = np.linalg.norm(vectors, axis=1)
    norms[norms == 0] = 1.0
    cosines = np.clip((vectors[1:] @ vectors[0]) / (norms[1:] * norms[0]), 0.0, 1.0)
    best = float(cosines.max())
    units = dict(zip(keys, vectors[1:] / norms[1:, None], strict=True))
    if best <= 0:
        return {}, units
    return {key: float(c) / best for key, c in zip(keys, cosines, strict=True)}, units
