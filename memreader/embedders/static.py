"""The ``static`` embedder: token vectors distilled from the bundled model, the speed tier.

A static model (the recipe of model2vec) has one vector per vocabulary token; a text's vector
is the mean of its tokens' vectors. There is no network to run, so embedding costs about what
tokenising costs: for users who ingest millions of messages on CPUs, at some cost in recall
(see the README's "speed tier" paragraph and ``benchmarks/retrieval.py``).

Distillation (:func:`build_static_model`; once, from the installed weights, no torch)
-------------------------------------------------------------------------------------
1. Every vocabulary token is embedded alone through the ``local`` embedder's fp32 ONNX graph,
   mean-pooled over its three positions (the model's own pooling), in batches of
   :data:`_DISTILL_BATCH` in id order. The token sits between the tokenizer's special tokens
   in reverse order, ``[SEP] token [CLS]``, as model2vec does (it "works better on our
   benchmarks"; here too, see below). Special tokens (``[PAD]``, ``[UNK]``, ``[CLS]``,
   ``[SEP]``, ``[MASK]``) and ``[unused…]`` slots get a zero vector, so an unknown piece adds
   nothing to a text's direction.
2. PCA (numpy SVD of the centred vectors of the other tokens): the vectors are rotated onto
   their principal axes, all of them kept, largest variance first, each axis' sign fixed so
   its largest coefficient is positive. Centring removes the direction every token output
   shares. The config's ``dims`` keeps the first axes when the file is loaded, so one file
   serves every ``dims``; the default keeps all 384, which retrieved a little better than 256.
3. SIF weighting from a Zipf estimate of each token's frequency (model2vec's): a token of
   rank ``r`` has probability ``p = (1 / r) / H`` and its vector is scaled by ``a / (a + p)``
   with ``a =`` :data:`SIF_COEFFICIENT`. The rank is the token's position in the vocabulary
   without the ``[unused…]`` slots, plus 2: BERT's vocabulary lists single characters
   (punctuation, digits, letters) first and whole words roughly by frequency after them, so
   punctuation and frequent words weigh least.

What was measured to choose (MemoryBank recall@5 of ``benchmarks/retrieval.py``, day / user
layout, no prefixes; 149 queries, so 0.007 is one query):

- this recipe (``[SEP] t [CLS]``, PCA keeping 384, SIF ``a = 1e-4``): 0.805 / 0.671;
  keeping 256 dimensions: 0.792 / 0.658;
- ``[CLS] t [SEP]``, 256 dimensions: 0.718 / 0.611; with ``a = 1e-3``: 0.678 / 0.557; with
  ``a = 3e-5``: 0.691 / 0.591; weighted by ``log(1 + r)`` instead: 0.664 / 0.571; ranking
  whole words first (``the`` = 1, single characters last): 0.638 / 0.577; no weighting:
  0.617 / 0.524; no PCA (384) with whole words ranked first: 0.638 / 0.537;
- the ``local`` embedder itself, int8: 0.852 / 0.785; fp32: 0.859 / 0.799.

The result is stored in the user cache as a float32 ``.npy``, with a manifest holding its
sha256 (the helpers of :mod:`memreader.embedders.model_files`)::

    <cache>/static/<model>-<digest>/vectors.npy      (vocabulary size, hidden size)
    <cache>/static/<model>-<digest>/manifest.json

The digest covers the ONNX source digest (model config, weights, graph version) and
:data:`STATIC_VERSION`. The build is deterministic: the same bytes for the same weights and
library versions on the same machine. Every load checks the sha256; a corrupt file, or a
missing one with ``auto_build: false``, is an :class:`EmbeddingError` saying how to rebuild.

Why not the ``model2vec`` package: its distillation (``model2vec[distill]``) needs torch and
transformers at run time, and installing it would move ``tokenizers`` and ``huggingface_hub``
to other versions than memreader's; this module is the same recipe, in numpy, on the ONNX
graph memreader already builds (its inference side is the few lines of ``_embed_ids``).
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memreader.embedders.backends import register_embedder
from memreader.embedders.config import LocalEmbedderConfig, StaticEmbedderConfig
from memreader.embedders.languages import LATIN
from memreader.embedders.model_files import (
    build_cached,
    cache_root,
    read_cached,
    resolve_model,
    source_digest,
)
from memreader.embedders.model_io import read_model_json
from memreader.embedders.tokenized import TokenizedEmbedder, load_tokenizer
from memreader.errors import ConfigError, EmbeddingError

__all__ = [
    "SIF_COEFFICIENT",
    "STATIC_VERSION",
    "StaticEmbedder",
    "build_static_model",
    "distill_static_vectors",
    "static_folder",
]

logger = logging.getLogger(__name__)

#: Bump when the distillation changes: older files are then not reused, and embedder names
#: (the embedding cache's namespace) change with it.
STATIC_VERSION = 1
#: ``a`` of the SIF weight ``a / (a + p)``.
SIF_COEFFICIENT = 1e-4
#: The ``max_input_tokens`` a static embedder reports: it has no length limit, and ``embed``
#: and ``embed_parts`` never cut a text.
MAX_INPUT_TOKENS = 1_000_000

_DISTILL_BATCH = 512
_FILE = "vectors.npy"
_BUILD_HINT = "memreader models build --static --force"
_UNUSED = re.compile(r"\[unused\d+\]")


def static_folder(model_dir: Path, name: str) -> Path:
    """The cache folder of the static model distilled from ``model_dir``."""
    h = hashlib.sha256(f"memreader-static-{STATIC_VERSION}\0".encode())
    h.update(source_digest(model_dir).encode())
    return cache_root() / "static" / f"{name}-{h.hexdigest()[:16]}"


def _excluded(tokenizer: Any, size: int) -> Any:
    """Mask of the ids that get no vector: special tokens and ``[unused…]`` slots."""
    import numpy as np

    mask = np.zeros(size, dtype=bool)
    for token, i in tokenizer.get_vocab(with_added_tokens=True).items():
        if i < size and _UNUSED.fullmatch(token):
            mask[i] = True
    for i, added in tokenizer.get_added_tokens_decoder().items():
        if i < size and added.special:
            mask[i] = True
    return mask


def _zipf_ranks(tokenizer: Any, size: int, ids: Any) -> Any:
    """The Zipf rank of each of ``ids``: its position in the vocabulary without the
    ``[unused…]`` slots, plus 2 (model2vec's ranks)."""
    import numpy as np

    unused = np.zeros(size, dtype=bool)
    for token, i in tokenizer.get_vocab(with_added_tokens=True).items():
        if i < size and _UNUSED.fullmatch(token):
            unused[i] = True
    positions = np.cumsum(~unused) - 1
    return positions[ids].astype(np.float64) + 2.0


def distill_static_vectors(
    model_path: str | None = None, *, tokens: int | None = None, auto_build: bool = True
) -> Any:
    """The static vectors of a model (float32, ``(vocabulary size, hidden size)``), distilled
    as the module docstring says. ``tokens`` distils only the first ``tokens`` ids (the rest
    get zero vectors): a quick, equally deterministic build for tests.

    Raises :class:`EmbeddingError` when the model or its ONNX graph cannot be read.
    """
    import numpy as np

    from memreader.embedders.local import LocalEmbedder

    embedder = LocalEmbedder(
        LocalEmbedderConfig(
            model_path=model_path, precision="fp32", normalize=False, auto_build=auto_build
        )
    )
    tokenizer = embedder.tokenizer
    size = int(tokenizer.get_vocab_size(with_added_tokens=True))
    limit = size if tokens is None else max(0, min(size, tokens))
    head, tail = embedder._head, embedder._tail
    keep = ~_excluded(tokenizer, size)
    keep[limit:] = False
    ids = np.flatnonzero(keep)
    if len(ids) < 2:
        raise EmbeddingError(f"{embedder.name}: too few tokens to distil a static model")
    started = time.perf_counter()
    raw = np.empty((len(ids), embedder.dimension), dtype=np.float32)
    for offset in range(0, len(ids), _DISTILL_BATCH):
        # model2vec's order: the tail token first ([SEP] token [CLS]), see the module docstring.
        batch = [[*tail, int(i), *head] for i in ids[offset : offset + _DISTILL_BATCH]]
        raw[offset : offset + len(batch)] = embedder._embed_ids(batch)
    if not np.isfinite(raw).all():
        raise EmbeddingError(f"{embedder.name}: the model returned non-finite token vectors")
    logger.info("embedded %d tokens in %.1fs", len(ids), time.perf_counter() - started)
    centred = raw.astype(np.float64)
    centred -= centred.mean(axis=0)
    _, _, axes = np.linalg.svd(centred, full_matrices=False)
    largest = np.argmax(np.abs(axes), axis=1)
    axes *= np.sign(axes[np.arange(len(axes)), largest])[:, None]
    projected = centred @ axes.T
    ranks = _zipf_ranks(tokenizer, size, ids)
    probability = (1.0 / ranks) / np.sum(1.0 / ranks)
    projected *= (SIF_COEFFICIENT / (SIF_COEFFICIENT + probability))[:, None]
    vectors = np.zeros((size, projected.shape[1]), dtype=np.float32)
    vectors[ids] = projected.astype(np.float32)
    return vectors


def _npy_bytes(vectors: Any) -> bytes:
    import numpy as np

    buffer = io.BytesIO()
    np.save(buffer, np.ascontiguousarray(vectors, dtype=np.float32), allow_pickle=False)
    return buffer.getvalue()


def build_static_model(
    model_path: str | None = None, *, force: bool = False, tokens: int | None = None
) -> Path:
    """Distil (or keep, when present and intact) the static model of ``model_path`` (``None``:
    the bundled all-MiniLM-L6-v2) into the user cache; the path of its ``.npy`` file. The CLI's
    ``memreader models build --static`` calls this. ``tokens``: see
    :func:`distill_static_vectors` (such a partial model is stored under its own name and is
    never loaded by the embedder).

    Raises :class:`EmbeddingError` when the model cannot be read or distilled.
    """
    model_dir, name = resolve_model(model_path)
    path = static_folder(model_dir, name) / (
        _FILE if tokens is None else f"vectors-first{tokens}.npy"
    )
    build_cached(
        path,
        lambda: _npy_bytes(distill_static_vectors(model_path, tokens=tokens)),
        lambda: _details(model_dir),
        force,
    )
    return path


def _details(model_dir: Path) -> dict[str, object]:
    import numpy as np
    import onnxruntime

    return {
        "source": str(model_dir),
        "static_version": STATIC_VERSION,
        "sif_coefficient": SIF_COEFFICIENT,
        "numpy": np.__version__,
        "onnxruntime": onnxruntime.__version__,
    }


def _read_vectors(model_dir: Path, name: str, auto_build: bool, model_path: str | None) -> Any:
    """The checked vectors of the static model of ``model_dir``, distilled if missing."""
    import numpy as np

    path = static_folder(model_dir, name) / _FILE
    data = read_cached(
        path,
        lambda: build_static_model(model_path),
        auto_build,
        f"static model of {name}",
        _BUILD_HINT,
    )
    try:
        vectors = np.load(io.BytesIO(data), allow_pickle=False)
    except ValueError as e:  # pragma: no cover - a file that matches its manifest loads
        raise EmbeddingError(
            f"cannot load the static model {str(path)!r}: {e}; rebuild it with `{_BUILD_HINT}`"
        ) from e
    if vectors.ndim != 2 or vectors.dtype != np.float32:
        raise EmbeddingError(
            f"the static model {str(path)!r} has shape {vectors.shape} and type "
            f"{vectors.dtype}, not a float32 matrix; rebuild it with `{_BUILD_HINT}`"
        )
    return vectors


_VECTORS: dict[tuple[str, int, int, int], Any] = {}
_VECTORS_LOCK = threading.Lock()


def _vectors(
    model_dir: Path, name: str, dims: int, auto_build: bool, model_path: str | None
) -> Any:
    """The first ``dims`` columns of the static vectors, shared across the process while the
    file is unchanged."""
    import numpy as np

    with _VECTORS_LOCK:
        path = static_folder(model_dir, name) / _FILE
        try:
            stat = path.stat()
            key: tuple[str, int, int, int] | None = (
                str(path),
                dims,
                stat.st_size,
                stat.st_mtime_ns,
            )
        except OSError:
            key = None
        if key is not None and key in _VECTORS:
            return _VECTORS[key]
        full = _read_vectors(model_dir, name, auto_build, model_path)
        if dims > full.shape[1]:
            raise ConfigError(
                "invalid config for embedder backend 'static': field 'dims': "
                f"{dims} exceeds the model's {full.shape[1]} dimensions"
            )
        vectors = np.ascontiguousarray(full[:, :dims])
        vectors.setflags(write=False)
        stat = path.stat()
        _VECTORS[(str(path), dims, stat.st_size, stat.st_mtime_ns)] = vectors
        return vectors


_TOKENIZERS: dict[str, Any] = {}
_TOKENIZERS_LOCK = threading.Lock()


def _tokenizer(model_dir: Path) -> Any:
    """The model's tokenizer, shared across the process (encoding is thread-safe)."""
    path = str(model_dir / "tokenizer.json")
    with _TOKENIZERS_LOCK:
        tokenizer = _TOKENIZERS.get(path)
        if tokenizer is None:
            tokenizer = _TOKENIZERS[path] = load_tokenizer(path)
        return tokenizer


def _hidden_size(model_dir: Path) -> int:
    config = read_model_json(model_dir / "config.json")
    try:
        return int(config["hidden_size"])
    except (ValueError, KeyError, TypeError) as e:
        raise EmbeddingError(
            f"cannot read the model description {str(model_dir / 'config.json')!r}: {e}"
        ) from e


@register_embedder("static")
class StaticEmbedder(TokenizedEmbedder):
    """Embeds a text as the mean of its tokens' distilled static vectors (see the module
    docstring): no network at run time, so about as fast as the tokenizer.

    ``name`` is ``"static:<model dir name>"``, with ``":<dims>d"`` when ``dims`` keeps fewer
    than all dimensions and ``":unnormalized"`` when ``normalize`` is off. A text with no known
    token (the empty text) gets the zero vector.

    >>> embedder = StaticEmbedder()                                 # doctest: +SKIP
    >>> len(embedder.embed(["I like tea."])[0])                     # doctest: +SKIP
    384
    """

    config_class = StaticEmbedderConfig

    def __init__(self, config: StaticEmbedderConfig | None = None) -> None:
        config = config if config is not None else StaticEmbedderConfig()
        model_dir, model_name = resolve_model(config.model_path)
        hidden = _hidden_size(model_dir)
        dims = config.dims if config.dims is not None else hidden
        if dims > hidden:
            raise ConfigError(
                "invalid config for embedder backend 'static': field 'dims': "
                f"{dims} exceeds the model's hidden size {hidden}"
            )
        tokenizer = _tokenizer(model_dir)
        self._vectors = _vectors(model_dir, model_name, dims, config.auto_build, config.model_path)
        if self._vectors.shape[0] < tokenizer.get_vocab_size(with_added_tokens=True):
            raise EmbeddingError(
                f"the static model of {model_name} has {self._vectors.shape[0]} token vectors "
                f"for a vocabulary of {tokenizer.get_vocab_size(with_added_tokens=True)}; "
                f"rebuild it with `{_BUILD_HINT}`"
            )
        suffix = ("" if dims == hidden else f":{dims}d") + (
            "" if config.normalize else ":unnormalized"
        )
        version = "" if STATIC_VERSION == 1 else f":v{STATIC_VERSION}"
        super().__init__(
            tokenizer=tokenizer,
            name=f"static:{model_name}{version}{suffix}",
            max_input_tokens=MAX_INPUT_TOKENS,
            batch_size=config.batch_size,
            normalize=config.normalize,
            dimension=dims,
        )
        self.config = config
        self.model_path = str(model_dir)
        # The bundled model was trained on English text only (unreadable_share: the base's).
        self.scripts = LATIN if config.model_path is None else None

    def embed_parts(self, texts: Sequence[Sequence[str]]) -> list[list[float]]:
        """One vector per text, each text given as its consecutive parts: the vector of
        ``"".join(parts)``. A static model reads any length, so texts are never split, the
        parts are simply joined, and each text is tokenised once (all texts of a call in one
        batch, on the tokenizer's threads)."""
        joined: list[str] = []
        for i, parts in enumerate(texts):
            if isinstance(parts, str):
                raise TypeError(f"embed_parts() takes a list of parts per text; item {i} is a str")
            joined.append("".join(self._check_texts(parts)))
        if not joined:
            return []
        encodings = self._encode(joined)
        for text, encoding in zip(joined, encodings, strict=True):
            self._remember_unknown([text], [encoding])
        ids = [encoding.ids for encoding in encodings]
        rows: list[list[float]] = []
        for offset in range(0, len(ids), self.batch_size):
            batch = [
                [*self._head, *piece, *self._tail]
                for piece in ids[offset : offset + self.batch_size]
            ]
            rows.extend(self._run(batch).tolist())
        with self._stats_lock:
            self.pieces_embedded += len(ids)
            self.tokens_embedded += sum(len(piece) + self.special_tokens for piece in ids)
        return rows

    def _embed_ids(self, batch: list[list[int]]) -> Any:
        """The mean of the content tokens' vectors of each id sequence (zero when none)."""
        import numpy as np

        head, tail = len(self._head), len(self._tail)
        out = np.zeros((len(batch), self.dimension), dtype=np.float32)
        table = self._vectors
        for row, ids in enumerate(batch):
            content = ids[head : len(ids) - tail] if len(ids) > head + tail else []
            if not content:
                continue
            try:
                gathered = table.take(content, axis=0)
            except IndexError:
                raise EmbeddingError(f"{self.name}: a token id outside the static model") from None
            gathered.sum(axis=0, out=out[row])
            out[row] /= len(content)
        return out
