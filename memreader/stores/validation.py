"""What a store checks of the items it is asked to write (:func:`validate_items`: each one
validated again as a whole, so what is stored can always be read back), and which owners a
``retire_unseen`` may touch (:func:`retired_owners`). Shared by both stores.
"""

from __future__ import annotations

import math
import re
from collections.abc import Collection, Sequence

from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from memreader.errors import InputError
from memreader.items import TextualMemoryItem
from memreader.stores.base import SourceSelector

__all__ = ["retired_owners", "revalidated", "validate_items"]


def validate_items(items: object, user_id: str | None = None) -> list[TextualMemoryItem]:
    """``items`` checked for writing, each validated again as a whole (:func:`revalidated`):
    memory items with an owner and text (all of ``user_id`` when it is given) and finite
    vectors. A write is one transaction, so one bad item refuses the whole write (the events
    have one entry per item written); the error names it.

    Raises:
        InputError: the first item that is not, by index (and the field, when one is bad).
    """
    if isinstance(items, (str, bytes)) or not isinstance(items, Sequence):
        raise InputError(f"items must be a list of TextualMemoryItem, got {type(items).__name__}")
    if user_id is not None and (not isinstance(user_id, str) or not user_id.strip()):
        raise InputError(f"user_id must be a non-empty string, got {user_id!r}")
    checked: list[TextualMemoryItem] = []
    for index, given in enumerate(items):
        if not isinstance(given, TextualMemoryItem):
            raise InputError(
                f"item {index}: expected a TextualMemoryItem, got {type(given).__name__}"
            )
        item = revalidated(index, given)
        owner = item.metadata.user_id
        if not owner.strip():
            raise InputError(
                f"item {index} (id {item.id!r}): no user_id; every memory has an owner"
            )
        if user_id is not None and owner != user_id:
            raise InputError(f"item {index} (id {item.id!r}): owner {owner!r} is not {user_id!r}")
        if not item.memory.strip():
            raise InputError(f"item {index} (id {item.id!r}): the memory text is empty")
        checked.append(item)  # its vector was checked finite by revalidated()
    return checked


def revalidated(index: int, item: TextualMemoryItem) -> TextualMemoryItem:
    """Item ``index`` as it will be read back: its JSON form (what the store keeps) validated
    again. A model changed after it was made (``item.metadata.importance = 7.0``: pydantic
    does not check assignments) would be stored, and every later read of its owner would fail
    on it; text that is not UTF-8 (a lone surrogate) cannot be stored at all.

    Raises:
        InputError: a field is not valid (the message names the item and the field).
    """
    name = repr(item.id)[:80]
    if not _finite(item.metadata.embedding):
        # JSON has no NaN: said here, before the round trip turns it into a null.
        raise InputError(f"item {index} (id {name}): the embedding has non-finite values")
    try:
        # About 0.1 ms an item (a 384-dim vector, sources and all); 0.02 ms before it was done.
        dumped = item.model_dump_json(warnings=False)
        if _NUL_ESCAPE.search(dumped):
            raise InputError(f"item {index} (id {name}): {_nul_field(item)}") from None
        fresh = TextualMemoryItem.model_validate_json(dumped)
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(part) for part in first["loc"]) or "item"
        got = repr(first.get("input"))[:80]
        raise InputError(f"item {index} (id {name}): {where}: {first['msg']} (got {got})") from None
    except PydanticSerializationError as exc:
        reason = " ".join(str(exc).split())[:200]
        if "surrogates not allowed" in reason or "UnicodeEncodeError" in reason:
            reason = f"holds text that cannot be stored as UTF-8 ({reason})"
        raise InputError(f"item {index} (id {name}): {reason}") from None
    return fresh


#: A NUL character in JSON: ``\u0000`` after an even number of backslashes (``\\u0000`` is a
#: backslash followed by the text ``u0000``, which is fine).
_NUL_ESCAPE = re.compile(r"(?<!\\)(?:\\\\)*\\u0000")


def _nul_field(item: TextualMemoryItem) -> str:
    """Where ``item`` holds a NUL character, in words: PostgreSQL cannot keep one in text, so
    neither store takes it (the same item is stored on both or on neither)."""
    pending: list[tuple[str, object]] = [("", item.model_dump(mode="json"))]
    while pending:
        where, value = pending.pop(0)
        if isinstance(value, str) and "\x00" in value:
            return f"{where or 'item'}: holds a NUL character, which a store cannot keep"
        if isinstance(value, dict):
            pending.extend((f"{where}.{key}".lstrip("."), v) for key, v in value.items())
            if any("\x00" in str(key) for key in value):
                return f"{where or 'item'}: a key holds a NUL character"
        elif isinstance(value, list):
            pending.extend((f"{where}[{n}]", v) for n, v in enumerate(value))
    return "holds a NUL character, which a store cannot keep"


def _finite(vector: object) -> bool:
    """Whether ``vector`` holds no NaN or infinity (anything but a list of numbers is left to
    validation). The sum first: one C loop, where checking each of 384 floats in Python cost
    more than the rest of the validation."""
    if not isinstance(vector, list):
        return True
    try:
        if math.isfinite(sum(vector)):
            return True
    except TypeError:
        return True  # not numbers: validation says which
    return all(math.isfinite(x) for x in vector)  # a sum past the float range is not NaN


def retired_owners(
    source: SourceSelector, seen: Collection[str], owners_under_key: Sequence[str]
) -> list[str]:
    """The owners whose memories :meth:`~memreader.stores.base.MemoryStore.retire_unseen`
    may retire: every owner with memories under a batch input's key (the input is the job's),
    else only those ``seen`` names (a session, document or message id is each owner's own)."""
    if source.input_key:
        return list(owners_under_key)
    return [owner for owner in owners_under_key if owner in seen]
