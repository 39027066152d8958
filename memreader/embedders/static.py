"""The ``static`` embedder: token vectors distilled from the bundled model, the speed tier.

A static model (the recipe of model2vec) has one vector per vocabulary token; a text's vector
is the mean of its tokens' vectors. There is no network to run, so embedding costs about what
tokenising costs: for users who ingest millions of messages on CPUs, at some cost in recall
(see the README's "speed tier" paragraph and ``benchmarks/retrieval.py``).

The vectors are distilled once from the installed weights into the user cache
(:mod:`memreader.embedders.static_distill`: the recipe, what was measured to choose it, the
files); this module loads them, checked against their manifest, and embeds with them.
"""

from __future__ import annotations

import io
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memreader.embedders.backends import register_embedder
from memreader.embedders.config import StaticEmbedderConfig
from memreader.embedders.languages import LATIN
from memreader.embedders.model_files import read_cached, resolve_model
from memreader.embedders.model_io import read_model_json
from memreader.embedders.static_distill import (
    STATIC_BUILD_HINT,
    STATIC_VERSION,
    build_static_model,
    static_vectors_path,
)
from memreader.embedders.tokenized import TokenizedEmbedder, load_tokenizer
from memreader.errors import ConfigError, EmbeddingError

__all__ = ["StaticEmbedder"]

#: The ``max_input_tokens`` a static embedder reports: it has no length limit, and ``embed``
#: and ``embed_fragments`` never cut a text.
MAX_INPUT_TOKENS = 1_000_000


def _read_vectors(model_dir: Path, name: str, auto_build: bool, model_path: str | None) -> Any:
    """The checked vectors of the static model of ``model_dir``, distilled if missing."""
    import numpy as np

    path = static_vectors_path(model_dir, name)
    data = read_cached(
        path,
        lambda: build_static_model(model_path),
        auto_build,
        f"static model of {name}",
        STATIC_BUILD_HINT,
    )
    try:
        vectors = np.load(io.BytesIO(data), allow_pickle=False)
    except ValueError as e:  # pragma: no cover - a file that matches its manifest loads
        raise EmbeddingError(
            f"cannot load the static model {str(path)!r}: {e}; "
            f"rebuild it with `{STATIC_BUILD_HINT}`"
        ) from e
    if vectors.ndim != 2 or vectors.dtype != np.float32:
        raise EmbeddingError(
            f"the static model {str(path)!r} has shape {vectors.shape} and type "
            f"{vectors.dtype}, not a float32 matrix; rebuild it with `{STATIC_BUILD_HINT}`"
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
        path = static_vectors_path(model_dir, name)
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
                f"rebuild it with `{STATIC_BUILD_HINT}`"
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

    def embed_fragments(self, texts: Sequence[Sequence[str]]) -> list[list[float]]:
        """One vector per text, each text given as its consecutive fragments: the vector of
        ``"".join(fragments)``. A static model reads any length, so texts are never split, the
        fragments are simply joined, and each text is tokenised once (all texts of a call in one
        batch, on the tokenizer's threads)."""
        joined: list[str] = []
        for i, fragments in enumerate(texts):
            if isinstance(fragments, str):
                raise TypeError(
                    f"embed_fragments() takes a list of fragments per text; item {i} is a str"
                )
            joined.append("".join(self._check_texts(fragments)))
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
