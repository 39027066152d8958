"""The records of JSON and JSONL inputs: where a record's messages are, and messages of other
layouts mapped to OpenAI style by the spec's :class:`~memreader.batch.job.FieldMapping`."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memreader.errors import InvalidMessageError, InvalidSceneError
from memreader.scenes.scene import ROLES

if TYPE_CHECKING:
    from memreader.batch.job import FieldMapping

__all__ = ["map_message", "record_scene", "speaker_role"]


def map_message(raw: Any, mapping: FieldMapping, index: int) -> dict[str, Any]:
    """``raw`` in OpenAI style by ``mapping``. A role value that ``mapping.roles`` does not map
    stays as it is when it is an OpenAI role already; any other value (a speaker's name) is kept
    as the message's ``name``, with the role ``mapping.roles`` or ``mapping.default_role`` gives
    it (see :func:`speaker_role`).

    Raises:
        InvalidMessageError: a key is missing, the role value is not a non-empty string, or the
            speaker is not mapped.
    """
    if not isinstance(raw, Mapping):
        raise InvalidMessageError(
            f"message {index} must be a mapping, got {type(raw).__name__}", message_index=index
        )
    if mapping.role not in raw:
        raise InvalidMessageError(f"message has no {mapping.role!r} key", message_index=index)
    if mapping.content not in raw:
        raise InvalidMessageError(f"message has no {mapping.content!r} key", message_index=index)
    value = raw[mapping.role]
    if not isinstance(value, str) or not value:
        raise InvalidMessageError(
            f"{mapping.role!r} must be a non-empty string", message_index=index
        )
    message: dict[str, Any] = {}
    if value in mapping.roles or value not in ROLES:
        message["role"] = speaker_role(value, mapping.roles, mapping.default_role, index)
        if value not in ROLES:
            message["name"] = value
    else:
        message["role"] = value
    message["content"] = raw[mapping.content]
    if mapping.time and raw.get(mapping.time) is not None:
        message["chat_time"] = raw[mapping.time]
    return message


def speaker_role(
    speaker: str, roles: Mapping[str, str], default_role: str | None, index: int
) -> str:
    """The role of ``speaker`` by ``roles``, else ``default_role``.

    Raises:
        InvalidMessageError: neither gives ``speaker`` a role (an unmapped speaker is never
            silently the user).
    """
    role = roles.get(speaker, default_role)
    if role is None:
        raise InvalidMessageError(
            f"speaker {speaker!r} is not mapped: add it to mapping.roles or set "
            "mapping.default_role",
            message_index=index,
        )
    return role


def record_scene(record: Any, mapping: FieldMapping | None) -> tuple[Any, Mapping[str, Any] | None]:
    """The scene a JSON(L) record holds, and the record's object (for ``from: field`` ids)."""
    obj: Mapping[str, Any] | None = None
    if isinstance(record, Mapping):
        key = mapping.messages if mapping is not None and mapping.messages else "messages"
        if key not in record:
            raise InvalidSceneError(f"the record has no {key!r} key (its messages)")
        obj, messages = record, record[key]
    else:
        messages = record
    if mapping is not None and isinstance(messages, list):
        messages = [map_message(m, mapping, i) for i, m in enumerate(messages)]
    return messages, obj
