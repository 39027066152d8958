"""What becomes of a :class:`~memreader.front.memory.Memory` that is not closed: dropped
(``del m``, garbage collection) or still open when the interpreter exits normally, it promotes
what its working memory holds (:mod:`memreader.front.working`), then closes its store and
reader (:func:`promote_when_dropped`). ``close()`` detaches this: it did the same itself."""

from __future__ import annotations

import logging
import time
import weakref
from collections.abc import Callable
from typing import Any

from memreader.errors import MemReaderError
from memreader.front.working import WorkingMemory
from memreader.readers import BaseMemReader
from memreader.stores import MemoryStore

__all__ = ["EXIT_RETRY_DELAYS", "closer", "promote_when_dropped"]

_log = logging.getLogger(__name__)

#: Seconds between the tries of a promotion at exit or collection (each try waits up to the
#: store's own timeout): a store busy for a moment is waited for, a broken one is not.
EXIT_RETRY_DELAYS = (0.5, 2.0)


def closer(store: MemoryStore, reader: BaseMemReader) -> Callable[[], None]:
    """A call that closes ``store``, then ``reader`` (even if the store's close failed)."""

    def close() -> None:
        try:
            store.close()
        finally:
            reader.close()

    return close


def promote_when_dropped(
    memory: object, working: WorkingMemory, close: Callable[[], None]
) -> weakref.finalize[Any, Any]:
    """Promote what ``working`` holds when ``memory`` (its ``Memory``) is collected without
    ``close()``, or when the interpreter exits with it open, then ``close()`` its store and
    reader; the finalizer, which ``Memory.close()`` detaches. A failed promotion is tried again
    after each of :data:`EXIT_RETRY_DELAYS`; if it still fails, an error names the items lost
    (there is no later try). ``working`` and ``close`` must not hold ``memory``."""
    return weakref.finalize(memory, _promote_at_exit, repr(memory), working, close)


def _promote_at_exit(name: str, working: WorkingMemory, close: Callable[[], None]) -> None:
    try:
        held = working.count()
        for delay in (*EXIT_RETRY_DELAYS, None):
            try:
                working.end_all()
                break
            except MemReaderError as exc:
                if delay is None:
                    lost = [(h.key[0], h.item.id) for h in working.held_entries()]
                    _log.error(
                        "%s was not closed, and promoting its %d held items failed (%s): "
                        "they are lost (owner, id): %s",
                        name,
                        len(lost),
                        exc,
                        lost,
                    )
                    return
                time.sleep(delay)
        if held:
            _log.warning(
                "%s was not closed: its %d held items were promoted when it was dropped or "
                "the interpreter exited; close() it (or use `with`) to promote them yourself",
                name,
                held,
            )
    finally:
        try:
            close()
        except Exception as exc:  # nothing is left to hand it to: say so
            _log.warning("%s could not be closed when it was dropped: %s", name, exc)
