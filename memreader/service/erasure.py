"""What an erase over HTTP reaches beyond the store: the service's kept ``Idempotency-Key``
answers (:meth:`~memreader.service.state.ServiceState.erased`). Before a memory is erased its
id, its text and its sources' words are gathered here (after the erase nothing is left to
read); a kept answer holding any of them is withdrawn (a retry of it gets 410), and the state
file's write-ahead log is truncated so the old bytes leave the disk.

>>> erased_texts(None, "m1", "u1")
['m1']
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memreader.front.memory import Memory
from memreader.stores import WriteEvent

__all__ = ["erased_texts", "forgotten_texts"]


def erased_texts(memory: Memory | None, memory_id: str, owner: str) -> list[str]:
    """The id of ``owner``'s memory ``memory_id``, its text, its sources' words and the
    texts its history holds of it (read before it is erased; not a use)."""
    texts = [memory_id]
    found = memory.get(memory_id, user_id=owner, used=False) if memory is not None else None
    if found is None or memory is None:
        return texts
    texts += _memory_texts(found)
    for entry in memory.history(memory_id, user_id=owner):
        texts += [text for text in (entry.new_memory,) if text]
    return list(dict.fromkeys(texts))


def forgotten_texts(memory: Memory, events: Sequence[WriteEvent], owner: str) -> list[str]:
    """The ids of the memories a forget expired, and what of them is still readable (read
    from the store itself: the forget committed, so what it erased is withdrawn even past
    the request's deadline, which ``Memory``'s reads would honour)."""
    texts: list[str] = []
    for event in events:
        if event.event != "EXPIRE":
            continue
        texts.append(event.memory_id)
        found = memory.store.get(event.memory_id, user_id=owner)
        if found is not None:
            texts += _memory_texts(found)
    return list(dict.fromkeys(texts))


def _memory_texts(found: Any) -> list[str]:
    item = found.item
    return [item.memory, *(source.content for source in item.metadata.sources if source.content)]
