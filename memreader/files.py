"""Local files, safely: reading only a regular file, never more than a byte past a limit; and
writing one whole or not at all (:func:`write_atomic`, :func:`fsync_folder`).

A FIFO would block ``open`` until a writer comes, ``/dev/zero`` reports size 0 and never ends,
and procfs files report size 0 whatever they hold; so a file is opened without blocking,
checked with ``fstat`` on the opened descriptor (not the path, which could be swapped), and read
up to one byte past the limit whatever size it reports.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile

__all__ = ["FileRefused", "fsync_folder", "read_regular_file", "write_atomic"]

# Opening must never block (a FIFO waits for a writer) nor make a terminal ours.
_OPEN_FLAGS = (
    os.O_RDONLY
    | getattr(os, "O_NONBLOCK", 0)
    | getattr(os, "O_NOCTTY", 0)
    | getattr(os, "O_CLOEXEC", 0)
    | getattr(os, "O_BINARY", 0)
)
_CHUNK = 1024 * 1024


class FileRefused(ValueError):
    """The file is not a regular file (``too_large`` false), or holds more than the limit
    (``size``: the size it reported, when that was already too much). Callers turn it into their
    own typed error, naming the file as the caller knows it."""

    def __init__(self, reason: str, *, too_large: bool = False, size: int | None = None) -> None:
        super().__init__(reason)
        self.reason = reason
        self.too_large = too_large
        self.size = size


def read_regular_file(
    path: str | os.PathLike[str], max_bytes: int, *, nofollow: bool = False
) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes`` of them.

    ``nofollow`` refuses a symlink in the last component (for paths resolved beforehand: one
    there now means it was swapped after the check).

    Raises:
        FileRefused: not a regular file, or more than ``max_bytes``.
        OSError: it cannot be opened or read.
    """
    flags = _OPEN_FLAGS | (getattr(os, "O_NOFOLLOW", 0) if nofollow else 0)
    fd = os.open(path, flags)
    with os.fdopen(fd, "rb", buffering=0) as handle:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused("not a regular file")
        if info.st_size > max_bytes:
            raise FileRefused(
                f"{info.st_size} bytes, over the limit of {max_bytes}",
                too_large=True,
                size=info.st_size,
            )
        chunks = []
        left = max_bytes + 1
        while left > 0:
            chunk = handle.read(min(left, _CHUNK))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    data = b"".join(chunks)
    if len(data) > max_bytes:
        raise FileRefused(f"over the limit of {max_bytes} bytes", too_large=True)
    return data


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path`` (``.<name>.<random>.tmp``), fsync it,
    then rename it over ``path``: a reader sees the old file or the new one, never half of
    one, and a symlink at ``path`` is replaced itself, never what it points to.

    Raises:
        OSError: the folder cannot be written (the temporary file is removed); callers say
            what failed in their own error type.
    """
    folder, name = os.path.split(os.fspath(path))
    fd, temp = tempfile.mkstemp(dir=folder or ".", prefix=f".{name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except BaseException:
        # Already renamed or gone: nothing is left behind either way.
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise


def fsync_folder(folder: str | os.PathLike[str]) -> None:
    """Persist the renames in ``folder`` (POSIX; a no-op where folders cannot be opened or
    synced: the renames stand, only their durability across a power cut is not promised)."""
    if os.name != "posix":  # pragma: no cover
        return
    try:
        fd = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover
        return
    try:
        os.fsync(fd)
    except OSError:  # pragma: no cover
        pass
    finally:
        os.close(fd)
