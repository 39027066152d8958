"""Fast mode's items: each window becomes one item, its text.

==========  ===========================  ==============  =====
step        requires                     produces        modes
==========  ===========================  ==============  =====
fast_items  windows, info, custom_tags   items, emitted  fast
==========  ===========================  ==============  =====
"""

from __future__ import annotations

from memreader.items import TextualMemoryItem
from memreader.modes import FAST_TAG
from memreader.pipeline import Step
from memreader.steps.items import make_item, memory_type_for
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState
from memreader.windowing.provenance import window_embedding_fragments

__all__ = ["FastItems"]


@STEPS.register("fast_items")
class FastItems(Step):
    """Fast mode: each window becomes one item, its text."""

    name = "fast_items"
    requires = ("windows", "info", "custom_tags")
    produces = ("items", "emitted")
    modes = frozenset({"fast"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        tags = [FAST_TAG, *state.custom_tags]
        result: list[list[TextualMemoryItem]] = []
        for ws in state.windows:
            items = []
            for window, entry in zip(ws.windows, ws.reports, strict=True):
                state.check_deadline(
                    f"before the fast item of scene {ws.scene.index}, window {window.index}"
                )
                try:
                    sources = ws.sources(window)
                    item = make_item(
                        memory=window.text,
                        info=state.info,
                        sources=sources,
                        memory_type=memory_type_for(sources),
                        tags=list(tags),
                        id_parts=(ws.scene.type, "fast", ws.digest, window.index),
                    )
                except Exception as exc:  # one window's failure is that window's record
                    entry.record_error(exc)
                    continue
                entry.items = 1
                items.append(item)
                state.emitted.append((item, entry))
                state.embedding_fragments[item.id] = (
                    item.memory,
                    window_embedding_fragments(
                        ws.windows, window.index, ws.units, runtime.config.embed_prefixes
                    ),
                )
            result.append(items)
        state.items = result
