"""What a write finds already stored, shared by both stores: which rows to read (the rows of the
items' owners holding one of their ids, and the active rows holding one of their type and
content hash), asked in chunks through two index lookups the backend writes
(:func:`known_rows`), and which items none of those rows holds (:func:`unstored_positions`,
the items worth embedding).

Both lookups cost what the items cost, whatever the owner holds. A check written as one ``OR``
over both (``user_id = ? AND status = 'active' AND (id = ? OR (memory_type = ? AND
content_hash = ?))``) can use only the owner's ``(user_id, status)`` index in SQLite, which
then walked every active row of the owner for each item (a 500-item write at 50,000 memories
took minutes); a hash looked up without its type can use no index at all.

>>> from memreader.items import TextualMemoryItem, TextualMemoryItemMetadata
>>> def item(i: str, text: str) -> TextualMemoryItem:
...     meta = TextualMemoryItemMetadata(user_id="ana", session_id="s1")
...     return TextualMemoryItem(id=i, memory=text, metadata=meta)
>>> items = [item("a", "tea"), item("b", "coffee")]
>>> stored = [("ana", "x", "LongTermMemory", "h-coffee", "active")]
>>> unstored_positions(items, ["h-tea", "h-coffee"], stored)
[0]
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from memreader.items import TextualMemoryItem

__all__ = ["ByHashes", "ByIds", "known_rows", "unstored_positions"]

#: ``(owner, ids)``: the owner's rows with one of ``ids``, whatever their status.
ByIds = Callable[[str, list[str]], Iterable[tuple[Any, ...]]]
#: ``(owner, memory type, hashes)``: the owner's active rows of that type with one of
#: ``hashes``.
ByHashes = Callable[[str, str, list[str]], Iterable[tuple[Any, ...]]]


def known_rows(
    items: Sequence[TextualMemoryItem],
    hashes: Sequence[str],
    by_ids: ByIds,
    by_hashes: ByHashes,
    chunk: int,
) -> list[tuple[Any, ...]]:
    """The rows (owner, id, memory type, content hash, status) that ``by_ids`` and
    ``by_hashes`` find for ``items`` (their content ``hashes``), asked ``chunk`` values at a
    time, per owner (and type)."""
    ids: dict[str, set[str]] = defaultdict(set)
    digests: dict[tuple[str, str], set[str]] = defaultdict(set)
    for item, digest in zip(items, hashes, strict=True):
        meta = item.metadata
        ids[meta.user_id].add(item.id)
        digests[(meta.user_id, meta.memory_type.value)].add(digest)
    rows: list[tuple[Any, ...]] = []
    for owner, wanted in sorted(ids.items()):
        for part in _chunks(wanted, chunk):
            rows += by_ids(owner, part)
    for (owner, memory_type), wanted in sorted(digests.items()):
        for part in _chunks(wanted, chunk):
            rows += by_hashes(owner, memory_type, part)
    return rows


def unstored_positions(
    items: Sequence[TextualMemoryItem], hashes: Sequence[str], rows: Iterable[tuple[Any, ...]]
) -> list[int]:
    """The positions of ``items`` (their content ``hashes``) that ``rows`` (as
    :func:`known_rows` gives them) hold neither active under their id nor active with their
    type and hash."""
    active_ids: set[tuple[str, str]] = set()
    active_hashes: set[tuple[str, str, str]] = set()
    for owner, memory_id, memory_type, digest, status in rows:
        if status == "active":
            active_ids.add((owner, memory_id))
            active_hashes.add((owner, memory_type, digest))
    return [
        position
        for position, (item, digest) in enumerate(zip(items, hashes, strict=True))
        if (item.metadata.user_id, item.id) not in active_ids
        and (item.metadata.user_id, item.metadata.memory_type.value, digest) not in active_hashes
    ]


def _chunks(values: set[str], size: int) -> list[list[str]]:
    ordered = sorted(values)
    return [ordered[i : i + size] for i in range(0, len(ordered), size)]
