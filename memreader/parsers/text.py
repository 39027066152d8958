"""Text parts, indexed verbatim (their spans are provenance), refusals, messages without content,
and parts of a type no parser knows."""

from __future__ import annotations

from memreader.parsers.router import PART_PARSERS
from memreader.rendering import MAX_LABEL, NotedText, clip
from memreader.scene import EMPTY_PART, UNSUPPORTED_PART, Message, Part


@PART_PARSERS.register("text")
def parse_text(part: Part, message: Message) -> str:
    """The caller's text as it is."""
    return part.text


@PART_PARSERS.register("refusal")
def parse_refusal(part: Part, message: Message) -> str:
    """An assistant's refusal, verbatim (its source has type ``refusal``)."""
    return part.text


@PART_PARSERS.register(EMPTY_PART)
def parse_empty(part: Part, message: Message) -> str:
    """Nothing: the message is kept (and in its window's sources) but has no text."""
    return ""


@PART_PARSERS.register(UNSUPPORTED_PART)
def parse_unsupported(part: Part, message: Message) -> str:
    """``[unsupported part: video]``: the part keeps its place in its window and its source, and
    the readers that keep such parts report them per window."""
    kind = part.payload.get("type") if isinstance(part.payload, dict) else None
    shown = clip(str(kind or "unknown"), MAX_LABEL)
    text = f"[unsupported part: {shown.text}]"
    note = shown.note("the unsupported part's type name")
    return NotedText(text, note) if note else text
