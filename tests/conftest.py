"""Shared fixtures. ``hash`` is a deterministic test embedder registered through the real
registry, so reader tests exercise the same build path as the local model without loading it."""

from __future__ import annotations

import hashlib
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from memreader import MemReaderFactory, SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.embedders import register_embedder

SHARED = Path(__file__).resolve().parents[2] / "shared"
MEMORYBANK_EN = SHARED / "data" / "memorybank" / "memory_bank_en.json"
MEMORYBANK_CN = SHARED / "data" / "memorybank" / "memory_bank_cn.json"
for _path in (MEMORYBANK_EN, MEMORYBANK_CN):
    # CI clones the repo beside a copy of shared/; a local checkout has it one level up too.
    if not _path.exists():  # pragma: no cover - depends on the machine layout
        raise RuntimeError(f"test data missing: {_path}")

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


class HashEmbedderConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    dimension: int = 16


@register_embedder("hash")
class HashEmbedder:
    """Vectors from a text's sha256: identical texts, identical vectors. Counts its calls."""

    config_class = HashEmbedderConfig
    max_input_tokens = 100_000

    def __init__(self, config: HashEmbedderConfig) -> None:
        self.dimension = config.dimension
        self.name = f"hash:{config.dimension}"
        self.batch_size = 64
        self.calls: list[list[str]] = []

    def count_tokens(self, text: str) -> int:
        return len(text.split())

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        out = []
        for text in texts:
            digest = hashlib.sha256(text.encode()).digest()
            vector = [b - 127.5 for b in digest[: self.dimension]]
            norm = math.sqrt(sum(x * x for x in vector))
            out.append([x / norm for x in vector])
        return out


HASH_EMBEDDER: dict[str, Any] = {"backend": "hash", "config": {}}


@pytest.fixture
def reader() -> SimpleStructMemReader:
    """A reader with the hash embedder and small windows."""
    config = SimpleStructMemReaderConfig(
        embedder=HASH_EMBEDDER, window={"max_tokens": 256, "overlap_tokens": 32}
    )
    return SimpleStructMemReader(config)


@pytest.fixture(autouse=True)
def _fresh_factory() -> Any:
    yield
    MemReaderFactory.clear_cache()


INFO = {"user_id": "u1", "session_id": "s1"}
