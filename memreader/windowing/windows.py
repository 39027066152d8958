"""Token-bounded, overlapping windows over a scene's lines, each knowing its exact sources.

Input is a sequence of :class:`Unit` (one exact text, e.g. a message or a document, with the
prefix it is rendered with, e.g. ``"user: [chat_time]: "``). Each unit is tokenised once. A unit
whose line does not fit beside a full overlap is split: where a :class:`Splitter` is given, at
the places it proposes (paragraphs, sentences), each piece checked; otherwise, and for any
proposed piece that does not fit, at token boundaries that are also character boundaries
(preferring a newline or a space). Windows are packed greedily with whole pieces; the next
window starts with the longest tail of the previous one, cut at piece or character boundaries,
that fits ``overlap_tokens``.

BPE token counts are not additive (``"user: " + "好"`` is one token more than its halves), so
costs are exact counts, never sums of parts: a segment costs the tokens of its line *with* the
newline that follows it. When every line after the first starts with a non-space character, no
tokenizer chunk crosses a line boundary and a window's tokens are exactly the sum of its lines'
costs, except the last line, which is counted again without its newline. Otherwise (documents
whose pieces start with a space) the window text is counted whole. Either way ``Window.tokens``
is the exact count of ``Window.text``, and a window that would exceed the budget gives back its
last piece.

Everything is linear in the input: each unit is tokenised once (an oversize one a second time to
find its cuts), each window's last line or whole text once more, and building an overlap
tokenises a few times ``overlap_tokens`` of text.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate
from typing import NamedTuple, Protocol

from memreader.errors import ConfigError
from memreader.windowing.tokens import Tokenizer, get_tokenizer

SEPARATOR = "\n"
_CONTINUATION = bytes(range(0x80, 0xC0))
_MIN_FREE_TOKENS = 32


@dataclass(frozen=True)
class Unit:
    """One exact text to window, and the prefix its lines are rendered with.

    ``transforms`` names the steps that changed ``text`` from the caller's (spans then index the
    changed text; see :class:`memreader.items.SourceMessage`).
    """

    text: str
    prefix: str = ""
    key: object = None  # the caller's handle, e.g. (message_index, part_index)
    transforms: tuple[str, ...] = ()


class Segment(NamedTuple):
    """``units[unit].text[start:end]`` rendered as ``line``; ``tokens`` counts ``line + "\\n"``.

    A named tuple: one is made per message, and that is the windower's hot path.
    """

    unit: int
    start: int
    end: int
    line: str
    tokens: int


@dataclass(frozen=True)
class Window:
    """A window: its segments in order; the first ``carried`` repeat the previous window's tail."""

    index: int
    segments: tuple[Segment, ...]
    tokens: int
    carried: int = 0
    text: str = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "text", SEPARATOR.join(s.line for s in self.segments))

    @property
    def carried_tokens(self) -> int:
        """Tokens of the overlap this window repeats (its lines with their newlines)."""
        return _cost(self.segments[: self.carried])


class Splitter(Protocol):
    """Proposes where to cut an oversize text: ascending character offsets of piece ends, for
    pieces of about ``budget`` tokens. The windower checks every piece and re-cuts any that
    does not fit, so a splitter only chooses good places (paragraphs, sentences)."""

    def __call__(self, text: str, budget: int) -> list[int]: ...


#: Called with where the work is, between its pieces (a message, a piece of one, a window):
#: raises to stop it (a read's deadline: ``ReadState.check_deadline``).
Check = Callable[[str], None]


def no_check(where: str) -> None:
    """No deadline: the work goes on."""


def _is_punctuation(char: str) -> bool:
    """cl100k's ``[^\\s\\p{L}\\p{N}]``: neither white space, nor a letter, nor a number."""
    return not char.isspace() and unicodedata.category(char)[0] not in "LN"


def _cost(segments: Sequence[Segment]) -> int:
    return sum(s.tokens for s in segments)


class Windower:
    """Cuts units into windows of at most ``max_tokens`` tokens overlapping by ``overlap_tokens``.

    >>> w = Windower(max_tokens=64, overlap_tokens=8)
    >>> windows = w.windows([Unit("hello " * 100, prefix="user: ")])
    >>> all(win.tokens <= 64 for win in windows)
    True
    """

    def __init__(
        self,
        max_tokens: int = 1024,
        overlap_tokens: int = 200,
        tokenizer: Tokenizer | None = None,
        splitter: Splitter | None = None,
    ) -> None:
        if max_tokens < 2 * _MIN_FREE_TOKENS:
            raise ConfigError(
                f"max_tokens must be at least {2 * _MIN_FREE_TOKENS}, got {max_tokens}"
            )
        if not 0 <= overlap_tokens <= max_tokens // 2:
            raise ConfigError(
                f"overlap_tokens must be between 0 and max_tokens // 2 ({max_tokens // 2}), "
                f"got {overlap_tokens}"
            )
        self.max_tokens = max_tokens
        self.overlap_tokens = overlap_tokens
        self.tokenizer = tokenizer or get_tokenizer()
        self.splitter = splitter
        # The longest line (with its newline) a piece may have: it must fit beside a full
        # overlap, with two tokens to spare for BPE counting the last line differently.
        self.max_line_tokens = max_tokens - overlap_tokens - 2
        self._prefix_tokens: dict[str, int] = {}

    # -- segmentation -------------------------------------------------------------------------

    def segments(self, units: Sequence[Unit], check: Check = no_check) -> list[Segment]:
        """Render each unit as one line, or as several pieces when it is too long; ``check``
        is called before each unit and each piece of a long one (a deadline stops a 6 MB chat
        within a message, not after it)."""
        out: list[Segment] = []
        for index, unit in enumerate(units):
            check(f"while windowing, before message part {index}")
            prefix = self._usable_prefix(unit.prefix)
            line = prefix + unit.text
            count = self.tokenizer.count(line + SEPARATOR)
            if count <= self.max_line_tokens:
                out.append(Segment(index, 0, len(unit.text), line, count))
            else:
                out.extend(self._split(index, unit.text, prefix, check))
        return out

    def _usable_prefix(self, prefix: str) -> str:
        # A prefix (say, a very long chat_time) must leave room for text in every piece.
        if self._count_prefix(prefix) <= self.max_line_tokens // 2:
            return prefix
        return ""

    def _count_prefix(self, prefix: str) -> int:
        count = self._prefix_tokens.get(prefix)
        if count is None:
            count = self.tokenizer.count(prefix) if prefix else 0
            if len(self._prefix_tokens) < 65536:
                self._prefix_tokens[prefix] = count
        return count

    def _split(self, unit: int, text: str, prefix: str, check: Check) -> list[Segment]:
        """Pieces of an oversize unit: the splitter's cuts where it has one (each piece checked
        against the budget, and cut by tokens where it does not fit), else token cuts."""
        if self.splitter is None:
            return self._token_split(unit, text, prefix, 0, len(text), check)
        budget = self.max_line_tokens - self._count_prefix(prefix) - 1
        pieces: list[Segment] = []
        start = 0
        for end in [*self.splitter(text, budget), len(text)]:
            if not start < end <= len(text):
                continue
            check(f"while windowing, in message part {unit} at character {start}")
            line = prefix + text[start:end]
            count = self.tokenizer.count(line + SEPARATOR)
            if count <= self.max_line_tokens:
                pieces.append(Segment(unit, start, end, line, count))
            else:
                pieces.extend(self._token_split(unit, text, prefix, start, end, check))
            start = end
        return pieces

    def _token_split(
        self, unit: int, whole: str, prefix: str, offset: int, stop: int, check: Check
    ) -> list[Segment]:
        """Cut ``whole[offset:stop]`` at token boundaries that are character boundaries."""
        tok = self.tokenizer
        limit = self.max_line_tokens
        budget = limit - self._count_prefix(prefix) - 1
        text = whole[offset:stop]
        tokens = tok.encode(text)
        raw = tok.encoding.decode_tokens_bytes(tokens)
        # chars_before[i]: characters in the bytes of tokens[:i] (bytes that are not UTF-8
        # continuation bytes start a character); exact where token i starts a character.
        chars_before = [0, *accumulate(len(piece.translate(None, _CONTINUATION)) for piece in raw)]
        boundary = [not 0x80 <= piece[0] < 0xC0 for piece in raw] + [True]
        pieces: list[Segment] = []
        i = 0
        n = len(tokens)
        while i < n:
            check(f"while windowing, in message part {unit} at character {offset}")
            j = self._cut(raw, boundary, i, min(n, i + budget))
            while True:
                start, end = chars_before[i], chars_before[j]
                line = prefix + text[start:end]
                count = tok.count(line + SEPARATOR)
                if count <= limit:
                    break
                # Re-encoding a slice can differ from the slice's tokens; shrink and re-check.
                j = self._cut(raw, boundary, i, j - (count - limit))
            pieces.append(Segment(unit, offset + start, offset + end, line, count))
            i = j
        return pieces

    @staticmethod
    def _cut(raw: list[bytes], boundary: list[bool], i: int, j: int) -> int:
        """The best cut at or before ``j`` (and after ``i``): a character boundary, preferably
        before a newline or a space within the last eighth of the piece."""
        n = len(raw)
        if j >= n:
            return n
        j = max(j, i + 1)
        floor = max(i + 1, j - (j - i) // 8)
        for wanted in (b"\n", b" "):
            for k in range(j, floor - 1, -1):
                if boundary[k] and raw[k].startswith(wanted):
                    return k
        for k in range(j, i, -1):
            if boundary[k]:
                return k
        # No character starts within the piece (cannot happen for budgets over 4 tokens).
        k = j
        while not boundary[k]:
            k += 1
        return k

    # -- windows ------------------------------------------------------------------------------

    def windows(self, units: Sequence[Unit], check: Check = no_check) -> list[Window]:
        """Cut ``units`` into windows; an empty input gives no windows. ``check`` is called
        between units, pieces and windows (see :meth:`segments`)."""
        segments = self.segments(units, check)
        windows: list[Window] = []
        carry: list[Segment] = []
        pos = 0
        while pos < len(segments):
            check(f"while windowing, before window {len(windows)}")
            window = list(carry)
            used = _cost(window)
            while pos < len(segments) and used + segments[pos].tokens <= self.max_tokens:
                window.append(segments[pos])
                used += segments[pos].tokens
                pos += 1
            exact = self._exact_tokens(window)
            while exact > self.max_tokens and len(window) > 1:
                # BPE is not monotone: rarely, the exact count tops the budget. Give back the
                # last piece, or shorten the overlap when the window has a single new piece.
                if len(window) - len(carry) > 1:
                    window.pop()
                    pos -= 1
                else:
                    window.pop(0)
                    carry = carry[1:]
                exact = self._exact_tokens(window)
            windows.append(Window(len(windows), tuple(window), exact, carried=len(carry)))
            carry = self._tail(window, units) if pos < len(segments) and self.overlap_tokens else []
        return windows

    def _exact_tokens(self, window: list[Segment]) -> int:
        """The exact token count of the window's text (see the module docstring)."""
        if any(s.line[:1].isspace() or not s.line for s in window[1:]):
            return self.tokenizer.count(SEPARATOR.join(s.line for s in window))
        return _cost(window[:-1]) + self._without_newline(window[-1])

    def _without_newline(self, segment: Segment) -> int:
        """Tokens of ``segment.line`` alone, from ``segment.tokens`` (its line plus a newline).

        Only the last tokenizer chunk differs: a line ending in a letter or digit gets the
        newline as a chunk of its own (one token); a line ending in punctuation ``P`` (with at
        most one space before it, as cl100k's pattern groups them) ends in the chunk ``P``
        instead of ``P + "\\n"``. Either way the difference is a count of short strings, cached.
        A line ending in white space is counted again.
        """
        line = segment.line
        end = len(line)
        start = end
        while start > 0 and _is_punctuation(line[start - 1]):
            start -= 1
        if start < end and start > 0 and line[start - 1] == " ":
            start -= 1
        elif start == end and end and line[-1].isspace():
            return self.tokenizer.count(line)
        tail = line[start:]
        return segment.tokens - self._count_prefix(tail + SEPARATOR) + self._count_prefix(tail)

    def _tail(self, window: list[Segment], units: Sequence[Unit]) -> list[Segment]:
        carried: list[Segment] = []
        used = 0
        for segment in reversed(window):
            if used + segment.tokens <= self.overlap_tokens:
                carried.insert(0, segment)
                used += segment.tokens
                continue
            part = self._suffix(segment, units[segment.unit], self.overlap_tokens - used)
            if part is not None:
                carried.insert(0, part)
            break
        return carried

    def _suffix(self, segment: Segment, unit: Unit, room: int) -> Segment | None:
        """The longest suffix of ``segment`` whose rendered line fits ``room`` tokens."""
        prefix = segment.line[: len(segment.line) - (segment.end - segment.start)]
        budget = room - self._count_prefix(prefix) - 1
        if budget <= 0:
            return None
        tok = self.tokenizer
        text = unit.text[segment.start : segment.end]
        width = min(len(text), 4 * budget + 16)
        while True:
            tail = text[len(text) - width :]
            tokens = tok.encode(tail)
            if len(tokens) > budget or width == len(text):
                break
            width = min(len(text), width * 2)
        cut = max(0, len(tokens) - budget)
        while True:
            while cut < len(tokens) and not tok.starts_character(tokens[cut]):
                cut += 1
            if cut >= len(tokens):
                return None
            offset = len(text) - width + len(tok.decode(tokens[:cut]))
            line = prefix + text[offset:]
            count = tok.count(line + SEPARATOR)
            if count <= room:
                return segment._replace(start=segment.start + offset, line=line, tokens=count)
            cut += count - room
