"""Provenance: the sources of a window's segments (scene, message, part, chunk and heading
of every span), a scene's content digest, and what a window's items embed."""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Mapping, Sequence

from memreader.documents.headings import HeadingIndex, heading_trail
from memreader.items import SourceMessage
from memreader.scenes.scene import Scene
from memreader.windowing.parsers import PartRef
from memreader.windowing.windows import SEPARATOR, Segment, Unit, Window


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
        image_data_url=part.image_data_url,
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
