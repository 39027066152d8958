"""Bounded reads of model files: every byte of a model folder or the model cache is read
through here, so a FIFO never blocks, a device or a huge file is refused, and every failure is
an :class:`~memreader.errors.EmbeddingError` naming the file."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any

from memreader.errors import EmbeddingError
from memreader.files import FileRefused, read_regular_file

__all__ = [
    "MAX_JSON_BYTES",
    "MAX_MODEL_BYTES",
    "check_model_file",
    "read_model_bytes",
    "read_model_json",
]

#: The most bytes of a model's JSON file (config, tokenizer: a large vocabulary is ~20 MB).
MAX_JSON_BYTES = 64 * 1024 * 1024
#: The most bytes of a weights or ONNX file (all-MiniLM-L6-v2: 91 MB).
MAX_MODEL_BYTES = 4 * 1024 * 1024 * 1024


def read_model_bytes(path: Path, max_bytes: int = MAX_MODEL_BYTES) -> bytes:
    """The bytes of the regular file ``path``, at most ``max_bytes``."""
    try:
        return read_regular_file(path, max_bytes)
    except (FileRefused, OSError) as e:
        raise EmbeddingError(f"cannot read the model file {str(path)!r}: {e}") from e


def read_model_json(path: Path) -> Any:
    """The JSON value of the model file ``path`` (at most :data:`MAX_JSON_BYTES`)."""
    data = read_model_bytes(path, MAX_JSON_BYTES)
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError) as e:
        raise EmbeddingError(f"the model file {str(path)!r} is not valid JSON: {e}") from e


def check_model_file(path: Path, max_bytes: int = MAX_MODEL_BYTES) -> None:
    """Refuse ``path`` unless it is a regular file of at most ``max_bytes`` (for files that a
    library reads itself, such as safetensors weights)."""
    try:
        info = os.stat(path)
    except OSError as e:
        raise EmbeddingError(f"cannot read the model file {str(path)!r}: {e}") from e
    if not stat.S_ISREG(info.st_mode):
        raise EmbeddingError(f"cannot read the model file {str(path)!r}: not a regular file")
    if info.st_size > max_bytes:
        raise EmbeddingError(
            f"cannot read the model file {str(path)!r}: {info.st_size} bytes, over the limit "
            f"of {max_bytes}"
        )
