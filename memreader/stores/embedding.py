"""How a store embeds what it is given without a vector, shared by both stores: the new items
written without one (:func:`embed_missing`), through the store's embedder (:func:`embed`), and
which vectors are usable at all (:func:`usable_vector`).

>>> usable_vector([0.6, 0.8]), usable_vector([0.0, 0.0]), usable_vector([float("nan"), 1.0])
(True, False, False)
"""

from __future__ import annotations

import logging
import math
from collections.abc import Callable, Sequence
from typing import Protocol, runtime_checkable

from memreader.errors import MemReaderError, StoreError
from memreader.items import TextualMemoryItem

__all__ = ["QueryEmbedder", "embed", "embed_missing", "usable_vector"]

logger = logging.getLogger(__name__)


@runtime_checkable
class QueryEmbedder(Protocol):
    """What a store needs of an embedder (any :class:`memreader.embedders.Embedder` fits): one
    vector per text. Its ``name``, when it has one, is recorded as the ``embedding_model`` of
    the items the store embeds itself, and compared with the stored models'."""

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in input order."""
        ...


def usable_vector(vector: Sequence[float]) -> bool:
    """Whether ``vector`` has a direction: not empty, every value finite, not all zeros (a
    vector without one matches nothing, and PostgreSQL refuses NaN and infinities)."""
    return bool(vector) and all(math.isfinite(x) for x in vector) and any(vector)


def embed(embedder: QueryEmbedder, texts: list[str]) -> list[list[float]]:
    """One vector per text from ``embedder``.

    Raises:
        StoreError: the embedder failed (not with a :class:`MemReaderError`, which passes
            through) or gave another number of vectors.
    """
    try:
        vectors = embedder.embed(texts)
    except MemReaderError:
        raise
    except Exception as exc:
        raise StoreError(f"the store's embedder failed: {type(exc).__name__}: {exc}") from exc
    if len(vectors) != len(texts):
        raise StoreError(f"the store's embedder gave {len(vectors)} vectors for {len(texts)}")
    return [list(v) for v in vectors]


def embed_missing(
    items: list[TextualMemoryItem],
    embedder: QueryEmbedder | None,
    unstored: Callable[[list[TextualMemoryItem]], list[int]],
) -> list[TextualMemoryItem]:
    """``items``, the new ones that came without a vector given one by ``embedder`` (stored
    ones are skipped: ``unstored`` gives the positions of those not stored, read before
    anything is embedded); the vectors' ``embedding_model`` is the embedder's ``name``. An item
    the embedder gives a vector without a direction (NaN, infinite, all zeros) stays without
    one (a warning names it): it is stored and found by its words, and ``maintain`` embeds it
    again."""
    bare = [i for i, item in enumerate(items) if item.metadata.embedding is None]
    if embedder is None or not bare:
        return items
    todo = [bare[i] for i in unstored([items[i] for i in bare])]
    if not todo:
        return items
    vectors = embed(embedder, [items[i].memory for i in todo])
    name = getattr(embedder, "name", None)
    model = name if isinstance(name, str) else None
    out = list(items)
    for i, vector in zip(todo, vectors, strict=True):
        if not usable_vector(vector):
            logger.warning(
                "the store's embedder gave item %d (id %r) a vector without a direction (NaN, "
                "infinite or all zeros): stored without one; maintain embeds it again",
                i,
                items[i].id,
            )
            continue
        meta = items[i].metadata.model_copy(
            update={"embedding": [float(x) for x in vector], "embedding_model": model}
        )
        out[i] = items[i].model_copy(update={"metadata": meta})
    return out
