"""Files and URLs handed to ``Memory.add`` (memU's ``memorize(resource_url)``).

- A :class:`pathlib.Path` (any ``os.PathLike``) is read as ``memreader read`` reads it: a JSON
  file of a chat or of scenes is a chat; anything else is one document, converted as the reader
  converts files (PDF, DOCX, HTML, Markdown, ...). ``type="chat"`` or ``type="doc"`` says it
  outright. The file is read because the caller's code named it, so the reader's
  ``allow_local_paths`` (which guards paths that arrive *inside* content) does not apply to it;
  its limits (``max_file_bytes``, the conversion limits) do.
- A URL given as pydantic's :class:`~pydantic.AnyUrl` (``AnyUrl("https://...")``,
  ``AnyUrl("s3://bucket/key")``) is fetched through the fetcher with the reader's ``fetch``
  settings: the address guard (no private or loopback address unless ``fetch.allow_hosts``
  names it), the schemes, content types, redirects, timeouts and byte limit, and for S3
  ``fetch.s3.allow_buckets``. A plain string is never fetched: it is a message.

A document keeps where it came from: each item's sources carry ``doc_path`` (the path as given,
or the URL without credentials or query).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from pydantic import AnyUrl

from memreader.documents.loader import convert_bytes, load_path
from memreader.errors import InputError
from memreader.fetch.local_files import DocumentAccess, read_local_file
from memreader.fetch.settings import FetchConfig
from memreader.scenes.api_parts import Part
from memreader.scenes.memorybank import is_memorybank

__all__ = ["is_resource", "read_resource"]

#: Suffixes of files read as a chat when ``type`` is not given (and their JSON is one).
_CHAT_SUFFIXES = (".json",)
_WHERE = {"scene_index": 0, "message_index": 0}


def is_resource(data: Any) -> bool:
    """Whether ``add`` reads ``data`` from where it points: a path object or a URL object."""
    return isinstance(data, (os.PathLike, AnyUrl))


def read_resource(data: Any, type: str | None, config: Any) -> tuple[str, Any]:
    """``data`` (see :func:`is_resource`) read into what ``add`` takes: ``("chat", scenes)``
    or ``("doc", [[part]])``. ``config`` is the reader's config (its document limits, and its
    ``fetch`` settings when it has them).

    Raises:
        InputError: no such file, a ``type`` that does not fit it (a chat that is not JSON),
            a MemoryBank file (many users: ``memreader read``); ``DocumentError`` /
            ``FetchError`` / ``BlockedAddressError``: the file or URL could not be read,
            fetched or converted.
    """
    if type not in (None, "chat", "doc"):
        raise InputError(f"add(type=...) must be None, 'chat' or 'doc', got {type!r}")
    limits = _limits(config)
    if isinstance(data, AnyUrl):
        if type == "chat":
            raise InputError("add(): a URL is read as a document; type='chat' takes a file")
        return "doc", [[_fetched_part(str(data), limits, config)]]
    path = Path(os.fspath(data))
    resolved = os.path.realpath(path)
    if not os.path.isfile(resolved):
        raise InputError(f"add(): {str(path)!r} is not a file")
    if type == "chat" or (type is None and path.suffix.lower() in _CHAT_SUFFIXES):
        chat = _chat_file(path, resolved, limits, forced=type == "chat")
        if chat is not None:
            return "chat", chat
    grant = limits.model_copy(
        update={"allow_local_paths": True, "allowed_roots": [resolved], "allow_hidden_files": True}
    )
    return "doc", [[load_path(str(path), access=grant, **_WHERE)]]


def _limits(config: Any) -> DocumentAccess:
    """The reader's document limits (its config is a ``DocumentAccess``), else the defaults."""
    if isinstance(config, DocumentAccess):
        fields = {name: getattr(config, name) for name in DocumentAccess.model_fields}
        return DocumentAccess.model_validate(fields)
    return DocumentAccess()


def _chat_file(path: Path, resolved: str, limits: DocumentAccess, forced: bool) -> Any:
    """The scenes of a JSON chat file; ``None`` when it is JSON of another shape and the caller
    did not say ``type="chat"`` (then it is a document)."""
    raw = read_local_file(resolved, path.name, limits.max_file_bytes, dict(_WHERE))
    try:
        data = json.loads(raw.decode("utf-8-sig"))
    except (UnicodeDecodeError, json.JSONDecodeError, RecursionError) as exc:
        if forced:
            raise InputError(f"add(): {path.name!r} is not a JSON chat file: {exc}") from None
        return None
    if is_memorybank(data):
        raise InputError(
            f"add(): {path.name!r} is a MemoryBank file (one chat per user): read it with "
            "`memreader read FILE --store URL`, which gives each user their own memories"
        )
    if _is_chat(data):
        return data if isinstance(data[0], list) else [data]
    if forced:
        raise InputError(
            f"add(): {path.name!r} holds no chat (a list of messages or a list of scenes)"
        )
    return None


def _is_chat(data: Any) -> bool:
    """A list of messages (dicts with a ``role``) or a list of such lists."""
    if not isinstance(data, list) or not data:
        return False
    if all(isinstance(m, dict) and "role" in m for m in data):
        return True
    return all(
        isinstance(scene, list) and all(isinstance(m, dict) and "role" in m for m in scene)
        for scene in data
    )


def _fetched_part(url: str, limits: DocumentAccess, config: Any) -> Part:
    """The document at ``url``, fetched under the reader's fetch settings and converted."""
    from memreader.fetch.fetcher import Fetcher

    settings = getattr(config, "fetch", None)
    fetch = settings if isinstance(settings, FetchConfig) else FetchConfig()
    with Fetcher(fetch, max_bytes=limits.max_file_bytes) as fetcher:
        fetched = fetcher.fetch(url, where=_WHERE)
    extension = ".md" if fetched.markdown else fetched.extension
    text = convert_bytes(
        fetched.data, extension, limits=limits, media_type=fetched.media_type, **_WHERE
    )
    return Part(type="file", text=text, doc_path=fetched.source)
