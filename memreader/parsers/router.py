"""The part-type router: which parser renders which part, and how each line is prefixed."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from memreader.errors import DocumentError
from memreader.scene import EMPTY_PART, Message, Part, Scene, check_text
from memreader.windows import Unit

PartParser = Callable[[Part, Message], str]
PART_PARSERS: dict[str, PartParser] = {}


def register_part_parser(part_type: str) -> Callable[[PartParser], PartParser]:
    """Register the parser for a part type (a later registration replaces an earlier one)."""

    def decorate(parser: PartParser) -> PartParser:
        PART_PARSERS[part_type] = parser
        return parser

    return decorate


@register_part_parser("text")
@register_part_parser("file")
def _verbatim(part: Part, message: Message) -> str:
    return part.text


@register_part_parser("image_url")
@register_part_parser("input_audio")
@register_part_parser("tool_calls")
@register_part_parser(EMPTY_PART)
def _placeholder(part: Part, message: Message) -> str:
    return part.text


@dataclass(frozen=True)
class PartRef:
    """What a unit came from: the message and the part within it."""

    message: Message
    part: Part


def line_prefix(role: str | None, chat_time: str | None) -> str:
    """``role: [chat_time]: `` for chat messages, nothing for documents and plain strings.

    The one place lines are rendered: windows, and fine-mode refinement of stored items.
    """
    if role is None:
        return ""
    if chat_time:
        return f"{role}: [{chat_time}]: "
    return f"{role}: "


def scene_units(scene: Scene) -> list[Unit]:
    """One unit per message part, in order, keyed by a :class:`PartRef`.

    A document's text must be valid Unicode (chat text is checked as it is normalised): a
    :class:`~memreader.errors.DocumentError` names the document and part otherwise.
    """
    units = []
    for message in scene.messages:
        prefix = line_prefix(message.role, message.chat_time)
        for part in message.parts:
            if scene.type == "doc":
                _check_document(scene, message, part)
            parser = PART_PARSERS.get(part.type, _placeholder)
            units.append(Unit(parser(part, message), prefix, PartRef(message, part)))
    return units


def _check_document(scene: Scene, message: Message, part: Part) -> None:
    where = {"scene_index": scene.index, "message_index": message.index}
    check_text(part.text, "document text", error=DocumentError, **where)
    if part.doc_path is not None:
        check_text(part.doc_path, "file name", error=DocumentError, **where)
