"""The strategy reader's chat splitter: groups of whole messages, cut into token-bounded windows.

The fast reader windows a scene by tokens alone (:class:`~memreader.windowing.windows.Windower`).
The strategy reader instead reads a chat in *groups of messages*, as its prompts expect: either
``chunk_session`` messages at a time (``chunk_by="session"``) or as many whole messages as fit
``content_length`` rendered characters (``chunk_by="content_length"``), consecutive groups sharing
``chunk_overlap`` whole messages so that no exchange is read without its context.

The overlap is bounded, so it can never multiply the text read (and the LLM calls of fine
mode): every message is read at most twice. In session mode ``chunk_overlap`` may be at most
half of ``chunk_session``; in content-length mode a group carries only messages the previous
group read for the first time, and at most half of ``content_length`` characters of them
(the oldest carried messages give way first). So a chat of C rendered characters is read as
at most 2C characters, in at most about twice the groups it would need without overlap.

A message is never cut for the overlap: only whole messages are repeated, and a message too long
for ``content_length`` on its own is split exactly into pieces that are groups of their own (its
neighbours are not carried into or out of them; a piece already fills the budget). Groups are
then held to the token budget of the reader's windower: a group within it is one window, a
longer one is cut by a windower with the same budget and no token overlap (the message overlap
already gives context). Either way every segment is an exact span of its unit, so sources stay
exact.

Segmentation is per unit and deterministic (the windower renders a unit the same way whatever
its neighbours), so an overlap message has the same segments in both groups that hold it, and
:attr:`~memreader.windowing.windows.Window.carried` of a group's first window counts exactly the
segments
it repeats from the previous group. When the overlap messages alone exceed the token budget,
they fill more than the first window of the next group; only the first window says so.

Everything is linear in the input: messages are measured once, each group is segmented once and
counted once (a group over the token budget once more by the windower), and a unit is in at most
two groups.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple

from pydantic import Field, model_validator

from memreader.config_model import ConfigModel
from memreader.errors import ConfigError
from memreader.windowing.parsers import PartRef
from memreader.windowing.windows import (
    SEPARATOR,
    Check,
    Segment,
    Unit,
    Window,
    Windower,
    no_check,
)

__all__ = [
    "GroupBy",
    "GroupingConfig",
    "MessageGroup",
    "Slice",
    "group_windows",
    "message_runs",
    "plan_groups",
    "windows_by_group",
]

GroupBy = Literal["content_length", "session"]

_MIN_CONTENT_LENGTH = 64
# A split message is cut preferably after a newline or a space in the last fifth of a piece.
_CUT_SHARE = 5


class GroupingConfig(ConfigModel):
    """How the strategy reader groups a chat's messages: its config's ``strategy`` section.

    - ``chunk_by``: ``content_length`` (as many whole messages as fit ``content_length``
      characters of rendered lines, prefixes and newlines included; a longer message is split
      exactly into pieces of its own) or ``session`` (``chunk_session`` messages per group).
    - ``chunk_overlap``: whole messages shared by consecutive groups: at most half of
      ``chunk_session`` in session mode; in content-length mode at most half of
      ``content_length`` characters are carried, and only messages not carried before. Every
      message is read at most twice (see the module docstring).

    Every group is also held to the window token budget (``window.max_tokens``): a longer one
    is cut into several windows.

    >>> GroupingConfig(chunk_by="session", chunk_session=4, chunk_overlap=3)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    memreader.errors.ConfigError: ...chunk_overlap (3) must be at most half of chunk_session (4)...
    """

    chunk_by: GroupBy = "content_length"
    content_length: int = Field(default=4000, ge=_MIN_CONTENT_LENGTH)
    chunk_session: int = Field(default=20, ge=1)
    chunk_overlap: int = Field(default=2, ge=0)

    @model_validator(mode="after")
    def _overlap_is_bounded(self) -> GroupingConfig:
        if self.chunk_by == "session" and self.chunk_overlap > self.chunk_session // 2:
            factor = -(-self.chunk_session // max(1, self.chunk_session - self.chunk_overlap))
            cost = (
                f"it would read every message up to {factor} times"
                if self.chunk_overlap < self.chunk_session
                else "no group would bring a new message"
            )
            raise ConfigError(
                f"chunk_overlap ({self.chunk_overlap}) must be at most half of chunk_session "
                f"({self.chunk_session}): {cost}"
            )
        return self


class Slice(NamedTuple):
    """``units[unit].text[start:end]``, rendered after ``prefix`` (the unit's, or ``""`` where a
    split message's prefix is too long to leave room for text)."""

    unit: int
    start: int
    end: int
    prefix: str


@dataclass(frozen=True)
class MessageGroup:
    """One group: its slices in order, the first ``carried`` of them from the overlap messages.

    ``messages`` are the ordinals (into :func:`message_runs`) of the messages it holds, in whole
    or, where ``split``, in part.
    """

    slices: tuple[Slice, ...]
    carried: int
    messages: range
    split: bool = False


def message_runs(units: Sequence[Unit]) -> list[range]:
    """The messages of ``units``: runs of consecutive units keyed by parts of the same message
    (``PartRef.message.index``); a unit without a :class:`PartRef` key is a message alone."""
    runs: list[range] = []
    start = 0
    previous: int | None = None
    for i, unit in enumerate(units):
        key = unit.key
        index = key.message.index if isinstance(key, PartRef) else None
        if i and (index is None or index != previous):
            runs.append(range(start, i))
            start = i
        previous = index
    if units:
        runs.append(range(start, len(units)))
    return runs


def plan_groups(units: Sequence[Unit], config: GroupingConfig) -> list[MessageGroup]:
    """The groups of ``units`` under ``config``, before any token budget applies."""
    runs = message_runs(units)
    if config.chunk_by == "session":
        return _session_groups(units, runs, config)
    return _content_groups(units, runs, config)


def _whole(units: Sequence[Unit], runs: Sequence[range], messages: Sequence[int]) -> list[Slice]:
    return [Slice(u, 0, len(units[u].text), units[u].prefix) for m in messages for u in runs[m]]


def _session_groups(
    units: Sequence[Unit], runs: list[range], config: GroupingConfig
) -> list[MessageGroup]:
    size, overlap = config.chunk_session, config.chunk_overlap
    groups: list[MessageGroup] = []
    start = 0
    while start < len(runs):
        stop = min(start + size, len(runs))
        carried = len(_whole(units, runs, range(start, start + overlap))) if groups else 0
        slices = _whole(units, runs, range(start, stop))
        groups.append(MessageGroup(tuple(slices), carried, range(start, stop)))
        if stop == len(runs):
            break
        start += size - overlap
    return groups


def _content_groups(
    units: Sequence[Unit], runs: list[range], config: GroupingConfig
) -> list[MessageGroup]:
    budget, overlap = config.content_length, config.chunk_overlap
    # Rendered characters of each message: its lines and the newlines between them.
    lengths = [
        sum(len(units[u].prefix) + len(units[u].text) for u in run) + len(run) - 1 for run in runs
    ]
    groups: list[MessageGroup] = []
    carry: list[int] = []
    pos = 0
    while pos < len(runs):
        if lengths[pos] > budget:
            groups.extend(
                MessageGroup(piece, 0, range(pos, pos + 1), split=True)
                for piece in _split_message(units, runs[pos], budget)
            )
            pos += 1
            carry = []
            continue
        used = lengths[pos] + sum(lengths[m] + 1 for m in carry)
        while carry and used > budget:
            used -= lengths[carry.pop(0)] + 1
        members = [*carry, pos]
        pos += 1
        while pos < len(runs) and used + 1 + lengths[pos] <= budget:
            used += 1 + lengths[pos]
            members.append(pos)
            pos += 1
        carried = sum(len(runs[m]) for m in carry)
        slices = _whole(units, runs, members)
        groups.append(MessageGroup(tuple(slices), carried, range(members[0], members[-1] + 1)))
        carry = _next_carry(members[len(carry) :], overlap, lengths, budget // 2)
    return groups


def _next_carry(new: list[int], overlap: int, lengths: list[int], limit: int) -> list[int]:
    """The messages the next group repeats: the last ``overlap`` of those this group read first
    (never one carried already), within ``limit`` rendered characters, newest kept."""
    carry = new[-overlap:] if overlap else []
    while carry and sum(lengths[m] + 1 for m in carry) > limit:
        carry.pop(0)
    return carry


def _split_message(units: Sequence[Unit], run: range, budget: int) -> list[tuple[Slice, ...]]:
    """Exact pieces of a message longer than ``budget`` rendered characters, each within it.

    Pieces are packed greedily with the message's units, a unit cut where it does not fit (and
    where at least a fifth of the budget is left; otherwise the piece is closed first). A prefix
    longer than half the budget is left out, so every piece has room for text.
    """
    pieces: list[tuple[Slice, ...]] = []
    current: list[Slice] = []
    used = 0
    for u in run:
        text = units[u].text
        prefix = units[u].prefix if len(units[u].prefix) <= budget // 2 else ""
        pos = 0
        while True:
            sep = len(SEPARATOR) if current else 0
            room = budget - used - sep - len(prefix)
            if len(text) - pos <= room:
                current.append(Slice(u, pos, len(text), prefix))
                used += sep + len(prefix) + len(text) - pos
                break
            if current and room < budget // _CUT_SHARE:
                pieces.append(tuple(current))
                current, used = [], 0
                continue
            end = _cut(text, pos, pos + room, room)
            current.append(Slice(u, pos, end, prefix))
            pieces.append(tuple(current))
            current, used = [], 0
            pos = end
    if current:
        pieces.append(tuple(current))
    return pieces


def _cut(text: str, start: int, limit: int, room: int) -> int:
    """Where to end a piece ``text[start:?]`` of at most ``limit``: just after the last newline,
    else the last space, in the last fifth of the room; else at ``limit``. Always past ``start``
    (code point offsets, so no character is ever halved)."""
    floor = max(start, limit - room // _CUT_SHARE)
    for wanted in (SEPARATOR, " "):
        at = text.rfind(wanted, floor, limit)
        if at >= 0:
            return at + 1
    return max(limit, start + 1)


def windows_by_group(
    units: Sequence[Unit],
    config: GroupingConfig,
    windower: Windower,
    check: Check = no_check,
) -> list[list[Window]]:
    """The windows of each group of :func:`plan_groups`, numbered in order across groups.

    ``windower`` gives the token budget, tokenizer and splitter; its token overlap is not used
    (consecutive groups already share whole messages). ``check`` is called between groups and
    inside each (a read's deadline).
    """
    cutter = Windower(windower.max_tokens, 0, windower.tokenizer, windower.splitter)
    out: list[list[Window]] = []
    index = 0
    for number, group in enumerate(plan_groups(units, config)):
        check(f"while grouping, before group {number}")
        windows = _group_windows(units, group, cutter, index, check)
        index += len(windows)
        out.append(windows)
    return out


def group_windows(
    units: Sequence[Unit],
    config: GroupingConfig,
    windower: Windower,
    check: Check = no_check,
) -> list[Window]:
    """Windows of ``units``, grouped by ``config`` and within ``windower.max_tokens`` tokens.

    Each window's segments are exact spans of ``units``; the first window of a group carries
    the segments of the overlap messages it repeats from the previous group.
    """
    return [w for windows in windows_by_group(units, config, windower, check) for w in windows]


def _group_windows(
    units: Sequence[Unit], group: MessageGroup, cutter: Windower, index: int, check: Check
) -> list[Window]:
    """One window for a group within the budget; otherwise the cutter's windows. Either way the
    cutter's segmentation, so an overlap message's segments match the previous group's."""
    parts = [Unit(units[s.unit].text[s.start : s.end], s.prefix) for s in group.slices]
    segments = cutter.segments(parts, check)
    text = SEPARATOR.join(s.line for s in segments)
    count = cutter.tokenizer.count(text)
    if count <= cutter.max_tokens:
        local = [Window(0, tuple(segments), count)]
    else:
        local = cutter.windows(parts, check)

    def back(segment: Segment) -> Segment:
        source = group.slices[segment.unit]
        return segment._replace(
            unit=source.unit,
            start=source.start + segment.start,
            end=source.start + segment.end,
        )

    windows: list[Window] = []
    for k, window in enumerate(local):
        carried = 0
        if k == 0:
            while carried < len(window.segments) and window.segments[carried].unit < group.carried:
                carried += 1
        mapped = tuple(back(s) for s in window.segments)
        windows.append(replace(window, index=index + k, segments=mapped, carried=carried))
    return windows
