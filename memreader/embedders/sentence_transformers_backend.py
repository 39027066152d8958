"""The sentence-transformers embedder (backend ``sentence_transformers``): ``local``'s reference.

It runs the model's torch network on the same token ids as the ``local`` ONNX backend (both are
:class:`~memreader.embedders.tokenized.TokenizedEmbedder`), so the two differ only in the runtime;
use it for models the ``local`` backend cannot build (not a plain BERT) or on a GPU.

Importing this module is cheap: torch and sentence-transformers are imported when the first
:class:`SentenceTransformersEmbedder` is built. Loaded models are shared per
``(model_path, device)`` across the process, so several readers hold one copy; forward passes
on a shared model are serialised by a lock.

Texts are tokenised with an independent copy of the model's fast tokenizer, with truncation and
padding switched off, so counts and split points are exact wordpiece positions.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from memreader.embedders.backends import register_embedder
from memreader.embedders.config import SentenceTransformersEmbedderConfig
from memreader.embedders.languages import LATIN
from memreader.embedders.model_files import resolve_model
from memreader.embedders.tokenized import TokenizedEmbedder
from memreader.errors import ConfigError, EmbeddingError

__all__ = ["LoadedModel", "SentenceTransformersEmbedder", "load_model"]

logger = logging.getLogger(__name__)

_INSTALL_HINT = (
    "the sentence_transformers embedder needs sentence-transformers and torch: "
    "pip install sentence-transformers (install torch==2.13.0 first to get the CPU build)"
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


@register_embedder("sentence_transformers")
class SentenceTransformersEmbedder(TokenizedEmbedder):
    """Embeds with a sentence-transformers model in this process (default: all-MiniLM-L6-v2).

    ``name`` is ``"local:<model dir name>"`` (``":unnormalized"`` appended when ``normalize`` is
    off), as for the ``local`` backend in fp32, whose vectors are the same; ``max_input_tokens``
    is the model's ``max_seq_length`` unless configured lower.
    """

    config_class = SentenceTransformersEmbedderConfig

    def __init__(self, config: SentenceTransformersEmbedderConfig | None = None) -> None:
        config = config if config is not None else SentenceTransformersEmbedderConfig()
        model_dir, model_name = resolve_model(config.model_path)
        path = str(model_dir)
        loaded = load_model(path, config.device)
        limit = loaded.max_seq_length
        if config.max_input_tokens is not None:
            if config.max_input_tokens > limit:
                raise ConfigError(
                    "invalid config for embedder backend 'sentence_transformers': field "
                    f"'max_input_tokens': {config.max_input_tokens} exceeds the model's "
                    f"max_seq_length {limit}"
                )
            limit = config.max_input_tokens
        super().__init__(
            tokenizer=loaded.tokenizer,
            name=f"local:{model_name}" + ("" if config.normalize else ":unnormalized"),
            max_input_tokens=limit,
            batch_size=config.batch_size,
            normalize=config.normalize,
            dimension=loaded.dimension,
        )
        self.config = config
        self.model_path = path
        self._loaded = loaded
        self.scripts = LATIN if config.model_path is None else None

    @property
    def model(self) -> Any:
        """The shared ``SentenceTransformer`` instance."""
        return self._loaded.model

    def _embed_ids(self, batch: list[list[int]]) -> Any:
        import torch

        longest = max(len(ids) for ids in batch)
        input_ids = torch.zeros((len(batch), longest), dtype=torch.long)
        mask = torch.zeros((len(batch), longest), dtype=torch.long)
        for row, ids in enumerate(batch):
            input_ids[row, : len(ids)] = torch.tensor(ids, dtype=torch.long)
            mask[row, : len(ids)] = 1
        model = self._loaded.model
        features = {
            "input_ids": input_ids.to(model.device),
            "attention_mask": mask.to(model.device),
            "token_type_ids": torch.zeros_like(input_ids).to(model.device),
        }
        with self._loaded.lock, torch.inference_mode():
            output = model(features)["sentence_embedding"]
        return output.float().cpu().numpy()
