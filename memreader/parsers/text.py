"""Text parts, indexed verbatim (their spans are provenance), and messages without content."""

from __future__ import annotations

from memreader.parsers.router import PART_PARSERS
from memreader.scene import EMPTY_PART, Message, Part


@PART_PARSERS.register("text")
def parse_text(part: Part, message: Message) -> str:
    """The caller's text as it is."""
    return part.text


@PART_PARSERS.register(EMPTY_PART)
def parse_empty(part: Part, message: Message) -> str:
    """Nothing: the message is kept (and in its window's sources) but has no text."""
    return ""
