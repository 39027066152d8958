"""The part-type router: which parser renders which part, and how each line is prefixed.

A parser is ``parser(part, message) -> str``: the text a window shows for that part. Parsers
are registered by part type in :data:`PART_PARSERS` (the built-in ones in this package's
modules; a plugin may add its own for a new part type).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from memreader.errors import DocumentError
from memreader.registry import Registry
from memreader.rendering import NotedText
from memreader.scene import Message, Part, Scene, check_text
from memreader.windows import Unit, Window

__all__ = ["PART_PARSERS", "PartParser", "PartRef", "line_prefix", "part_notes", "scene_units"]

PartParser = Callable[[Part, Message], str]

#: Parsers by part type.
PART_PARSERS: Registry[PartParser] = Registry(
    "part parser",
    lazy={
        "text": "memreader.parsers.text",
        "empty": "memreader.parsers.text",
        "image_url": "memreader.parsers.image",
        "file": "memreader.parsers.file",
        "input_audio": "memreader.parsers.audio",
        "tool_calls": "memreader.parsers.tool",
        "tool_description": "memreader.parsers.tool",
        "tool_input": "memreader.parsers.tool",
        "tool_output": "memreader.parsers.tool",
        "refusal": "memreader.parsers.text",
        "unsupported": "memreader.parsers.text",
    },
)


@dataclass(frozen=True)
class PartRef:
    """What a unit came from: the message and the part within it, and a ``note`` for the
    report of each window that shows it (its parser left something out: see
    :mod:`memreader.rendering`)."""

    message: Message
    part: Part
    note: str | None = None


#: The longest speaker name a line shows (a name is a label, not content).
MAX_NAME_CHARS = 64


def line_prefix(role: str | None, chat_time: str | None, name: str | None = None) -> str:
    """``role: [chat_time]: `` for chat messages, ``role (name): [chat_time]: `` when the
    message names its speaker (so three ``user`` speakers stay three people), nothing for
    documents and plain strings. A name is shown on one line, at most
    :data:`MAX_NAME_CHARS` characters.

    The one place lines are rendered: windows, and fine-mode refinement of stored items.

    >>> line_prefix("user", "2024-05-01", "Anna")
    'user (Anna): [2024-05-01]: '
    """
    if role is None:
        return ""
    speaker = " ".join(name.split())[:MAX_NAME_CHARS].strip() if name else ""
    who = f"{role} ({speaker})" if speaker else role
    if chat_time:
        return f"{who}: [{chat_time}]: "
    return f"{who}: "


def scene_units(scene: Scene) -> list[Unit]:
    """One unit per message part, in order, keyed by a :class:`PartRef`.

    A document's text must be valid Unicode (chat text is checked as it is normalised): a
    :class:`~memreader.errors.DocumentError` names the document and part otherwise.
    """
    units = []
    parsers: dict[str, PartParser] = {}
    for message in scene.messages:
        prefix = line_prefix(message.role, message.chat_time, message.name)
        for part in message.parts:
            if scene.type == "doc":
                _check_document(scene, message, part)
            parser = parsers.get(part.type)
            if parser is None:
                parser = parsers[part.type] = PART_PARSERS.get(part.type)
            text = parser(part, message)
            note = None
            if isinstance(text, NotedText):
                where = f"message {message.index}" + (
                    f", part {part.index}" if part.index is not None else ""
                )
                note = f"{where}: {text.note}"
            units.append(Unit(str(text), prefix, PartRef(message, part, note)))
    return units


def part_notes(window: Window, units: Sequence[Unit]) -> list[str]:
    """The notes of the parts ``window`` shows (each once, in order): what their parsers left
    out, e.g. tool arguments clipped. The window step puts them in the window's report."""
    notes: list[str] = []
    for segment in window.segments:
        key = units[segment.unit].key
        if isinstance(key, PartRef) and key.note and key.note not in notes:
            notes.append(key.note)
    return notes


def _check_document(scene: Scene, message: Message, part: Part) -> None:
    where = {"scene_index": scene.index, "message_index": message.index}
    check_text(part.text, "document text", error=DocumentError, **where)
    if part.doc_path is not None:
        check_text(part.doc_path, "file name", error=DocumentError, **where)
