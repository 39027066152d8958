"""Document input normalised into scenes: one scene per document, one message per part.

A document is plain text, an explicit part (``{"type": "text"}`` / ``{"type": "file"}``), a list
of such parts, or a string naming a local file (only where the config allows local paths, and
then only under ``allowed_roots``). Files are read and converted here, within the limits of
:mod:`memreader.documents.limits`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memreader.documents.limits import DocumentAccess
from memreader.documents.loader import load_file_part, load_path
from memreader.errors import DocumentError, InvalidSceneError
from memreader.scene import Message, Part, Scene

__all__ = ["normalize_doc", "normalize_doc_refs"]

#: URL schemes a document string may name when documents are fetched (the multimodal reader).
REMOTE_PREFIXES = ("http://", "https://", "s3://")


def normalize_doc(scene_data: Any, access: DocumentAccess | None = None) -> list[Scene]:
    """Normalise document input: one scene per document, one message per part.

    ``access`` says which local files may be read and within which limits (default: none, and
    the default limits); a reader passes its config, which is a :class:`DocumentAccess`. Local
    files are read only with ``allow_local_paths`` (off by default: input may come from
    strangers), and with ``allowed_roots`` only when their resolved path lies under one of them.
    A string is text unless local paths are allowed and it names an existing regular file; such
    a file outside ``allowed_roots`` is a :class:`DocumentError`, never read and never taken
    for text. Hidden files and folders (a name starting with ``.`` below the root) are refused
    unless ``allow_hidden_files``. A string is never taken for a path because it contains a
    slash.
    """
    access = access if access is not None else DocumentAccess()

    def part(item: Any, where: dict[str, int]) -> Part:
        if isinstance(item, str):
            if access.allow_local_paths and _is_local_file(item):
                return load_path(item, access=access, **where)
            return Part(type="text", text=item)
        if isinstance(item, Mapping) and item.get("type") == "text":
            text = item.get("text")
            if not isinstance(text, str):
                raise DocumentError("text part needs a string 'text'", **where)
            return Part(type="text", text=text)
        if isinstance(item, Mapping) and item.get("type") == "file":
            return load_file_part(item.get("file"), access=access, **where)
        raise DocumentError(
            "document part must be text, a {'type': 'text'|'file'} part, or a file path; "
            f"got {_short(item)}",
            **where,
        )

    return _doc_scenes(scene_data, part)


def normalize_doc_refs(
    scene_data: Any, *, allow_local_paths: bool = False, base_dir: str | None = None
) -> list[Scene]:
    """Normalise document input without reading anything: one scene per document, one message
    per part, where files stay references for a reader that fetches them (the multimodal
    reader's ``read_parts`` step).

    A string is a URL to fetch when it is one line starting with ``http://``, ``https://`` or
    ``s3://``; a local file when local paths are allowed and it names an existing file (a
    relative path is looked up under ``base_dir`` when one is set, never in the working
    directory: the fetcher reads it from there, under ``allowed_roots``); text otherwise.
    Parts may be ``{"type": "text"}``, ``{"type": "file", "file": {...}}`` (``path``, ``url``,
    ``file_data``) or an image part (``image_url``).

    >>> scene = normalize_doc_refs([["https://example.com/report.pdf", "plain text"]])[0]
    >>> [(m.parts[0].type, m.parts[0].exact) for m in scene.messages]
    [('file', False), ('text', True)]
    """
    from memreader.scene import parse_content_part

    def part(item: Any, where: dict[str, int]) -> Part:
        if isinstance(item, str):
            return _string_part(item, allow_local_paths, base_dir)
        if isinstance(item, Mapping) and item.get("type") in ("text", "file", "image_url"):
            try:
                return parse_content_part(item, where["scene_index"], where["message_index"], None)
            except ValueError as exc:  # a malformed part, named where it is
                raise DocumentError(getattr(exc, "reason", str(exc)), **where) from None
        raise DocumentError(
            "document part must be text, a {'type': 'text'|'file'|'image_url'} part, a URL or "
            f"a file path; got {_short(item)}",
            **where,
        )

    return _doc_scenes(scene_data, part)


def _doc_scenes(scene_data: Any, part: Callable[[Any, dict[str, int]], Part]) -> list[Scene]:
    """One scene per document and one message per part, each part made by ``part(item,
    where)``; the shape of the input is checked here."""
    if isinstance(scene_data, str | Mapping):
        scene_data = [scene_data]
    if not isinstance(scene_data, Sequence) or isinstance(scene_data, bytes | bytearray):
        raise InvalidSceneError(
            f"doc input must be a list of documents, got {type(scene_data).__name__}"
        )
    if not scene_data:
        raise InvalidSceneError("doc input holds no documents")
    scenes = []
    for scene_index, doc in enumerate(scene_data):
        items = doc if isinstance(doc, list | tuple) else [doc]
        if not items:
            raise InvalidSceneError("document has no parts", scene_index=scene_index)
        messages = [
            Message(
                index=i,
                role=None,
                parts=(part(item, {"scene_index": scene_index, "message_index": i}),),
            )
            for i, item in enumerate(items)
        ]
        scenes.append(Scene(index=scene_index, type="doc", messages=tuple(messages)))
    return scenes


def _string_part(text: str, allow_local_paths: bool, base_dir: str | None) -> Part:
    if "\n" not in text and text.strip() == text and text.startswith(REMOTE_PREFIXES):
        return Part(type="file", exact=False, payload={"url": text})
    if allow_local_paths and _is_local_file(text, base_dir):
        return Part(type="file", exact=False, payload={"path": text})
    return Part(type="text", text=text)


def _is_local_file(text: str, base_dir: str | None = None) -> bool:
    """Whether ``text`` names an existing file: a relative name under ``base_dir`` when one is
    set (where the fetcher will read it), else under the working directory."""
    if not text or len(text) > 4096 or "\n" in text or "\0" in text:
        return False
    try:
        path = text
        if base_dir is not None and not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        return os.path.isfile(path)
    except (OSError, ValueError):
        return False


def _short(value: Any) -> str:
    try:
        text = json.dumps(value, default=repr)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."
