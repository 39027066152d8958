"""The embedder protocol, the batching and pooling base class, and :func:`build_embedder`.

An :class:`Embedder` turns texts into vectors. Backends (``local``, ``openai``, ``ollama``, or a
plugin) register themselves with :func:`~memreader.embedders.backends.register_embedder` and are
built from an :class:`~memreader.embedders.config.EmbedderConfig` by :func:`build_embedder`.

Long inputs are never truncated silently
----------------------------------------
Every embedding model reads at most ``max_input_tokens`` tokens (including the model's special
tokens, e.g. ``[CLS]``/``[SEP]``); servers and sentence-transformers cut longer inputs without a
word, so the tail of a long text would simply not be represented. :class:`PoolingEmbedder`
therefore (with :mod:`memreader.embedders.pieces`):

1. tokenizes the text with the embedder's *own* tokenizer (wordpiece for the local model,
   cl100k for OpenAI-compatible and Ollama endpoints) and, when it has more than
   ``max_input_tokens - special_tokens`` tokens, cuts it into contiguous pieces at token
   boundaries, using the tokenizer's character offsets so that every piece is an exact substring
   of the text (the pieces concatenate back to it; no cut falls inside a character, so no
   U+FFFD can appear). Cuts prefer whitespace in the last half of a piece's token budget; each
   piece is re-counted and shortened if re-tokenizing it gives more tokens than the budget;
2. embeds all pieces of all texts together, in batches of ``batch_size``;
3. returns, for a split text, the mean of its piece vectors weighted by each piece's token
   count, re-normalised to unit length when the embedder normalises (all built-in ones do by
   default).

The weighted mean is one vector per text, so callers keep a 1:1 text-to-vector mapping; it is a
standard way to embed a long document with a short-context model, and it keeps every part of
the text in the vector instead of only its first ``max_input_tokens`` tokens.

Failures are typed
------------------
Whatever goes wrong with one batch (a remote error, a reply that cannot be read, a backend that
raises something untyped, vectors of the wrong shape) is an :class:`EmbeddingError` that names
the batch: how many texts, and a short preview of the first (:func:`describe_batch`). Remote
backends retry transient failures with the one retry policy of every remote call
(:class:`~memreader.embedders.remote.RemoteEmbedder`).

Optional abilities
------------------
Beside what every :class:`Embedder` must have, the readers use three abilities that an embedder
may have: ``batch_size``, ``embed_fragments`` (with ``embeds_fragments``) and ``unreadable_share``.
:class:`EmbedderDefaults` declares them with their defaults; the built-in embedders inherit it,
and :func:`~memreader.embedders.adapter.with_defaults` gives any other embedder the same
interface (:class:`FullEmbedder`), so the code that embeds never asks whether one has them.
"""

from __future__ import annotations

import logging
import math
import threading
import traceback
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, Protocol, cast, runtime_checkable

from pydantic import BaseModel

from memreader.embedders.backends import EMBEDDERS, register_embedder
from memreader.embedders.config import (
    EmbedderConfig,
    parse_embedder_config,
    validate_backend_config,
)
from memreader.embedders.pieces import TextPiece, split_by_tokens, weighted_mean
from memreader.errors import ConfigError, EmbeddingError

__all__ = [
    "DEFAULT_BATCH_SIZE",
    "EMBEDDERS",
    "Embedder",
    "EmbedderDefaults",
    "FullEmbedder",
    "PoolingEmbedder",
    "TextPiece",
    "build_embedder",
    "clip_detail",
    "describe_batch",
    "register_embedder",
    "split_by_tokens",
    "weighted_mean",
]

logger = logging.getLogger(__name__)


@runtime_checkable
class Embedder(Protocol):
    """What memreader needs from an embedding model.

    ``name`` is a stable identifier that includes the model (``"local:all-MiniLM-L6-v2"``); it
    namespaces cache keys, so two embedders with the same name must produce the same vectors.
    ``count_tokens`` counts content tokens (no special tokens) in the embedder's own tokenizer.
    ``embed`` returns one vector of length ``dimension`` per input text, in input order; texts
    longer than ``max_input_tokens`` are split and pooled, never truncated.
    """

    @property
    def name(self) -> str:
        """Stable identifier including the model; the cache-key namespace."""
        ...

    @property
    def dimension(self) -> int:
        """Length of every vector this embedder returns."""
        ...

    @property
    def max_input_tokens(self) -> int:
        """Most tokens (special tokens included) the model reads in one input."""
        ...

    def count_tokens(self, text: str) -> int:
        """Number of content tokens of ``text`` in this embedder's tokenizer."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in input order."""
        ...


#: How many texts one ``embed`` call gets when an embedder does not say (``batch_size``).
DEFAULT_BATCH_SIZE = 64


class FullEmbedder(Embedder, Protocol):
    """An :class:`Embedder` with the optional abilities (see :class:`EmbedderDefaults`): what
    a reader's runtime hands its steps."""

    @property
    def batch_size(self) -> int:
        """How many texts one ``embed`` call should get."""
        ...

    @property
    def embeds_fragments(self) -> bool:
        """Whether ``embed_fragments`` embeds a text from its fragments itself (not their join)."""
        ...

    def embed_fragments(self, texts: Sequence[Sequence[str]]) -> list[list[float]]:
        """One vector per text given as consecutive fragments, in input order."""
        ...

    def unreadable_share(self, text: str) -> float | None:
        """The share (0..1) of ``text``'s letters the model cannot read, or ``None``."""
        ...


class EmbedderDefaults(ABC):
    """The optional abilities of an embedder, with their defaults. Inherit it, and override
    what your model does better:

    - ``batch_size`` (:data:`DEFAULT_BATCH_SIZE`): how many texts one ``embed`` call gets.
    - ``embed_fragments(texts)``: one vector per text given as consecutive fragments (fast
      mode hands a window's own text and its overlaps apart). Default: the joined texts,
      embedded. An embedder that does better (pools the fragments' tokens, as the local models
      do) sets ``embeds_fragments = True``, so a cache keeps its vectors apart from the joined
      text's.
    - ``unreadable_share(text)``: the share (0..1) of ``text``'s letters the model cannot read
      (an English-only model and Chinese text), or ``None`` when it does not know (the
      default); see :mod:`memreader.embedders.languages`.
    """

    batch_size: int = DEFAULT_BATCH_SIZE
    embeds_fragments: bool = False

    @abstractmethod
    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in input order."""

    def embed_fragments(self, texts: Sequence[Sequence[str]]) -> list[list[float]]:
        """One vector per text given as its fragments: by default the joined text's."""
        return self.embed(["".join(fragments) for fragments in texts])

    def unreadable_share(self, text: str) -> float | None:
        """``None``: by default an embedder does not know what it cannot read."""
        return None


#: How many characters of a batch's first text an error message shows.
PREVIEW_CHARS = 40
#: How many characters of an underlying error's text an error message keeps.
DETAIL_LIMIT = 500


def describe_batch(texts: Sequence[str]) -> str:
    """``"a batch of 3 texts, the first (12 characters): 'hello world!'"``, clipped."""
    count = f"a batch of {len(texts)} text{'' if len(texts) == 1 else 's'}"
    if not texts:
        return count
    first = texts[0]
    preview = first if len(first) <= PREVIEW_CHARS else first[:PREVIEW_CHARS] + "..."
    return f"{count}, the first ({len(first)} characters): {preview!r}"


def clip_detail(text: str, limit: int = DETAIL_LIMIT) -> str:
    """``text`` cut to ``limit`` characters, marked when cut."""
    return text if len(text) <= limit else text[:limit] + "..."


class PoolingEmbedder(EmbedderDefaults):
    """Base class of the built-in embedders: batching, validation, and long-text pooling.

    Subclasses provide ``count_tokens``, ``_token_cuts`` (see :data:`TokenCuts`) and
    ``_embed_batch`` (one request/forward pass for at most ``batch_size`` texts that all fit the
    model). ``embed`` splits long texts (see the module docstring), embeds the pieces in batches,
    checks the shape of every answer and pools the pieces.

    When the dimension is not known up front it is learnt from the first answer; reading
    ``dimension`` before any ``embed`` call then sends one short probe text. (On Python < 3.12
    ``isinstance(x, Embedder)`` reads attributes, so it may trigger that probe.)
    """

    config_class: ClassVar[type[BaseModel]]

    def __init__(
        self,
        *,
        name: str,
        max_input_tokens: int,
        batch_size: int,
        normalize: bool,
        special_tokens: int = 0,
        dimension: int | None = None,
    ) -> None:
        if max_input_tokens - special_tokens < 1:
            raise ConfigError(
                f"{name}: max_input_tokens {max_input_tokens} leaves no room beside "
                f"{special_tokens} special tokens"
            )
        self.name = name
        self.max_input_tokens = max_input_tokens
        self.batch_size = batch_size
        self.normalize = normalize
        self.special_tokens = special_tokens
        self._dimension = dimension
        self._dimension_lock = threading.Lock()
        self._secrets: list[str] = []

    def __repr__(self) -> str:
        return f"{type(self).__name__}(name={self.name!r})"

    @property
    def dimension(self) -> int:
        """Length of every vector; learnt from the backend (one probe request) if not known."""
        if self._dimension is None:
            logger.debug("%s: probing the embedding dimension", self.name)
            self.embed(["dimension probe"])
        if self._dimension is None:  # pragma: no cover - _check_batch always sets it
            raise EmbeddingError(f"{self.name}: could not determine the embedding dimension")
        return self._dimension

    @property
    def piece_budget(self) -> int:
        """Most content tokens one piece may have: ``max_input_tokens - special_tokens``."""
        return self.max_input_tokens - self.special_tokens

    @abstractmethod
    def count_tokens(self, text: str) -> int:
        """Number of content tokens of ``text`` (no special tokens) in the own tokenizer."""

    @abstractmethod
    def _token_cuts(self, text: str) -> Sequence[int | None]:
        """Tokenize ``text`` into allowed cut positions, one per token (see ``TokenCuts``)."""

    @abstractmethod
    def _embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        """Embed texts that each fit the model, in one call; one vector per text, in order."""

    def split_text(self, text: str) -> list[TextPiece]:
        """The pieces ``embed`` embeds for ``text`` (one piece if it fits the model)."""
        return split_by_tokens(text, self.piece_budget, self._token_cuts, self.count_tokens)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Embed ``texts``: one vector per text, in input order (see the module docstring)."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings, not a single string")
        texts = list(texts)
        for i, text in enumerate(texts):
            if not isinstance(text, str):
                raise TypeError(f"embed() takes strings; item {i} is {type(text).__name__}")
        if not texts:
            return []
        plans = [self.split_text(text) for text in texts]
        flat = [piece.text for plan in plans for piece in plan]
        if len(flat) > len(texts):
            logger.debug(
                "%s: %d long text(s) split, %d pieces in all",
                self.name,
                sum(1 for plan in plans if len(plan) > 1),
                len(flat),
            )
        vectors: list[list[float]] = []
        for offset in range(0, len(flat), self.batch_size):
            vectors.extend(self._embed_checked(flat[offset : offset + self.batch_size]))
        out: list[list[float]] = []
        k = 0
        for plan in plans:
            if len(plan) == 1:
                out.append(vectors[k])
            else:
                weights = [float(piece.tokens) for piece in plan]
                out.append(weighted_mean(vectors[k : k + len(plan)], weights, self.normalize))
            k += len(plan)
        return out

    def scrub(self, text: str) -> str:
        """``text`` with the backend's secrets (API key, URL password) replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def _embed_checked(self, batch: list[str]) -> list[list[float]]:
        """One batch through the backend, checked; every failure is an EmbeddingError naming it.

        The error is raised without the original exception as cause or context (it is logged,
        scrubbed, at debug level): an SDK error may quote a secret the server echoed back.
        """
        try:
            return self._check_batch(batch, self._embed_batch(batch))
        except EmbeddingError as exc:
            error = EmbeddingError(f"{exc} ({describe_batch(batch)})")
        except Exception as exc:  # the backend boundary: whatever else it raises becomes typed
            logger.debug(
                "%s raised %s:\n%s",
                self.name,
                type(exc).__name__,
                self.scrub("".join(traceback.format_exception(exc))).rstrip(),
            )
            detail = clip_detail(self.scrub(f"{type(exc).__name__}: {exc}"))
            error = EmbeddingError(
                f"{self.name}: embedding {describe_batch(batch)} failed: {detail}"
            )
        raise error from None

    def _check_batch(
        self, batch: list[str], vectors: Sequence[Sequence[float]]
    ) -> list[list[float]]:
        if len(vectors) != len(batch):
            raise EmbeddingError(
                f"{self.name}: the backend returned {len(vectors)} vectors for {len(batch)} texts"
            )
        checked: list[list[float]] = []
        for i, vector in enumerate(vectors):
            try:
                values = [float(x) for x in vector]
            except (TypeError, ValueError) as e:
                raise EmbeddingError(f"{self.name}: vector {i} is not a list of numbers") from e
            if not values or not all(math.isfinite(x) for x in values):
                raise EmbeddingError(f"{self.name}: vector {i} is empty or not finite")
            checked.append(values)
        with self._dimension_lock:
            if self._dimension is None:
                self._dimension = len(checked[0])
                logger.debug("%s: embedding dimension is %d", self.name, self._dimension)
            expected = self._dimension
        for i, values in enumerate(checked):
            if len(values) != expected:
                raise EmbeddingError(
                    f"{self.name}: vector {i} has {len(values)} dimensions, expected {expected}"
                )
        return checked


def build_embedder(cfg: EmbedderConfig | Mapping[str, Any]) -> Embedder:
    """Build the embedder ``cfg`` describes, validating ``cfg.config`` for its backend.

    Raises :class:`ConfigError` for an unknown backend (listing the known ones) or invalid
    settings (naming the backend and fields); backends may raise :class:`EmbeddingError` when
    their model cannot be loaded.
    """
    cfg = parse_embedder_config(cfg)
    cls = EMBEDDERS.get(cfg.backend)
    config = validate_backend_config(cfg.backend, cls.config_class, cfg.config)
    logger.debug("building embedder backend %r", cfg.backend)
    return cast(Embedder, cls(config))
