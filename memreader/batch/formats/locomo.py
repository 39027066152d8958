"""``format: locomo``: LoCoMo samples (one, or a list), each a ``conversation`` of
``session_N`` lists of turns with ``session_N_date_time``; one scene per session, speakers kept
as ``name``. Unless the spec sets them, ``user_id`` is the ``sample_id`` and ``session_id``
``locomo:<sample_id>``."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from functools import partial
from pathlib import PurePosixPath
from typing import TYPE_CHECKING, Any

from memreader.batch.formats.base import (
    BadRecord,
    JsonShapedFormat,
    Scene,
    checked_scene,
    input_ids,
    register_format,
)
from memreader.batch.formats.records import speaker_role
from memreader.errors import InvalidMessageError, InvalidSceneError

if TYPE_CHECKING:
    from memreader.batch.job import FieldMapping, InputSpec
    from memreader.batch.places.opened import OpenedInput

__all__ = ["LocomoFormat"]

_SESSION = re.compile(r"^session_(\d+)$")


@register_format("locomo")
class LocomoFormat(JsonShapedFormat):
    """LoCoMo samples (see the module docstring)."""

    @classmethod
    def fits(cls, data: Any) -> bool:
        """Whether ``data`` is a LoCoMo sample, or a non-empty list of them."""
        samples = data if isinstance(data, list) else [data]
        return bool(samples) and all(
            isinstance(s, Mapping) and isinstance(s.get("conversation"), Mapping) for s in samples
        )

    def scenes(
        self, data: Any, opened: OpenedInput, spec: InputSpec
    ) -> Iterator[Scene | BadRecord]:
        """One scene per session, in session order; a sample without a conversation is a bad
        record."""
        samples = data if isinstance(data, list) else [data]
        index = 0
        stem = PurePosixPath(opened.location).stem
        for s, sample in enumerate(samples):
            conversation = sample.get("conversation") if isinstance(sample, Mapping) else None
            if not isinstance(conversation, Mapping):
                yield BadRecord(None, f"sample {s}", "InvalidSceneError", "no 'conversation'")
                continue
            sample_id = sample.get("sample_id")
            name = str(sample_id) if isinstance(sample_id, str | int) and sample_id != "" else None
            defaults = (name or stem, f"locomo:{name or stem}")
            sessions = sorted(
                (int(m.group(1)), k) for k in conversation if (m := _SESSION.match(str(k)))
            )
            for _, session in sessions:
                label = f"sample {name if name is not None else s}, {session}"
                make = partial(_session, conversation, session, sample, defaults, opened, spec)
                yield checked_scene(index, label, make)
                index += 1


def _session(
    conversation: Mapping[str, Any],
    session: str,
    sample: Mapping[str, Any],
    defaults: tuple[str, str],
    opened: OpenedInput,
    spec: InputSpec,
) -> tuple[Any, dict[str, str]]:
    scene = session_scene(conversation, session, spec.mapping)
    return scene, input_ids(spec, opened, sample, defaults)


def session_scene(
    conversation: Mapping[str, Any], session: str, mapping: FieldMapping | None
) -> list[dict[str, Any]]:
    """A LoCoMo session as a scene: ``speaker_a`` is the user and ``speaker_b`` the assistant
    unless ``mapping.roles`` says otherwise; another speaker has ``mapping.default_role``, and
    without one its turn makes the session a bad record (never silently the user's). Every
    message keeps its speaker as ``name``, its ``dia_id`` as ``message_id`` and the session's
    date as ``chat_time``."""
    turns = conversation[session]
    if not isinstance(turns, list):
        raise InvalidSceneError(f"{session} must be a list of turns")
    when = conversation.get(f"{session}_date_time")
    roles = {
        str(conversation.get("speaker_a")): "user",
        str(conversation.get("speaker_b")): "assistant",
        **(mapping.roles if mapping is not None else {}),
    }
    default_role = mapping.default_role if mapping is not None else None
    scene = []
    for i, turn in enumerate(turns):
        if not isinstance(turn, Mapping):
            raise InvalidMessageError("a turn must be a mapping", message_index=i)
        speaker, text = turn.get("speaker"), turn.get("text")
        if not isinstance(speaker, str) or not speaker or not isinstance(text, str):
            raise InvalidMessageError("a turn needs string 'speaker' and 'text'", message_index=i)
        message: dict[str, Any] = {
            "role": speaker_role(speaker, roles, default_role, i),
            "name": speaker,
            "content": text,
        }
        if isinstance(when, str) and when.strip():
            message["chat_time"] = when
        if isinstance(turn.get("dia_id"), str):
            message["message_id"] = turn["dia_id"]
        scene.append(message)
    return scene
