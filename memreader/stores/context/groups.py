"""The lines of a ``context()`` block and the groups they are shown in (see
:mod:`memreader.stores.context`): a chat session's messages under one ``<session>`` header,
as ``speaker: content`` lines in the order they were said (whichever memory holds them), and
the text of one memory that is not chat (a document's, an extracted fact) under its
``<memory>`` header."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from memreader.retrieval.passages import Passage, line_head
from memreader.stores.context.parts import ContextPart, aware, part_source, part_when
from memreader.stores.context.text import CUT, GAP, escape_attr, escape_text, short_id, speaker_text

if TYPE_CHECKING:
    from memreader.stores.records import StoredMemory

__all__ = ["Group", "Line", "group_key", "line_of"]


@dataclass(eq=False)
class Line:
    """One passage taken (or the cut start of one): the span of the memory's text the block
    shows (a chat message: its content, after the line's head), with what orders it."""

    memory: StoredMemory
    start: int
    end: int
    score: float
    sources: frozenset[int]
    speaker: str | None
    when: datetime
    cut: bool = False

    @property
    def message(self) -> tuple[int, int]:
        """Its message's number and part (``(-1, -1)`` when it holds no source)."""
        if not self.sources:
            return (-1, -1)
        source = self.memory.item.metadata.sources[min(self.sources)]
        part = -1 if source.part_index is None else source.part_index
        return (source.message_index, part)

    def key(self) -> tuple[object, ...]:
        """Where it goes among its group's lines: as said (the call that added its memory,
        then the scene and message numbers of that call), then where its memory's text holds
        it."""
        scene = -1
        if self.sources:
            scene = self.memory.item.metadata.sources[min(self.sources)].scene_index
        recorded = aware(self.memory.recorded_at)
        return (recorded, scene, *self.message, self.when, self.memory.id, self.start)

    def rendered(self) -> str:
        text = escape_text(self.memory.item.memory[self.start : self.end])
        head = f"{speaker_text(self.speaker)}: " if self.speaker is not None else ""
        return head + text + (CUT if self.cut else "") + "\n"


def _chat_span(memory: StoredMemory, passage: Passage) -> tuple[int, str] | None:
    """Where the content of a chat message's passage starts and its speaker (its name, else
    its role); ``None`` for any other passage (a document's text, an extracted fact)."""
    index = passage.source_index
    sources = memory.item.metadata.sources
    if index is None or not 0 <= index < len(sources) or sources[index].type == "doc":
        return None
    head = line_head(memory.item.memory[passage.start : passage.end])
    if head is None:
        return None
    return passage.start + head.content, head.speaker


class Group:
    """The lines shown under one header: a chat session's messages (of any of its memories),
    or the passages of one memory that are not chat messages."""

    def __init__(self, key: tuple[str, str]) -> None:
        self.key = key
        self.lines: list[Line] = []

    @property
    def chat(self) -> bool:
        return self.key[0] == "session"

    def ordered(self) -> list[Line]:
        return sorted(self.lines, key=Line.key)

    def runs(self) -> list[list[Line]]:
        """The lines in order, in runs shown together: adjacent messages of a session (the
        next message number), adjacent spans of a memory's text (only spaces between them)."""
        runs: list[list[Line]] = []
        for line in self.ordered():
            last = runs[-1][-1] if runs else None
            if last is not None and not last.cut and self._adjacent(last, line):
                runs[-1].append(line)
            else:
                runs.append([line])
        return runs

    def _adjacent(self, last: Line, line: Line) -> bool:
        if self.chat:
            (a, _), (b, _) = last.message, line.message
            return a >= 0 and b - a in (0, 1)
        text = line.memory.item.memory
        return last.memory.id == line.memory.id and not text[last.end : line.start].strip()

    def header(self) -> str:
        first = self.ordered()[0]
        if self.chat:
            days = sorted({_day(line.when) for line in self.lines})
            date = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}"
            session = escape_attr(short_id(first.memory.item.metadata.session_id))
            return f'<session id="{session}" date="{date}">\n'
        sources = frozenset().union(*(line.sources for line in self.lines))
        where, _, _, _ = part_source(first.memory, sources)
        return (
            f'<memory id="{escape_attr(short_id(first.memory.id))}" '
            f'date="{_day(part_when(first.memory, sources))}" from="{escape_attr(where)}">\n'
        )

    def closing(self) -> str:
        return "</session>\n" if self.chat else "</memory>\n"

    def render(self) -> str:
        pieces = [self.header()]
        for n, run in enumerate(self.runs()):
            if n:
                pieces.append(GAP)
            if self.chat:
                pieces.extend(line.rendered() for line in run)
            else:  # one memory's adjacent spans: its text from the first to the last
                text = run[0].memory.item.memory[run[0].start : run[-1].end]
                pieces.append(escape_text(text) + (CUT if run[-1].cut else "") + "\n")
        pieces.append(self.closing())
        return "".join(pieces)

    def parts(self) -> list[ContextPart]:
        found = []
        for run in self.runs():
            pieces = [[line] for line in run] if self.chat else [run]
            for piece in pieces:
                found.append(_part(piece))
        return found


def _part(lines: Sequence[Line]) -> ContextPart:
    first, last = lines[0], lines[-1]
    memory = first.memory
    sources = frozenset().union(*(line.sources for line in lines))
    where, messages, path, heading = part_source(memory, sources)
    return ContextPart(
        memory_id=memory.id,
        start=first.start,
        end=last.end,
        text=memory.item.memory[first.start : last.end],
        score=max(line.score for line in lines),
        when=part_when(memory, sources),
        source=where,
        session_id=memory.item.metadata.session_id,
        messages=messages,
        doc_path=path,
        heading=heading,
        source_indexes=tuple(sorted(sources)),
        cut=last.cut,
        speaker=first.speaker,
    )


def _day(moment: datetime) -> str:
    return f"{moment.astimezone(timezone.utc):%Y-%m-%d}"


def line_of(memory: StoredMemory, passage: Passage, score: float, cut: bool) -> Line:
    """The :class:`Line` that shows ``passage`` of ``memory`` (a chat message: its content,
    with its speaker)."""
    chat = _chat_span(memory, passage)
    start, speaker = (passage.start, None) if chat is None else chat
    sources = frozenset() if passage.source_index is None else frozenset({passage.source_index})
    when = part_when(memory, sources)
    return Line(memory, start, passage.end, score, sources, speaker, when, cut)


def group_key(line: Line) -> tuple[str, str]:
    """The group a line is shown in: its chat session, else its memory."""
    if line.speaker is not None:
        return ("session", line.memory.item.metadata.session_id)
    return ("memory", line.memory.id)
