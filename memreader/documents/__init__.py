"""Document loading: local files and inline file data converted to text."""

from memreader.documents.loader import (
    DEFAULT_MAX_FILE_BYTES,
    convert_bytes,
    load_file_part,
    load_path,
)

__all__ = ["DEFAULT_MAX_FILE_BYTES", "convert_bytes", "load_file_part", "load_path"]
