"""The size checks a document passes before a converter sees its bytes.

Office files (docx, pptx, xlsx) and epub are zip archives, and pdf streams are usually
deflate-compressed: a few hundred kilobytes can expand into gigabytes. The checks here read only
what is cheap to read (a zip's central directory; a pdf's streams, inflated at most up to the
limit) and raise a :class:`~memreader.errors.DocumentError` naming the limit that was exceeded,
so a bomb is refused in milliseconds instead of being expanded by the converter.
:func:`check_text_length` holds the converted text to ``max_document_chars``.

The limits themselves (:class:`~memreader.fetch.local_files.DocumentLimits`) are settings of
the read, kept with the local-file access a reader's config inherits; the zip-based extensions
converted (``ZIP_DOCUMENT_EXTENSIONS``) are in :mod:`memreader.fetch.media_types`, which
accepts downloads by them.

Python's :mod:`zipfile` (used by every zip-based converter markitdown calls) never returns more
than a member's declared size, so the declared sizes are a true upper bound on what conversion
can unpack.
"""

from __future__ import annotations

import io
import re
import zipfile
import zlib
from typing import Any

from memreader.errors import DocumentError
from memreader.fetch.local_files import DocumentLimits

__all__ = ["check_archive", "check_pdf", "check_text_length"]

# Members (or pdf streams) smaller than this are not held to the ratio: a small, very regular
# XML part is harmless however well it compresses, and the total size still bounds them.
_RATIO_FLOOR = 1024 * 1024


def check_archive(data: bytes, label: str, limits: DocumentLimits, where: dict[str, Any]) -> None:
    """Refuse a zip archive whose declared contents exceed ``limits``, reading only its index.

    ``label`` names the document in messages (e.g. ``".docx file 'report.docx'"``); ``where``
    holds the ``scene_index``/``message_index`` of the error.
    """
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            members = archive.infolist()
    except (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError) as exc:
        raise DocumentError(f"{label} is not a valid zip archive: {exc}", **where) from exc
    if len(members) > limits.max_archive_members:
        raise DocumentError(
            f"{label} has {len(members)} archive members, over the max_archive_members limit "
            f"({limits.max_archive_members})",
            **where,
        )
    unpacked = sum(member.file_size for member in members)
    if unpacked > limits.max_unpacked_bytes:
        raise DocumentError(
            f"{label} unpacks to {unpacked} bytes, over the max_unpacked_bytes limit "
            f"({limits.max_unpacked_bytes})",
            **where,
        )
    packed = sum(member.compress_size for member in members)
    _check_ratio(label, unpacked, packed, limits, where)
    for member in members:
        _check_ratio(label, member.file_size, member.compress_size, limits, where)


def _check_ratio(
    label: str, unpacked: int, packed: int, limits: DocumentLimits, where: dict[str, Any]
) -> None:
    if unpacked <= _RATIO_FLOOR:
        return
    if unpacked > limits.max_compression_ratio * max(packed, 1):
        ratio = unpacked / max(packed, 1)
        raise DocumentError(
            f"{label} expands {ratio:.0f} times ({packed} to {unpacked} bytes), over the "
            f"max_compression_ratio limit ({limits.max_compression_ratio:g})",
            **where,
        )


# A pdf stream: "stream", an end of line, the data, "endstream". The dictionary before it says
# how it is encoded; image streams are skipped because text extraction never decodes them.
_PDF_STREAM = re.compile(rb"stream\r?\n")
_PDF_DICT_WINDOW = 2048


def check_pdf(data: bytes, label: str, limits: DocumentLimits, where: dict[str, Any]) -> None:
    """Refuse a pdf whose deflate-compressed streams inflate beyond ``limits``.

    Each stream is inflated incrementally and abandoned as soon as it passes the ratio or the
    remaining ``max_unpacked_bytes`` budget, so the check costs at most one pass over what the
    limits allow. Streams that are not deflate data (images, encrypted or other filters) are
    left to the converter and to ``max_document_chars``.
    """
    budget = limits.max_unpacked_bytes
    position = 0
    while True:
        match = _PDF_STREAM.search(data, position)
        if match is None:
            return
        start = match.end()
        end = data.find(b"endstream", start)
        if end < 0:
            return
        position = end + len(b"endstream")
        header = data[max(0, match.start() - _PDF_DICT_WINDOW) : match.start()]
        header = header[header.rfind(b"obj") + 1 :]
        if b"FlateDecode" not in header or b"/Image" in header:
            continue
        packed = end - start
        cap = min(budget, max(_RATIO_FLOOR, int(limits.max_compression_ratio * packed))) + 1
        size = _inflated_size(data[start:end], cap)
        if size >= cap:
            if cap > budget:
                raise DocumentError(
                    f"{label} streams inflate to more than {limits.max_unpacked_bytes} bytes, "
                    f"over the max_unpacked_bytes limit",
                    **where,
                )
            raise DocumentError(
                f"{label} has a stream that expands more than "
                f"{limits.max_compression_ratio:g} times ({packed} bytes to over {size}), "
                f"over the max_compression_ratio limit",
                **where,
            )
        budget -= size


def _inflated_size(stream: bytes, cap: int) -> int:
    """How many bytes ``stream`` inflates to, counting no further than ``cap``."""
    inflater = zlib.decompressobj()
    size = 0
    pending = stream
    chunk = 1024 * 1024
    try:
        while pending and size < cap:
            size += len(inflater.decompress(pending, min(chunk, cap - size)))
            pending = inflater.unconsumed_tail
            if inflater.eof:
                break
    except zlib.error:
        # Not deflate data after all, or damaged: the converter decides what to do with it.
        return size
    return size


def check_text_length(text: str, label: str, limits: DocumentLimits, where: dict[str, Any]) -> str:
    """Return ``text`` if it is within ``max_document_chars``, else raise a DocumentError."""
    if len(text) > limits.max_document_chars:
        raise DocumentError(
            f"{label} converts to {len(text)} characters, over the max_document_chars limit "
            f"({limits.max_document_chars})",
            **where,
        )
    return text
