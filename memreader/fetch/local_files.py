"""Local files named in input: which may be read, and reading one within its byte limit.

A string or part naming a local file is a way in, like a URL: input often comes from strangers,
and a server passing user strings must not read ``/etc/passwd`` or ``~/.aws/credentials``. So:

* :class:`DocumentAccess` says which local files input may name (``allow_local_paths``,
  ``allowed_roots``, ``allow_hidden_files``) on top of :class:`DocumentLimits`, the size limits
  a document is read and converted under (``max_file_bytes`` bounds the read here; the archive,
  pdf and text limits are checked by :mod:`memreader.documents.limits` before conversion). One
  model for both, because a reader's config is one (its YAML keys are flat);
  :data:`NO_LOCAL_ACCESS` is the default: no local paths, the default limits;
* :func:`check_local_path` resolves a path (symlinks followed) and refuses it outside the
  allowed roots, under /proc, /sys or /dev, or through a hidden file or folder;
* :func:`read_local_file` reads a checked path: a regular file only, never more than its limit.

Both the :class:`~memreader.fetch.fetcher.Fetcher` (parts of the multimodal reader) and
:mod:`memreader.documents.loader` (document input) read local files through here.
"""

from __future__ import annotations

import os
from typing import Any

from pydantic import Field, field_validator

from memreader.config_model import ConfigModel
from memreader.errors import DocumentError
from memreader.files import FileRefused, read_regular_file

__all__ = [
    "DEFAULT_LIMITS",
    "NO_LOCAL_ACCESS",
    "DocumentAccess",
    "DocumentLimits",
    "check_local_path",
    "read_local_file",
]

# Pseudo-file systems: their "regular" files report size 0 and hold process secrets
# (/proc/self/environ) or never end. No document lives there, whatever the roots allow.
_VIRTUAL_ROOTS = ("/proc", "/sys", "/dev")


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
