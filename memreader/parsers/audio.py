"""Audio parts: the transcript once a reader has transcribed the audio (its spans index the
transcript), else what the reader wrote in its place, else ``[audio]``."""

from __future__ import annotations

from memreader.parsers.router import PART_PARSERS
from memreader.scene import Message, Part


@PART_PARSERS.register("input_audio")
def parse_audio(part: Part, message: Message) -> str:
    """The transcript, a placeholder naming the audio, or ``[audio]``."""
    return part.text or "[audio]"
