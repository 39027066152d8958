"""Filter steps: windows dropped before extraction, each recorded in the report.

>>> MinLength(min_chars=20)
Step('min_length', requires=('windows',), produces=('windows',))
"""

from __future__ import annotations

from dataclasses import replace

from memreader.pipeline import Step
from memreader.steps.registry import STEPS
from memreader.steps.runtime import ReaderRuntime
from memreader.steps.state import ReadState

__all__ = ["MinLength"]


@STEPS.register("min_length")
class MinLength(Step):
    """Drops windows with fewer than ``min_chars`` characters of message text (role and time
    prefixes do not count), such as "ok" or "thanks!". A dropped window gives no item; its
    report entry says ``status="dropped"`` and why, so nothing vanishes unreported. Insert it
    after ``window``.
    """

    name = "min_length"
    requires = ("windows",)
    produces = ("windows",)

    def __init__(self, min_chars: int = 20) -> None:
        if not isinstance(min_chars, int) or isinstance(min_chars, bool) or min_chars < 0:
            raise ValueError(f"min_chars must be a non-negative integer, got {min_chars!r}")
        self.min_chars = min_chars

    def run(self, state: ReadState, runtime: ReaderRuntime) -> None:
        kept_scenes = []
        for ws in state.windows:
            windows, reports = [], []
            for window, entry in zip(ws.windows, ws.reports, strict=True):
                chars = sum(s.end - s.start for s in window.segments)
                if chars < self.min_chars:
                    entry.status = "dropped"
                    entry.error = (
                        f"min_length: {chars} characters of text, fewer than {self.min_chars}"
                    )
                    continue
                windows.append(window)
                reports.append(entry)
            # replace(), not a rebuild by position: every other field (a document's chunks and
            # heading trails, whatever is added later) stays as it was.
            kept_scenes.append(replace(ws, windows=windows, reports=reports))
        state.windows = kept_scenes
