"""A content-hash embedding cache and an embedder wrapper that uses it.

Keys are ``sha256(embedder.name + "\\0" + text)``, so vectors of different models never mix and
the cache holds no raw text. :class:`CachedEmbedder` deduplicates a call's texts, embeds only the
unique uncached ones (in batches of the inner embedder's ``batch_size``) and returns the vectors
in input order. A batch the inner embedder fails on (an untyped exception from a plugin, vectors
of the wrong count or shape) is an :class:`EmbeddingError` naming the batch; nothing wrong is
cached.
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import threading
import traceback
from collections import OrderedDict
from collections.abc import Mapping, Sequence

from memreader.embedders.adapter import with_defaults
from memreader.embedders.base import Embedder, EmbedderDefaults, clip_detail, describe_batch
from memreader.errors import ConfigError, EmbeddingError

__all__ = ["CachedEmbedder", "EmbeddingCache", "cache_key"]

logger = logging.getLogger(__name__)


def cache_key(embedder_name: str, text: str) -> str:
    """The cache key of ``text`` for the embedder called ``embedder_name`` (hex sha256)."""
    digest = hashlib.sha256()
    digest.update(embedder_name.encode("utf-8", "surrogatepass"))
    digest.update(b"\0")
    digest.update(text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()


class EmbeddingCache:
    """Thread-safe in-memory LRU map from cache key to vector, holding at most ``max_entries``.

    Vectors are stored as tuples and handed out as fresh lists, so callers may mutate what they
    get without corrupting the cache.
    """

    def __init__(self, max_entries: int = 100_000) -> None:
        if max_entries < 1:
            raise ConfigError(f"EmbeddingCache max_entries must be at least 1, got {max_entries}")
        self.max_entries = max_entries
        self._data: OrderedDict[str, tuple[float, ...]] = OrderedDict()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._data)

    def get(self, key: str) -> list[float] | None:
        """The vector stored under ``key`` (marking it recently used), or ``None``."""
        with self._lock:
            vector = self._data.get(key)
            if vector is None:
                return None
            self._data.move_to_end(key)
        return list(vector)

    def get_many(self, keys: Sequence[str]) -> dict[str, list[float]]:
        """The stored vectors among ``keys``, under one lock acquisition."""
        found: dict[str, tuple[float, ...]] = {}
        with self._lock:
            for key in keys:
                vector = self._data.get(key)
                if vector is not None:
                    self._data.move_to_end(key)
                    found[key] = vector
        return {key: list(vector) for key, vector in found.items()}

    def put(self, key: str, vector: Sequence[float]) -> None:
        """Store ``vector`` under ``key``, evicting the least recently used entries if full."""
        self.put_many({key: vector})

    def put_many(self, items: Mapping[str, Sequence[float]]) -> None:
        """Store several vectors under one lock acquisition."""
        frozen = {key: tuple(vector) for key, vector in items.items()}
        with self._lock:
            for key, vector in frozen.items():
                self._data[key] = vector
                self._data.move_to_end(key)
            while len(self._data) > self.max_entries:
                self._data.popitem(last=False)

    def clear(self) -> None:
        """Drop every entry."""
        with self._lock:
            self._data.clear()


class CachedEmbedder(EmbedderDefaults):
    """An :class:`Embedder` that serves repeated texts from an :class:`EmbeddingCache`, with
    the inner embedder's optional abilities (``batch_size``, ``embeds_fragments``,
    ``unreadable_share``; see :class:`~memreader.embedders.base.EmbedderDefaults`).

    Counters: ``hits`` and ``misses`` count distinct texts per call found / not found in the
    cache (a text repeated within one call is looked up and embedded once). Concurrent calls
    that miss on the same text may both embed it; the result is the same.
    """

    def __init__(self, inner: Embedder, cache: EmbeddingCache | None = None) -> None:
        self.inner = inner
        self._full = with_defaults(inner)
        #: How many uncached texts go to the inner embedder per call.
        self.batch_size = self._full.batch_size
        self.embeds_fragments = self._full.embeds_fragments
        self.cache = cache if cache is not None else EmbeddingCache()
        self.hits = 0
        self.misses = 0
        self._counter_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"CachedEmbedder({self.inner!r}, entries={len(self.cache)})"

    @property
    def name(self) -> str:
        """The inner embedder's name."""
        return self.inner.name

    @property
    def dimension(self) -> int:
        """The inner embedder's dimension."""
        return self.inner.dimension

    @property
    def max_input_tokens(self) -> int:
        """The inner embedder's input limit."""
        return self.inner.max_input_tokens

    def count_tokens(self, text: str) -> int:
        """Token count in the inner embedder's tokenizer."""
        return self.inner.count_tokens(text)

    def unreadable_share(self, text: str) -> float | None:
        """The inner embedder's share of ``text``'s letters it cannot read, or ``None`` when it
        does not know (see :mod:`memreader.embedders.languages`)."""
        share = self._full.unreadable_share(text)
        return None if share is None else float(share)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in input order, embedding only distinct uncached texts."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        texts = list(texts)
        name = self.inner.name
        return self._cached(
            [cache_key(name, text) for text in texts], [(text,) for text in texts], texts
        )

    def embed_fragments(self, texts: Sequence[Sequence[str]]) -> list[list[float]]:
        """One vector per text given as its fragments (see
        :meth:`~memreader.embedders.tokenized.TokenizedEmbedder.embed_fragments`); an inner
        embedder that does not embed fragments itself (``embeds_fragments``) embeds the joined
        texts. A text of one fragment shares its cache entry with :meth:`embed`."""
        inputs = [tuple(fragments) for fragments in texts]
        name = self.inner.name
        if not self.embeds_fragments:
            joined = ["".join(fragments) for fragments in inputs]
            return self._cached(
                [cache_key(name, t) for t in joined], [(t,) for t in joined], joined
            )
        keys = [
            cache_key(name, fragments[0])
            if len(fragments) == 1
            else cache_key(name + "\0parts", json.dumps(fragments))
            for fragments in inputs
        ]
        return self._cached(keys, inputs, ["".join(fragments) for fragments in inputs])

    def _cached(
        self, keys: list[str], inputs: list[tuple[str, ...]], texts: list[str]
    ) -> list[list[float]]:
        if not keys:
            return []
        name = self.inner.name
        unique: dict[str, tuple[tuple[str, ...], str]] = {}
        for key, fragments, text in zip(keys, inputs, texts, strict=True):
            unique.setdefault(key, (fragments, text))
        found = self.cache.get_many(list(unique))
        missing = [(key, value) for key, value in unique.items() if key not in found]
        with self._counter_lock:
            self.hits += len(found)
            self.misses += len(missing)
        if missing:
            logger.debug(
                "%s: %d texts, %d distinct, %d cached, embedding %d",
                name,
                len(keys),
                len(unique),
                len(found),
                len(missing),
            )
        size = self.batch_size
        for offset in range(0, len(missing), size):
            chunk = missing[offset : offset + size]
            vectors = self._embed_batch(
                name, [fragments for _, (fragments, _) in chunk], [text for _, (_, text) in chunk]
            )
            fresh = {key: vector for (key, _), vector in zip(chunk, vectors, strict=True)}
            self.cache.put_many(fresh)
            found.update({key: list(vector) for key, vector in fresh.items()})
        return [list(found[key]) for key in keys]

    def _embed_batch(
        self, name: str, inputs: list[tuple[str, ...]], batch: list[str]
    ) -> list[list[float]]:
        """The inner embedder's vectors for ``batch``, checked; failures name the batch."""
        try:
            if any(len(fragments) > 1 for fragments in inputs):
                vectors = self._full.embed_fragments(inputs)
            else:
                vectors = self.inner.embed(batch)
        except EmbeddingError:
            raise  # typed already; the built-in embedders name the batch themselves
        except Exception as exc:  # a plugin's untyped failure becomes typed, naming the batch
            logger.debug(
                "%s raised %s:\n%s",
                name,
                type(exc).__name__,
                "".join(traceback.format_exception(exc)).rstrip(),
            )
            error = EmbeddingError(
                f"{name}: embedding {describe_batch(batch)} failed: "
                f"{clip_detail(f'{type(exc).__name__}: {exc}')}"
            )
        else:
            return _checked(name, batch, vectors)
        # Raised without the plugin's exception attached: it may quote a secret (it is logged).
        raise error from None


def _checked(name: str, batch: list[str], vectors: object) -> list[list[float]]:
    """``vectors`` as lists of finite floats, one per text, all of one length."""

    def fail(problem: str) -> EmbeddingError:
        return EmbeddingError(f"{name}: {problem} ({describe_batch(batch)})")

    if isinstance(vectors, (str, bytes)) or not isinstance(vectors, Sequence):
        raise fail(f"the embedder returned {type(vectors).__name__}, not a list of vectors")
    if len(vectors) != len(batch):
        raise fail(f"embedder returned {len(vectors)} vectors for {len(batch)} texts")
    checked: list[list[float]] = []
    for i, vector in enumerate(vectors):
        try:
            values = [float(x) for x in vector]
        except (TypeError, ValueError):
            raise fail(f"vector {i} is not a list of numbers") from None
        if not values or not all(math.isfinite(x) for x in values):
            raise fail(f"vector {i} is empty or not finite")
        if checked and len(values) != len(checked[0]):
            raise fail(f"vector {i} has {len(values)} dimensions, vector 0 has {len(checked[0])}")
        checked.append(values)
    return checked
