"""What the memory store tests share: items built by hand and raw SQL on a store's database.
The fixtures that run one test on both backends are in this folder's conftest.py."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import datetime, timezone
from typing import Any

from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata

T0 = datetime(2026, 1, 10, 12, 0, tzinfo=timezone.utc)

#: The PostgreSQL tables and their SQLite names (the columns are the same).
_SQLITE_TABLES = {
    "memreader_memories": "memories",
    "memreader_history": "history",
    "memreader_keys": "memory_keys",
    "memreader_passages": "memory_passages",
}


def item(
    item_id: str,
    text: str,
    *,
    user: str = "u1",
    session: str = "s1",
    doc: str | None = None,
    message: str | None = None,
    at: datetime | None = None,
    vector: list[float] | None = None,
    model: str | None = None,
    memory_type: str = "LongTermMemory",
) -> TextualMemoryItem:
    """A memory item citing one source (the whole text of message 0)."""
    source = SourceMessage(
        scene_index=0,
        message_index=0,
        span=(0, len(text)),
        content=text,
        doc_path=doc,
        message_id=message,
        timestamp=at,
    )
    meta = TextualMemoryItemMetadata(
        user_id=user,
        session_id=session,
        memory_type=memory_type,
        sources=[source],
        embedding=vector,
        embedding_model=model,
    )
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)


def events(result: list[Any]) -> list[tuple[str, str]]:
    return [(e.event, e.memory_id) for e in result]


def sql(url: str, query: str, *params: Any) -> list[tuple[Any, ...]]:
    """Rows of ``query`` on the store's database (none for a statement without a result).
    The query is PostgreSQL's (``%s`` parameters, ``memreader_*`` tables); on a SQLite store
    it runs with SQLite's names."""
    if url.startswith("sqlite:///"):
        for table, name in _SQLITE_TABLES.items():
            query = query.replace(table, name)
        query = query.replace("%s", "?").replace("%%", "%")
        with closing(sqlite3.connect(url.removeprefix("sqlite:///"))) as conn:
            rows = conn.execute(query, params).fetchall()
            conn.commit()
            return rows
    import psycopg

    with psycopg.connect(url, autocommit=True) as conn:
        cursor = conn.execute(query, params)
        return cursor.fetchall() if cursor.description is not None else []


def chat(item_id: str, lines: list[tuple[str, str]], *, user: str = "u1") -> TextualMemoryItem:
    """A window of a chat: ``role: [9:00]: content`` lines, one source per message."""
    text, sources = "", []
    for index, (role, content) in enumerate(lines):
        if text:
            text += "\n"
        text += f"{role}: [9:{index:02d}]: {content}"
        sources.append(
            SourceMessage(
                scene_index=0, message_index=index, span=(0, len(content)), content=content
            )
        )
    meta = TextualMemoryItemMetadata(user_id=user, session_id="s1", sources=sources)
    return TextualMemoryItem(id=item_id, memory=text, metadata=meta)
