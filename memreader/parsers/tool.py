"""Tool traffic: an assistant's tool calls, and tool parts (a tool's description, the input it
was called with, its output), each rendered on one line."""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from memreader.parsers.router import PART_PARSERS
from memreader.rendering import MAX_TOOL_TEXT, NotedText, render_line
from memreader.scene import Message, Part

__all__ = ["MAX_TOOL_TEXT"]


def _line(head: str, items: Iterable[Any], what: str) -> str:
    """``[head items]``, the items clipped to :data:`MAX_TOOL_TEXT` characters together; a
    :class:`NotedText` (a note for the window's report) when anything was left out."""
    shown = render_line(items)
    text = f"[{head}{shown.text}]"
    note = shown.note(what)
    return NotedText(text, note) if note else text


@PART_PARSERS.register("tool_calls")
def parse_tool_calls(part: Part, message: Message) -> str:
    """``[tool calls: search({"q": "tea"})]``: arguments as given when a string (JSON text),
    as JSON otherwise."""

    def items() -> Iterator[Any]:
        for index, call in enumerate(part.payload or ()):
            yield from ("; " if index else "", call.get("name") or "tool", "(")
            yield from (call.get("arguments", ""), ")")

    return _line("tool calls: ", items(), "tool call arguments")


def _field(payload: dict[str, Any], *names: str) -> Any:
    for name in names:
        if payload.get(name) is not None:
            return payload[name]
    return None


@PART_PARSERS.register("tool_description")
def parse_tool_description(part: Part, message: Message) -> str:
    """``[tool description: search: Search the web; parameters {...}]``."""
    payload = part.payload if isinstance(part.payload, dict) else {}
    items: list[Any] = [_field(payload, "name") or "tool"]
    description = _field(payload, "description")
    if description is not None:
        items += [": ", description]
    parameters = _field(payload, "parameters", "input_schema")
    if parameters is not None:
        items += ["; parameters ", parameters]
    return _line("tool description: ", items, "tool description")


@PART_PARSERS.register("tool_input")
def parse_tool_input(part: Part, message: Message) -> str:
    """``[tool input: search {"q": "tea"}]``."""
    payload = part.payload if isinstance(part.payload, dict) else {}
    arguments = _field(payload, "argument", "arguments", "input")
    items = [_field(payload, "name") or "tool", " ", {} if arguments is None else arguments]
    return _line("tool input: ", items, "tool input")


@PART_PARSERS.register("tool_output")
def parse_tool_output(part: Part, message: Message) -> str:
    """``[tool output: search {"results": [...]}]``."""
    payload = part.payload if isinstance(part.payload, dict) else {}
    output = _field(payload, "output", "result", "content")
    items = [_field(payload, "name") or "tool", " ", "" if output is None else output]
    return _line("tool output: ", items, "tool output")
