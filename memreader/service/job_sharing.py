"""How a job running in one worker is seen and cancelled from every other: its progress is
saved to the shared state as it goes (``JobState.on_change``), a cancel asked elsewhere reaches its
thread (:class:`SharedCancel`), and so does the news that the job was taken back from this worker
(it was taken for dead while paused: the job stops, failed), and a job another worker runs is
shown as it last saved it (:class:`RemoteJob`).

>>> flag = SharedCancel(lambda: "lost", every_s=0.0)
>>> flag.is_set(), flag.lost
(True, True)
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any, Literal

from memreader.errors import MemReaderError
from memreader.service.shared import JobRecord

__all__ = ["RemoteJob", "SharedCancel"]

logger = logging.getLogger(__name__)


class SharedCancel(threading.Event):
    """A job's cancel flag: set here, or told by the shared state (``should_stop``, consulted
    at most once every ``every_s`` seconds: the job looks at its flag often): ``cancel``, a
    cancel asked by any worker; ``lost``, the job was taken back from this worker (it was
    taken for dead while paused), which :attr:`lost` then says: its work must stop, and
    nothing it saves lands."""

    def __init__(
        self, should_stop: Callable[[], Literal["cancel", "lost"] | None], every_s: float = 0.5
    ) -> None:
        super().__init__()
        self._should_stop = should_stop
        self._every_s = every_s
        self._next = 0.0
        self.lost = False

    def set_lost(self) -> None:
        """The job was taken back from this worker: stop it."""
        self.lost = True
        self.set()

    def is_set(self) -> bool:
        if super().is_set():
            return True
        now = time.monotonic()
        if now >= self._next:
            self._next = now + self._every_s
            try:
                why = self._should_stop()
            except MemReaderError as exc:  # the shared state failed: look again next time
                logger.warning("could not look for a cancel of this job: %s", exc)
                return False
            if why == "lost":
                self.set_lost()
            elif why == "cancel":
                self.set()
            return super().is_set()
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
