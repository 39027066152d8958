"""Refinement's image items: what the vision model made of a stored item's images
(:mod:`memreader.steps.refine_images` described them) as items of that stored item.

===================  ===============================================  ==============  ======
step                 requires                                         produces        modes
===================  ===============================================  ==============  ======
refined_image_items  fine_windows, items, emitted, image_refinements  items, emitted  refine
===================  ===============================================  ==============  ======
"""

from __future__ import annotations

import logging

from memreader.extraction import short_error
from memreader.items import TextualMemoryItem
from memreader.pipeline import Step
from memreader.steps.images import described_items
from memreader.steps.registry import STEPS
from memreader.steps.report import WindowReport
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ImageRefinement, ReadState

__all__ = ["RefinedImageItems"]

logger = logging.getLogger(__name__)


@STEPS.register("refined_image_items")
class RefinedImageItems(Step):
    """Refinement: the memories the vision model extracted from each stored item's images,
    as items of that stored item (tagged ``image``, citing the image's source), and a note in
    the item's window report for each image that could not be read or described."""

    name = "refined_image_items"
    requires = ("fine_windows", "items", "emitted", "image_refinements")
    produces = ("items", "emitted")
    modes = frozenset({"refine"})

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        reports: dict[int, WindowReport] = {}
        for fw in state.fine_windows:
            reports.setdefault(fw.position, fw.report)
        seen: set[tuple[int, str]] = set()
        for entry in state.image_refinements:
            report = reports.get(entry.position)
            if report is None:
                continue
            if entry.outcome is None or entry.source is None:
                report.notes.append(
                    f"image source {entry.source_index} not described "
                    f"({entry.report.status}: {entry.report.error or entry.report.detail})"
                )
                continue
            key = (entry.position, entry.report.digest or "")
            if key in seen:  # the same picture twice in one item: its memories once
                continue
            seen.add(key)
            stored = state.stored_items[entry.position]
            assert isinstance(stored, TextualMemoryItem)
            try:
                items = _image_items(state, stored, entry)
            except Exception as exc:  # one image's failure is that image's record
                logger.error("building the items of a stored item's image failed", exc_info=exc)
                entry.report.status = "error"
                entry.report.error = short_error(exc)
                report.notes.append(f"image source {entry.source_index}: {short_error(exc)}")
                continue
            state.items[entry.position].extend(items)
            state.emitted.extend((item, report) for item in items)


def _image_items(
    state: ReadState, stored: TextualMemoryItem, entry: ImageRefinement
) -> list[TextualMemoryItem]:
    """The items of one described image of ``stored``, refined from it."""
    outcome, source = entry.outcome, entry.source
    assert outcome is not None and source is not None
    meta = stored.metadata
    info = {**meta.info, "user_id": meta.user_id, "session_id": meta.session_id}
    old = [t for t in meta.tags if not t.startswith(("mode:", "fallback:"))]
    base = (state.type, "refine", stored.id, "image", entry.report.digest)
    tags = ["mode:fine", "image", *old]
    made = described_items(
        outcome,
        info=info,
        sources=[source],
        tags=tags,
        last=state.custom_tags,
        base=base,
        description_type=meta.memory_type,
    )
    for item in made:
        item.metadata.refined_from = stored.id
    return made
