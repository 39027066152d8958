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
from dataclasses import dataclass
from typing import Any, Literal

from memreader.llms.errors import LLMParseError

__all__ = ["ParseResult", "parse_json", "strip_think"]

Expect = Literal["object", "array", "any"]

#: How many candidate start positions are tried before giving up (bounds the work on prose
#: full of braces).
MAX_CANDIDATES = 64
#: Nesting deeper than this is rejected.
MAX_DEPTH = 200


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
    return ParseResult(result.value, tuple(merged), result.truncated)


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
        parser = _Lenient(text, pos)
        try:
            value, _complete = parser.parse_root()
        except RecursionError:
            errors.append("JSON nested too deeply")
            continue
        except _Fail as exc:
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


class _Fail(Exception):
    """The lenient parser cannot make sense of the text from this start."""


_MISSING = object()
_WS = " \t\r\n\ufeff\u00a0"
_DOUBLE_OPEN = {
    '"': '"',
    "\u201c": '\u201d\u201c"',
    "\u201d": '\u201d\u201c"',
    "\u201e": '\u201d\u201c"',
}
_SINGLE_OPEN = {"'": "'", "\u2018": "\u2019\u2018'", "\u2019": "\u2019\u2018'"}
_QUOTES = {**_DOUBLE_OPEN, **_SINGLE_OPEN}
_SIMPLE_ESCAPES = set('"\\/bfnrt')
_DROP_BACKSLASH = set("_*'`#")
_HEX = set("0123456789abcdefABCDEF")
_NUMBER = re.compile(r"-?(?:\d+)(?:\.\d*)?(?:[eE][+-]?\d*)?")
_LITERALS = {
    "true": (True, False),
    "false": (False, False),
    "null": (None, False),
    "True": (True, True),
    "False": (False, True),
    "None": (None, True),
}


class _Lenient:
    """A forgiving recursive-descent JSON parser that tracks repairs and truncation."""

    def __init__(self, text: str, pos: int) -> None:
        self.text = text
        self.pos = pos
        self.n = len(text)
        self.repairs: list[str] = []
        self.truncated = False

    def _repair(self, name: str) -> None:
        if name not in self.repairs:
            self.repairs.append(name)

    def _ws(self) -> None:
        text, n = self.text, self.n
        while self.pos < n:
            ch = text[self.pos]
            if ch in _WS:
                self.pos += 1
            elif text.startswith("//", self.pos):
                end = text.find("\n", self.pos)
                self.pos = n if end < 0 else end + 1
                self._repair("comment")
            elif text.startswith("/*", self.pos):
                end = text.find("*/", self.pos + 2)
                self.pos = n if end < 0 else end + 2
                self._repair("comment")
            else:
                break

    def _eof(self) -> bool:
        return self.pos >= self.n

    def parse_root(self) -> tuple[Any, bool]:
        value, complete = self._value(0)
        if value is _MISSING:
            raise _Fail("the answer ends before any value")
        if not complete:
            self.truncated = True
        return value, complete

    def _value(self, depth: int) -> tuple[Any, bool]:
        """Parse one value; returns (value or _MISSING, complete)."""
        self._ws()
        if self._eof():
            return _MISSING, False
        ch = self.text[self.pos]
        if ch == "{":
            return self._object(depth + 1)
        if ch == "[":
            return self._array(depth + 1)
        if ch in _QUOTES:
            return self._string()
        if ch == "-" or ch.isdigit():
            return self._number()
        for word, (value, repaired) in _LITERALS.items():
            if self.text.startswith(word, self.pos):
                self.pos += len(word)
                if repaired:
                    self._repair("python_literal")
                return value, True
            if self.n - self.pos < len(word) and word.startswith(self.text[self.pos :]):
                self.pos = self.n
                return _MISSING, False
        raise _Fail(f"unexpected character {ch!r} at position {self.pos}")

    def _object(self, depth: int) -> tuple[dict[str, Any], bool]:
        if depth > MAX_DEPTH:
            raise _Fail("JSON nested too deeply")
        self.pos += 1  # "{"
        result: dict[str, Any] = {}
        need_comma = False
        after_comma = False
        while True:
            self._ws()
            if self._eof():
                self.truncated = True
                return result, False
            ch = self.text[self.pos]
            if ch == "}":
                if after_comma:
                    self._repair("trailing_comma")
                self.pos += 1
                return result, True
            if ch == ",":
                if not need_comma:
                    self._repair("extra_comma")
                self.pos += 1
                need_comma = False
                after_comma = True
                continue
            if ch not in _QUOTES:
                raise _Fail(f"expected a string key at position {self.pos}, found {ch!r}")
            if need_comma:
                self._repair("missing_comma")
            key, complete = self._string(key=True)
            if not complete:
                self.truncated = True
                return result, False
            self._ws()
            if self._eof():
                self.truncated = True
                return result, False
            if self.text[self.pos] != ":":
                raise _Fail(f"expected ':' at position {self.pos}")
            self.pos += 1
            value, complete = self._value(depth)
            if not complete:
                self.truncated = True
                if isinstance(value, (dict, list)):
                    result[key] = value
                return result, False
            result[key] = value
            need_comma = True
            after_comma = False

    def _array(self, depth: int) -> tuple[list[Any], bool]:
        if depth > MAX_DEPTH:
            raise _Fail("JSON nested too deeply")
        self.pos += 1  # "["
        result: list[Any] = []
        need_comma = False
        after_comma = False
        while True:
            self._ws()
            if self._eof():
                self.truncated = True
                return result, False
            ch = self.text[self.pos]
            if ch == "]":
                if after_comma:
                    self._repair("trailing_comma")
                self.pos += 1
                return result, True
            if ch == ",":
                if not need_comma:
                    self._repair("extra_comma")
                self.pos += 1
                need_comma = False
                after_comma = True
                continue
            if need_comma:
                if ch not in "{[" and ch not in _QUOTES:
                    raise _Fail(f"expected ',' or ']' at position {self.pos}, found {ch!r}")
                self._repair("missing_comma")
            value, complete = self._value(depth)
            if not complete:
                self.truncated = True
                return result, False
            result.append(value)
            need_comma = True
            after_comma = False

    def _closes(self, i: int, key: bool) -> bool:
        """Whether a closing-quote candidate at ``i`` really ends the string."""
        j = i + 1
        saw_newline = False
        while j < self.n and self.text[j] in _WS:
            saw_newline = saw_newline or self.text[j] == "\n"
            j += 1
        if j >= self.n:
            return True
        nxt = self.text[j]
        if key:
            return nxt == ":"
        if nxt in ",}]:":
            return True
        # A quote on a new line most likely opens the next member (missing comma).
        return saw_newline and nxt in _QUOTES

    def _string(self, key: bool = False) -> tuple[str, bool]:
        text, n = self.text, self.n
        opener = text[self.pos]
        closers = _QUOTES[opener]
        if opener != '"':
            self._repair("single_quotes" if opener == "'" else "smart_quotes")
        self.pos += 1
        out: list[str] = []
        i = self.pos
        while i < n:
            ch = text[i]
            if ch == "\\":
                if i + 1 >= n:
                    break
                nxt = text[i + 1]
                if nxt in _SIMPLE_ESCAPES:
                    out.append(text[i : i + 2])
                    i += 2
                elif nxt == "u":
                    hex_digits = text[i + 2 : i + 6]
                    if len(hex_digits) == 4 and all(c in _HEX for c in hex_digits):
                        out.append(text[i : i + 6])
                        i += 6
                    elif i + 6 > n and all(c in _HEX for c in hex_digits):
                        i = n  # truncated inside the escape
                        break
                    else:
                        self._repair("bad_escape")
                        out.append("\\\\u")
                        i += 2
                elif nxt in _DROP_BACKSLASH:
                    self._repair("bad_escape")
                    out.append(nxt)
                    i += 2
                else:
                    self._repair("bad_escape")
                    out.append("\\\\")
                    i += 1
                continue
            if ch in closers and self._closes(i, key):
                self.pos = i + 1
                return _decode_string("".join(out)), True
            if ch == '"':
                out.append('\\"')
                if '"' in closers:
                    self._repair("unescaped_quote")
            elif ch in closers:
                self._repair("unescaped_quote")
                out.append(ch)
            else:
                out.append(ch)
            i += 1
        self.pos = n
        self.truncated = True
        return _decode_string("".join(out)), False

    def _number(self) -> tuple[Any, bool]:
        match = _NUMBER.match(self.text, self.pos)
        if not match or match.group() == "-":
            if self.pos + 1 >= self.n:
                self.pos = self.n
                return _MISSING, False
            raise _Fail(f"bad number at position {self.pos}")
        token = match.group()
        self.pos = match.end()
        at_end = self.pos >= self.n
        try:
            value: Any = float(token) if any(c in token for c in ".eE") else int(token)
        except ValueError:
            if at_end:
                return _MISSING, False
            raise _Fail(f"bad number {token!r}") from None
        if at_end:  # the number may have been cut
            return value, False
        return value, True


def _decode_string(body: str) -> str:
    try:
        value = json.loads(f'"{body}"', strict=False)
    except ValueError:  # e.g. a lone surrogate pair half; keep the text readable
        return body.encode("utf-8", "backslashreplace").decode("unicode_escape", "replace")
    return str(value)
