"""Embedders: the local ONNX model and its static distillation, sentence-transformers,
OpenAI-compatible endpoints, Ollama.

Build one from config with :func:`build_embedder`; wrap it in :class:`CachedEmbedder` to skip
texts embedded before. Long texts are split at token boundaries and pooled, never truncated
(see :mod:`memreader.embedders.base`). Importing this package does not import torch,
sentence-transformers, onnxruntime, openai or ollama; backends import them when built.
"""

from memreader.embedders.backends import EMBEDDERS, register_embedder
from memreader.embedders.base import Embedder, PoolingEmbedder, build_embedder
from memreader.embedders.cache import CachedEmbedder, EmbeddingCache, cache_key
from memreader.embedders.config import (
    EmbedderConfig,
    LocalEmbedderConfig,
    OllamaEmbedderConfig,
    OpenAIEmbedderConfig,
    SentenceTransformersEmbedderConfig,
    StaticEmbedderConfig,
)
from memreader.embedders.local import LocalEmbedder
from memreader.embedders.ollama_client import OllamaEmbedder
from memreader.embedders.openai_compat import OpenAIEmbedder
from memreader.embedders.pieces import TextPiece, split_by_tokens, weighted_mean
from memreader.embedders.remote import RemoteEmbedder
from memreader.embedders.sentence_transformers_backend import SentenceTransformersEmbedder
from memreader.embedders.static import StaticEmbedder
from memreader.embedders.static_distill import build_static_model
from memreader.embedders.tokenized import TokenizedEmbedder

__all__ = [
    "EMBEDDERS",
    "CachedEmbedder",
    "Embedder",
    "EmbedderConfig",
    "EmbeddingCache",
    "LocalEmbedder",
    "LocalEmbedderConfig",
    "OllamaEmbedder",
    "OllamaEmbedderConfig",
    "OpenAIEmbedder",
    "OpenAIEmbedderConfig",
    "PoolingEmbedder",
    "RemoteEmbedder",
    "SentenceTransformersEmbedder",
    "SentenceTransformersEmbedderConfig",
    "StaticEmbedder",
    "StaticEmbedderConfig",
    "TextPiece",
    "TokenizedEmbedder",
    "build_embedder",
    "build_static_model",
    "cache_key",
    "register_embedder",
    "split_by_tokens",
    "weighted_mean",
]
