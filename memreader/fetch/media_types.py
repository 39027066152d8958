"""What fetched bytes are called and what they may be: media types, extensions, labels.

Pure functions over names and types, with no I/O, so that :mod:`memreader.fetch.fetcher`
(http, local and inline sources) and :mod:`memreader.fetch.s3` (S3 objects) apply
one set of rules:

* :func:`check_content_type` refuses a response whose type does not fit the part (an image
  part must get an image, a document part one of the document types or
  ``allowed_content_types``), before its body is read;
* :func:`media_type_of` and :func:`extension_for` turn a ``Content-Type`` and a name into what
  format detection needs, from Python's own mimetypes table (not the machine's);
* :func:`safe_label` names a source in messages and logs without its credentials or query,
  and :func:`is_remote` says which references go over the network.

It also holds the extension sets both fetching and the document loader go by
(``TEXT_EXTENSIONS``, ``ZIP_DOCUMENT_EXTENSIONS``): the loader imports them from here.
"""

from __future__ import annotations

import functools
import mimetypes
import os
import posixpath
from email.message import Message
from typing import Any, Literal
from urllib.parse import urlsplit

from memreader.errors import FetchError
from memreader.fetch.settings import FetchConfig

__all__ = [
    "TEXT_EXTENSIONS",
    "ZIP_DOCUMENT_EXTENSIONS",
    "FetchKind",
    "check_content_type",
    "disposition_name",
    "extension_for",
    "is_remote",
    "media_type_of",
    "safe_label",
]

FetchKind = Literal["document", "image", "audio"]

_REMOTE_PREFIXES = ("http://", "https://", "s3://")

#: Plain-text files: kept verbatim (decoded as UTF-8) by the document loader, and accepted as
#: documents here when a download's type says nothing.
TEXT_EXTENSIONS = frozenset(
    {".txt", ".md", ".markdown", ".rst", ".json", ".jsonl", ".log", ".yaml", ".yml"}
)
#: Zip-based formats that are converted; any other zip is refused by the document loader,
#: because markitdown would unpack it recursively, nested archives included, without its checks.
ZIP_DOCUMENT_EXTENSIONS = frozenset({".docx", ".pptx", ".xlsx", ".epub"})

#: Document types accepted by default (with every ``text/*``).
_DOCUMENT_TYPES = frozenset(
    {
        "application/pdf",
        "application/msword",
        "application/vnd.ms-excel",
        "application/vnd.ms-powerpoint",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "application/epub+zip",
        "application/json",
        "application/x-ndjson",
        "application/xml",
        "application/xhtml+xml",
        "application/yaml",
        "application/x-yaml",
    }
)
#: Types that say nothing: the extension decides.
_BINARY_TYPES = frozenset({"application/octet-stream", "binary/octet-stream"})
_DOCUMENT_EXTENSIONS = (
    TEXT_EXTENSIONS
    | ZIP_DOCUMENT_EXTENSIONS
    | {".pdf", ".doc", ".xls", ".ppt", ".html", ".htm", ".csv", ".xml"}
)
_IMAGE_EXTENSIONS = frozenset({".png", ".jpg", ".jpeg", ".gif", ".webp", ".bmp", ".tif", ".tiff"})
_AUDIO_EXTENSIONS = frozenset(
    {
        ".mp3",
        ".mpga",
        ".mpeg",
        ".wav",
        ".m4a",
        ".mp4",
        ".flac",
        ".ogg",
        ".oga",
        ".opus",
        ".aac",
        ".webm",
    }
)
#: Extensions for media types, where the standard table has none or several.
_TYPE_EXTENSIONS = {
    "text/plain": ".txt",
    "text/markdown": ".md",
    "text/x-markdown": ".md",
    "text/xml": ".xml",
    "application/xml": ".xml",
    "application/epub+zip": ".epub",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": ".docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": ".pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": ".xlsx",
    "image/jpeg": ".jpg",
    "image/webp": ".webp",
    "audio/mpeg": ".mp3",
    "audio/wav": ".wav",
    "audio/x-wav": ".wav",
    "audio/ogg": ".ogg",
    "audio/mp4": ".m4a",
    "audio/flac": ".flac",
    "audio/webm": ".webm",
}


def is_remote(ref: str) -> bool:
    """Whether ``ref`` is fetched over the network (``http://``, ``https://``, ``s3://``)."""
    return ref[:8].lower().startswith(_REMOTE_PREFIXES)


def safe_label(url: str) -> str:
    """``scheme://host[:port]/path`` of ``url``: no userinfo, query or fragment (presigned URLs
    carry their signature in the query).

    >>> safe_label("https://user:pw@Example.COM:8443/a/b.pdf?X-Amz-Signature=abc#top")
    'https://example.com:8443/a/b.pdf'
    """
    try:
        parts = urlsplit(url.strip())
        host = parts.hostname or ""
        port = parts.port
    except ValueError:
        return f"{url.partition(':')[0][:16].lower()}://(invalid URL)"
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{port}" if port is not None else host
    return f"{parts.scheme.lower()}://{netloc}{parts.path}"


def disposition_name(headers: Any) -> str:
    """The base name of a ``Content-Disposition`` filename (never a path)."""
    value = headers.get("content-disposition")
    if not value:
        return ""
    message = Message()
    message["content-disposition"] = value
    filename = message.get_filename() or ""
    return posixpath.basename(filename.replace("\\", "/"))


def media_type_of(content_type: str | None) -> str | None:
    """``Content-Type`` without its parameters, lower case (``None`` if absent or empty)."""
    if not content_type:
        return None
    return content_type.partition(";")[0].strip().lower() or None


@functools.cache
def _mime_table() -> mimetypes.MimeTypes:
    # Python's own table only: the system's mime.types differs between machines.
    return mimetypes.MimeTypes()


def extension_for(name: str, media_type: str | None) -> str:
    """The extension of ``name``, else the usual one of ``media_type``, else ``""``."""
    extension = os.path.splitext(name)[1].lower()
    if extension or media_type is None:
        return extension
    return _TYPE_EXTENSIONS.get(media_type) or _mime_table().guess_extension(media_type) or ""


def check_content_type(
    kind: FetchKind,
    media_type: str | None,
    name: str,
    label: str,
    config: FetchConfig,
    *,
    lenient: bool = False,
) -> None:
    """Refuse a response whose type does not fit the part (before its body is read).

    Images must be ``image/*``, audio ``audio/*``; documents one of the built-in types (or of
    ``config.allowed_content_types`` when set, ``type/*`` patterns allowed). A missing or
    ``application/octet-stream`` type is decided by the extension of ``name`` for audio and
    documents (with the built-in list), and for images too when ``lenient`` (S3 objects,
    whose type is whatever the uploader set, often ``binary/octet-stream``).

    Raises:
        FetchError: "content type 'x' is not a document" (an image, audio).
    """
    extension = os.path.splitext(name)[1].lower()
    binary = media_type is None or media_type in _BINARY_TYPES
    shown = media_type or "(none)"
    if kind == "image":
        if (media_type or "").startswith("image/") or (
            lenient and binary and extension in _IMAGE_EXTENSIONS
        ):
            return
        raise FetchError(f"{label}: content type {shown!r} is not an image")
    if kind == "audio":
        if (media_type or "").startswith("audio/") or (binary and extension in _AUDIO_EXTENSIONS):
            return
        raise FetchError(f"{label}: content type {shown!r} is not audio")
    allowed = config.allowed_content_types
    if allowed:
        if media_type is not None and any(_type_matches(media_type, p) for p in allowed):
            return
    elif (
        media_type is not None and (media_type.startswith("text/") or media_type in _DOCUMENT_TYPES)
    ) or (binary and extension in _DOCUMENT_EXTENSIONS):
        return
    raise FetchError(f"{label}: content type {shown!r} is not a document")


def _type_matches(media_type: str, pattern: str) -> bool:
    pattern = pattern.strip().lower()
    if pattern.endswith("/*"):
        return media_type.startswith(pattern[:-1])
    return media_type == pattern
