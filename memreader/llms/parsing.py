"""Robust JSON extraction from model text.

:func:`parse_json` finds the JSON value in what a model actually writes:

* ``<think>...</think>`` blocks (also ``<thinking>``), an orphan ``</think>`` (the opening tag
  was in the prompt template) and an unclosed leading ``<think>``;
* Markdown code fences (```` ```json ... ``` ````, also unclosed);
* prose before and after the JSON (the first balanced object or array is taken);
* trailing or doubled commas, missing commas between members on separate lines;
* bad escapes (``\\_``, ``\\*`` and ``\\'`` lose the backslash; any other unknown escape or lone
  backslash is kept as a literal backslash), raw control characters in strings;
* smart quotes and single quotes used as string delimiters, unescaped quotes inside strings;
* Python literals ``True``/``False``/``None``;
* truncated output: open strings, arrays and objects are closed. Only *complete* items are
  kept: an array drops its unfinished last element, an object drops a member whose value is an
  unfinished scalar (an unfinished nested object or array is kept, closed). The result is
  flagged ``truncated``.

The strict :func:`json.loads` path is tried first, so well-formed answers are returned exactly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass, replace
from typing import Any, Literal

from memreader.llms.errors import LLMParseError
from memreader.llms.lenient_json import LenientParser, ParseFailure

__all__ = ["ParseResult", "parse_json", "strip_think"]

Expect = Literal["object", "array", "any"]

#: How many candidate start positions are tried before giving up (bounds the work on prose
#: full of braces).
MAX_CANDIDATES = 64


@dataclass(frozen=True)
class ParseResult:
    """A JSON value recovered from model text.

    Attributes:
        value: the decoded value.
        repairs: what had to be done, in order, e.g. ``("think_block", "code_fence",
            "trailing_comma")``. Empty when the text was exactly one JSON value.
        truncated: the text ended inside the value; unfinished trailing items were dropped.
    """

    value: Any
    repairs: tuple[str, ...] = ()
    truncated: bool = False

    @property
    def repaired(self) -> bool:
        """Whether the JSON text itself had to be fixed (not just cut out of its wrapping)."""
        return any(r not in _EXTRACTION_STEPS for r in self.repairs)

    @property
    def extracted(self) -> bool:
        """Whether the JSON had to be cut out of think blocks, fences or prose."""
        return any(r in _EXTRACTION_STEPS for r in self.repairs)


_EXTRACTION_STEPS = frozenset({"think_block", "unclosed_think", "code_fence", "surrounding_text"})

_THINK_BLOCK = re.compile(r"\A\s*<(think|thinking|reasoning)>.*?</\1>", re.DOTALL | re.IGNORECASE)
_THINK_CLOSE = re.compile(r"</(?:think|thinking|reasoning)>", re.IGNORECASE)
_THINK_OPEN = re.compile(r"\A\s*<(?:think|thinking|reasoning)>", re.IGNORECASE)
_FENCE = re.compile(r"```[ \t]*([A-Za-z0-9_+-]*)[ \t]*\r?\n?(.*?)(?:```|\Z)", re.DOTALL)


def strip_think(text: str) -> tuple[str, list[str]]:
    """Remove leading reasoning blocks; returns the rest and the repairs made.

    Only reasoning at the start of the answer is removed (models think first), so a JSON string
    that merely mentions ``<think>`` is left alone. Without a leading block, an orphan
    ``</think>`` (the opening tag was part of the prompt template) cuts off everything before
    it; an unclosed leading ``<think>`` tag is dropped and the answer is looked for after it.
    """
    repairs: list[str] = []
    stripped = text
    while True:
        match = _THINK_BLOCK.match(stripped)
        if match is None:
            break
        stripped = stripped[match.end() :]
        if not repairs:
            repairs.append("think_block")
    if not repairs:
        close = _THINK_CLOSE.search(stripped)
        if close is not None and not _THINK_OPEN.match(stripped):
            stripped = stripped[close.end() :]
            repairs.append("think_block")
    opened = _THINK_OPEN.match(stripped)
    if opened:
        stripped = stripped[opened.end() :]
        repairs.append("unclosed_think")
    return stripped, repairs


def parse_json(text: str, *, expect: Expect = "any") -> ParseResult:
    """Recover the JSON value in ``text``.

    Args:
        text: the model's answer.
        expect: ``"object"`` or ``"array"`` to only accept that kind of top-level value (prose
            like ``see [1]`` then cannot be mistaken for the answer); ``"any"`` accepts any
            object or array (and a bare scalar if the whole text is one).

    Raises:
        LLMParseError: no JSON value could be recovered (``raw_text`` holds ``text``).
    """
    if not isinstance(text, str):
        raise TypeError(f"text must be a str, got {type(text).__name__}")
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        pass
    else:
        if _accepts(value, expect):
            return ParseResult(value)

    body, steps = strip_think(text)
    errors: list[str] = []
    fallback: ParseResult | None = None
    for fence in _FENCE.finditer(body):
        if not fence.group(2).strip():
            continue
        # Search from the fence's content to the end of the answer, so a closing-fence
        # lookalike inside a JSON string does not cut the value; then the fence content alone.
        result = _search(body, expect, errors, start=fence.start(2))
        if result is None or result.truncated:
            result = _search(fence.group(2), expect, errors) or result
        if result is None:
            continue
        result = _with_steps(result, [*steps, "code_fence"])
        if not result.truncated:
            return result
        fallback = fallback or result
    if fallback is not None:
        return fallback
    result = _search(body, expect, errors)
    if result is not None:
        return _with_steps(result, steps)
    reason = errors[0] if errors else _no_json_reason(expect)
    raise LLMParseError(f"no valid JSON in the answer: {reason}", raw_text=text)


def _no_json_reason(expect: Expect) -> str:
    if expect == "object":
        return "no JSON object found"
    if expect == "array":
        return "no JSON array found"
    return "no JSON object or array found"


def _accepts(value: Any, expect: Expect) -> bool:
    if expect == "object":
        return isinstance(value, dict)
    if expect == "array":
        return isinstance(value, list)
    return True


def _with_steps(result: ParseResult, steps: list[str]) -> ParseResult:
    merged = list(dict.fromkeys([*steps, *result.repairs]))
    return replace(result, repairs=tuple(merged))


def _starts(text: str, expect: Expect, start: int) -> Iterator[int]:
    openers = {"object": "{", "array": "[", "any": "{["}[expect]
    for i in range(start, len(text)):
        if text[i] in openers:
            yield i


_DECODER = json.JSONDecoder(strict=False)


def _search(text: str, expect: Expect, errors: list[str], start: int = 0) -> ParseResult | None:
    """The first JSON object/array in ``text[start:]`` (strict first, then lenient), or None."""
    stripped = text.strip() if start == 0 else ""
    if stripped:
        try:
            value = json.loads(stripped, strict=False)
        except (ValueError, RecursionError):
            pass
        else:
            if _accepts(value, expect):
                return ParseResult(value)
    for n, pos in enumerate(_starts(text, expect, start)):
        if n >= MAX_CANDIDATES:
            break
        surrounding = bool(text[start:pos].strip())
        try:
            value, end = _DECODER.raw_decode(text, pos)
        except (ValueError, RecursionError):
            pass
        else:
            steps = ["surrounding_text"] if surrounding or text[end:].strip() else []
            return ParseResult(value, tuple(steps))
        parser = LenientParser(text, pos)
        try:
            value, _complete = parser.parse_root()
        except RecursionError:
            errors.append("JSON nested too deeply")
            continue
        except ParseFailure as exc:
            errors.append(str(exc))
            continue
        steps = []
        if surrounding or text[parser.pos :].strip():
            steps.append("surrounding_text")
        steps.extend(parser.repairs)
        if parser.truncated:
            steps.append("truncated")
        return ParseResult(value, tuple(dict.fromkeys(steps)), parser.truncated)
    return None
