"""Constants the tests share (not fixtures: those live in the conftest.py files): the hash
embedder's config, the call info every read takes, and the data shipped with the repository.

Test modules import these from here, never from ``tests.conftest`` or from another test module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["DATA", "HASH_EMBEDDER", "INFO", "MEMORYBANK", "MEMORYBANK_CN", "MEMORYBANK_EN", "ROOT"]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"  # shipped with the repository: tests never look outside the checkout
MEMORYBANK = DATA / "memorybank"
MEMORYBANK_EN = MEMORYBANK / "memory_bank_en.json"
MEMORYBANK_CN = MEMORYBANK / "memory_bank_cn.json"

#: memreader's deterministic test embedder (:class:`memreader.testing.HashEmbedder`), built
#: through the real registry, so reader tests take the local model's build path without it.
HASH_EMBEDDER: dict[str, Any] = {"backend": "hash", "config": {}}

INFO = {"user_id": "u1", "session_id": "s1"}
