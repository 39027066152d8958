"""Pages of a listing without a query (``get_all``): what one page holds (:class:`MemoryPage`)
and its opaque cursor, a position in the store's row order (keyset paging: a page costs the
same however deep it is, and a memory written meanwhile never shifts a page already read).

>>> cursor = write_cursor(42)
>>> read_cursor(cursor), read_cursor(None)
(42, None)
>>> read_cursor("not-a-cursor")  # doctest: +ELLIPSIS
Traceback (most recent call last):
memreader.errors.InvalidCursorError: cursor 'not-a-cursor' is not one a listing gave (pass ...
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from memreader.errors import InputError, InvalidCursorError
from memreader.stores.records import StoredMemory

__all__ = [
    "DEFAULT_PAGE",
    "MAX_PAGE",
    "InvalidCursorError",
    "MemoryPage",
    "check_page_limit",
    "page_of",
    "read_cursor",
    "write_cursor",
]

#: How many memories a page holds when the call names no ``limit`` (mem0's ``get_all``: 100).
DEFAULT_PAGE = 100
#: The most one page may hold (the cap of a search's ``k``).
MAX_PAGE = 1000
_VERSION = 1


@dataclass(frozen=True)
class MemoryPage(Sequence[StoredMemory]):
    """One page of a listing: its ``memories`` (the most recently stored first) and the
    ``next_cursor`` to pass for the next page (``None``: this is the last). Iterating it
    iterates its memories."""

    memories: tuple[StoredMemory, ...]
    next_cursor: str | None = None

    def __len__(self) -> int:
        return len(self.memories)

    def __iter__(self) -> Iterator[StoredMemory]:
        return iter(self.memories)

    def __getitem__(self, index: Any) -> Any:
        return self.memories[index]


def check_page_limit(limit: Any) -> int:
    """``limit``, the size of a page.

    Raises:
        InputError: it is not an integer in ``[1, MAX_PAGE]``.
    """
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_PAGE:
        raise InputError(f"limit must be an integer in [1, {MAX_PAGE}], got {limit!r}")
    return limit


def write_cursor(row: int) -> str:
    """The cursor of the page that starts below row number ``row``."""
    raw = json.dumps([_VERSION, row], separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def read_cursor(cursor: Any) -> int | None:
    """The row number ``cursor`` (from :func:`write_cursor`) names; ``None`` for no cursor.

    Raises:
        InvalidCursorError: it is not a string a listing gave (the message shows the start).
    """
    if cursor is None:
        return None
    if isinstance(cursor, str) and len(cursor) <= 64:
        try:
            decoded = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
        except (binascii.Error, ValueError):
            decoded = None
        if (
            isinstance(decoded, list)
            and len(decoded) == 2
            and decoded[0] == _VERSION
            and type(decoded[1]) is int
            and decoded[1] > 0
        ):
            return int(decoded[1])
    shown = cursor[:40] if isinstance(cursor, str) else cursor
    raise InvalidCursorError(
        f"cursor {shown!r} is not one a listing gave (pass the next_cursor of the page "
        "before, or none for the first page)"
    )


def page_of(rows: Sequence[tuple[int, StoredMemory | None]], limit: int) -> MemoryPage:
    """The page of ``rows`` (read with ``limit + 1``, row number descending): the first
    ``limit`` (a row that could not be read is left out, as every read does), and a cursor
    when there was one more."""
    shown = rows[:limit]
    cursor = write_cursor(shown[-1][0]) if len(rows) > limit else None
    return MemoryPage(tuple(m for _, m in shown if m is not None), cursor)
