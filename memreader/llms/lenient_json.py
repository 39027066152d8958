"""A forgiving recursive-descent JSON parser for what models write (see
:func:`memreader.llms.parsing.parse_json`, which tries the strict decoder first).

It tracks what it had to repair (``trailing_comma``, ``bad_escape``, ``smart_quotes``, ...) and
whether the text ended inside the value (``truncated``): an array drops its unfinished last
element, an object a member whose value is an unfinished scalar.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["MAX_DEPTH", "LenientParser", "ParseFailure"]

#: Nesting deeper than this is rejected.
MAX_DEPTH = 200


class ParseFailure(Exception):
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


class LenientParser:
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
            raise ParseFailure("the answer ends before any value")
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
        raise ParseFailure(f"unexpected character {ch!r} at position {self.pos}")

    def _object(self, depth: int) -> tuple[dict[str, Any], bool]:
        if depth > MAX_DEPTH:
            raise ParseFailure("JSON nested too deeply")
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
                raise ParseFailure(f"expected a string key at position {self.pos}, found {ch!r}")
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
                raise ParseFailure(f"expected ':' at position {self.pos}")
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
            raise ParseFailure("JSON nested too deeply")
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
                    raise ParseFailure(f"expected ',' or ']' at position {self.pos}, found {ch!r}")
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
            raise ParseFailure(f"bad number at position {self.pos}")
        token = match.group()
        self.pos = match.end()
        at_end = self.pos >= self.n
        try:
            value: Any = float(token) if any(c in token for c in ".eE") else int(token)
        except ValueError:
            if at_end:
                return _MISSING, False
            raise ParseFailure(f"bad number {token!r}") from None
        if at_end:  # the number may have been cut
            return value, False
        return value, True


def _decode_string(body: str) -> str:
    try:
        value = json.loads(f'"{body}"', strict=False)
    except ValueError:  # e.g. a lone surrogate pair half; keep the text readable
        return body.encode("utf-8", "backslashreplace").decode("unicode_escape", "replace")
    return str(value)
