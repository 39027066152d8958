"""Size limits for documents, checked before a converter sees the bytes.

Office files (docx, pptx, xlsx) and epub are zip archives, and pdf streams are usually
deflate-compressed: a few hundred kilobytes can expand into gigabytes. The checks here read only
what is cheap to read (a zip's central directory; a pdf's streams, inflated at most up to the
limit) and raise a :class:`~memreader.errors.DocumentError` naming the limit that was exceeded,
so a bomb is refused in milliseconds instead of being expanded by the converter.

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

from pydantic import Field, field_validator

from memreader.config_model import ConfigModel
from memreader.errors import DocumentError

__all__ = [
    "DEFAULT_LIMITS",
    "NO_LOCAL_ACCESS",
    "ZIP_DOCUMENT_EXTENSIONS",
    "DocumentAccess",
    "DocumentLimits",
    "check_archive",
    "check_pdf",
    "check_text_length",
]

#: Zip-based formats that are converted; any other zip is refused, because markitdown would
#: unpack it recursively, nested archives included, without these checks.
ZIP_DOCUMENT_EXTENSIONS = frozenset({".docx", ".pptx", ".xlsx", ".epub"})

# Members (or pdf streams) smaller than this are not held to the ratio: a small, very regular
# XML part is harmless however well it compresses, and the total size still bounds them.
_RATIO_FLOOR = 1024 * 1024


class DocumentLimits(ConfigModel):
    """The size limits a document is read and converted under. Every limit exceeded is a
    ``DocumentError`` naming the limit.

    - ``max_file_bytes`` (50 MiB): the most bytes of one file, read from disk or decoded from
      ``file_data``; never more than this plus one byte is read, whatever size a file reports.
    - ``max_unpacked_bytes`` (200 MiB): the most that a docx, pptx, xlsx or epub may unpack to
      (its declared sizes, summed), or that a pdf's compressed streams may inflate to.
    - ``max_compression_ratio`` (100): the most one archive member (or pdf stream) over 1 MiB,
      or a whole archive, may expand relative to its compressed size; bombs expand ~1000 times.
    - ``max_archive_members`` (10,000): the most members a zip-based document may hold.
    - ``max_document_chars`` (5,000,000): the most characters a file may convert to (about
      1.2 million tokens); the backstop for formats whose expansion cannot be checked first.
    """

    # Far beyond a normal report or book, and small enough to hold in memory.
    max_file_bytes: int = Field(default=50 * 1024 * 1024, gt=0)
    # Office files of 50 MiB with their pictures rarely unpack to more than this.
    max_unpacked_bytes: int = Field(default=200 * 1024 * 1024, gt=0)
    # Office XML deflates 5-30 times; 100 leaves room for repetitive spreadsheets and refuses
    # bombs, which reach 1000 times.
    max_compression_ratio: float = Field(default=100.0, ge=1.0)
    # A docx or xlsx holds tens of parts, an epub with its images a few thousand at most.
    max_archive_members: int = Field(default=10_000, gt=0)
    # About ten novels: 1.2 million tokens, over a thousand windows.
    max_document_chars: int = Field(default=5_000_000, gt=0)


class DocumentAccess(DocumentLimits):
    """Which local files document input may name, and the limits of :class:`DocumentLimits`.

    Reader configs inherit these settings (the YAML keys are flat: ``allow_local_paths: true``).

    - ``allow_local_paths`` (default ``False``): whether document input may name local files,
      as a string naming an existing file or a ``{"type": "file", "file": {"path": ...}}``
      part. Off by default because input often comes from strangers (a server passing user
      strings must not read ``/etc/passwd``). When off, a string is always text and a path part
      is a ``DocumentError``.
    - ``allowed_roots`` (default ``[]``): folders or single files. When non-empty (and local
      paths are allowed), a file is read only if its fully resolved path (symlinks followed)
      equals a root or lies under one; any other file named in the input is a
      ``DocumentError`` ("outside the allowed roots"), never read and never taken for text.
      ``~`` is expanded; a relative root is relative to the working directory at read time.
      Empty: any local file (files under /proc, /sys and /dev are always refused).
    - ``allow_hidden_files`` (default ``False``): whether a local file may be read when its
      resolved path has a hidden component (a name starting with ``.``) below its root:
      ``.env``, ``.aws/credentials``, ``.ssh/id_rsa`` and ``.git/config`` hold secrets, and a
      chat's folder is often ``$HOME`` or ``~/Downloads``. Refused by default (a
      ``DocumentError``), wherever content names local files; a root that is itself hidden is
      fine (whoever listed it chose it).
    """

    allow_local_paths: bool = False
    allowed_roots: list[str] = Field(default_factory=list)
    allow_hidden_files: bool = False

    @field_validator("allowed_roots")
    @classmethod
    def _check_roots(cls, roots: list[str]) -> list[str]:
        for root in roots:
            if not root.strip() or "\0" in root:
                raise ValueError("allowed_roots entries must be non-empty paths")
        return roots


#: The defaults, for callers that pass no limits.
DEFAULT_LIMITS = DocumentLimits()
#: The defaults of document access: no local paths, the default limits.
NO_LOCAL_ACCESS = DocumentAccess()


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
