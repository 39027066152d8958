"""Distillation of the ``static`` embedder's token vectors from the bundled model (no torch).

The ``static`` embedder (:mod:`memreader.embedders.static`) reads a text as the mean of its
tokens' vectors; this module makes those vectors, once, and stores them in the user cache.

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
graph memreader already builds (its inference side is the few lines of
``StaticEmbedder._embed_ids``).
"""

from __future__ import annotations

import hashlib
import io
import logging
import re
import time
from pathlib import Path
from typing import Any

from memreader.embedders.config import LocalEmbedderConfig
from memreader.embedders.model_files import build_cached, cache_root, resolve_model, source_digest
from memreader.errors import EmbeddingError

__all__ = [
    "SIF_COEFFICIENT",
    "STATIC_BUILD_HINT",
    "STATIC_VERSION",
    "build_static_model",
    "distill_static_vectors",
    "static_folder",
    "static_vectors_path",
]

logger = logging.getLogger(__name__)

#: Bump when the distillation changes: older files are then not reused, and embedder names
#: (the embedding cache's namespace) change with it.
STATIC_VERSION = 1
#: ``a`` of the SIF weight ``a / (a + p)``.
SIF_COEFFICIENT = 1e-4
#: The command that rebuilds the static model, named by every error about its file.
STATIC_BUILD_HINT = "memreader models build --static --force"

_DISTILL_BATCH = 512
_UNUSED = re.compile(r"\[unused\d+\]")


def static_folder(model_dir: Path, name: str) -> Path:
    """The cache folder of the static model distilled from ``model_dir``."""
    h = hashlib.sha256(f"memreader-static-{STATIC_VERSION}\0".encode())
    h.update(source_digest(model_dir).encode())
    return cache_root() / "static" / f"{name}-{h.hexdigest()[:16]}"


def static_vectors_path(model_dir: Path, name: str) -> Path:
    """The ``.npy`` file of the static model distilled from ``model_dir`` (the whole vocabulary:
    the one the embedder loads)."""
    return static_folder(model_dir, name) / "vectors.npy"


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
    if tokens is None:
        path = static_vectors_path(model_dir, name)
    else:
        path = static_folder(model_dir, name) / f"vectors-first{tokens}.npy"
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
