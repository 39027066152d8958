"""Memories and hits for the ``context()`` tests (tests/stores/test_context*.py): a fast chat
window as a store keeps it, a search hit of it, and the tokenizer the blocks are counted with."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime, timezone

from memreader.items import TextualMemoryItem
from memreader.retrieval.passages import PassageHit
from memreader.stores import SearchHit, StoredMemory
from memreader.stores.scoring import ScoreParts
from memreader.windowing.parsers import line_prefix
from memreader.windowing.tokens import get_tokenizer

UTC = timezone.utc
TOKENIZER = get_tokenizer("cl100k_base")
Message = tuple[str, str]  # role, content


def chat_memory(
    memory_id: str,
    messages: Sequence[Message],
    *,
    session: str = "s1",
    first: int = 0,
    day: int = 1,
    status: str = "active",
    names: Sequence[str] | None = None,
) -> StoredMemory:
    """A fast chat window as a store keeps it: ``role: [time]: content`` lines (``role (name):
    [time]: content`` with ``names``, one per message), one source per message (message
    numbers from ``first``), chat times on May ``day``, 2023."""
    lines, sources = [], []
    for n, (role, content) in enumerate(messages):
        hour = 8 + (first + n) % 10
        time = f"{hour}:00 am on {day} May, 2023"
        name = names[n] if names else None
        lines.append(line_prefix(role, time, name) + content)
        sources.append(
            {
                "role": role,
                "name": name,
                "chat_time": time,
                "timestamp": datetime(2023, 5, day, hour),
                "scene_index": 0,
                "message_index": first + n,
                "content": content,
                "span": [0, len(content)],
            }
        )
    item = TextualMemoryItem.model_validate(
        {
            "id": memory_id,
            "memory": "\n".join(lines),
            "metadata": {"user_id": "u", "session_id": session, "sources": sources},
        }
    )
    return StoredMemory(
        item=item,
        status=status,  # type: ignore[arg-type]
        content_hash=f"hash-{memory_id}",
        recorded_at=datetime(2024, 1, 1, tzinfo=UTC),
        valid_from=datetime(2023, 5, day, 9, tzinfo=UTC),
    )


def fact_memory(memory_id: str, text: str, *, session: str = "s1", day: int = 1) -> StoredMemory:
    """A memory that is no chat window (an extracted fact, a note): its text, no source."""
    item = TextualMemoryItem.model_validate(
        {"id": memory_id, "memory": text, "metadata": {"user_id": "u", "session_id": session}}
    )
    return StoredMemory(
        item=item,
        status="active",
        content_hash=f"hash-{memory_id}",
        recorded_at=datetime(2024, 1, 1, tzinfo=UTC),
        valid_from=datetime(2023, 5, day, 9, tzinfo=UTC),
    )


def hit(
    memory: StoredMemory, relevance: float = 1.0, passages: Sequence[PassageHit] = ()
) -> SearchHit:
    score = ScoreParts(
        final=relevance,
        fused=0.03 * relevance,
        similarity=None,
        text_rank=1,
        importance=0.5,
        decay=1.0,
        relevance=relevance,
    )
    return SearchHit(memory, score, tuple(passages))
