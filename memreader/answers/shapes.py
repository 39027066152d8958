"""What the MCP tools and the framework adapters answer, as JSON-ready dicts a model reads
easily: a memory's text, id, status and times, and where it came from (each source's
conversation or document, message, speaker, time, character span and the quoted text), bounded
(:mod:`memreader.answers.sizes`).

The same values the HTTP service answers (:mod:`memreader.stores.shapes`), fewer of them: no
vectors, hashes or store internals, which only cost a model's context.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from memreader.answers.sizes import (
    MAX_LISTED,
    MAX_MEMORY_CHARS,
    MAX_QUOTE_CHARS,
    MAX_SOURCES,
    clipped,
)
from memreader.items import SourceMessage
from memreader.steps.report import ReadReport
from memreader.stores import HistoryEntry, SearchHit, StoredCategory, WriteEvent
from memreader.stores.records import StoredMemory
from memreader.stores.shapes import iso

__all__ = [
    "category_json",
    "entry_json",
    "event_json",
    "hit_json",
    "listed",
    "memory_json",
    "problems_json",
]

#: A problem's message in an answer, in characters.
_PROBLEM_CHARS = 300


def source_json(source: SourceMessage) -> dict[str, Any]:
    """Where part of a memory came from (``None`` fields left out)."""
    shown: dict[str, Any] = {
        "type": source.type,
        "role": source.role,
        "name": source.name,
        "chat_time": source.chat_time,
        "message_id": source.message_id,
        "scene_index": source.scene_index,
        "message_index": source.message_index,
        "part_index": source.part_index,
        "span": list(source.span) if source.span is not None else None,
        "doc_path": source.doc_path,
        "heading": source.heading,
        "quote": clipped(source.content, MAX_QUOTE_CHARS) if source.content else None,
    }
    return {key: value for key, value in shown.items() if value is not None}


def memory_json(memory: StoredMemory) -> dict[str, Any]:
    """One stored memory: its text (clipped at :data:`MAX_MEMORY_CHARS`), status, times and
    its first :data:`MAX_SOURCES` sources (``sources_total`` counts them all)."""
    meta = memory.item.metadata
    sources = list(meta.sources)
    shown: dict[str, Any] = {
        "id": memory.id,
        "memory": clipped(memory.item.memory, MAX_MEMORY_CHARS),
        "status": memory.status,
        "memory_type": meta.memory_type.value,
        "session_id": meta.session_id,
        "agent_id": meta.agent_id,
        "task_id": meta.task_id,
        "visibility": meta.visibility,
        "valid_from": iso(memory.valid_from),
        "recorded_at": iso(memory.recorded_at),
        "superseded_by": memory.superseded_by,
        "importance": memory.importance,
        "sources": [source_json(source) for source in sources[:MAX_SOURCES]],
        "sources_total": len(sources),
    }
    return {key: value for key, value in shown.items() if value is not None}


def hit_json(hit: SearchHit) -> dict[str, Any]:
    """A recall hit: the memory and its score (``final``, 0..1, and the parts it is made of)."""
    score = hit.score
    return {
        **memory_json(hit.memory),
        "score": round(score.final, 4),
        "score_parts": {
            "similarity": score.similarity,
            "text_rank": score.text_rank,
            "importance": score.importance,
            "decay": score.decay,
        },
        **_reranked(hit),
    }


def _reranked(hit: SearchHit) -> dict[str, Any]:
    """How a rerank placed ``hit``: its LLM ``rerank`` rank, and ``rerank_fallback`` when the
    store's order stood (nothing when no rerank was asked)."""
    if hit.rerank is None:
        return {}
    shown: dict[str, Any] = {"rerank": hit.rerank.rank}
    if hit.rerank.fallback:
        shown["rerank_fallback"] = hit.rerank.fallback
    return shown


def event_json(event: WriteEvent, memory: str | None = None) -> dict[str, Any]:
    """What a call did to one memory: ``ADD``, ``REINFORCE``, ``NONE`` (already known),
    ``UPDATE``, ``SUPERSEDE``, ``EXPIRE``, ...; with the memory's text when known."""
    shown: dict[str, Any] = {
        "event": event.event,
        "memory_id": event.memory_id,
        "previous_id": event.previous_id,
        "reason": event.reason or None,
        "memory": clipped(memory, MAX_MEMORY_CHARS) if memory else None,
    }
    return {key: value for key, value in shown.items() if value is not None}


def entry_json(entry: HistoryEntry) -> dict[str, Any]:
    """One change of a memory, oldest first."""
    return {
        "event": entry.event,
        "at": iso(entry.at),
        "reason": entry.reason,
        "old_memory": clipped(entry.old_memory, MAX_MEMORY_CHARS) if entry.old_memory else None,
        "new_memory": clipped(entry.new_memory, MAX_MEMORY_CHARS) if entry.new_memory else None,
    }


def category_json(category: StoredCategory, resource: str | None) -> dict[str, Any]:
    """A category: its name, description, summary, how many active memories it holds and the
    URI of its Markdown file (``None`` when it has none yet)."""
    shown: dict[str, Any] = {
        "name": category.name,
        "description": category.description,
        "summary": clipped(category.summary, MAX_MEMORY_CHARS) or None,
        "memories": len(set(category.item_ids)),
        "resource": resource,
    }
    return {key: value for key, value in shown.items() if value is not None}


def listed(name: str, values: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """``{name: the first MAX_LISTED values, name_total: how many there are}``."""
    return {name: list(values[:MAX_LISTED]), f"{name}_total": len(values)}


def problems_json(report: ReadReport) -> list[dict[str, Any]]:
    """What did not go as asked in a read (nothing is dropped silently): each part that could
    not be read or was kept as a placeholder, each window that fell back, failed or was left
    without a vector."""
    problems: list[dict[str, Any]] = []
    for part in report.parts:
        if part.status in ("error", "unsupported", "fallback"):
            why = part.error or part.detail
            shown = {
                "message_index": part.message_index,
                "part_index": part.part_index,
                "type": part.type,
                "status": part.status,
                "error_type": part.error_type,
                "error": clipped(why, _PROBLEM_CHARS) if why else None,
            }
            problems.append({key: value for key, value in shown.items() if value is not None})
    for window in report.windows:
        if window.status != "ok" or window.embedding_error:
            why = window.error or window.fallback_reason or window.embedding_error
            shown = {
                "window_index": window.window_index,
                "status": window.status if window.status != "ok" else "no vector",
                "error": clipped(why, _PROBLEM_CHARS) if why else None,
            }
            problems.append({key: value for key, value in shown.items() if value is not None})
    return problems
