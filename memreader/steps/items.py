"""Building memory items: deterministic ids, content hashes, the item of a window or part
(with when its fact began to hold), and fine mode's items from a window's outcome."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from memreader.extraction import WindowOutcome
from memreader.extraction.importance import Importance, heuristic_importance, source_importance
from memreader.items import MemoryType, SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.modes import FALLBACK_TAG_PREFIX
from memreader.scopes import SCOPE_KEYS, info_scope
from memreader.steps.report import WindowReport

# Namespace for item ids: uuid5 over the item's owner, position and content.
ITEM_NAMESPACE = uuid.UUID("6d656d72-6561-6465-7200-000000000001")
_RESERVED_INFO = frozenset({"user_id", "session_id"}) | SCOPE_KEYS


def item_id(*parts: object) -> str:
    """A deterministic UUID from ``parts`` (owner, scene, window, mode and a content hash)."""
    return str(uuid.uuid5(ITEM_NAMESPACE, json.dumps(parts, ensure_ascii=False, default=str)))


def content_hash(text: str) -> str:
    """Short sha256 of ``text`` used inside ids."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def memory_type_for(sources: Iterable[SourceMessage]) -> MemoryType:
    """``UserMemory`` when every source is the user's, else ``LongTermMemory``."""
    roles = {s.role for s in sources}
    return MemoryType.USER if roles == {"user"} else MemoryType.LONG_TERM


def caller_info(info: Mapping[str, Any]) -> dict[str, Any]:
    """The caller's extra ``info`` keys, which items carry in ``metadata.info``."""
    return {k: v for k, v in info.items() if k not in _RESERVED_INFO}


def valid_from_for(
    sources: Iterable[SourceMessage], stated: datetime | None = None
) -> datetime | None:
    """When an item's fact began to hold: ``stated`` (the date the model resolved) where given,
    else the earliest ``timestamp`` among ``sources``; ``None`` when neither is known.

    Items are timezone-aware: a naive ``stated`` time takes the zone of the earliest source
    that has one, and a naive time with no zone to take (a chat time written without one) is
    read as UTC, as the stores read it; the time itself is never changed.
    """
    times = [s.timestamp for s in sources if s.timestamp is not None]
    if stated is not None:
        if stated.tzinfo is not None:
            return stated
        zoned = [t for t in times if t.tzinfo is not None]
        return stated.replace(tzinfo=min(zoned).tzinfo if zoned else timezone.utc)
    if not times:
        return None
    return min(t if t.tzinfo is not None else t.replace(tzinfo=timezone.utc) for t in times)


def make_item(
    *,
    memory: str,
    info: Mapping[str, Any],
    sources: list[SourceMessage],
    memory_type: MemoryType,
    tags: list[str],
    id_parts: Sequence[object],
    key: str | None = None,
    background: str = "",
    confidence: float | None = None,
    embedding: list[float] | None = None,
    importance: Importance | None = None,
    valid_from: datetime | None = None,
) -> TextualMemoryItem:
    """Build one item; its id derives from ``id_parts`` and the memory text (never from its
    importance or time). ``valid_from``: see :func:`valid_from_for`."""
    scope = info_scope(info)
    # A scoped item's id also names its scope (an unscoped one's is as before): the same text
    # read in two tasks is two memories, not one id claimed by both.
    scope_part = [sorted(scope.items())] if scope else []
    return TextualMemoryItem(
        id=item_id(
            info["user_id"], info["session_id"], *id_parts, *scope_part, content_hash(memory)
        ),
        memory=memory,
        metadata=TextualMemoryItemMetadata(
            user_id=info["user_id"],
            session_id=info["session_id"],
            **scope,
            memory_type=memory_type,
            key=key,
            tags=tags,
            sources=sources,
            embedding=embedding,
            background=background,
            confidence=confidence,
            info=caller_info(info),
            file_ids=sorted({s.doc_path for s in sources if s.doc_path}),
            importance=importance.score if importance is not None else None,
            importance_reason=importance.reason if importance is not None else None,
            valid_from=valid_from_for(sources, valid_from),
        ),
    )


def _unique(tags: Sequence[str]) -> list[str]:
    return list(dict.fromkeys(tags))


def _report_passes(outcome: WindowOutcome, report: WindowReport) -> None:
    """What the filter and rewrite did to a window, and whether its answer was cut, in its
    report."""
    report.filter_status, report.filter_dropped = outcome.filter.status, outcome.filter.changed
    report.rewrite_status, report.rewrite_changed = outcome.rewrite.status, outcome.rewrite.changed
    report.pass_errors = [e for e in (outcome.filter.error, outcome.rewrite.error) if e]
    report.truncated = outcome.truncated
    report.memories_over_limit = outcome.over_limit


def fine_window_items(
    outcome: WindowOutcome,
    sources: Sequence[SourceMessage],
    *,
    memory_text: str,
    info: Mapping[str, Any],
    custom_tags: Sequence[str],
    id_base: Sequence[object],
    keep_empty: bool,
    report: WindowReport,
) -> list[TextualMemoryItem]:
    """The items of one window (not yet embedded), and its report filled in.

    ``sources[i]`` is the source of the line numbered ``i + 1`` in the prompt. Importance: the
    model's, else :mod:`memreader.extraction.importance`'s heuristic (a fallback's: its lines').
    Categories: the model's (the ``categorize`` step fills in the others).
    """
    _report_passes(outcome, report)
    reason = outcome.fallback_reason
    if outcome.memories is not None and not outcome.memories:
        if outcome.truncated:
            # Cut off before its first complete memory (after every re-ask): not an empty
            # window, a failed one; the raw window stands in.
            reason = "truncated"
        elif not keep_empty:
            report.status = "empty"
            report.uncited_messages = sorted({s.message_index for s in sources})
            return []
        else:
            reason = "empty"
    if reason is not None:
        report.status, report.fallback_reason, report.error = "fallback", reason, outcome.error
        item = make_item(
            memory=memory_text,
            info=info,
            sources=list(sources),
            memory_type=memory_type_for(sources),
            tags=_unique(["mode:fine", f"{FALLBACK_TAG_PREFIX}{reason}", *custom_tags]),
            id_parts=(*id_base, "fallback"),
            background=outcome.summary,
            importance=source_importance(sources),
        )
        report.items = 1
        return [item]
    assert outcome.memories is not None
    items = []
    cited: set[int] = set()
    whole_window = False
    for k, memory in enumerate(outcome.memories):
        own = [sources[i - 1] for i in memory.source_ids]
        tags = ["mode:fine", *memory.tags, *custom_tags, *(f"repaired:{r}" for r in memory.repairs)]
        if not own:
            # The model cited nothing usable: the whole window is the honest provenance.
            own = list(sources)
            tags.append("sources:window")
            whole_window = True
        cited.update(memory.source_ids)
        items.append(
            make_item(
                memory=memory.value,
                info=info,
                sources=own,
                memory_type=memory.memory_type,
                tags=_unique(tags),
                id_parts=(*id_base, k),
                key=memory.key,
                background=outcome.summary,
                importance=memory.importance or heuristic_importance(memory.value),
                valid_from=memory.valid_from,
            )
        )
        # The model's categories (names its prompt offered); the categorize step fills the rest.
        items[-1].metadata.categories = list(memory.categories)
    if not whole_window:
        # A message split over several lines counts as cited when any of its lines is.
        cited_messages = {sources[i - 1].message_index for i in cited}
        report.uncited_messages = sorted({s.message_index for s in sources} - cited_messages)
    report.items = len(items)
    return items
