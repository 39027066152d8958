"""Tool traffic: an assistant's tool calls, and tool parts (a tool's description, the input it
was called with, its output), each rendered on one line."""

from __future__ import annotations

import json
from typing import Any

from memreader.parsers.router import PART_PARSERS
from memreader.scene import Message, Part

#: A tool part's rendered payload is clipped to this many characters (outputs can be huge).
MAX_TOOL_TEXT = 4000


@PART_PARSERS.register("tool_calls")
def parse_tool_calls(part: Part, message: Message) -> str:
    """``[tool calls: search({"q": "tea"})]``."""
    calls = [f"{call.get('name')}({call.get('arguments', '')})" for call in part.payload or ()]
    return "[tool calls: " + "; ".join(calls) + "]"


def _compact(value: Any) -> str:
    text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= MAX_TOOL_TEXT else text[: MAX_TOOL_TEXT - 3] + "..."


def _field(payload: dict[str, Any], *names: str) -> Any:
    for name in names:
        if payload.get(name) is not None:
            return payload[name]
    return None


@PART_PARSERS.register("tool_description")
def parse_tool_description(part: Part, message: Message) -> str:
    """``[tool description: search: Search the web; parameters {...}]``."""
    payload = part.payload if isinstance(part.payload, dict) else {}
    name = _field(payload, "name") or "tool"
    text = f"[tool description: {name}"
    description = _field(payload, "description")
    if description is not None:
        text += f": {_compact(description)}"
    parameters = _field(payload, "parameters", "input_schema")
    if parameters is not None:
        text += f"; parameters {_compact(parameters)}"
    return text + "]"


@PART_PARSERS.register("tool_input")
def parse_tool_input(part: Part, message: Message) -> str:
    """``[tool input: search {"q": "tea"}]``."""
    payload = part.payload if isinstance(part.payload, dict) else {}
    name = _field(payload, "name") or "tool"
    arguments = _field(payload, "argument", "arguments", "input")
    return f"[tool input: {name} {_compact(arguments if arguments is not None else {})}]"


@PART_PARSERS.register("tool_output")
def parse_tool_output(part: Part, message: Message) -> str:
    """``[tool output: search {"results": [...]}]``."""
    payload = part.payload if isinstance(part.payload, dict) else {}
    name = _field(payload, "name") or "tool"
    output = _field(payload, "output", "result", "content")
    return f"[tool output: {name} {_compact(output if output is not None else '')}]"
