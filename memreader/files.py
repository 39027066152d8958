"""Reading a local file safely: only a regular file, never more than a byte past a limit.

A FIFO would block ``open`` until a writer comes, ``/dev/zero`` reports size 0 and never ends,
and procfs files report size 0 whatever they hold; so a file is opened without blocking,
checked with ``fstat`` on the opened descriptor (not the path, which could be swapped), and read
up to one byte past the limit whatever size it reports.
"""

from __future__ import annotations

import os
import stat

__all__ = ["FileRefused", "read_regular_file"]

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
