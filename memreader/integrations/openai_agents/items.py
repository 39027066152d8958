"""The Agents SDK's session items (``TResponseInputItem`` dicts) as the session keeps them
and as memreader reads them.

An item is kept exactly: it must come back from JSON equal to itself (string keys, lists, no
``NaN``), since the session keeps it as JSON. What is read into memories:

- a message (an item with a ``role``: a string content or a list of content parts, refusals
  included) whose role the session reads (by default ``user`` and ``assistant``);
- with ``read_tools=True``, ``function_call`` items (the tool's name and arguments) and
  ``function_call_output`` items (the output's text; files and images in it as memreader's
  chat model reads them);
- nothing else: reasoning items, hosted tool calls (web search, file search, computer use,
  ...), item references and compaction items are kept, never read.

Each read item names its source with a message id of its own (:func:`message_id`): the
session, the item's position in the session (``get_items()[position]``) and a digest of the
item, so forgetting a popped item never reaches a later item that took its place.

>>> item = {"role": "user", "content": "I moved to Lisbon."}
>>> message_id("chat-1", 3, item)
'chat-1#3:fb51d3ae1fae'
>>> reading(item, ("user", "assistant"), read_tools=False) is None
True
>>> reading({"type": "reasoning", "id": "r1", "summary": []}, ("user",), read_tools=False)
"item type 'reasoning' is kept, not read"
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Collection, Mapping
from typing import Any

from memreader.integrations.openai_agents.binding import AgentsMemoryError

__all__ = [
    "TOOL_ITEMS",
    "checked_items",
    "item_digest",
    "item_json",
    "message_id",
    "readable",
    "reading",
]

#: The items of a tool call and of its answer: read only with ``read_tools=True``.
TOOL_ITEMS = frozenset({"function_call", "function_call_output"})
_DIGEST_CHARS = 12


def item_json(item: Mapping[str, Any]) -> str:
    """``item`` as canonical JSON (sorted keys, compact): what its digest is taken of."""
    return json.dumps(item, sort_keys=True, ensure_ascii=False, separators=(",", ":"))


def checked_items(items: Any) -> list[dict[str, Any]]:
    """``items`` when each is a dict that JSON gives back equal (what the session keeps).

    Raises:
        AgentsMemoryError: ``items`` is not a list, or an item is not a dict or would not
            come back equal (the message names its index).
    """
    if not isinstance(items, list):
        raise AgentsMemoryError(f"add_items() takes a list of items, got {type(items).__name__}")
    for index, item in enumerate(items):
        if not isinstance(item, dict):
            raise AgentsMemoryError(
                f"add_items(): item {index} must be a dict (a TResponseInputItem), "
                f"got {type(item).__name__}"
            )
        try:
            same = json.loads(json.dumps(item, allow_nan=False)) == item
        except (TypeError, ValueError, RecursionError) as exc:
            raise AgentsMemoryError(f"add_items(): item {index} is not JSON: {exc}") from exc
        if not same:
            raise AgentsMemoryError(
                f"add_items(): item {index} would not come back equal from JSON (a key that "
                "is not a string, a tuple, or another value JSON turns into something else)"
            )
    return items


def message_id(session_id: str, position: int, item: Mapping[str, Any]) -> str:
    """The message id a read item's memories name: ``SESSION#POSITION:DIGEST``."""
    return f"{session_id}#{position}:{item_digest(item)}"


def item_digest(item: Mapping[str, Any]) -> str:
    """The digest of ``item``'s content a message id ends with."""
    digest = hashlib.sha256(item_json(item).encode("utf-8", "surrogatepass")).hexdigest()
    return digest[:_DIGEST_CHARS]


def reading(item: Mapping[str, Any], roles: Collection[str], *, read_tools: bool) -> str | None:
    """``None`` when the session reads ``item``, else why it keeps it without reading it."""
    kind = item.get("type")
    role = item.get("role")
    if role is not None and kind in (None, "message"):
        if role in roles:
            return None
        return f"role {str(role)[:40]!r} is kept, not read (roles={sorted(roles)})"
    if kind in TOOL_ITEMS:
        return None if read_tools else f"item type {kind!r} is kept, not read (read_tools=False)"
    return f"item type {str(kind)[:40]!r} is kept, not read"


def readable(item: Mapping[str, Any], session_id: str, position: int) -> dict[str, Any]:
    """A copy of ``item`` for ``Memory.add``, naming its message id (the kept item is not
    changed)."""
    return {**item, "message_id": message_id(session_id, position, item)}
