"""ADK's session events as the chat messages memreader reads, and memreader's hits as ADK's
memory entries (:mod:`memreader.integrations.google_adk` uses both).

An event becomes one message: its ``id`` the message id (so a memory's sources name the ADK
event they came from), its ``timestamp`` the chat time, its author the speaker. What its parts
hold is read as text: text as is (a model's thoughts left out), a function call as
``[called NAME with {...}]``, a function's answer as a ``tool`` message ``[NAME answered
{...}]``, code and its result as text; an inline or file part is kept as a marker
(``[file image/png]``) and logged: its bytes or URI are never read (content is not the
operator). The calls of memory tools (ADK's ``load_memory``, ``preload_memory``) and their
answers are left out: what they answer is memory already.

>>> from google.adk.events.event import Event
>>> from google.genai import types
>>> event = Event(id="e1", author="user", timestamp=0,
...               content=types.Content(role="user", parts=[types.Part(text="I live in Porto.")]))
>>> event_message(event)  # doctest: +NORMALIZE_WHITESPACE
{'role': 'user', 'content': 'I live in Porto.', 'message_id': 'e1',
 'chat_time': '1970-01-01T00:00:00+00:00'}
"""

from __future__ import annotations

import json
import logging
from collections.abc import Collection
from datetime import datetime, timezone
from typing import Any

from google.adk.events.event import Event
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types

from memreader.answers.shapes import hit_json
from memreader.stores import SearchHit

__all__ = ["entry_of", "event_message"]

logger = logging.getLogger(__name__)

#: What an entry's ``custom_metadata`` keeps of a hit (its text and id are the entry's own).
_LEFT_TO_THE_ENTRY = ("id", "memory")


def event_message(event: Event, skipped_tools: Collection[str] = ()) -> dict[str, Any] | None:
    """``event`` as a chat message for ``Memory.add`` (``None``: it holds nothing to read).
    Calls of ``skipped_tools`` and their answers are left out (a memory tool's answer holds
    memories already kept: read again, each would be kept twice)."""
    content = event.content
    if content is None or not content.parts or event.partial:
        return None  # nothing said, or a streamed piece of an event that follows whole
    parts = [part for part in content.parts if _tool_of(part) not in skipped_tools]
    lines = [line for part in parts if (line := _part_text(part, event.id))]
    if not lines:
        return None
    message: dict[str, Any] = {"role": _role(event, parts), "content": "\n".join(lines)}
    if event.author and event.author not in ("user", message["role"]):
        message["name"] = event.author  # the agent that spoke
    if event.id:
        message["message_id"] = event.id
    if (when := _time(event.timestamp)) is not None:
        message["chat_time"] = when
    return message


def _role(event: Event, parts: list[types.Part]) -> str:
    """``tool`` for a function's answers, ``user`` for what the user said (ADK's ``user``
    content, or the user's event without a role), else ``assistant``."""
    if all(part.function_response is not None for part in parts):
        return "tool"
    role = event.content.role if event.content is not None else None
    return "user" if role == "user" or (role is None and event.author == "user") else "assistant"


def _time(timestamp: Any) -> str | None:
    """An event's timestamp (seconds since the epoch) in ISO 8601 (``None``: not a time)."""
    if isinstance(timestamp, bool) or not isinstance(timestamp, int | float):
        return None
    try:
        return datetime.fromtimestamp(timestamp, tz=timezone.utc).isoformat()
    except (OverflowError, OSError, ValueError):  # NaN, or beyond what a datetime holds
        return None


def _tool_of(part: types.Part) -> str | None:
    """The tool a part calls or answers for (``None``: neither)."""
    called = part.function_call or part.function_response
    return called.name if called is not None else None


def _part_text(part: types.Part, event_id: str) -> str:
    if part.text is not None:
        return "" if part.thought else part.text
    if (call := part.function_call) is not None:
        return f"[called {call.name} with {_json(call.args or {})}]"
    if (answer := part.function_response) is not None:
        return f"[{answer.name} answered {_json(answer.response or {})}]"
    if part.executable_code is not None:
        return part.executable_code.code or ""
    if part.code_execution_result is not None:
        return part.code_execution_result.output or ""
    media = part.inline_data or part.file_data
    if media is not None:
        kind = media.mime_type or "unknown type"
        logger.warning("event %s: its %s part is kept as a marker only", event_id, kind)
        return f"[file {kind}]"
    return ""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def entry_of(hit: SearchHit) -> MemoryEntry:
    """``hit`` as ADK's memory entry: its text as the content, its id, its speaker as the
    author (when it has one only), the time it happened, and in ``custom_metadata`` where it
    came from (its session, its sources: each ADK event id, speaker, time and quoted span) and
    its score."""
    shown = hit_json(hit)
    speakers = {s.name or s.role for s in hit.memory.item.metadata.sources if s.name or s.role}
    author = speakers.pop() if len(speakers) == 1 else None
    when = hit.memory.valid_from or hit.memory.recorded_at
    return MemoryEntry(
        id=hit.id,
        content=types.Content(role="user", parts=[types.Part(text=hit.text)]),
        author=author,
        timestamp=when.isoformat() if when is not None else None,
        custom_metadata={k: v for k, v in shown.items() if k not in _LEFT_TO_THE_ENTRY},
    )
