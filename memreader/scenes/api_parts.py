"""Content parts as the chat APIs send them, made into :class:`Part` objects.

One function per part type reads the shapes OpenAI's Chat Completions and Responses APIs and
Anthropic's Messages API send (and memreader's own tool parts): text, images, audio, files,
documents, tool calls and results, thinking. Text inside any of them is kept verbatim as the
text of an *exact* part, so spans into it are provenance; a part whose text is another field
than ``text`` (a tool result's ``content``, a tool output's ``output``, a thinking block's
``thinking``) gets a ``label`` its lines are prefixed with. A shape that is not known is an
:class:`~memreader.errors.InvalidMessageError` naming scene, message and part, or, where the
caller keeps unknown parts, an ``unsupported`` part whose payload says why.

>>> ctx = PartContext(0, 0, 1, keep=True)
>>> [(p.type, p.text, p.label) for p in content_parts(
...     {"type": "tool_result", "tool_use_id": "t1", "content": "42"}, ctx)]
[('tool_output', '42', '[tool result: t1] ')]
>>> content_parts({"type": "file", "oops": 1}, ctx)[0].payload["reason"]
'file part needs file_data, file_url, file_id, path or url (it has: oops, type)'
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from memreader.errors import InvalidMessageError
from memreader.scenes.clipping import MAX_LABEL, clip
from memreader.scenes.text_checks import check_nested_text, check_text, printable

__all__ = [
    "EMPTY_PART",
    "TOOL_PART_TYPES",
    "UNSUPPORTED_PART",
    "Part",
    "PartContext",
    "content_parts",
    "responses_item",
]

# The part type of a message without any content: it has no text, so its source has no span.
EMPTY_PART = "empty"
#: The part type a content part of an unknown type or shape becomes when unknown parts are
#: kept: its payload is ``{"type": the caller's type, "reason": why}``, rendered as a
#: placeholder and reported.
UNSUPPORTED_PART = "unsupported"
#: Tool traffic given as content parts (MemOS's shapes), kept with their raw payload.
TOOL_PART_TYPES = frozenset({"tool_description", "tool_input", "tool_output"})
_TEXT_TYPES = ("text", "input_text", "output_text")
#: The longest name or id a label shows.
_MAX_NAME = 64


@dataclass(frozen=True)
class Part:
    """One piece of a message's content. ``text`` is the caller's text verbatim for text parts
    (and a document's text, converted, for files read as documents); ``exact`` says so, and then
    character spans into it are provenance. Other parts (images, files in a chat, audio, tool
    calls) keep their raw ``payload`` and no text of their own: their parser renders a short
    description. ``label`` is shown before the part's lines (``[tool output: search] ``),
    outside the spans; ``doc_path`` and ``image_data_url`` are what its sources keep."""

    type: str
    text: str = ""
    index: int | None = None
    exact: bool = True
    doc_path: str | None = None
    payload: Any = None
    label: str = ""
    image_data_url: str | None = None


@dataclass(frozen=True)
class PartContext:
    """Where a part is (its scene, message and part index) and whether a part of an unknown
    type or shape is kept (``keep``) or refused."""

    scene: int
    message: int
    part: int | None
    keep: bool = False

    def fail(self, reason: str) -> InvalidMessageError:
        """The typed error naming where the part is."""
        return InvalidMessageError(reason, **self.where)

    @property
    def where(self) -> dict[str, Any]:
        """The location keywords of an :class:`~memreader.errors.InputError`."""
        return {"scene_index": self.scene, "message_index": self.message, "part_index": self.part}

    def checked(self, text: str, what: str) -> str:
        """``text``, if it is valid Unicode."""
        return check_text(text, what, **self.where)

    def nested_checked(self, value: Any, what: str) -> None:
        """Every string in ``value`` checked, the error naming where the part is."""
        check_nested_text(value, what, error=InvalidMessageError, **self.where)

    def unknown(self, kind: str, reason: str, kept: str | None = None) -> Part:
        """A part of an unknown type or shape: refused (``reason``), or kept as a placeholder
        saying why (``kept``, default ``reason``)."""
        if not self.keep:
            raise self.fail(reason)
        self.checked(kind, "part type")
        payload = {"type": kind, "reason": clip(kept or reason, MAX_LABEL + 100).text}
        return Part(type=UNSUPPORTED_PART, index=self.part, exact=False, payload=payload)


def _keys(part: Mapping[str, Any]) -> str:
    names = sorted(printable(str(k)) for k in part)  # quoted in messages and reports
    return clip(", ".join(names), MAX_LABEL).text or "no keys"


def _label(head: str, name: Any, ctx: PartContext, what: str) -> str:
    """``[head: name] ``, the name checked (a window shows it), on one line and clipped."""
    shown = " ".join(ctx.checked(name, what).split())[:_MAX_NAME] if isinstance(name, str) else ""
    return f"[{head}: {shown}] " if shown else f"[{head}] "


def content_parts(raw: Any, ctx: PartContext) -> list[Part]:
    """The parts one content part of a message makes (several for a tool result or document
    holding a list of blocks, all with the same part index)."""
    if isinstance(raw, str):
        return [Part(type="text", text=ctx.checked(raw, "text"), index=ctx.part)]
    if not isinstance(raw, Mapping) or not isinstance(raw.get("type"), str):
        what = _keys(raw) if isinstance(raw, Mapping) else type(raw).__name__
        return [
            ctx.unknown(
                "untyped",
                f"content part must be a mapping with a string 'type' (got {what})",
            )
        ]
    kind = raw["type"]
    shape = _SHAPES.get(kind)
    if shape is None:
        ctx.checked(kind, "part type")
        shown = clip(kind, MAX_LABEL).text
        return [
            ctx.unknown(
                kind, f"unknown content part type {shown!r}", f"no parser for part type {shown!r}"
            )
        ]
    return shape(raw, kind, ctx)


def _text(raw: Mapping[str, Any], kind: str, ctx: PartContext) -> list[Part]:
    field = "refusal" if kind == "refusal" else "text"
    text = raw.get(field)
    if not isinstance(text, str):
        return [ctx.unknown(kind, f"{kind} part needs a string {field!r} (it has: {_keys(raw)})")]
    part_type = "refusal" if kind == "refusal" else "text"
    return [Part(type=part_type, text=ctx.checked(text, field), index=ctx.part)]


def _thinking(raw: Mapping[str, Any], kind: str, ctx: PartContext) -> list[Part]:
    if kind == "redacted_thinking":  # encrypted reasoning: nothing to read, said so
        return [Part(type="redacted_thinking", index=ctx.part, exact=False)]
    text = raw.get("thinking")
    if not isinstance(text, str):
        return [
            ctx.unknown(kind, f"thinking part needs a string 'thinking' (it has: {_keys(raw)})")
        ]
    return [
        Part(
            type="thinking", text=ctx.checked(text, "thinking"), index=ctx.part, label="[thinking] "
        )
    ]


def _source_ref(source: Mapping[str, Any]) -> Any:
    """An Anthropic ``source`` as a reference: a URL, a ``data:`` URL, or ``{"file_id"}``."""
    kind = source.get("type")
    if kind == "url":
        return source.get("url")
    if kind == "base64" and isinstance(source.get("data"), str):
        media = source.get("media_type") if isinstance(source.get("media_type"), str) else ""
        return f"data:{media or 'application/octet-stream'};base64,{source['data']}"
    if kind == "file" and isinstance(source.get("file_id"), str):
        return {"file_id": source["file_id"]}
    return None


def _image(raw: Mapping[str, Any], kind: str, ctx: PartContext) -> list[Part]:
    url = raw.get("image_url", raw.get("image"))
    if isinstance(url, Mapping):
        url = url.get("url")
    if url is None and isinstance(raw.get("file_id"), str):
        url = {"file_id": ctx.checked(raw["file_id"], f"{kind} file_id")}
    if url is None and isinstance(raw.get("source"), Mapping):
        url = _source_ref(raw["source"])
        if url is None:
            source_type = clip(repr(raw["source"].get("type")), MAX_LABEL).text
            return [ctx.unknown(kind, f"{kind} source type {source_type} is not known")]
    if isinstance(url, Mapping):
        ctx.nested_checked(url, f"{kind} source")
        return [Part(type="image_url", index=ctx.part, exact=False, payload=dict(url))]
    if not isinstance(url, str) or not url:
        reason = (
            f"{kind} part needs image_url (a URL), a file_id or a source (it has: {_keys(raw)})"
        )
        return [ctx.unknown(kind, reason)]
    ctx.checked(url, f"{kind} url")
    return [Part(type="image_url", index=ctx.part, exact=False, payload=url)]


#: The keys of a file reference, and what each is called in a part's payload.
_FILE_KEYS = {
    "file_data": "file_data",
    "file_url": "url",
    "url": "url",
    "path": "path",
    "file_id": "file_id",
    "filename": "filename",
}


def _file(raw: Mapping[str, Any], kind: str, ctx: PartContext) -> list[Part]:
    # OpenAI Chat Completions nests the reference (``file: {...}``); the Responses API puts it
    # on the part itself.
    nested = raw.get("file")
    body = nested if isinstance(nested, Mapping) else raw
    payload = {
        name: body[key] for key, name in _FILE_KEYS.items() if isinstance(body.get(key), str)
    }
    if not payload:
        reason = (
            f"{kind} part needs file_data, file_url, file_id, path or url (it has: {_keys(body)})"
        )
        return [ctx.unknown(kind, reason)]
    for key in ("filename", "file_id", "path", "url"):
        if key in payload:
            ctx.checked(payload[key], f"file {key}")
    return [Part(type="file", index=ctx.part, exact=False, payload=payload)]


def _document(raw: Mapping[str, Any], kind: str, ctx: PartContext) -> list[Part]:
    """Anthropic's ``document`` block: a PDF (``base64``), plain text (``text``), a URL, an
    uploaded file (``file``) or a list of blocks (``content``)."""
    source = raw.get("source")
    title = raw.get("title") if isinstance(raw.get("title"), str) else None
    label = _label("document", title, ctx, "document title")
    if not isinstance(source, Mapping):
        return [ctx.unknown(kind, f"document part needs a 'source' mapping (it has: {_keys(raw)})")]
    if source.get("type") == "text" and isinstance(source.get("data"), str):
        text = ctx.checked(source["data"], "document text")
        return [Part(type="file", text=text, index=ctx.part, label=label)]
    if source.get("type") == "content" and isinstance(source.get("content"), list | tuple):
        return _blocks(source["content"], ctx, label)
    ref = _source_ref(source)
    if ref is None:
        source_type = clip(repr(source.get("type")), MAX_LABEL).text
        return [ctx.unknown(kind, f"document source type {source_type} is not known")]
    payload: dict[str, Any] = dict(ref) if isinstance(ref, Mapping) else {"url": ref}
    if isinstance(ref, str) and ref[:5].lower() == "data:":
        payload = {"file_data": ref}
    if title is not None:
        payload["title"] = title
    ctx.nested_checked(payload, "document source")
    return [Part(type="file", index=ctx.part, exact=False, payload=payload)]


def _audio(raw: Mapping[str, Any], kind: str, ctx: PartContext) -> list[Part]:
    audio = raw.get(kind)
    if audio is not None and not isinstance(audio, Mapping):
        reason = f"{kind} part needs a mapping (data and format, or a url or path)"
        return [ctx.unknown(kind, reason)]
    ctx.nested_checked(audio or {}, kind)
    return [Part(type="input_audio", index=ctx.part, exact=False, payload=dict(audio or {}))]


def _blocks(blocks: Sequence[Any], ctx: PartContext, label: str, kind: str = "file") -> list[Part]:
    """The blocks of a tool result or document: text verbatim (labelled), anything else as the
    part it is, except that a kept part is not read from inside another (a placeholder saying
    so): its reads would share the outer part's place."""
    parts: list[Part] = []
    for block in blocks:
        if isinstance(block, str) or (
            isinstance(block, Mapping)
            and block.get("type") in _TEXT_TYPES
            and isinstance(block.get("text"), str)
        ):
            text = block if isinstance(block, str) else block["text"]
            parts.append(
                Part(type=kind, text=ctx.checked(text, "text"), index=ctx.part, label=label)
            )
            continue
        inner = content_parts(block, ctx)
        if ctx.keep and any(not p.exact and p.type != UNSUPPORTED_PART for p in inner):
            what = block.get("type") if isinstance(block, Mapping) else type(block).__name__
            shown = clip(str(what), MAX_LABEL).text
            reason = f"a {shown!r} block inside {label.strip()} is not read"
            inner = [ctx.unknown(str(what), reason)]
        parts.extend(inner)
    return parts


def _tool_use(raw: Mapping[str, Any], kind: str, ctx: PartContext) -> list[Part]:
    name = raw.get("name")
    if not isinstance(name, str):
        return [ctx.unknown(kind, f"tool_use part needs a string 'name' (it has: {_keys(raw)})")]
    call = {"name": name, "arguments": raw.get("input", {})}
    ctx.nested_checked(call, "tool_use")
    return [Part(type="tool_calls", index=ctx.part, exact=False, payload=(call,))]


def _tool_result(raw: Mapping[str, Any], kind: str, ctx: PartContext) -> list[Part]:
    """Anthropic's ``tool_result``: its ``content`` (a string or a list of blocks) verbatim."""
    head = "tool error" if raw.get("is_error") else "tool result"
    label = _label(head, raw.get("tool_use_id"), ctx, "tool_use_id")
    return _tool_text(raw.get("content"), kind, raw, ctx, label, "content")


def _tool_text(
    output: Any, kind: str, raw: Mapping[str, Any], ctx: PartContext, label: str, field: str
) -> list[Part]:
    if output is None:
        output = ""
    if isinstance(output, str):
        text = ctx.checked(output, f"{kind} {field}")
        return [Part(type="tool_output", text=text, index=ctx.part, label=label)]
    if isinstance(output, list | tuple):
        return _blocks(output, ctx, label, "tool_output")
    reason = f"{kind} {field} must be a string or a list of blocks, got {type(output).__name__}"
    return [ctx.unknown(kind, reason)]


def _tool_part(raw: Mapping[str, Any], kind: str, ctx: PartContext) -> list[Part]:
    """memreader's (and MemOS's) tool parts: flat (``{"type": "tool_output", "name", "output"}``)
    or nested under their type (``{"type": "tool_output", "tool_output": {...}}``). A tool
    output given as text is that text, verbatim; any other value is rendered on one line."""
    nested = raw.get(kind)
    body = {**raw, **nested} if isinstance(nested, Mapping) else dict(raw)
    body.pop(kind, None)
    if kind == "tool_output":
        output = next((body[k] for k in ("output", "result", "content") if k in body), None)
        if output is None:
            reason = f"tool_output part has no output, result or content (it has: {_keys(body)})"
            return [ctx.unknown(kind, reason)]
        if isinstance(output, str | list | tuple):
            name = body.get("name") or body.get("call_id") or body.get("tool_call_id")
            label = _label("tool output", name, ctx, f"{kind} name")
            return _tool_text(output, kind, body, ctx, label, "output")
    ctx.nested_checked(body, f"{kind} part")
    return [Part(type=kind, index=ctx.part, exact=False, payload=body)]


_Shape = Callable[[Mapping[str, Any], str, PartContext], list[Part]]
_SHAPES: dict[str, _Shape] = {
    "text": _text,
    "input_text": _text,
    "output_text": _text,
    "refusal": _text,
    "thinking": _thinking,
    "redacted_thinking": _thinking,
    "image_url": _image,
    "input_image": _image,
    "image": _image,
    "file": _file,
    "input_file": _file,
    "document": _document,
    "input_audio": _audio,
    "audio": _audio,
    "tool_use": _tool_use,
    "tool_result": _tool_result,
    **{kind: _tool_part for kind in TOOL_PART_TYPES},
}


def responses_item(raw: Mapping[str, Any], ctx: PartContext) -> tuple[str, list[Part]] | None:
    """An OpenAI Responses API item that is not a message, as a role and parts:
    ``function_call`` (an assistant's tool call) and ``function_call_output`` (the tool's
    answer: its ``output`` verbatim, or its parts when a list). ``None`` for other items."""
    kind = raw.get("type")
    if kind == "function_call":
        name, arguments = raw.get("name"), raw.get("arguments", "")
        if not isinstance(name, str):
            raise ctx.fail("function_call needs a string 'name'")
        call = {"name": name, "arguments": arguments}
        ctx.nested_checked(call, "function_call")
        return "assistant", [Part(type="tool_calls", exact=False, payload=(call,))]
    if kind == "function_call_output":
        output = raw.get("output")
        label = _label("tool output", raw.get("call_id"), ctx, "call_id")
        if isinstance(output, list | tuple):
            parts: list[Part] = []
            for i, block in enumerate(output):
                inner = replace(ctx, part=i)
                is_text = isinstance(block, str) or (
                    isinstance(block, Mapping) and block.get("type") in _TEXT_TYPES
                )
                # Each block has a place of its own here: files and images are read.
                parts.extend(
                    _blocks([block], inner, label, "tool_output")
                    if is_text
                    else content_parts(block, inner)
                )
            return "tool", parts
        return "tool", _tool_text(output, kind, raw, ctx, label, "output")
    return None
