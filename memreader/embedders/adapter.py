"""Any :class:`~memreader.embedders.base.Embedder` with the optional abilities of
:class:`~memreader.embedders.base.EmbedderDefaults`: :func:`with_defaults`.

An embedder handed to a reader, or a plugin's, need not inherit ``EmbedderDefaults``; it is
wrapped once, here, with the abilities it has and the defaults of the others, so the code that
embeds (the ``embed`` step, :class:`~memreader.embedders.cache.CachedEmbedder`) never asks.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from memreader.embedders.base import (
    DEFAULT_BATCH_SIZE,
    Embedder,
    EmbedderDefaults,
    FullEmbedder,
)

__all__ = ["with_defaults"]


def with_defaults(embedder: Embedder) -> FullEmbedder:
    """``embedder`` if it inherits :class:`~memreader.embedders.base.EmbedderDefaults`;
    otherwise a wrapper with the abilities it has and the defaults of the others."""
    if isinstance(embedder, EmbedderDefaults):
        return cast(FullEmbedder, embedder)
    return cast(FullEmbedder, _WithDefaults(embedder))


class _WithDefaults(EmbedderDefaults):
    """An embedder that does not inherit :class:`EmbedderDefaults` (a plugin's, one handed to
    a reader), with the abilities it has and the defaults of the others."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner
        # The one place that asks an embedder which optional abilities it has.
        size = getattr(inner, "batch_size", None)
        self.batch_size = size if isinstance(size, int) and size > 0 else DEFAULT_BATCH_SIZE
        self._embed_fragments = getattr(inner, "embed_fragments", None)
        self.embeds_fragments = callable(self._embed_fragments)
        self._unreadable_share = getattr(inner, "unreadable_share", None)

    def __repr__(self) -> str:
        return repr(self.inner)

    @property
    def name(self) -> str:
        """The embedder's name."""
        return self.inner.name

    @property
    def dimension(self) -> int:
        """The embedder's dimension."""
        return self.inner.dimension

    @property
    def max_input_tokens(self) -> int:
        """The embedder's input limit."""
        return self.inner.max_input_tokens

    def count_tokens(self, text: str) -> int:
        """Tokens of ``text`` in the embedder's tokenizer."""
        return self.inner.count_tokens(text)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """The embedder's vectors."""
        return self.inner.embed(texts)

    def embed_fragments(self, texts: Sequence[Sequence[str]]) -> list[list[float]]:
        """The embedder's own ``embed_fragments``, else the joined texts' vectors."""
        if callable(self._embed_fragments):
            vectors: list[list[float]] = self._embed_fragments(texts)
            return vectors
        return super().embed_fragments(texts)

    def unreadable_share(self, text: str) -> float | None:
        """The embedder's own ``unreadable_share``, else ``None``."""
        if not callable(self._unreadable_share):
            return None
        share: float | None = self._unreadable_share(text)
        return share
