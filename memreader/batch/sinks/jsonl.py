"""``output.format: jsonl``: one item per line, as ``TextualMemoryItem.to_dict()`` gives it
(the default)."""

from __future__ import annotations

import os
from typing import IO, Any

from memreader.batch.sinks.base import register_sink
from memreader.batch.sinks.files import EncodedFile, Encoder, FileSink

__all__ = ["JsonlEncoder", "JsonlSink"]


class _JsonlFile(EncodedFile):
    def __init__(self, handle: IO[bytes]) -> None:
        self._handle = handle

    def write(self, entry: Any, line: bytes) -> None:
        self._handle.write(line)

    def finish(self) -> None:
        self._handle.flush()
        os.fsync(self._handle.fileno())
        self._handle.close()

    def abandon(self) -> None:
        self._handle.close()


class JsonlEncoder(Encoder):
    """Items as JSON lines."""

    extension = "jsonl"
    content_type = "application/x-ndjson; charset=utf-8"

    def open(self, path: str) -> EncodedFile:
        """``path`` opened for writing lines."""
        return _JsonlFile(open(path, "wb"))  # closed by finish or abandon


@register_sink("jsonl")
class JsonlSink(FileSink):
    """One JSONL file per input (or shards)."""

    encoder = JsonlEncoder
