"""What ``memreader read`` and ``memreader search`` print for a person: each memory's text, its
type, and where it came from (session, message or document), never its vector.

The machine form is ``--json`` (and ``read -o``); this one is for reading on a terminal.

Example:
    >>> from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata
    >>> meta = TextualMemoryItemMetadata(user_id="ana", session_id="s1", sources=[
    ...     SourceMessage(scene_index=0, message_index=2, message_id="m3")])
    >>> sources_text(meta)
    'session s1: message m3'
"""

from __future__ import annotations

from typing import IO, TYPE_CHECKING

from memreader.scenes.clipping import one_line

if TYPE_CHECKING:
    from memreader.items import SourceMessage, TextualMemoryItem, TextualMemoryItemMetadata

__all__ = ["item_summary", "source_text", "sources_text"]

# Sources named per item: an item made of a long window names its first few and counts the rest.
_SOURCES_SHOWN = 4


def source_text(source: SourceMessage, scene_offset: int = 0) -> str:
    """One source, as a person looks it up: a document (and its chunk), a message id, or the
    message's place in the input (scenes counted from ``scene_offset``)."""
    if source.doc_path:
        chunk = source.chunk_index
        if chunk is not None and source.chunk_count:
            return f"{source.doc_path} (chunk {chunk + 1} of {source.chunk_count})"
        return source.doc_path
    if source.message_id:
        return f"message {source.message_id}"
    return f"scene {source.scene_index + scene_offset}, message {source.message_index}"


def sources_text(meta: TextualMemoryItemMetadata, scene_offset: int = 0) -> str:
    """The session and the first sources of an item, e.g. ``session s1: message m3; scene 0,
    messages 1-4`` (messages without an id grouped by scene)."""
    names: list[str] = []
    by_scene: dict[int, list[int]] = {}
    for source in meta.sources:
        if source.doc_path or source.message_id:
            names.append(source_text(source, scene_offset))
        else:
            by_scene.setdefault(source.scene_index + scene_offset, []).append(source.message_index)
    names += [f"scene {scene}, {_messages(indexes)}" for scene, indexes in by_scene.items()]
    names = list(dict.fromkeys(names))
    shown = "; ".join(names[:_SOURCES_SHOWN]) or "no source"
    more = len(names) - _SOURCES_SHOWN
    return f"session {meta.session_id}: " + shown + (f" (+{more} more)" if more > 0 else "")


def _messages(indexes: list[int]) -> str:
    """``message 3``, ``messages 0-3`` (a run) or ``messages 0, 2, 5``."""
    unique = sorted(set(indexes))
    if len(unique) == 1:
        return f"message {unique[0]}"
    if unique[-1] - unique[0] == len(unique) - 1:
        return f"messages {unique[0]}-{unique[-1]}"
    return "messages " + ", ".join(map(str, unique))


def item_summary(out: IO[str], item: TextualMemoryItem, rank: int, scene_offset: int = 0) -> None:
    """Write ``item`` as two lines: its rank, type and text; then its sources."""
    meta = item.metadata
    out.write(f"{rank}. [{meta.memory_type.value}] {one_line(item.memory, 200)}\n")
    out.write(f"   {sources_text(meta, scene_offset)}\n")
