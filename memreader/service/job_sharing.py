"""How a job running in one worker is seen and cancelled from every other: its progress is
saved to the shared state as it goes (``JobState.on_change``), a cancel asked elsewhere reaches its
thread (:class:`SharedCancel`), and a job another worker runs is shown as it last saved it
(:class:`RemoteJob`).

>>> flag = SharedCancel(lambda: True, every_s=0.0)
>>> flag.is_set()
True
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from memreader.errors import MemReaderError
from memreader.service.shared import JobRecord

__all__ = ["RemoteJob", "SharedCancel"]

logger = logging.getLogger(__name__)


class SharedCancel(threading.Event):
    """A job's cancel flag: set here, or asked in the shared state by any worker (``asked``
    is consulted at most once every ``every_s`` seconds: the job looks at its flag often)."""

    def __init__(self, asked: Callable[[], bool], every_s: float = 0.5) -> None:
        super().__init__()
        self._asked = asked
        self._every_s = every_s
        self._next = 0.0

    def is_set(self) -> bool:
        if super().is_set():
            return True
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self._every_s
            try:
                asked = self._asked()
            except MemReaderError as exc:  # the shared state failed: look again next time
                logger.warning("could not look for a cancel of this job: %s", exc)
                return False
            if asked:
                self.set()
                return True
        return False


class RemoteJob:
    """A job another worker runs (or ran), as it last saved it."""

    def __init__(self, record: JobRecord) -> None:
        self.id = record.id
        self.owner = record.owner
        self._data = record.data

    def to_dict(self) -> dict[str, Any]:
        """The job as ``GET /v1/jobs/{id}`` shows it."""
        return dict(self._data)
