"""``output.format: parquet`` (needs ``pyarrow``: ``pip install 'memreader-ai[parquet]'``): one row
per item, the often-filtered fields as columns (``id``, ``memory``, ``user_id``,
``session_id``, ``memory_type``), the whole metadata as JSON (without the embedding), and the
embedding as a ``list<float32>`` column. Rows are written in row groups of at most 10,000
items or 16 MiB of JSON, so memory stays bounded."""

from __future__ import annotations

import json
import os
from typing import Any

from memreader.batch.sinks.base import register_sink
from memreader.batch.sinks.files import EncodedFile, Encoder, FileSink
from memreader.errors import ConfigError

__all__ = ["ParquetEncoder", "ParquetSink"]

# Row groups are flushed at whichever of these comes first, so memory stays bounded.
_ROW_GROUP_ITEMS = 10_000
_ROW_GROUP_BYTES = 16 * 1024 * 1024


def _parquet() -> Any:
    """``pyarrow.parquet``, imported only when Parquet is written (pyarrow is optional)."""
    import pyarrow.parquet as pq

    return pq


def _schema() -> Any:
    import pyarrow as pa

    return pa.schema(
        [
            ("id", pa.string()),
            ("memory", pa.string()),
            ("user_id", pa.string()),
            ("session_id", pa.string()),
            ("memory_type", pa.string()),
            ("metadata", pa.string()),
            ("embedding", pa.list_(pa.float32())),
        ]
    )


def _str_or_none(value: Any) -> str | None:
    return None if value is None else str(value)


class _ParquetFile(EncodedFile):
    def __init__(self, path: str) -> None:
        self._path = path
        self._writer = _parquet().ParquetWriter(path, _schema())
        self._rows: list[dict[str, Any]] = []  # rows not yet in a row group
        self._row_bytes = 0

    def write(self, entry: Any, line: bytes) -> None:
        self._rows.append(entry)
        self._row_bytes += len(line)
        if len(self._rows) >= _ROW_GROUP_ITEMS or self._row_bytes >= _ROW_GROUP_BYTES:
            self._flush_rows()

    def _flush_rows(self) -> None:
        """Write the buffered rows as one row group."""
        if self._rows:
            import pyarrow as pa

            self._writer.write_table(pa.Table.from_pylist(self._rows, schema=_schema()))
        self._rows = []
        self._row_bytes = 0

    def finish(self) -> None:
        self._flush_rows()
        self._writer.close()
        with open(self._path, "rb") as handle:
            os.fsync(handle.fileno())

    def abandon(self) -> None:
        self._rows = []
        self._writer.close()


class ParquetEncoder(Encoder):
    """Items as Parquet rows (see the module docstring)."""

    extension = "parquet"
    content_type = "application/vnd.apache.parquet"

    @classmethod
    def check(cls) -> None:
        """Refuse to work without pyarrow."""
        try:
            _parquet()
        except ImportError:
            raise ConfigError(
                "parquet output needs pyarrow: pip install 'memreader-ai[parquet]'"
            ) from None

    def prepare(self, item: dict[str, Any], line: bytes) -> Any:
        """One Parquet row of ``item``: the often-filtered fields as columns, the whole
        metadata (without the embedding, which has its own float32 column) as JSON."""
        metadata = item.get("metadata")
        metadata = dict(metadata) if isinstance(metadata, dict) else {}
        embedding = metadata.pop("embedding", None)
        try:
            vector = None if embedding is None else [float(x) for x in embedding]
        except (TypeError, ValueError) as exc:
            raise ValueError(
                f"its embedding is not a list of numbers ({type(exc).__name__})"
            ) from None
        return {
            "id": _str_or_none(item.get("id")),
            "memory": _str_or_none(item.get("memory")),
            "user_id": _str_or_none(metadata.get("user_id")),
            "session_id": _str_or_none(metadata.get("session_id")),
            "memory_type": _str_or_none(metadata.get("memory_type")),
            "metadata": json.dumps(metadata, ensure_ascii=False, allow_nan=False),
            "embedding": vector,
        }

    def open(self, path: str) -> EncodedFile:
        """A Parquet writer at ``path``."""
        return _ParquetFile(path)


@register_sink("parquet")
class ParquetSink(FileSink):
    """One Parquet file per input (or shards)."""

    encoder = ParquetEncoder
