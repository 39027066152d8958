"""One input opened for a format: its bytes within the spec's ``max_bytes``, streamed as lines
or read whole, wherever the input is.

Reading never holds more of an input than it must: lines are split from 1 MiB chunks (a local
file or an S3 body alike), so a JSONL file of any size runs in bounded memory; a whole input is
read up to ``max_bytes`` and refused past it (before reading, where the listing gave its size).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import PurePosixPath
from typing import Any

from memreader.batch.places.base import CHUNK, FileSource, InputRef, Read
from memreader.errors import InputError, InvalidSceneError

__all__ = ["MAX_LINE_BYTES", "OpenedInput", "split_lines"]

#: The longest line kept; a longer one is skipped without being held (a JSONL format makes it
#: a bad record), so a file without newlines cannot take all memory.
MAX_LINE_BYTES = 64 * 1024 * 1024


def split_lines(read: Read, max_line: int) -> Iterator[tuple[int, bytes | None]]:
    """``(line number, bytes)`` of each line read through ``read`` (1-based, without the
    newline); ``None`` for a line over ``max_line`` bytes, which is skipped, never held."""
    pending = bytearray()
    number = 0
    skipping = False
    while chunk := read(CHUNK):
        start = 0
        while (end := chunk.find(b"\n", start)) >= 0:
            number += 1
            if not skipping:
                pending += chunk[start:end]
            yield number, None if skipping or len(pending) > max_line else bytes(pending)
            pending.clear()
            skipping = False
            start = end + 1
        if not skipping:
            pending += chunk[start:]
            if len(pending) > max_line:
                pending.clear()
                skipping = True
    if pending or skipping:
        yield number + 1, None if skipping else bytes(pending)


class OpenedInput:
    """The bytes of ``ref`` (through ``storage``), within ``max_bytes``.

    Raises (from each read):
        InputError: over ``max_bytes``, or the file cannot be read.
        FetchError: the S3 object cannot be read.
    """

    def __init__(self, ref: InputRef, storage: FileSource, max_bytes: int) -> None:
        self.ref = ref
        self.max_bytes = max_bytes
        self._storage = storage

    @property
    def key(self) -> str:
        """The input's key (what messages name)."""
        return self.ref.key

    @property
    def location(self) -> str:
        """The absolute path or ``s3://`` URL of the input."""
        return self.ref.location

    @property
    def name(self) -> str:
        """The input's file name (the key's last segment for S3)."""
        return PurePosixPath(self.ref.location.replace("\\", "/")).name

    @property
    def max_line_bytes(self) -> int:
        """The longest line :meth:`raw_lines` keeps (:data:`MAX_LINE_BYTES`)."""
        return MAX_LINE_BYTES

    def raw_lines(self) -> Iterator[tuple[int, bytes | None]]:
        """Every line as :func:`split_lines` gives it (``None``: over :data:`MAX_LINE_BYTES`),
        streamed, refused past ``max_bytes``."""
        self._check_size()
        total = 0
        with self._storage.open(self.ref) as read:

            def counted(size: int) -> bytes:
                nonlocal total
                chunk = read(size)
                total += len(chunk)
                if total > self.max_bytes:
                    raise InputError(f"{self.key}: over the limit of {self.max_bytes} bytes")
                return chunk

            yield from split_lines(counted, MAX_LINE_BYTES)

    def lines(self) -> Iterator[str]:
        """Every line (blank ones too, so counting them gives line numbers), without its
        newline. Bytes that are not UTF-8 are replaced (U+FFFD), so the line fails whatever
        parses it instead of ending the input.

        Raises (while iterating):
            InputError: a line over :data:`MAX_LINE_BYTES` (or see :meth:`raw_lines`).
        """
        for number, line in self.raw_lines():
            if line is None:
                raise InputError(f"{self.key}: line {number} is over {MAX_LINE_BYTES} bytes")
            text = line.decode("utf-8", errors="replace")
            yield text.removeprefix("\ufeff") if number == 1 else text

    def read_all(self) -> bytes:
        """The whole input, refused (before reading, where its size is known) over
        ``max_bytes``."""
        self._check_size()
        return self._storage.read_whole(self.ref, self.max_bytes)

    def load_json(self) -> Any:
        """The whole input parsed as JSON.

        Raises:
            InvalidSceneError: it is not JSON (or is nested too deeply).
        """
        raw = self.read_all()
        try:
            return json.loads(raw)
        except (ValueError, RecursionError) as exc:
            detail = exc.msg if isinstance(exc, json.JSONDecodeError) else type(exc).__name__
            raise InvalidSceneError(f"{self.key}: not JSON ({detail})") from None

    def _check_size(self) -> None:
        size = self.ref.size
        if size is not None and size > self.max_bytes:
            raise InputError(f"{self.key}: {size} bytes, over the limit of {self.max_bytes}")
