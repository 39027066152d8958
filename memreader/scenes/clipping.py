"""Bounded rendering of what a caller hands over as data (tool arguments and outputs, tool
schemas, part type names): one place that clips, so every placeholder line is clipped the same
way and says how much it left out.

* :func:`clip`: text cut to a limit, ending in a marker that counts what was cut
  (``… [clipped 396,012 of 400,012 characters]``); the marker is inside the limit.
* :func:`render_json`: a value as JSON text (``{"q": "tea"}``, never a Python repr), the same
  text ``json.dumps(value, ensure_ascii=False, default=str)`` gives for plain JSON values, but
  bounded: nesting deeper than :data:`MAX_DEPTH` levels is shown as ``{…}``/``[…]`` (no
  ``RecursionError``), a container met again inside itself as ``"[circular]"``, and only
  ``limit`` characters are kept. Work is linear in the value's size; past
  :data:`MAX_NODES` values the count of what was cut is a lower bound ("more than").
* :func:`render_line`: names, separators and values in one line, clipped once.
* :class:`NotedText`: a parser's line that carries a note for its window's report (see
  :func:`memreader.windowing.parsers.part_notes`), so a clipped part is never clipped silently.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "MAX_DEPTH",
    "MAX_LABEL",
    "MAX_NODES",
    "MAX_TOOL_TEXT",
    "NotedText",
    "Rendered",
    "clip",
    "one_line",
    "render_json",
    "render_line",
]

#: The most characters of a tool part's rendered payload (arguments, output, schema), marker
#: included.
MAX_TOOL_TEXT = 4000
#: The most characters of a label in a placeholder: an unknown part's type name.
MAX_LABEL = 200
#: The deepest nesting rendered; deeper containers are shown as ``{…}`` or ``[…]``.
MAX_DEPTH = 64
#: The most values visited to count what was cut (beyond it the count is a lower bound).
MAX_NODES = 1_000_000


@dataclass(frozen=True)
class Rendered:
    """A rendering: ``text`` (at most the limit), the length ``total`` of the whole rendering
    (a lower bound when ``exact`` is false), and whether nesting was cut (``too_deep``)."""

    text: str
    total: int
    cut: int = 0
    too_deep: bool = False
    exact: bool = True

    def note(self, what: str) -> str | None:
        """A report note saying what was left out of ``what``, or ``None`` when nothing was."""
        parts = []
        if self.cut:
            more = "" if self.exact else "more than "
            parts.append(f"clipped to {len(self.text):,} characters ({more}{self.cut:,} cut)")
        if self.too_deep:
            parts.append(f"nesting deeper than {MAX_DEPTH} levels shown as {{…}}")
        return f"{what} {'; '.join(parts)}" if parts else None


class NotedText(str):
    """A parser's rendered line with a ``note`` for its window's report."""

    note: str

    def __new__(cls, text: str, note: str) -> NotedText:
        made = super().__new__(cls, text)
        made.note = note
        return made


def _marker(cut: int, total: int, exact: bool = True) -> str:
    more = "" if exact else "more than "
    return f"… [clipped {more}{cut:,} of {more}{total:,} characters]"


def clip(text: str, limit: int = MAX_TOOL_TEXT) -> Rendered:
    """``text`` cut to at most ``limit`` characters, a marker counting the cut included.

    >>> clip("tea" * 20, 40).text
    'teateatea… [clipped 51 of 60 characters]'
    """
    if len(text) <= limit:
        return Rendered(text, len(text))
    return _clipped(text, len(text), limit)


def _clipped(
    head: str, total: int, limit: int, too_deep: bool = False, exact: bool = True
) -> Rendered:
    # The marker's length depends on the count; take the longest it can be, so the whole fits.
    kept = max(0, limit - len(_marker(total, total, exact)))
    cut = total - kept
    text = (head[:kept] + _marker(cut, total, exact))[:limit]
    return Rendered(text, total, cut, too_deep, exact)


def render_json(
    value: Any, limit: int | None = MAX_TOOL_TEXT, *, sort_keys: bool = False
) -> Rendered:
    """``value`` as JSON text, bounded (see the module); a string is shown as it is.

    >>> render_json({"q": "tea", "n": [1, 2.5, None, True]}).text
    '{"q": "tea", "n": [1, 2.5, null, true]}'
    """
    if isinstance(value, str):
        return clip(value, limit) if limit is not None else Rendered(value, len(value))
    walk = _Walk(sort_keys)
    return _collect(walk.pieces(value, 0, ()), walk, limit)


def render_line(items: Iterable[Any], limit: int = MAX_TOOL_TEXT) -> Rendered:
    """One line from ``items``, clipped once: a string is shown as it is (names, separators,
    arguments given as JSON text), any other value as its bounded JSON (:func:`render_json`).
    The marker counts every character left out, over all the items.

    >>> render_line(["search", "(", {"q": "tea"}, ")"]).text
    'search({"q": "tea"})'
    """
    walk = _Walk(sort_keys=False)

    def pieces() -> Iterator[str]:
        for item in items:
            if isinstance(item, str):
                walk.nodes += 1
                yield item
            else:
                yield from walk.pieces(item, 0, ())

    return _collect(pieces(), walk, limit)


def _collect(pieces: Iterator[str], walk: _Walk, limit: int | None) -> Rendered:
    """The first ``limit`` characters of ``pieces`` (then clipped with a marker), counting the
    length of all of them (up to :data:`MAX_NODES` values)."""
    kept: list[str] = []
    size = 0
    total = 0
    for piece in pieces:
        total += len(piece)
        if limit is None or size <= limit:
            kept.append(piece)
            size += len(piece)
        elif walk.nodes > MAX_NODES:
            break
    text = "".join(kept)
    exact = walk.nodes <= MAX_NODES
    if limit is None or (total <= limit and exact):
        return Rendered(text, total, 0, walk.too_deep, exact)
    return _clipped(text, total, limit, walk.too_deep, exact)


class _Walk:
    """The JSON pieces of a value, depth-bounded, cycle-safe, counting the values visited."""

    def __init__(self, sort_keys: bool) -> None:
        self.sort_keys = sort_keys
        self.nodes = 0
        self.too_deep = False

    def pieces(self, value: Any, depth: int, path: tuple[int, ...]) -> Iterator[str]:
        self.nodes += 1
        if value is None or isinstance(value, bool | int | float):
            yield json.dumps(value)
        elif isinstance(value, str):
            yield json.dumps(value, ensure_ascii=False)
        elif isinstance(value, Mapping | list | tuple):
            yield from self._container(value, depth, path)
        else:  # not JSON data: its text, as json.dumps(default=str) shows it
            yield json.dumps(str(value), ensure_ascii=False)

    def _container(
        self,
        value: Mapping[Any, Any] | list[Any] | tuple[Any, ...],
        depth: int,
        path: tuple[int, ...],
    ) -> Iterator[str]:
        is_map = isinstance(value, Mapping)
        open_, close = ("{", "}") if is_map else ("[", "]")
        if id(value) in path:
            yield '"[circular]"'
            return
        if depth >= MAX_DEPTH:
            self.too_deep = True
            yield f"{open_}…{close}" if value else f"{open_}{close}"
            return
        inner = (*path, id(value))
        yield open_
        if isinstance(value, Mapping):
            entries = [(_key(key), item) for key, item in value.items()]
            if self.sort_keys:
                entries.sort(key=lambda entry: entry[0])
            for index, (key, item) in enumerate(entries):
                yield (", " if index else "") + json.dumps(key, ensure_ascii=False) + ": "
                yield from self.pieces(item, depth + 1, inner)
        else:
            for index, item in enumerate(value):
                if index:
                    yield ", "
                yield from self.pieces(item, depth + 1, inner)
        yield close


def _key(key: Any) -> str:
    """A mapping key as JSON writes it (``json.dumps`` turns ``1`` into ``"1"``, ``None`` into
    ``"null"``); keys JSON cannot write are shown by their text."""
    if isinstance(key, str):
        return key
    if key is None or isinstance(key, bool | int | float):
        return json.dumps(key)
    return str(key)


def one_line(text: str, limit: int) -> str:
    """``text`` on one line (every run of white space, line breaks included, one space), cut
    to at most ``limit`` characters with ``…`` where it was cut.

    >>> one_line("tea\\n and   cake", 100), one_line("abcdefgh", 5)
    ('tea and cake', 'abcd…')
    """
    line = " ".join(text.split())
    return line if len(line) <= limit else line[: limit - 1].rstrip() + "…"
