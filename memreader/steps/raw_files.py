"""Fine mode's raw file items: each document chunk kept verbatim as a ``RawFileMemory`` item,
chained in document order and pointing at the fine items extracted from it.

==============  ===========================  ==============  =====
step            requires                     produces        modes
==============  ===========================  ==============  =====
raw_file_items  windows, items, emitted      items, emitted  fine
==============  ===========================  ==============  =====
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Sequence

from memreader.extraction import short_error
from memreader.extraction.importance import source_importance
from memreader.items import MemoryType, TextualMemoryItem
from memreader.modes import Mode
from memreader.pipeline import Step
from memreader.steps.items import make_item
from memreader.steps.registry import STEPS
from memreader.steps.report import WindowReport
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState, WindowedScene
from memreader.windowing.parsers import PartRef
from memreader.windowing.provenance import is_document_unit
from memreader.windowing.windows import Unit

logger = logging.getLogger(__name__)

__all__ = ["RawFileItems"]

FINE: frozenset[Mode] = frozenset({"fine"})


@STEPS.register("raw_file_items")
class RawFileItems(Step):
    """Fine mode: each chunk of each document (the part of it in one window) is also kept
    verbatim as a ``RawFileMemory`` item, chained in document order (``preceding_id``,
    ``following_id``) and pointing at the fine items extracted from it (``summary_ids``)."""

    name = "raw_file_items"
    requires = ("windows", "items", "emitted")
    produces = ("items", "emitted")
    modes = FINE

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        by_report: dict[int, list[TextualMemoryItem]] = {}
        for item, entry in state.emitted:
            if "image" not in item.metadata.tags:
                by_report.setdefault(id(entry), []).append(item)
        for position, ws in enumerate(state.windows):
            chunks: dict[int, list[int]] = {}
            for window_index, unit in sorted(ws.chunks):
                if is_document_unit(ws.units[unit], ws.scene) and not _unread(
                    state, position, ws.units[unit]
                ):
                    chunks.setdefault(unit, []).append(window_index)
            for unit in sorted(chunks):
                try:
                    made = _raw_chunks(state, ws, unit, chunks[unit], by_report)
                except Exception as exc:  # one document's failure is that document's record
                    logger.error("raw file items of a document failed", exc_info=exc)
                    ws.reports[chunks[unit][0]].notes.append(
                        f"raw file items not made: {short_error(exc)}"
                    )
                    continue
                state.items[position].extend(item for item, _ in made)
                state.emitted.extend(made)


def _unread(state: ReadState, position: int, unit: Unit) -> bool:
    """Whether ``unit`` is the placeholder of a part that could not be read (no raw file: a
    placeholder is not the file's text)."""
    ref = unit.key
    if not isinstance(ref, PartRef):
        return False
    read = state.part_reads.get((position, ref.message.index, ref.part.index))
    return read is not None and read.report.status == "error"


def _raw_chunks(
    state: ReadState,
    ws: WindowedScene,
    unit: int,
    window_indexes: Sequence[int],
    by_report: dict[int, list[TextualMemoryItem]],
) -> list[tuple[TextualMemoryItem, WindowReport]]:
    made: list[tuple[TextualMemoryItem, WindowReport]] = []
    text = ws.units[unit].text
    # A step may have dropped windows: the list no longer lines up with window indexes.
    at = {window.index: i for i, window in enumerate(ws.windows)}
    for window_index in window_indexes:
        if window_index not in at:
            continue
        window, entry = ws.windows[at[window_index]], ws.reports[at[window_index]]
        segments = [s for s in window.segments if s.unit == unit]
        sources = [
            s
            for s, seg in zip(ws.sources(window), window.segments, strict=True)
            if seg.unit == unit
        ]
        if not segments:
            continue
        source = sources[0]
        summaries = [
            item.id
            for item in by_report.get(id(entry), [])
            if any(
                s.message_index == source.message_index and s.part_index == source.part_index
                for s in item.metadata.sources
            )
        ]
        item = make_item(
            memory="\n".join(text[s.start : s.end] for s in segments),
            info=state.info,
            sources=sources,
            memory_type=MemoryType.RAW_FILE,
            tags=["mode:fine", "raw_file", *state.custom_tags],
            id_parts=(ws.scene.type, "raw_file", ws.digest, window_index, unit),
            importance=source_importance(sources),
        )
        item.metadata.summary_ids = summaries
        made.append((item, entry))
    for (before, _), (after, _) in itertools.pairwise(made):
        before.metadata.following_id = after.id
        after.metadata.preceding_id = before.id
    return made
