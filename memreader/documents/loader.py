"""Turning files into text: plain text verbatim, everything else through one markitdown instance.

Plain-text files (.txt, .md, .json, ...) are decoded as UTF-8 and kept verbatim so spans index
the file itself; other formats (pdf, docx, pptx, xlsx, html, csv, epub) are converted to
Markdown, and spans index that Markdown. Audio is refused: markitdown would send it to a web
service. File names from the input are used only to pick a converter, never as paths.
"""

from __future__ import annotations

import base64
import binascii
import io
import logging
import os
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from memreader.errors import DocumentError

if TYPE_CHECKING:
    from markitdown import MarkItDown

    from memreader.scene import Part

logger = logging.getLogger(__name__)

DEFAULT_MAX_FILE_BYTES = 50 * 1024 * 1024
TEXT_EXTENSIONS = frozenset(
    {".txt", ".md", ".markdown", ".rst", ".json", ".jsonl", ".log", ".yaml", ".yml"}
)
REFUSED_EXTENSIONS = frozenset({".mp3", ".wav", ".m4a", ".flac", ".ogg", ".aac", ".mp4"})

_converter: MarkItDown | None = None
_converter_lock = threading.Lock()


def _markitdown() -> MarkItDown:
    # One instance for the process: building it probes every converter and takes a while.
    global _converter
    with _converter_lock:
        if _converter is None:
            from markitdown import MarkItDown

            _converter = MarkItDown(enable_plugins=False)
        return _converter


def convert_bytes(
    data: bytes, extension: str, *, scene_index: int | None = None, message_index: int | None = None
) -> str:
    """Convert file bytes to text, choosing the converter by ``extension`` (with the dot)."""
    extension = extension.lower()
    where = {"scene_index": scene_index, "message_index": message_index}
    if extension in REFUSED_EXTENSIONS:
        raise DocumentError(
            f"{extension} files are not supported (transcription needs a web service)", **where
        )
    if extension in TEXT_EXTENSIONS:
        try:
            return data.decode("utf-8-sig")
        except UnicodeDecodeError as exc:
            raise DocumentError(f"{extension} file is not valid UTF-8: {exc}", **where) from exc
    from markitdown import MarkItDownException, StreamInfo

    try:
        result = _markitdown().convert_stream(
            io.BytesIO(data), stream_info=StreamInfo(extension=extension)
        )
    except MarkItDownException as exc:
        raise DocumentError(f"cannot convert {extension or 'file'}: {exc}", **where) from exc
    return result.text_content


def load_path(
    path: str, *, scene_index: int, message_index: int, max_bytes: int = DEFAULT_MAX_FILE_BYTES
) -> Part:
    """Read and convert a local file the caller named."""
    from memreader.scene import Part

    where = {"scene_index": scene_index, "message_index": message_index}
    try:
        size = os.path.getsize(path)
        if size > max_bytes:
            raise DocumentError(
                f"file {os.path.basename(path)!r} is {size} bytes, over the {max_bytes} limit",
                **where,
            )
        with open(path, "rb") as handle:
            data = handle.read()
    except OSError as exc:
        raise DocumentError(
            f"cannot read file {os.path.basename(path)!r}: {exc.strerror}", **where
        ) from exc
    text = convert_bytes(data, os.path.splitext(path)[1], **where)
    logger.debug("converted %s (%d bytes) to %d characters", path, len(data), len(text))
    return Part(type="file", text=text, doc_path=path)


def load_file_part(
    file: Any,
    *,
    scene_index: int,
    message_index: int,
    allow_local_paths: bool = True,
    max_bytes: int = DEFAULT_MAX_FILE_BYTES,
) -> Part:
    """Load a ``{"type": "file", "file": {...}}`` part: ``path``, or ``file_data`` (base64 or a
    data URL) with a ``filename`` that tells the format."""
    from memreader.scene import Part

    where = {"scene_index": scene_index, "message_index": message_index}
    if not isinstance(file, Mapping):
        raise DocumentError("file part needs a 'file' mapping", **where)
    path = file.get("path")
    if isinstance(path, str):
        if not allow_local_paths:
            raise DocumentError("local paths are disabled (allow_local_paths=False)", **where)
        return load_path(path, max_bytes=max_bytes, **where)
    data = file.get("file_data")
    filename = file.get("filename")
    if not isinstance(data, str):
        raise DocumentError(
            "file part needs 'path' or 'file_data' (a filename alone has no content)", **where
        )
    payload = data.split(",", 1)[1] if data.startswith("data:") else data
    if len(payload) * 3 // 4 > max_bytes:
        raise DocumentError(f"file_data is over the {max_bytes} byte limit", **where)
    try:
        raw = base64.b64decode(payload, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise DocumentError(f"file_data is not valid base64: {exc}", **where) from exc
    name = os.path.basename(filename) if isinstance(filename, str) else ""
    text = convert_bytes(raw, os.path.splitext(name)[1], **where)
    return Part(type="file", text=text, doc_path=name or None)
