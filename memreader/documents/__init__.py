"""Documents: normalisation of doc input, local files and inline file data converted to text
within limits, and the splitter for long texts."""

from memreader.documents.limits import DocumentAccess, DocumentLimits
from memreader.documents.loader import (
    check_local_path,
    convert_bytes,
    load_file_part,
    load_path,
)
from memreader.documents.normalize import normalize_doc

__all__ = [
    "DocumentAccess",
    "DocumentLimits",
    "check_local_path",
    "convert_bytes",
    "load_file_part",
    "load_path",
    "normalize_doc",
]
