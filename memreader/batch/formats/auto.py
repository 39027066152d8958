"""``format: auto`` (the default): by extension, ``.jsonl``/``.ndjson`` as JSONL and ``.json``
as MemoryBank, LoCoMo or plain JSON by its shape; anything else is not a chat input. (In a
``type: doc`` job the job reads ``auto`` inputs with ``document`` instead.)"""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

from memreader.batch.formats.base import (
    BadRecord,
    Format,
    JsonShapedFormat,
    Scene,
    format_class,
    register_format,
)
from memreader.errors import InputError

if TYPE_CHECKING:
    from memreader.batch.job import InputSpec
    from memreader.batch.places.opened import OpenedInput

__all__ = ["AutoFormat"]

_JSONL_EXTENSIONS = (".jsonl", ".ndjson")
#: The formats a ``.json`` file may be, tried in order by shape (the last takes anything).
_JSON_SHAPES = ("memorybank", "locomo", "json")


@register_format("auto")
class AutoFormat(Format):
    """The format by extension and shape (see the module docstring)."""

    def read(self, opened: OpenedInput, spec: InputSpec) -> Iterator[Scene | BadRecord]:
        """The scenes as the input's own format reads them.

        Raises (while iterating):
            InputError: not a ``.json``, ``.jsonl`` or ``.ndjson`` file.
        """
        name = opened.location.lower()
        if name.endswith(_JSONL_EXTENSIONS):
            yield from format_class("jsonl")().read(opened, spec)
            return
        if not name.endswith(".json"):
            raise InputError(
                f"{opened.key}: not a chat input (only .json and .jsonl are read as chat by "
                "`format: auto`); read it with `type: doc`, or set the input's format"
            )
        data = opened.load_json()
        for shape in _JSON_SHAPES:
            cls = format_class(shape)
            if issubclass(cls, JsonShapedFormat) and cls.fits(data):
                yield from cls().scenes(data, opened, spec)
                return
