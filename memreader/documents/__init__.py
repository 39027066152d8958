"""Documents: normalisation of doc input, local files and inline file data converted to text
within limits, and the splitter for long texts."""

from memreader.documents.limits import DocumentLimits
from memreader.documents.loader import (
    DEFAULT_MAX_FILE_BYTES,
    check_local_path,
    convert_bytes,
    load_file_part,
    load_path,
)
from memreader.documents.normalize import normalize_doc

__all__ = [
    "DEFAULT_MAX_FILE_BYTES",
    "DocumentLimits",
    "check_local_path",
    "convert_bytes",
    "load_file_part",
    "load_path",
    "normalize_doc",
]
