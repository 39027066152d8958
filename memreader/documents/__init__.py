"""Documents: converting what document input holds into text, and into scenes.

- :mod:`~memreader.documents.normalize`: document input (text, parts, lists of them, strings
  naming local files) normalised into scenes, one per document (:func:`normalize_doc`);
- :mod:`~memreader.documents.loader`: a local file or inline ``file_data`` converted to text
  (plain text verbatim, other formats through markitdown);
- :mod:`~memreader.documents.limits`: the size checks of archives, pdf streams and converted
  text, before and after conversion;
- :mod:`~memreader.documents.headings`: the heading trail of a position in converted Markdown.

What it may import: :mod:`memreader.fetch` (local-file access and its limits, data URLs, the
extension sets), :mod:`memreader.scenes` and the root leaves (errors, files, config_model);
never :mod:`memreader.parts`, which imports it, nor anything above. Where a long text is cut
is the windower's (:mod:`memreader.windowing.chunking`).

The settings every document is read under, :class:`DocumentAccess` and
:class:`DocumentLimits`, live in :mod:`memreader.fetch.local_files` (reading a local file is
fetching) and are re-exported here with the path check, because a reader's users name them
from here.
"""

from memreader.documents.loader import convert_bytes, load_file_part, load_path
from memreader.documents.normalize import normalize_doc
from memreader.fetch.local_files import DocumentAccess, DocumentLimits, check_local_path

__all__ = [
    "DocumentAccess",
    "DocumentLimits",
    "check_local_path",
    "convert_bytes",
    "load_file_part",
    "load_path",
    "normalize_doc",
]
