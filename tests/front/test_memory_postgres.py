"""``Memory(store="postgresql://...")``: the same front door on the PostgreSQL store."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from memreader import Memory


def test_memory_on_postgresql(pg_url: str, fast_config: dict[str, Any], home: Path) -> None:
    with Memory(fast_config, store=pg_url) as m:
        assert m.store_url == pg_url and not home.exists()
        result = m.add("I live in Porto.", user_id="ana")
        assert result.counts == {"ADD": 1}
        assert m.add("I live in Porto.", user_id="ana").counts == {"NONE": 1}
        hits = m.search("Porto", user_id="ana", mode="vector")
        assert [h.memory.id for h in hits] == [result.items[0].id]
        event = m.add_memory("Ana is vegetarian.", user_id="ana")
        assert m.delete(event.memory_id, user_id="ana", erase=True).erased == (event.memory_id,)
        assert m.categories("ana")
        assert [e.event for e in m.forget(f"session:{result.session_id}", user_id="ana")] == [
            "EXPIRE"
        ]
