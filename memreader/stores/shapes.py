"""Stored memories, search hits, history entries and write events as JSON-ready dicts: the
shapes the CLI's ``--json`` and the HTTP service answer with."""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from datetime import datetime
from functools import partial
from typing import Any

from pydantic_core import to_json

from memreader.stores.base import HistoryEntry, SearchHit
from memreader.stores.borrowed import HEADS, borrowing
from memreader.stores.events import WriteEvent
from memreader.stores.records import StoredMemory
from memreader.stores.scoring import ScoreParts

__all__ = [
    "entry_json",
    "event_json",
    "hit_json",
    "hits_body",
    "iso",
    "memory_json",
    "score_json",
]

#: What :func:`memory_json` leaves out of the item unless asked for the vector.
_NO_EMBEDDING = {"metadata": {"embedding"}}


def iso(value: datetime | None) -> str | None:
    """``value`` in ISO 8601, or ``None``."""
    return None if value is None else value.isoformat()


def memory_json(memory: StoredMemory, *, embedding: bool = False) -> dict[str, Any]:
    """A stored memory: its state in the store and the item (sources and all; the vector
    only with ``embedding``)."""
    # Left out by the serializer rather than dumped then dropped: 384 floats a memory were
    # half of a search page's encoding with the bundled model (issue 42).
    item = (
        memory.item.to_dict()
        if embedding
        else memory.item.model_dump(mode="json", exclude=_NO_EMBEDDING)
    )
    return {**_memory_state(memory), "item": item}


def _memory_state(memory: StoredMemory) -> dict[str, Any]:
    """:func:`memory_json` but its last key, ``item``."""
    meta = memory.item.metadata
    return {
        "id": memory.id,
        "memory": memory.item.memory,
        "status": memory.status,
        "user_id": meta.user_id,
        "session_id": meta.session_id,
        "agent_id": meta.agent_id,
        "task_id": meta.task_id,
        "visibility": meta.visibility,
        "memory_type": meta.memory_type.value,
        "importance": memory.importance,
        "importance_reason": memory.importance_reason,
        "valid_from": iso(memory.valid_from),
        "valid_to": iso(memory.valid_to),
        "recorded_at": iso(memory.recorded_at),
        "retired_at": iso(memory.retired_at),
        "superseded_by": memory.superseded_by,
        "reinforced": memory.reinforced,
        "content_hash": memory.content_hash,
    }


def score_json(score: ScoreParts) -> dict[str, Any]:
    """Why a hit ranked where it did."""
    return {
        "final": score.final,
        "relevance": score.relevance,
        "fused": score.fused,
        "similarity": score.similarity,
        "text_rank": score.text_rank,
        "importance": score.importance,
        "decay": score.decay,
        "passage": score.passage,
        "heat": score.heat,
    }


def hit_json(hit: SearchHit) -> dict[str, Any]:
    """A search hit: the memory, its score parts and its passages (spans of the memory's text,
    best first); a reranked one's ``rerank`` (its LLM rank, store rank and fallback)."""
    return {"memory": memory_json(hit.memory), **_hit_rest(hit)}


def _hit_rest(hit: SearchHit) -> dict[str, Any]:
    """:func:`hit_json` but its first key, ``memory``."""
    shown = {
        "score": score_json(hit.score),
        "passages": [
            {"start": p.start, "end": p.end, "score": p.score, "source_index": p.source_index}
            for p in hit.passages
        ],
    }
    if hit.rerank is not None:  # only a reranked search says how the LLM placed each hit
        shown["rerank"] = dataclasses.asdict(hit.rerank)
    return shown


def hits_body(hits: Iterable[SearchHit]) -> bytes:
    """``{"hits": [hit_json(hit), ...]}`` as compact UTF-8 JSON: byte for byte what
    ``pydantic_core.to_json`` writes of it (the service's ``json_body``), made for less.

    Each item is written by its own serializer straight to JSON (``model_dump_json``) instead
    of dumped to a dict of Python values that are then encoded again: the item is most of a
    hit (its sources), so a page of hits costs about half as much.

    >>> hits_body([])
    b'{"hits":[]}'

    Raises:
        PydanticSerializationError: a value JSON has no form for (as ``to_json``).
    """
    borrowed = borrowing()
    return b'{"hits":[' + b",".join(_hit_body(hit, borrowed) for hit in hits) + b"]}"


def _hit_body(hit: SearchHit, borrowed: bool) -> bytes:
    # The dict's JSON cut open where the item goes: '{"memory":{...state,"item":ITEM},...rest}'
    # (both dicts are never empty, so their braces are where the cuts assume). A borrowed
    # memory does not change: its part is written once (memreader.stores.borrowed).
    memory = hit.memory
    head = HEADS.of(memory, partial(_memory_body, memory)) if borrowed else _memory_body(memory)
    return b'{"memory":' + head + b"," + to_json(_hit_rest(hit))[1:]


def _memory_body(memory: StoredMemory) -> bytes:
    """:func:`memory_json`'s JSON (without the vector), as ``to_json`` writes it."""
    state = to_json(_memory_state(memory))
    item = memory.item.model_dump_json(exclude=_NO_EMBEDDING).encode()
    return state[:-1] + b',"item":' + item + b"}"


def entry_json(entry: HistoryEntry) -> dict[str, Any]:
    """One change of a memory."""
    return {
        "event": entry.event,
        "at": iso(entry.at),
        "reason": entry.reason,
        "old_memory": entry.old_memory,
        "new_memory": entry.new_memory,
        "source_ids": list(entry.source_ids),
    }


def event_json(event: WriteEvent) -> dict[str, Any]:
    """What a write or a forget did to one memory."""
    return {
        "event": event.event,
        "memory_id": event.memory_id,
        "item_id": event.item_id,
        "reason": event.reason,
        "previous_id": event.previous_id,
    }
