"""What a part asks to read: a :class:`PartTask` per file, image or audio part, built from the
part's raw payload (a URL, a path, inline data), with the file name that tells its format.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

from memreader.fetch.data_urls import is_data_url

__all__ = ["Kind", "PartTask", "task_for_part"]

Kind = Literal["document", "image", "audio"]


@dataclass(frozen=True)
class PartTask:
    """One part to read: where it is in the input, what kind it is, and what it names.

    ``ref`` is a URL (``http(s)``, ``s3``, ``data:``) or a local path; ``inline`` holds data
    given in the part itself (base64 ``file_data``, ``input_audio.data``), decoded here.
    ``name`` is a file name hint for the format (``filename``); ``audio_format`` is an
    ``input_audio`` part's ``format``.
    """

    scene_index: int
    message_index: int
    part_index: int | None
    kind: Kind
    ref: str | None = None
    inline: str | None = None
    name: str = ""
    audio_format: str | None = None
    unsupported: str | None = None  # a reason to keep it as a placeholder without reading

    @property
    def where(self) -> dict[str, int | None]:
        """The location keywords of typed errors."""
        return {
            "scene_index": self.scene_index,
            "message_index": self.message_index,
            "part_index": self.part_index,
        }

    @property
    def share_key(self) -> tuple[str, str] | None:
        """Parts with the same key are fetched once per call."""
        if self.ref is not None:
            return (self.kind, self.ref)
        if self.inline is not None:
            return (self.kind, hashlib.sha256(self.inline.encode()).hexdigest())
        return None


def task_for_part(
    part_type: str,
    payload: Any,
    *,
    scene_index: int,
    message_index: int,
    part_index: int | None,
) -> PartTask | None:
    """The task reading a part of ``part_type`` with ``payload``, or ``None`` for parts that
    read nothing from outside (text, tool traffic)."""
    at = (scene_index, message_index, part_index)
    if part_type == "image_url" and isinstance(payload, str):
        return PartTask(*at, "image", ref=payload, name=_url_name(payload))
    if part_type == "image_url" and isinstance(payload, Mapping):
        return PartTask(*at, "image", unsupported=_by_id(_text(payload.get("file_id"))))
    if part_type == "file" and isinstance(payload, Mapping):
        return _file_task(payload, at)
    if part_type == "input_audio" and isinstance(payload, Mapping):
        fmt = _text(payload.get("format")) or None
        name = _text(payload.get("filename"))
        for key in ("url", "path"):
            ref = _text(payload.get(key))
            if ref:
                return PartTask(
                    *at, "audio", ref=ref, name=name or _url_name(ref), audio_format=fmt
                )
        data = _text(payload.get("data"))
        if data:
            return PartTask(*at, "audio", inline=data, name=name, audio_format=fmt)
        return PartTask(*at, "audio", unsupported="audio part has no data, url or path")
    return None


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _file_task(file: Mapping[str, Any], at: tuple[int, int, int | None]) -> PartTask:
    name = os.path.basename(_text(file.get("filename")))
    for key in ("url", "path"):
        ref = _text(file.get(key))
        if ref:
            return PartTask(*at, "document", ref=ref, name=name or _url_name(ref))
    data = _text(file.get("file_data"))
    if data:
        if data[:8].lower().startswith(("http://", "https://", "s3://")) or is_data_url(data):
            return PartTask(*at, "document", ref=data, name=name or _url_name(data))
        return PartTask(*at, "document", inline=data, name=name)
    file_id = _text(file.get("file_id"))
    if file_id:
        return PartTask(*at, "document", name=name, unsupported=_by_id(file_id))
    return PartTask(*at, "document", name=name, unsupported="file part has no content")


def _by_id(file_id: str) -> str:
    shown = file_id if len(file_id) <= 100 else file_id[:97] + "..."
    return (
        f"file_id parts cannot be read: {shown!r} names a file uploaded to an API, and "
        "memreader has no API to fetch it (give a path, a URL or the data)"
    )


def _url_name(ref: str) -> str:
    """The last path segment of a URL or path (no query), for the format."""
    if is_data_url(ref):
        return ""
    path = ref.split("?", 1)[0].split("#", 1)[0]
    return os.path.basename(path.rstrip("/"))
