"""Turning files into text: plain text verbatim, everything else through one markitdown instance.

Plain-text files (.txt, .md, .json, ...) are decoded as UTF-8 and kept verbatim so spans index
the file itself; other formats (pdf, docx, pptx, xlsx, html, csv, epub) are converted to
Markdown, and spans index that Markdown. Audio is refused: markitdown would send it to a web
service. File names from the input are used only to pick a converter, never as paths.

Local files are read under a :class:`~memreader.fetch.local_files.DocumentAccess` (a reader's
config is one), through :mod:`memreader.fetch.local_files`: only when it allows them
(``allow_local_paths``) and, when ``allowed_roots`` is given, only under those roots after
resolving symlinks; hidden files and folders (a name starting with ``.``: ``.env``, ``.aws``,
``.ssh``) only with ``allow_hidden_files``. Only regular files are read, never more than
``max_file_bytes + 1`` bytes whatever size the file reports, and archives, pdf streams and the
converted text are held to the limits of
:class:`~memreader.fetch.local_files.DocumentLimits` (checked by
:mod:`memreader.documents.limits`).

This module holds :func:`convert_bytes` (bytes to text), :func:`load_path` and
:func:`load_file_part` (a document's local file or inline ``file_data`` to a
:class:`~memreader.scenes.api_parts.Part`) and :func:`decode_file_data`.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import zipfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memreader.documents.limits import check_archive, check_pdf, check_text_length
from memreader.errors import DocumentError
from memreader.fetch.data_urls import decode_inline
from memreader.fetch.local_files import (
    DEFAULT_LIMITS,
    DocumentAccess,
    DocumentLimits,
    check_local_path,
    read_local_file,
)
from memreader.fetch.media_types import TEXT_EXTENSIONS, ZIP_DOCUMENT_EXTENSIONS

if TYPE_CHECKING:
    from markitdown import MarkItDown

    from memreader.scenes.api_parts import Part

__all__ = [
    "REFUSED_EXTENSIONS",
    "convert_bytes",
    "decode_file_data",
    "load_file_part",
    "load_path",
]

logger = logging.getLogger(__name__)

#: Audio: markitdown would send it to a web service to transcribe.
REFUSED_EXTENSIONS = frozenset({".mp3", ".wav", ".m4a", ".flac", ".ogg", ".aac", ".mp4"})

_converter: MarkItDown | None = None
_converter_lock = threading.Lock()


def _markitdown() -> MarkItDown:
    # One instance for the process: building it probes every converter and takes a while.
    global _converter
    with _converter_lock:
        if _converter is None:
            from markitdown import MarkItDown
            from markitdown.converters import ZipConverter

            converter = MarkItDown(enable_plugins=False)
            # When an office converter fails on a zip (say, any zip named .docx), markitdown
            # falls back to its ZipConverter, which unpacks every member and converts nested
            # archives recursively: a 35 KB ".docx" holding a zip bomb expanded 300 MiB past
            # check_archive. Other zips are refused before conversion, so nothing needs it.
            converter._converters = [
                registration
                for registration in converter._converters
                if not isinstance(registration.converter, ZipConverter)
            ]
            _converter = converter
        return _converter


def convert_bytes(
    data: bytes,
    extension: str,
    *,
    scene_index: int | None = None,
    message_index: int | None = None,
    limits: DocumentLimits = DEFAULT_LIMITS,
    media_type: str | None = None,
) -> str:
    """Convert file bytes to text, choosing the converter by ``extension`` (with the dot) and,
    when known, ``media_type`` (a download's content type), both given to markitdown as hints.

    Zip-based formats and pdfs are checked against ``limits`` before conversion, and the text
    against ``limits.max_document_chars`` after it.

    Raises:
        DocumentError: the format is refused, the bytes cannot be converted, or a limit is
            exceeded (the message names the limit).
    """
    extension = extension.lower()
    where: dict[str, Any] = {"scene_index": scene_index, "message_index": message_index}
    label = f"{extension} file" if extension else "file"
    if len(data) > limits.max_file_bytes:
        raise DocumentError(
            f"{label} is {len(data)} bytes, over the max_file_bytes limit "
            f"({limits.max_file_bytes})",
            **where,
        )
    if extension in REFUSED_EXTENSIONS:
        raise DocumentError(
            f"{extension} files are not supported (transcription needs a web service)", **where
        )
    if extension in TEXT_EXTENSIONS:
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DocumentError(f"{extension} file is not valid UTF-8: {exc}", **where) from exc
        return check_text_length(text, label, limits, where)
    # markitdown picks converters by content too (magika), so the checks go by content as well
    # as by extension: a zip named .pdf must not reach a zip converter unchecked.
    is_pdf = b"%PDF-" in data[:1024]
    is_zip = data.startswith(b"PK") or (not is_pdf and zipfile.is_zipfile(io.BytesIO(data)))
    if is_zip or extension in ZIP_DOCUMENT_EXTENSIONS:
        if extension not in ZIP_DOCUMENT_EXTENSIONS:
            # markitdown would unpack any other zip recursively, nested archives included.
            raise DocumentError(
                f"{label} is a zip archive; only {', '.join(sorted(ZIP_DOCUMENT_EXTENSIONS))} "
                "archives are converted",
                **where,
            )
        check_archive(data, label, limits, where)
    elif is_pdf or extension == ".pdf":
        check_pdf(data, label, limits, where)
    from markitdown import MarkItDownException, StreamInfo

    try:
        result = _markitdown().convert_stream(
            io.BytesIO(data), stream_info=StreamInfo(extension=extension, mimetype=media_type)
        )
    except MarkItDownException as exc:
        raise DocumentError(f"cannot convert {extension or 'file'}: {exc}", **where) from exc
    if is_pdf and result.text_content.lstrip().startswith("%PDF-"):
        # markitdown fell back to reading the bytes as text after its pdf converter failed:
        # the text of a real pdf never starts with its own header.
        raise DocumentError(
            f"{label} is not a readable pdf (its text could not be extracted)", **where
        )
    return check_text_length(result.text_content, label, limits, where)


def load_path(
    path: str,
    *,
    access: DocumentAccess,
    scene_index: int,
    message_index: int,
) -> Part:
    """Read and convert a local file the input named, under ``access``.

    Raises:
        DocumentError: local paths are not allowed, or the file is outside ``allowed_roots``,
            hidden (see :func:`~memreader.fetch.local_files.check_local_path`), not a regular
            file, unreadable, over a limit, or cannot be converted.
    """
    from memreader.scenes.api_parts import Part

    where: dict[str, Any] = {"scene_index": scene_index, "message_index": message_index}
    if not access.allow_local_paths:
        raise DocumentError("local paths are disabled (allow_local_paths=False)", **where)
    name = os.path.basename(path) or path
    resolved = check_local_path(path, access, **where)
    try:
        data = read_local_file(resolved, name, access.max_file_bytes, where)
    except OSError as exc:
        raise DocumentError(f"cannot read file {name!r}: {exc.strerror}", **where) from exc
    text = convert_bytes(data, os.path.splitext(path)[1], limits=access, **where)
    logger.debug("converted %s (%d bytes) to %d characters", name, len(data), len(text))
    return Part(type="file", text=text, doc_path=path)


def load_file_part(
    file: Any,
    *,
    scene_index: int,
    message_index: int,
    access: DocumentAccess | None = None,
) -> Part:
    """Load a ``{"type": "file", "file": {...}}`` part: ``path``, or ``file_data`` (base64 or a
    data URL) with a ``filename`` that tells the format, under ``access`` (default: no local
    paths, the default limits).

    Raises:
        DocumentError: local paths are disabled or the path is refused, the data is not valid
            base64 or over ``max_file_bytes`` (checked on the encoded length before decoding,
            then on the decoded bytes), or conversion fails or exceeds a limit.
    """
    from memreader.scenes.api_parts import Part

    where: dict[str, Any] = {"scene_index": scene_index, "message_index": message_index}
    if not isinstance(file, Mapping):
        raise DocumentError("file part needs a 'file' mapping", **where)
    access = access if access is not None else DocumentAccess()
    path = file.get("path")
    if isinstance(path, str):
        return load_path(path, access=access, **where)
    data = file.get("file_data")
    filename = file.get("filename")
    if not isinstance(data, str):
        if isinstance(file.get("file_id"), str):
            reason = "file_id parts cannot be read: memreader has no API to fetch uploaded files"
        elif isinstance(file.get("url"), str):
            reason = "this reader reads no URLs (the multimodal reader fetches them)"
        else:
            reason = "a filename alone has no content"
        raise DocumentError(f"file part needs 'path' or 'file_data' ({reason})", **where)
    raw = decode_file_data(data, access.max_file_bytes, where)
    name = os.path.basename(filename) if isinstance(filename, str) else ""
    text = convert_bytes(raw, os.path.splitext(name)[1], limits=access, **where)
    return Part(type="file", text=text, doc_path=name or None)


def decode_file_data(data: str, max_bytes: int, where: dict[str, Any]) -> bytes:
    """The bytes of base64 ``file_data`` or of a data URL, refused early when too big
    (a :class:`DocumentError` located by ``where``): the one inline decoder,
    :func:`~memreader.fetch.data_urls.decode_inline`."""
    return decode_inline(data, max_bytes, what="file_data", where=where).data
