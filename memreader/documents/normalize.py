"""Document input normalised into scenes: one scene per document, one message per part.

A document is plain text, an explicit part (``{"type": "text"}`` / ``{"type": "file"}``), a list
of such parts, or a string naming a local file (only where the config allows local paths, and
then only under ``allowed_roots``). Files are read and converted here, within the limits of
:class:`~memreader.fetch.local_files.DocumentLimits` (checked by :mod:`memreader.documents.limits`).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from memreader.documents.loader import load_file_part, load_path
from memreader.errors import DocumentError, InvalidSceneError
from memreader.fetch.local_files import DocumentAccess
from memreader.scenes.api_parts import Part
from memreader.scenes.scene import Message, Scene

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
        if isinstance(item, Part):  # read already by the caller's code (``Memory.add(Path)``)
            return item
        if isinstance(item, str):
            if access.allow_local_paths and _is_local_file(item):
                return load_path(item, access=access, **where)
            return Part(type="text", text=item)
        shaped = _shaped_part(item, where, _DOC_TYPES)
        if shaped.type == "file" and not shaped.exact:
            return load_file_part(shaped.payload, access=access, **where)
        return shaped

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
    Parts may be text (``text``, ``input_text``), a file (``{"type": "file", "file": {...}}``,
    ``{"type": "input_file", ...}``, Anthropic's ``document``, or a bare ``{"file_data": ...,
    "filename": ...}``: ``path``, ``url``, ``file_url``, ``file_data``) or an image part.

    >>> scene = normalize_doc_refs([["https://example.com/report.pdf", "plain text"]])[0]
    >>> [(m.parts[0].type, m.parts[0].exact) for m in scene.messages]
    [('file', False), ('text', True)]
    """

    def part(item: Any, where: dict[str, int]) -> Part:
        if isinstance(item, Part):  # read already by the caller's code (``Memory.add(Path)``)
            return item
        if isinstance(item, str):
            return _string_part(item, allow_local_paths, base_dir)
        return _shaped_part(item, where, _DOC_REF_TYPES)

    return _doc_scenes(scene_data, part)


#: The part types a document may be given as: text (OpenAI's and Anthropic's), a file
#: (OpenAI's ``file`` and ``input_file``, Anthropic's ``document``), and, where documents are
#: fetched, an image.
_TEXT_TYPES = ("text", "input_text", "output_text")
_DOC_TYPES = (*_TEXT_TYPES, "file", "input_file", "document")
_DOC_REF_TYPES = (*_DOC_TYPES, "image_url", "input_image", "image")
#: The keys that make a mapping without a ``type`` a file: ``{"file_data": ..., "filename":
#: "a.pdf"}``.
_FILE_KEYS = ("file_data", "file_url", "file_id", "path", "url")


def _shaped_part(item: Any, where: dict[str, int], types: tuple[str, ...]) -> Part:
    """A document part in one of the shapes of ``types`` (or a bare file reference), as a
    :class:`Part`; a :class:`DocumentError` naming where it is otherwise."""
    from memreader.scenes.scene import parse_content_part

    if isinstance(item, Mapping) and item.get("type") in _TEXT_TYPES:
        text = item.get("text")
        if not isinstance(text, str):
            raise DocumentError(f"{item['type']} part needs a string 'text'", **where)
        return Part(type="text", text=text)  # checked with the document's text, when parsed
    if isinstance(item, Mapping) and "type" not in item and any(k in item for k in _FILE_KEYS):
        item = {"type": "file", "file": item}
    if isinstance(item, Mapping) and item.get("type") in types:
        try:
            return parse_content_part(item, where["scene_index"], where["message_index"], None)
        except ValueError as exc:  # a malformed part, named where it is
            raise DocumentError(getattr(exc, "reason", str(exc)), **where) from None
    shown = "|".join(types)
    raise DocumentError(
        f"document part must be text, a {{'type': {shown}}} part, a file reference "
        f"({{'file_data'|'file_url'|'path': ..., 'filename': ...}}) or a file path; "
        f"got {_short(item)}",
        **where,
    )


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
