"""Turning files into text: plain text verbatim, everything else through one markitdown instance.

Plain-text files (.txt, .md, .json, ...) are decoded as UTF-8 and kept verbatim so spans index
the file itself; other formats (pdf, docx, pptx, xlsx, html, csv, epub) are converted to
Markdown, and spans index that Markdown. Audio is refused: markitdown would send it to a web
service. File names from the input are used only to pick a converter, never as paths.

Local files are read under a :class:`~memreader.documents.limits.DocumentAccess` (a reader's
config is one): only when it allows them (``allow_local_paths``) and, when ``allowed_roots`` is
given, only under those roots after resolving symlinks; hidden files and folders (a name
starting with ``.``: ``.env``, ``.aws``, ``.ssh``) only with ``allow_hidden_files``. Only regular
files are read, never more than ``max_file_bytes + 1`` bytes whatever size the file reports, and
archives, pdf streams and the converted text are held to the limits of
:class:`~memreader.documents.limits.DocumentLimits`.
"""

from __future__ import annotations

import io
import logging
import os
import threading
import zipfile
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memreader.documents.limits import (
    DEFAULT_LIMITS,
    ZIP_DOCUMENT_EXTENSIONS,
    DocumentAccess,
    DocumentLimits,
    check_archive,
    check_pdf,
    check_text_length,
)
from memreader.errors import DocumentError
from memreader.fetch.data_urls import decode_inline
from memreader.files import FileRefused, read_regular_file

if TYPE_CHECKING:
    from markitdown import MarkItDown

    from memreader.scenes.api_parts import Part

__all__ = [
    "REFUSED_EXTENSIONS",
    "TEXT_EXTENSIONS",
    "check_local_path",
    "convert_bytes",
    "decode_file_data",
    "load_file_part",
    "load_path",
    "read_local_file",
]

logger = logging.getLogger(__name__)

TEXT_EXTENSIONS = frozenset(
    {".txt", ".md", ".markdown", ".rst", ".json", ".jsonl", ".log", ".yaml", ".yml"}
)
REFUSED_EXTENSIONS = frozenset({".mp3", ".wav", ".m4a", ".flac", ".ogg", ".aac", ".mp4"})

# Pseudo-file systems: their "regular" files report size 0 and hold process secrets
# (/proc/self/environ) or never end. No document lives there, whatever the roots allow.
_VIRTUAL_ROOTS = ("/proc", "/sys", "/dev")


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


def check_local_path(
    path: str,
    access: DocumentAccess,
    *,
    scene_index: int | None = None,
    message_index: int | None = None,
) -> str:
    """The fully resolved path of ``path`` if it may be read, else a :class:`DocumentError`.

    With ``access.allowed_roots``, the resolved path (symlinks followed) must equal a resolved
    root or lie under one (``~`` in a root is expanded; relative roots are relative to the
    working directory). Unless ``access.allow_hidden_files``, a file whose resolved path has a
    hidden component (a name starting with ``.``) below its root is refused: ``.env``,
    ``.aws/credentials``, ``.ssh/id_rsa``, ``.git/config`` hold secrets, not documents (a root
    itself may be hidden: whoever named it chose it; without roots every component counts).
    Files under /proc, /sys and /dev are always refused. Messages name the file as the caller
    gave it (its base name), never where a symlink leads.
    """
    where = {"scene_index": scene_index, "message_index": message_index}
    name = os.path.basename(path) or path
    try:
        resolved = os.path.realpath(path)
    except (OSError, ValueError) as exc:
        raise DocumentError(f"cannot resolve file {name!r}: {exc}", **where) from exc
    roots = [os.path.realpath(os.path.expanduser(root)) for root in access.allowed_roots]
    containing = [root for root in roots if _is_within(resolved, root)]
    if roots and not containing:
        raise DocumentError(f"file {name!r} is outside the allowed roots", **where)
    if any(_is_within(resolved, virtual) for virtual in _VIRTUAL_ROOTS):
        raise DocumentError(f"file {name!r} is a system file, not a document", **where)
    if not access.allow_hidden_files and all(
        _hidden_below(resolved, root) for root in containing or [os.sep]
    ):
        raise DocumentError(
            f"file {name!r} is hidden (a file or folder name on its path starts with '.'); "
            "hidden files are read only with allow_hidden_files: true",
            **where,
        )
    return resolved


def _is_within(path: str, root: str) -> bool:
    return path == root or path.startswith(root.rstrip(os.sep) + os.sep)


def _hidden_below(path: str, root: str) -> bool:
    """Whether ``path`` (under ``root``, both resolved) has a component starting with ``.``
    below ``root``."""
    below = os.path.relpath(path, root) if path != root else ""
    return any(part.startswith(".") and part not in (".", "") for part in below.split(os.sep))


def read_local_file(resolved: str, name: str, max_bytes: int, where: dict[str, Any]) -> bytes:
    """At most ``max_bytes`` of a regular file; anything else, or more, is a DocumentError.

    ``resolved`` comes from :func:`check_local_path`; ``name`` is how messages name the file;
    ``where`` holds the error location (``scene_index``, ``message_index``, ``part_index``).
    ``OSError`` (missing, unreadable) is left to the caller, who knows how to word it.
    """
    try:
        # The path is already resolved: a symlink in its last component now means a swap.
        return read_regular_file(resolved, max_bytes, nofollow=True)
    except FileRefused as exc:
        if not exc.too_large:
            raise DocumentError(f"file {name!r} is not a regular file", **where) from None
        size = f"{exc.size} bytes, " if exc.size is not None else ""
        raise DocumentError(
            f"file {name!r} is {size}over the max_file_bytes limit ({max_bytes})", **where
        ) from None


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
            hidden (see :func:`check_local_path`), not a regular file, unreadable, over a
            limit, or cannot be converted.
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
