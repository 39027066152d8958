"""The Markdown headings in effect at any point of a converted document.

Converted documents are Markdown (markitdown writes docx, pptx, xlsx and html headings as ATX
``#`` lines), and a chunk cut from the middle of a long report loses the section it belongs to:
"costs rose 12%" means little without "Report > Results > Costs". :func:`heading_trail` parses
the headings once (linear time, one regular-expression pass that touches only heading and fence
lines), and :meth:`HeadingIndex.at` answers for any character offset by bisection, so giving
every chunk its heading context costs ``O(log n)`` per chunk.

Only ATX headings are read (up to three spaces of indentation, one to six ``#``, then a space, a
tab or the end of the line; an optional closing run of ``#`` is dropped), and none inside fenced
code blocks (```` ``` ```` or ``~~~``, closed by a fence of the same character at least as long;
an unclosed fence runs to the end, as in CommonMark), where ``# comment`` lines are code. Setext
headings and headings inside block quotes or lists are not read: converters do not write them.
A heading with no text is ignored.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from typing import NamedTuple

__all__ = ["Heading", "HeadingIndex", "heading_trail"]

# A line that may matter: an ATX heading candidate, or a code fence. Everything else is skipped
# by the regex engine without a Python-level step per line.
_LINE = re.compile(
    r"^[ ]{0,3}(?:"
    r"(?P<hashes>\#{1,6})(?P<rest>[ \t\r][^\n]*)?"  # a heading: hashes, then a blank or the end
    r"|(?P<fence>`{3,}|~{3,})(?P<info>[^\n]*)"  # a fence and its info string
    r")$",
    re.MULTILINE,
)
_CLOSING = re.compile(r"(?:^|[ \t]+)#+$")


class Heading(NamedTuple):
    """One heading: where its line starts in the text, its level (1-6) and its text."""

    start: int
    level: int
    text: str


class HeadingIndex:
    """The headings of one text, and the trail of headings in effect at each offset.

    >>> index = heading_trail("# Report\\nintro\\n## Results\\n### Costs\\nup 12%\\n## Outlook\\n")
    >>> index.at(0), index.at(10)
    (('Report',), ('Report',))
    >>> index.at(index.headings[2].start + 3)
    ('Report', 'Results', 'Costs')
    >>> index.context(len("# Report\\nintro\\n## Results\\n### Costs\\nup 12%\\n## Out"))
    'Report > Outlook'
    >>> heading_trail("no headings").context(3)
    ''
    """

    __slots__ = ("_contexts", "_starts", "_trails", "headings")

    def __init__(self, headings: tuple[Heading, ...]) -> None:
        self.headings = headings
        self._starts = [heading.start for heading in headings]
        trails: list[tuple[str, ...]] = []
        stack: list[Heading] = []
        for heading in headings:
            # A heading of level n ends every open section of level n or deeper.
            while stack and stack[-1].level >= heading.level:
                stack.pop()
            stack.append(heading)
            trails.append(tuple(h.text for h in stack))
        self._trails = trails
        self._contexts = [" > ".join(trail) for trail in trails]

    def _position(self, offset: int) -> int:
        """The index of the last heading starting at or before ``offset``, or -1."""
        return bisect_right(self._starts, offset) - 1

    def at(self, offset: int) -> tuple[str, ...]:
        """The heading trail in effect at character ``offset``, outermost first, e.g.
        ``("Report", "Results", "Costs")``; empty before the first heading.

        A heading is in effect from the start of its own line, so a chunk that begins with a
        heading line is placed under that heading.
        """
        position = self._position(offset)
        return self._trails[position] if position >= 0 else ()

    def context(self, offset: int) -> str:
        """The trail at ``offset`` joined with ``" > "``; ``""`` where no heading is in effect."""
        position = self._position(offset)
        return self._contexts[position] if position >= 0 else ""

    def __repr__(self) -> str:
        return f"HeadingIndex({len(self.headings)} headings)"


def heading_trail(text: str) -> HeadingIndex:
    """Parse the ATX headings of ``text`` (outside fenced code blocks) into a
    :class:`HeadingIndex`, in time linear in ``len(text)``.

    >>> heading_trail("```\\n# not a heading\\n```\\n## Real ##\\n").headings
    (Heading(start=24, level=2, text='Real'),)
    """
    headings: list[Heading] = []
    fence = ""  # the opening fence of the code block we are in, or ""
    for match in _LINE.finditer(text):
        marker = match["fence"]
        if fence:
            # Only a bare fence of the same character, at least as long, closes the block.
            if (
                marker
                and marker[0] == fence[0]
                and len(marker) >= len(fence)
                and not match["info"].strip(" \t\r")
            ):
                fence = ""
            continue
        if marker:
            # A backtick fence's info string may not hold a backtick (CommonMark): then the
            # line is inline code, not a fence.
            if marker[0] == "~" or "`" not in match["info"]:
                fence = marker
            continue
        title = _CLOSING.sub("", (match["rest"] or "").strip(" \t\r")).strip(" \t")
        if title:
            headings.append(Heading(match.start(), len(match["hashes"]), title))
    return HeadingIndex(tuple(headings))
