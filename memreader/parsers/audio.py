"""Audio parts: a placeholder (transcription would need a web service)."""

from __future__ import annotations

from memreader.parsers.router import PART_PARSERS
from memreader.scene import Message, Part


@PART_PARSERS.register("input_audio")
def parse_audio(part: Part, message: Message) -> str:
    """``[audio]``."""
    return "[audio]"
