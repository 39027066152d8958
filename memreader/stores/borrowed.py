"""Borrowed reads: a search whose caller only looks at what it gets, then lets it go.

Inside :func:`borrowed_reads`, a store may hand out the memories it keeps from its earlier
searches (the same objects each time a row has not changed) instead of building each one
anew from its row, and :func:`~memreader.stores.shapes.hits_body` may reuse the JSON it
wrote of them. Building ten memories from their rows (validating each item's JSON) and
writing them back out as JSON was about a seventh of the service's CPU per search of 2,000
memories (``benchmarks/RESULTS.md``, issue 42).

The caller promises to change nothing it reads in the block, nor afterwards: the objects are
shared with every later borrowed read. The service's search route borrows (it turns the hits
into JSON at once, on the store's thread); ``Memory.search`` and a store's ``search`` called
outside the block hand out memories of the caller's own, as always.

>>> borrowing()
False
>>> with borrowed_reads():
...     borrowing()
True
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

__all__ = ["HEADS", "KEPT", "borrowed_reads", "borrowing"]

_BORROWED: ContextVar[bool] = ContextVar("memreader_borrowed_reads", default=False)

#: How many memories a store keeps for borrowed reads (as many as the SQLite store's cache of
#: passages, ``PASSAGE_CACHE``), the least recently used dropped first.
KEPT = 2_000


@contextmanager
def borrowed_reads() -> Iterator[None]:
    """Let the reads of the block hand out shared memories (see the module docstring)."""
    token = _BORROWED.set(True)
    try:
        yield
    finally:
        _BORROWED.reset(token)


def borrowing() -> bool:
    """Whether the current reads are borrowed (:func:`borrowed_reads`)."""
    return _BORROWED.get()


class _Heads:
    """The JSON :func:`~memreader.stores.shapes.hits_body` wrote of a borrowed memory (its
    state and item, the part of a hit that does not depend on the query), by the memory's
    identity: a borrowed memory does not change, and the same object comes back from every
    search that finds its row unchanged. An entry lives as long as its memory (a weak
    reference): when the store forgets the memory (a write, or it was used least recently),
    its JSON goes with it."""

    def __init__(self) -> None:
        self._written: dict[int, tuple[weakref.ref[Any], bytes]] = {}

    def __len__(self) -> int:
        return len(self._written)

    def of(self, memory: object, write: Callable[[], bytes]) -> bytes:
        """``write()``'s JSON of ``memory``, written once while ``memory`` lives."""
        key = id(memory)
        kept = self._written.get(key)
        if kept is not None and kept[0]() is memory:
            return kept[1]
        written = write()
        written_of = self._written

        def forget(_: object) -> None:
            # Runs as the memory is freed, before its id can name another object.
            written_of.pop(key, None)

        self._written[key] = (weakref.ref(memory, forget), written)
        return written


#: The process's JSON of borrowed memories (:func:`~memreader.stores.shapes.hits_body`).
HEADS = _Heads()
