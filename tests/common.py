"""Constants and small helpers the tests share (not fixtures: those live in the conftest.py
files): the hash embedder's config, the call info every read takes, the data shipped with the
repository, and a way to make a deadline pass right after a given call ran.

Test modules import these from here, never from ``tests.conftest`` or from another test module.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = [
    "DATA",
    "HASH_EMBEDDER",
    "HASH_MEMORY",
    "INFO",
    "MEMORYBANK",
    "MEMORYBANK_CN",
    "MEMORYBANK_EN",
    "ROOT",
    "over_after",
]

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT / "data"  # shipped with the repository: tests never look outside the checkout
MEMORYBANK = DATA / "memorybank"
MEMORYBANK_EN = MEMORYBANK / "memory_bank_en.json"
MEMORYBANK_CN = MEMORYBANK / "memory_bank_cn.json"

#: memreader's deterministic test embedder (:class:`memreader.testing.HashEmbedder`), built
#: through the real registry, so reader tests take the local model's build path without it.
HASH_EMBEDDER: dict[str, Any] = {"backend": "hash", "config": {}}
#: The config of a ``Memory`` on that embedder (``Memory(HASH_MEMORY, store=...)``), offline.
HASH_MEMORY: dict[str, Any] = {"config": {"embedder": {"backend": "hash"}}}

INFO = {"user_id": "u1", "session_id": "s1"}


def over_after(target: Any, name: str) -> list[int]:
    """Make ``target.name`` cancel the deadline of the call it serves right after it ran (time
    is up then, with no clock involved); the list grows by one each time it runs."""
    from memreader.front.call_deadline import current

    plain = getattr(target, name)
    ran: list[int] = []

    def over(*args: Any, **kwargs: Any) -> Any:
        result = plain(*args, **kwargs)
        ran.append(1)
        deadline = current()
        assert deadline is not None, "the call's deadline reaches the wrapped call"
        deadline.cancel()
        return result

    setattr(target, name, over)
    return ran
