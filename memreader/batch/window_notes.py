"""The windows' notes of a batch job, said once per input instead of once per call.

A call to the reader logs a warning for a fact its report carries too (the embed step's "N of
M windows are mostly text the embedder cannot read", marked with
:data:`~memreader.steps.embed.IN_REPORT`): a job of many calls would say it many times. While a
:class:`~memreader.batch.worker.Worker` reads, those warnings are left out (:func:`reading`);
the worker tallies the windows' notes from each call's report (:class:`NoteTally`) and the
driver logs one line per input (:func:`log_notes`).
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

from memreader.steps import embed as embed_step
from memreader.steps.embed import IN_REPORT
from memreader.steps.report import ReadReport

__all__ = ["NoteTally", "log_notes", "reading"]

logger = logging.getLogger("memreader.batch")

_EMBED_LOGGER = logging.getLogger(embed_step.__name__)
_READING: contextvars.ContextVar[bool] = contextvars.ContextVar("batch_reading", default=False)


class _InReportFilter(logging.Filter):
    """Leaves out the records marked :data:`IN_REPORT` logged while a worker reads (only in
    that context: a ``get_memory`` call elsewhere in the process still warns)."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not (_READING.get() and getattr(record, IN_REPORT, False))


_FILTER = _InReportFilter()


@contextmanager
def reading() -> Iterator[None]:
    """While the block runs (in this context), the reader's warnings that its report carries
    too are not logged: the worker says them per input."""
    if _FILTER not in _EMBED_LOGGER.filters:
        _EMBED_LOGGER.addFilter(_FILTER)
    token = _READING.set(True)
    try:
        yield
    finally:
        _READING.reset(token)


@dataclass
class NoteTally:
    """The windows of one input that have notes: how many, out of how many, and the first."""

    noted: int = 0
    windows: int = 0
    first: str = ""

    def add(self, report: ReadReport, first_scene: int) -> None:
        """Count the windows of one call's ``report`` (its scenes numbered from
        ``first_scene`` in the input)."""
        self.windows += len(report.windows)
        for window in report.windows:
            if window.notes:
                self.noted += 1
                if not self.first:
                    where = (
                        f"scene {first_scene + window.scene_index}, window {window.window_index}"
                    )
                    self.first = f"{where}: {window.notes[0]}"


def log_notes(key: str, tally: NoteTally) -> None:
    """One warning for the input ``key`` when any of its windows has a note."""
    if tally.noted:
        logger.warning(
            "%s: %d of %d windows have a note (first: %s)",
            key,
            tally.noted,
            tally.windows,
            tally.first,
        )
