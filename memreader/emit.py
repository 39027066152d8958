"""Emitting items: sources from window segments, deterministic ids, item construction (with
when each item's fact began to hold), and fine mode's items from a window's outcome."""

from __future__ import annotations

import hashlib
import itertools
import json
import uuid
from collections.abc import Iterable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from memreader.documents.headings import HeadingIndex, heading_trail
from memreader.extraction import WindowOutcome
from memreader.extraction.importance import Importance, heuristic_importance, source_importance
from memreader.items import MemoryType, SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
from memreader.parsers import PartRef
from memreader.report import WindowReport
from memreader.scene import Scene
from memreader.windows import SEPARATOR, Segment, Unit, Window

# Namespace for item ids: uuid5 over the item's owner, position and content.
ITEM_NAMESPACE = uuid.UUID("6d656d72-6561-6465-7200-000000000001")
_RESERVED_INFO = frozenset({"user_id", "session_id"})


def item_id(*parts: object) -> str:
    """A deterministic UUID from ``parts`` (owner, scene, window, mode and a content hash)."""
    return str(uuid.uuid5(ITEM_NAMESPACE, json.dumps(parts, ensure_ascii=False, default=str)))


def content_hash(text: str) -> str:
    """Short sha256 of ``text`` used inside ids."""
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def scene_digest(scene_type: str, units: Sequence[Unit]) -> str:
    """A content digest of a scene's rendered units (its identity for item ids)."""
    digest = hashlib.sha256(scene_type.encode())
    for unit in units:
        digest.update(b"\0" + unit.prefix.encode("utf-8", "surrogatepass"))
        digest.update(b"\1" + unit.text.encode("utf-8", "surrogatepass"))
    return digest.hexdigest()[:32]


def is_document_unit(unit: Unit, scene: Scene) -> bool:
    """Whether ``unit`` is (part of) a document: every part of a doc scene, and a file read in a
    chat. Its sources carry chunk positions and heading context."""
    ref = unit.key
    if not isinstance(ref, PartRef):
        return False
    return scene.type == "doc" or (ref.part.type == "file" and ref.part.exact)


def chunk_positions(
    windows: Sequence[Window], units: Sequence[Unit], scene: Scene
) -> dict[tuple[int, int], tuple[int, int]]:
    """``(window index, unit index) -> (chunk index, chunk count)`` for every document unit:
    the windows holding part of a document are its chunks, in order."""
    touching: dict[int, list[int]] = {}
    for window in windows:
        for unit in dict.fromkeys(s.unit for s in window.segments):
            if is_document_unit(units[unit], scene):
                touching.setdefault(unit, []).append(window.index)
    return {
        (window_index, unit): (k, len(indexes))
        for unit, indexes in touching.items()
        for k, window_index in enumerate(indexes)
    }


def heading_indexes(units: Sequence[Unit], scene: Scene) -> dict[int, HeadingIndex]:
    """The Markdown heading index of each document unit that has headings."""
    indexes = {}
    for i, unit in enumerate(units):
        if "#" in unit.text and is_document_unit(unit, scene):
            index = heading_trail(unit.text)
            if index.headings:
                indexes[i] = index
    return indexes


def segment_source(
    segment: Segment,
    unit: Unit,
    scene: Scene,
    chunk: tuple[int, int] | None = None,
    headings: HeadingIndex | None = None,
) -> SourceMessage:
    """The provenance of one segment: exact span for verbatim text, a description otherwise;
    for a document, its chunk position and the headings in effect where the segment starts."""
    ref = unit.key
    assert isinstance(ref, PartRef)
    message, part = ref.message, ref.part
    if scene.type == "doc":
        source_type = "file" if part.type == "file" else "doc"
    else:
        source_type = "chat" if part.type == "text" else part.type
    exact = part.exact
    return SourceMessage(
        type=source_type,
        role=message.role,
        name=message.name,
        chat_time=message.chat_time,
        timestamp=message.timestamp,
        message_id=message.message_id,
        scene_index=scene.index,
        message_index=message.index,
        part_index=part.index,
        span=(segment.start, segment.end) if exact else None,
        content=unit.text[segment.start : segment.end] if exact else unit.text,
        doc_path=part.doc_path,
        chunk_index=chunk[0] if chunk else None,
        chunk_count=chunk[1] if chunk else None,
        heading=(headings.context(segment.start) or None) if headings is not None else None,
        transformed_by=list(unit.transforms),
    )


def window_sources(
    window: Window,
    units: Sequence[Unit],
    scene: Scene,
    chunks: Mapping[tuple[int, int], tuple[int, int]] | None = None,
    headings: Mapping[int, HeadingIndex] | None = None,
) -> list[SourceMessage]:
    """One source per segment of ``window``, in order (``chunks`` and ``headings`` from
    :func:`chunk_positions` and :func:`heading_indexes`)."""
    chunks = chunks or {}
    headings = headings or {}
    return [
        segment_source(
            s,
            units[s.unit],
            scene,
            chunks.get((window.index, s.unit)),
            headings.get(s.unit),
        )
        for s in window.segments
    ]


def window_embedding_fragments(
    windows: Sequence[Window], k: int, units: Sequence[Unit], prefixes: bool = True
) -> tuple[str, ...]:
    """What fast mode embeds for window ``k``: its text as consecutive fragments, cut where the
    overlap with the previous and the next window begins and ends.

    The fragments are ``[shared with the previous window, own lines, shared with the next window]``
    (empty ones left out), so an embedder that cuts long texts at fragment boundaries
    (:meth:`~memreader.embedders.tokenized.TokenizedEmbedder.embed_fragments`) embeds the overlap
    once for both windows. With ``prefixes`` off (fast mode's default) the lines are rendered
    without their ``role: [time]: `` prefixes (the item's memory keeps them) and the whole
    overlap is shared, a line carried in part included: its text is the end of the previous
    window's line. With ``prefixes`` on only whole carried lines are shared (a line carried in
    part gets its prefix again, so it is not the end of the previous window's text).
    """
    if not prefixes:
        return _bare_window_fragments(windows, k, units)

    def render(segment: Segment) -> str:
        return segment.line

    segments = windows[k].segments
    lines = [render(s) for s in segments]

    def shared(before: Window, after: Window) -> int:
        """How many whole lines ``after`` carries over from the end of ``before``."""
        carried = after.segments[: after.carried]
        count = 0
        for n in range(len(carried), 0, -1):
            if tuple(carried[-n:]) == tuple(before.segments[len(before.segments) - n :]):
                count = n
                break
        return count if count < len(after.segments) else 0

    head = shared(windows[k - 1], windows[k]) if k > 0 else 0
    head_start = windows[k].carried - head if head else 0
    tail = shared(windows[k], windows[k + 1]) if k + 1 < len(windows) else 0
    tail = min(tail, len(segments) - head_start - head)
    cuts = sorted({0, head_start, head_start + head, len(segments) - tail, len(segments)})
    fragments = []
    for a, b in itertools.pairwise(cuts):
        if a < b:
            text = SEPARATOR.join(lines[a:b])
            fragments.append(text if b == len(segments) else text + SEPARATOR)
    return tuple(fragments) if fragments else ("",)


def _bare_window_fragments(
    windows: Sequence[Window], k: int, units: Sequence[Unit]
) -> tuple[str, ...]:
    """``window_embedding_fragments`` without prefixes: cut at the text the previous window's end
    carries in and at the text the next window carries out (a suffix of this one's)."""

    def text_of(segments: Sequence[Segment]) -> str:
        return SEPARATOR.join(units[s.unit].text[s.start : s.end] for s in segments)

    window = windows[k]
    text = text_of(window.segments)
    head_end = 0
    if k > 0 and 0 < window.carried < len(window.segments):
        head_end = len(text_of(window.segments[: window.carried])) + len(SEPARATOR)
    tail_start = len(text)
    if k + 1 < len(windows):
        following = windows[k + 1]
        carried_out = text_of(following.segments[: following.carried])
        if 0 < following.carried < len(following.segments) and text.endswith(carried_out):
            tail_start = max(head_end, len(text) - len(carried_out))
    cuts = sorted({0, head_end, tail_start, len(text)})
    fragments = tuple(text[a:b] for a, b in itertools.pairwise(cuts) if a < b)
    return fragments or ("",)


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
    return TextualMemoryItem(
        id=item_id(info["user_id"], info["session_id"], *id_parts, content_hash(memory)),
        memory=memory,
        metadata=TextualMemoryItemMetadata(
            user_id=info["user_id"],
            session_id=info["session_id"],
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
            tags=_unique(["mode:fine", f"fallback:{reason}", *custom_tags]),
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
