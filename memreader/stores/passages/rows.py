"""The passages a store keeps beside each memory it adds (both stores): the exact spans
:func:`~memreader.retrieval.passages.passages_of` cuts the memory's text into, with one
or two vectors per passage, so that search can score a memory's messages one by one
(:mod:`memreader.stores.passages.scoring`) without embedding anything at search time. A chat
message's row holds two unit vectors side by side: its own text's as
:func:`~memreader.retrieval.passages.embedding_text` makes it (``Name: content``, without the
time, which a small model reads as noise), and that of the message read with its neighbours
(:func:`~memreader.retrieval.passages.vector_text`: the messages before and after it, one
``Name: content`` line each); search blends the two. Any other passage (a document's text, a
fact) has one vector, its own text's. Rows written before hold what was embedded then (the
line with its time; the mean over the neighbour texts) and are scored the same way.

The memory itself stays the stored unit (its provenance, dedup and history do not change);
its passages are one row beside it (spans and vectors as two blobs, read in one fetch per
search), removed with it. Each distinct text of one write is embedded once (overlapping
windows share most of their messages).

>>> item = TextualMemoryItem.model_validate({"id": "m",
...     "memory": "user: Hi.\\nassistant: Hello!",
...     "metadata": {"user_id": "u", "session_id": "s", "sources": [
...         {"scene_index": 0, "message_index": 0, "content": "Hi.", "span": [0, 3]},
...         {"scene_index": 0, "message_index": 1, "content": "Hello!", "span": [0, 6]}]}})
>>> row = plan_passages([item], None)[("u", "m")]
>>> spans_from_blob(row.spans).tolist(), row.vectors
([[0, 9, 0], [10, 27, 1]], None)
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from memreader.items import TextualMemoryItem
from memreader.retrieval.passages import (
    Passage,
    embedding_text,
    passages_in,
    passages_of,
    vector_text,
)
from memreader.stores.embedding import QueryEmbedder, embed

__all__ = [
    "EMBED_BATCH",
    "PassagePlan",
    "StoredPassages",
    "passages_of_json",
    "plan_passages",
    "spans_from_blob",
    "spans_to_blob",
    "vectors_from_blob",
]

#: Passage texts per call of the embedder (its own batching applies inside).
EMBED_BATCH = 256


@dataclass(frozen=True)
class StoredPassages:
    """One memory's passages as stored: their spans (:func:`spans_to_blob`), their unit
    vectors as one little-endian float32 matrix, a row per passage (``None``: not embedded),
    and the model that made them (``""`` when unnamed)."""

    spans: bytes
    vectors: bytes | None = None
    model: str = ""


#: The passages to add per memory, by (owner, memory id).
PassagePlan = dict[tuple[str, str], StoredPassages]


def spans_to_blob(passages: Sequence[Passage]) -> bytes:
    """``passages`` as int32 triples (start, end, source index or -1)."""
    flat = [(p.start, p.end, -1 if p.source_index is None else p.source_index) for p in passages]
    return np.asarray(flat, dtype="<i4").reshape(-1, 3).tobytes()


def spans_from_blob(blob: bytes) -> np.ndarray:
    """The passages back from :func:`spans_to_blob`, one row each: start, end, source index
    (-1: none), as :func:`~memreader.stores.passages.scoring.span_rows` makes them."""
    return np.frombuffer(blob, dtype="<i4").reshape(-1, 3).astype(np.int64)


def vectors_from_blob(blob: bytes | None, count: int) -> np.ndarray | None:
    """The ``count`` passage vectors of a memory as a float32 matrix (``None`` when there are
    none, or the blob does not hold ``count`` rows)."""
    if not blob or count == 0 or len(blob) % (4 * count):
        return None
    return np.frombuffer(blob, dtype="<f4").reshape(count, -1)


def passages_of_json(text: str, item_json: str) -> list[Passage]:
    """The passages of a memory stored before passages were (its text and item JSON), cut
    as :func:`~memreader.retrieval.passages.passages_of` cuts them, without validating the
    whole item (a search may read a hundred of them)."""
    data: Any = json.loads(item_json)
    sources = data.get("metadata", {}).get("sources") or []
    return passages_in(text, [s.get("content") if isinstance(s, dict) else None for s in sources])


def _passage_vectors(
    own: list[str], wider: list[str], found: dict[str, list[float]]
) -> np.ndarray | None:
    """Each passage's vectors, one row each: its ``own`` text's unit vector and, where the
    passages are chat messages read with their neighbours (``wider`` differs from ``own``),
    that text's unit vector beside it. ``None`` when there is no passage or one has no
    direction."""
    if not own:
        return None
    alone = _unit_rows([found[t] for t in own])
    if own == wider or alone is None:
        return alone
    around = _unit_rows([found[t] for t in wider])
    return None if around is None else np.hstack([alone, around]).astype("<f4")


def _unit_rows(vectors: list[list[float]]) -> np.ndarray | None:
    matrix = np.asarray(vectors, dtype=np.float64)
    norms = np.linalg.norm(matrix, axis=1)
    if not np.isfinite(norms).all() or (norms == 0).any():
        return None  # a passage with no direction: the memory is scored by its own vector
    unit: np.ndarray = (matrix / norms[:, None]).astype("<f4")
    return unit


def plan_passages(
    items: Sequence[TextualMemoryItem], embedder: QueryEmbedder | None
) -> PassagePlan:
    """The passages of ``items`` (the ones a write may add), with vectors when there is an
    ``embedder`` (each distinct passage text embedded once).

    Raises:
        StoreError: the embedder failed.
    """
    cut = {(i.metadata.user_id, i.id): (i, passages_of(i)) for i in items}
    if embedder is None:
        return {key: StoredPassages(spans_to_blob(ps)) for key, (_, ps) in cut.items()}
    name = getattr(embedder, "name", None)
    model = name if isinstance(name, str) else ""
    # A chat message is read twice: as ``Name: content``, and with its neighbours; each
    # distinct text is embedded once (overlapping windows share most of them).
    own = {key: [embedding_text(item, p) for p in ps] for key, (item, ps) in cut.items()}
    wider = {
        key: [vector_text(item, ps, i) for i in range(len(ps))] for key, (item, ps) in cut.items()
    }
    # A memory that is one passage (a fact, a short note) has the vector it came with, when
    # this embedder made it: it is not embedded twice.
    found: dict[str, list[float]] = {
        item.memory: item.metadata.embedding
        for key, (item, ps) in cut.items()
        if item.metadata.embedding is not None
        and item.metadata.embedding_model == model
        and own[key] == [item.memory]
    }
    every = (t for key in cut for row in (own[key], wider[key]) for t in row)
    texts = [t for t in dict.fromkeys(every) if t not in found]
    for start in range(0, len(texts), EMBED_BATCH):
        batch = texts[start : start + EMBED_BATCH]
        found.update(zip(batch, embed(embedder, batch), strict=True))
    plan: PassagePlan = {}
    for key, (_, passages) in cut.items():
        matrix = _passage_vectors(own[key], wider[key], found)
        blob = matrix.tobytes() if matrix is not None else None
        plan[key] = StoredPassages(spans_to_blob(passages), blob, model)
    return plan
