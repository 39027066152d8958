"""Parsing: a normalised scene becomes the units the windower cuts, one per message part.

Each part type has a parser registered by name (:data:`PART_PARSERS`): ``parser(part,
message) -> str``, the text a window shows for that part. Text parts are indexed verbatim (their
spans are provenance). A part read from outside the text (a file, an image, audio) was read
before parsing, by the multimodal reader's ``read_parts`` step, which put what it became in
``part.text``: its parser shows that text, or a placeholder naming the part when nothing read
it. Tool traffic is rendered on one line, clipped (:mod:`memreader.scenes.clipping`). A plugin may
register a parser for a new part type.

>>> line_prefix("user", "2024-05-01", "Anna")
'user (Anna): [2024-05-01]: '
>>> describe_url("image", "data:image/png;base64,iVBORw0KGgo=")
'[image: inline image/png, 34 characters]'
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memreader.errors import DocumentError, InvalidMessageError
from memreader.registry import Registry
from memreader.scenes.api_parts import EMPTY_PART, UNSUPPORTED_PART, Part
from memreader.scenes.clipping import MAX_LABEL, NotedText, clip, render_line
from memreader.scenes.scene import Message, Scene
from memreader.scenes.text_checks import check_text
from memreader.windowing.windows import Unit, Window

__all__ = [
    "PART_PARSERS",
    "PartParser",
    "PartRef",
    "describe_url",
    "line_prefix",
    "part_notes",
    "scene_units",
]

PartParser = Callable[[Part, Message], str]

#: Parsers by part type (the built-in ones are registered below).
PART_PARSERS: Registry[PartParser] = Registry("part parser")


@dataclass(frozen=True)
class PartRef:
    """What a unit came from: the message and the part within it, and a ``note`` for the
    report of each window that shows it (its parser left something out: see
    :mod:`memreader.scenes.clipping`)."""

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
        message_prefix = line_prefix(message.role, message.chat_time, message.name)
        for part in message.parts:
            prefix = message_prefix + part.label
            if scene.type == "doc":
                _check_document(scene, message, part)
            parser = parsers.get(part.type)
            if parser is None:
                parser = parsers[part.type] = PART_PARSERS.get(part.type)
            text = parser(part, message)
            _check_rendered(scene, message, part, prefix, text)
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


def _check_rendered(scene: Scene, message: Message, part: Part, prefix: str, text: str) -> None:
    """Every text a window shows must be valid Unicode: what a parser made of a part's payload
    (a plugin's parser, a rendered tool call) and its line prefix, not only the caller's text
    (checked as it was normalised), or no item holding it could be written as UTF-8."""
    if text is part.text and prefix.isascii():
        return  # the part's own text, checked where it entered
    error = DocumentError if scene.type == "doc" else InvalidMessageError
    where = {"scene_index": scene.index, "message_index": message.index, "part_index": part.index}
    check_text(prefix, f"the line prefix of a {part.type} part", error=error, **where)
    check_text(str(text), f"the text of a {part.type} part", error=error, **where)


# -- text, refusals, empty messages, unknown parts ---------------------------------------------


@PART_PARSERS.register("text")
def parse_text(part: Part, message: Message) -> str:
    """The caller's text as it is."""
    return part.text


@PART_PARSERS.register("refusal")
def parse_refusal(part: Part, message: Message) -> str:
    """An assistant's refusal, verbatim (its source has type ``refusal``)."""
    return part.text


@PART_PARSERS.register("thinking")
def parse_thinking(part: Part, message: Message) -> str:
    """A model's thinking, verbatim (its lines are labelled ``[thinking]``)."""
    return part.text


@PART_PARSERS.register("redacted_thinking")
def parse_redacted_thinking(part: Part, message: Message) -> str:
    """Encrypted reasoning: nothing readable, a placeholder says it was there."""
    return "[redacted thinking]"


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


# -- files, images, audio: what reading them made, else a placeholder --------------------------


@PART_PARSERS.register("file")
def parse_file(part: Part, message: Message) -> str:
    """The document's text, what a reader wrote in place of a file it could not read, or
    ``[file: name]`` for a file in a chat that is not read."""
    if part.exact or part.text:
        return part.text
    file = part.payload if isinstance(part.payload, Mapping) else {}
    name = next(
        (file[k] for k in ("filename", "title", "file_id", "path", "url") if file.get(k)), "file"
    )
    if str(name)[:5].lower() == "data:":
        return describe_url("file", str(name))
    return f"[file: {clip(str(name), MAX_LABEL).text}]"


def describe_url(label: str, url: str) -> str:
    """``[label: URL]``; a data URL is described (type and size), never copied."""
    if url[:5].lower() == "data:":
        # A data URL can be megabytes of base64: describe it, never copy it into a memory.
        media = url[5:].split(";", 1)[0].split(",", 1)[0] or "unknown type"
        return f"[{label}: inline {media}, {len(url)} characters]"
    return f"[{label}: {url}]"


@PART_PARSERS.register("image_url")
def parse_image(part: Part, message: Message) -> str:
    """What a reader wrote for the image (its description), else ``[image: URL]``."""
    if part.text:
        return part.text
    if isinstance(part.payload, Mapping):  # an uploaded file named by id
        return f"[image: file_id {clip(str(part.payload.get('file_id')), MAX_LABEL).text}]"
    return describe_url("image", str(part.payload))


@PART_PARSERS.register("input_audio")
def parse_audio(part: Part, message: Message) -> str:
    """The transcript (its spans index it), a placeholder a reader wrote naming the audio, or
    ``[audio]``."""
    return part.text or "[audio]"


# -- tool traffic, each on one line ------------------------------------------------------------


def _tool_line(head: str, items: Iterable[Any], what: str) -> str:
    """``[head items]``, the items clipped to :data:`~memreader.scenes.clipping.MAX_TOOL_TEXT`
    characters together; a :class:`NotedText` (a note for the window's report) when anything
    was left out."""
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

    return _tool_line("tool calls: ", items(), "tool call arguments")


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
    return _tool_line("tool description: ", items, "tool description")


@PART_PARSERS.register("tool_input")
def parse_tool_input(part: Part, message: Message) -> str:
    """``[tool input: search {"q": "tea"}]``."""
    payload = part.payload if isinstance(part.payload, dict) else {}
    arguments = _field(payload, "argument", "arguments", "input")
    items = [_field(payload, "name") or "tool", " ", {} if arguments is None else arguments]
    return _tool_line("tool input: ", items, "tool input")


@PART_PARSERS.register("tool_output")
def parse_tool_output(part: Part, message: Message) -> str:
    """A tool's output given as text, verbatim (its lines are labelled ``[tool output: search]``
    or ``[tool result: id]``); any other value on one line, ``[tool output: search {"results":
    [...]}]``."""
    if part.exact:
        return part.text
    payload = part.payload if isinstance(part.payload, dict) else {}
    output = _field(payload, "output", "result", "content")
    items = [_field(payload, "name") or "tool", " ", "" if output is None else output]
    return _tool_line("tool output: ", items, "tool output")
