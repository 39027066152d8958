"""Shared fixtures. ``hash`` is memreader's deterministic test embedder
(:class:`memreader.testing.HashEmbedder`, registered through the real registry), so reader tests
exercise the same build path as the local model without loading it."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from memreader import MemReaderFactory, SimpleStructMemReader, SimpleStructMemReaderConfig
from memreader.testing import HashEmbedder, HashEmbedderConfig

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"  # shipped with the repository: tests never look outside the checkout
MEMORYBANK = DATA / "memorybank"
MEMORYBANK_EN = MEMORYBANK / "memory_bank_en.json"
MEMORYBANK_CN = MEMORYBANK / "memory_bank_cn.json"

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")


__all__ = ["HASH_EMBEDDER", "INFO", "HashEmbedder", "HashEmbedderConfig"]

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
