"""Tool traffic: an assistant's tool calls, rendered as ``[tool calls: name(arguments); ...]``."""

from __future__ import annotations

from memreader.parsers.router import PART_PARSERS
from memreader.scene import Message, Part


@PART_PARSERS.register("tool_calls")
def parse_tool_calls(part: Part, message: Message) -> str:
    """``[tool calls: search({"q": "tea"})]``."""
    calls = [f"{call.get('name')}({call.get('arguments', '')})" for call in part.payload or ()]
    return "[tool calls: " + "; ".join(calls) + "]"
