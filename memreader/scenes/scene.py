"""The scene model, and chat input normalised into it: typed, immutable :class:`Scene` objects.

Chat input is a list of scenes; a scene is a list of OpenAI-style messages or a plain string.
A single flat list of messages is one scene. Parts keep their raw payload (an image URL, a file
reference, tool calls); the parser for each part type (:mod:`memreader.windowing.parsers`) makes
the text a window shows. No I/O happens here: documents are read by :mod:`memreader.documents`. The
caller's data is never mutated, and no ``chat_time`` is ever made up from the clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from memreader.errors import (
    InputError,
    InvalidChatTimeError,
    InvalidInfoError,
    InvalidMessageError,
    InvalidSceneError,
    UnknownRoleError,
)
from memreader.scenes.api_parts import EMPTY_PART, Part, PartContext, content_parts, responses_item
from memreader.scenes.chat_time import parse_chat_time, utc_in_range
from memreader.scenes.clipping import MAX_LABEL, clip
from memreader.scenes.text_checks import check_nested_text, check_text
from memreader.scopes import info_scope

__all__ = [
    "ROLES",
    "Message",
    "Scene",
    "SceneType",
    "UnknownParts",
    "normalize_chat",
    "parse_content_part",
    "validate_info",
]

ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})
SceneType = Literal["chat", "doc"]
# What normalisation does with unknown part types, for the call in progress (a context variable
# rather than a parameter threaded through every helper).
_UNKNOWN_PARTS: ContextVar[str] = ContextVar("memreader_unknown_parts", default="error")


@dataclass(frozen=True)
class Message:
    """A normalised message (for documents: one document part)."""

    index: int
    role: str | None
    parts: tuple[Part, ...]
    chat_time: str | None = None
    timestamp: datetime | None = None
    message_id: str | None = None
    name: str | None = None
    tool_call_id: str | None = None


@dataclass(frozen=True)
class Scene:
    """A normalised scene: a conversation, or one document."""

    index: int
    type: SceneType
    messages: tuple[Message, ...]


def validate_info(info: Mapping[str, Any] | None) -> dict[str, Any]:
    """Check that ``info`` holds string ``user_id`` and ``session_id`` and that all its text is
    valid Unicode (items copy it); return a copy."""
    if not isinstance(info, Mapping):
        raise InvalidInfoError(f"info must be a mapping with user_id and session_id, got {info!r}")
    for key in ("user_id", "session_id"):
        value = info.get(key)
        if not isinstance(value, str) or not value:
            raise InvalidInfoError(f"info[{key!r}] must be a non-empty string, got {value!r}")
    try:
        info_scope(info)
    except InputError as exc:
        raise InvalidInfoError(str(exc)) from exc
    check_nested_text(info, "info")
    return dict(info)


UnknownParts = Literal["error", "keep"]


def normalize_chat(scene_data: Any, *, unknown_parts: UnknownParts = "error") -> list[Scene]:
    """Normalise chat input into scenes.

    Content parts are read in the shapes OpenAI and Anthropic send
    (:mod:`memreader.scenes.api_parts`),
    and OpenAI Responses ``function_call`` / ``function_call_output`` items are messages (an
    assistant's tool call, a tool's output). A part of a type no parser knows, or of a known
    type in a shape that is not, is an :class:`InvalidMessageError` naming scene, message and
    part with ``unknown_parts="error"``; with ``"keep"`` it becomes an ``unsupported`` part
    that keeps its place (rendered as a placeholder, its payload saying why, and reported per
    window by the readers that keep them).

    >>> [len(s.messages) for s in normalize_chat([{"role": "user", "content": "hi"}])]
    [1]
    >>> part = normalize_chat([{"role": "user", "content": [{"type": "video"}]}],
    ...                       unknown_parts="keep")[0].messages[0].parts[0]
    >>> part.type, part.payload
    ('unsupported', {'type': 'video', 'reason': "no parser for part type 'video'"})
    """
    token = _UNKNOWN_PARTS.set(unknown_parts)
    try:
        return _normalize_chat(scene_data)
    finally:
        _UNKNOWN_PARTS.reset(token)


def _normalize_chat(scene_data: Any) -> list[Scene]:
    if isinstance(scene_data, str):
        return [_string_scene(scene_data, 0)]
    if not isinstance(scene_data, Sequence) or isinstance(scene_data, bytes | bytearray):
        raise InvalidSceneError(
            f"chat input must be a list of scenes, got {type(scene_data).__name__}"
        )
    if not scene_data:
        raise InvalidSceneError("chat input holds no scenes")
    if all(isinstance(item, Mapping) for item in scene_data):
        return [_chat_scene(scene_data, 0)]
    return [_chat_scene(scene, i) for i, scene in enumerate(scene_data)]


def _string_scene(text: str, scene_index: int) -> Scene:
    if not text.strip():
        raise InvalidSceneError("scene is an empty string", scene_index=scene_index)
    check_text(text, "scene text", error=InvalidSceneError, scene_index=scene_index)
    message = Message(index=0, role=None, parts=(Part(type="text", text=text),))
    return Scene(index=scene_index, type="chat", messages=(message,))


def _chat_scene(scene: Any, scene_index: int) -> Scene:
    if isinstance(scene, str):
        return _string_scene(scene, scene_index)
    if isinstance(scene, Mapping):
        raise InvalidSceneError(
            "scene is a single message; wrap it in a list", scene_index=scene_index
        )
    if not isinstance(scene, Sequence) or isinstance(scene, bytes | bytearray):
        raise InvalidSceneError(
            f"scene must be a list of messages or a string, got {type(scene).__name__}",
            scene_index=scene_index,
        )
    if not scene:
        raise InvalidSceneError("scene has no messages", scene_index=scene_index)
    messages = tuple(_message(m, scene_index, i) for i, m in enumerate(scene))
    return Scene(index=scene_index, type="chat", messages=messages)


def _optional_str(raw: Mapping[str, Any], key: str, scene: int, index: int) -> str | None:
    value = raw.get(key)
    if value is None:
        return None
    error = InvalidChatTimeError if key == "chat_time" else InvalidMessageError
    if not isinstance(value, str):
        raise error(
            f"{key} must be a string, got {type(value).__name__}",
            scene_index=scene,
            message_index=index,
        )
    return check_text(value, key, error=error, scene_index=scene, message_index=index)


def _message(raw: Any, scene: int, index: int) -> Message:
    if not isinstance(raw, Mapping):
        raise InvalidMessageError(
            f"message must be a mapping with role and content, got {type(raw).__name__}",
            scene_index=scene,
            message_index=index,
        )
    role = raw.get("role")
    item = None
    if role is None:  # an OpenAI Responses item that is not a message (a function call)
        item = responses_item(raw, PartContext(scene, index, None, _UNKNOWN_PARTS.get() == "keep"))
    if item is not None:
        role, parts = item
    elif not isinstance(role, str) or role not in ROLES:
        kind = raw.get("type")
        what = f" (item type {clip(repr(kind), MAX_LABEL).text})" if kind is not None else ""
        raise UnknownRoleError(
            f"unknown role {clip(repr(role), MAX_LABEL).text}{what}; "
            f"expected one of {sorted(ROLES)}",
            scene_index=scene,
            message_index=index,
        )
    else:
        parts = list(_content_parts(raw.get("content"), scene, index))
    refusal = raw.get("refusal")
    if refusal is not None:
        if not isinstance(refusal, str):
            raise InvalidMessageError(
                "refusal must be a string", scene_index=scene, message_index=index
            )
        check_text(refusal, "refusal", scene_index=scene, message_index=index)
        parts.append(Part(type="refusal", text=refusal))
    tool_calls = raw.get("tool_calls")
    if tool_calls:
        parts.append(_tool_calls_part(tool_calls, scene, index))
    parts.extend(_tool_definitions(raw.get("tools"), scene, index))
    if "content" not in raw and not tool_calls and refusal is None and item is None:
        raise InvalidMessageError("message has no content", scene_index=scene, message_index=index)
    if not parts:
        # No text at all (content None or []): the message still counts (every message is in
        # some item's sources), but there is no text a span could point into.
        parts.append(Part(type=EMPTY_PART, text="", exact=False))
    chat_time = _optional_str(raw, "chat_time", scene, index)
    timestamp = parse_chat_time(chat_time) if chat_time else None
    if timestamp is not None and not utc_in_range(timestamp):
        raise InvalidChatTimeError(
            f"chat_time {chat_time!r} is out of range: in UTC it falls outside years 1 to 9999",
            scene_index=scene,
            message_index=index,
        )
    return Message(
        index=index,
        role=role,
        parts=tuple(parts),
        chat_time=chat_time,
        timestamp=timestamp,
        message_id=_optional_str(raw, "message_id", scene, index),
        name=_optional_str(raw, "name", scene, index),
        tool_call_id=_optional_str(
            raw, "tool_call_id" if item is None else "call_id", scene, index
        ),
    )


def _content_parts(content: Any, scene: int, index: int) -> list[Part]:
    if content is None:
        return []
    if isinstance(content, str):
        check_text(content, "content", scene_index=scene, message_index=index)
        return [Part(type="text", text=content)]
    if not isinstance(content, Sequence) or isinstance(content, bytes | bytearray):
        raise InvalidMessageError(
            f"content must be a string or a list of parts, got {type(content).__name__}",
            scene_index=scene,
            message_index=index,
        )
    keep = _UNKNOWN_PARTS.get() == "keep"
    return [
        p
        for i, part in enumerate(content)
        for p in content_parts(part, PartContext(scene, index, i, keep))
    ]


def parse_content_part(
    part: Any, scene_index: int, message_index: int, part_index: int | None
) -> Part:
    """One content part (a string, or a mapping with a ``type``) as a :class:`Part`; raises
    :class:`InvalidMessageError` naming where it is when it is malformed (or makes several
    parts: a tool result or document holding a list of blocks)."""
    ctx = PartContext(scene_index, message_index, part_index)
    parts = content_parts(part, ctx)
    if len(parts) != 1:
        raise ctx.fail("a part holding a list of blocks cannot stand alone here")
    return parts[0]


def _tool_definitions(tools: Any, scene: int, index: int) -> list[Part]:
    """A message's ``tools`` (OpenAI function definitions, or ``{name, description,
    parameters}``) as ``tool_description`` parts, one per tool."""
    if tools is None:
        return []
    if not isinstance(tools, Sequence) or isinstance(tools, str | bytes | bytearray):
        raise InvalidMessageError("tools must be a list", scene_index=scene, message_index=index)
    parts = []
    for tool in tools:
        definition = tool.get("function", tool) if isinstance(tool, Mapping) else None
        if not isinstance(definition, Mapping) or not isinstance(definition.get("name"), str):
            raise InvalidMessageError(
                "each tool definition needs a string 'name' (or a 'function' with one)",
                scene_index=scene,
                message_index=index,
            )
        payload = {"type": "tool_description", **definition}
        check_nested_text(
            payload,
            "tool definition",
            error=InvalidMessageError,
            scene_index=scene,
            message_index=index,
        )
        parts.append(Part(type="tool_description", exact=False, payload=payload))
    return parts


def _tool_calls_part(tool_calls: Any, scene: int, index: int) -> Part:
    if not isinstance(tool_calls, Sequence) or isinstance(tool_calls, str):
        raise InvalidMessageError(
            "tool_calls must be a list", scene_index=scene, message_index=index
        )
    calls = []
    for call in tool_calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise InvalidMessageError(
                "each tool call needs a 'function' mapping", scene_index=scene, message_index=index
            )
        name, arguments = function.get("name"), function.get("arguments", "")
        for what, value in (("name", name), ("arguments", arguments)):
            # Arguments given as objects are rendered as JSON: every key and value is text.
            check_nested_text(
                value,
                f"tool call {what}",
                error=InvalidMessageError,
                scene_index=scene,
                message_index=index,
            )
        calls.append({"name": name, "arguments": arguments})
    return Part(type="tool_calls", exact=False, payload=tuple(calls))
