"""``format: document`` (``type: doc`` jobs): each input is one document, given to the reader
as one ``file`` part with its bytes (read whole, up to ``max_bytes``) and its file name."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import TYPE_CHECKING

from memreader.batch.formats.base import BadRecord, Format, Scene, input_ids, register_format
from memreader.errors import InputError

if TYPE_CHECKING:
    from memreader.batch.job import InputSpec
    from memreader.batch.places.opened import OpenedInput

__all__ = ["DocumentFormat"]


@register_format("document")
class DocumentFormat(Format):
    """One document per input (see the module docstring)."""

    job_types = ("doc",)

    def read(self, opened: OpenedInput, spec: InputSpec) -> Iterator[Scene | BadRecord]:
        """The document, or the bad record of why its ids cannot be made."""
        try:
            info = input_ids(spec, opened, None)
        except InputError as exc:
            yield BadRecord.of(0, "document", exc)
            return
        data = opened.read_all()
        part = {
            "type": "file",
            "file": {"file_data": base64.b64encode(data).decode("ascii"), "filename": opened.name},
        }
        yield Scene(0, "document", [part], info)
