"""File parts: a document read as the input (doc mode) is its text; a file attached to a chat
message is named, not read."""

from __future__ import annotations

from collections.abc import Mapping

from memreader.parsers.router import PART_PARSERS
from memreader.scene import Message, Part


@PART_PARSERS.register("file")
def parse_file(part: Part, message: Message) -> str:
    """The document's text, what a reader wrote in place of a file it could not read, or
    ``[file: name]`` for a file in a chat that is not read."""
    if part.exact or part.text:
        return part.text
    file = part.payload if isinstance(part.payload, Mapping) else {}
    name = (
        file.get("filename") or file.get("file_id") or file.get("path") or file.get("url") or "file"
    )
    return f"[file: {name}]"
