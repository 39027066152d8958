"""The budget of a ``context()`` block (see :mod:`memreader.stores.context`): :class:`Block`
keeps the lines chosen so far, grouped under their headers
(:mod:`memreader.stores.context.groups`), and counts them against the budget."""

from __future__ import annotations

from typing import TYPE_CHECKING

from memreader.retrieval.passages import Passage
from memreader.stores.context.groups import Group, Line, group_key, line_of
from memreader.stores.context.parts import Context, ContextOrder
from memreader.stores.context.text import CLOSE, GAP, OPEN, speaker_text

if TYPE_CHECKING:
    from memreader.stores.records import StoredMemory
    from memreader.windowing.tokens import Tokenizer

__all__ = ["Block"]

# The least a group's header and closing tag can cost (no id, date or source digits).
_BARE_HEADER = '<session id="" date="">\n</session>\n'


class Block:
    """The lines chosen so far, grouped under their headers, and their token count (kept as a
    close estimate while adding: each line counted alone; :meth:`finish` counts the block
    whole and drops the last lines added while it is over)."""

    def __init__(self, tokenizer: Tokenizer, max_tokens: int, order: ContextOrder) -> None:
        self.tokenizer, self.max_tokens, self.order = tokenizer, max_tokens, order
        self._groups: dict[tuple[str, str], Group] = {}
        self._added: list[Line] = []
        self._fixed = tokenizer.count(OPEN) + tokenizer.count(CLOSE)
        self._costs: dict[tuple[str, str], int] = {}  # per group: its header, lines and gaps
        self._bare = tokenizer.count(_BARE_HEADER)
        self._gap = tokenizer.count(GAP)
        self._lines: dict[tuple[str, int, int, bool, str | None], int] = {}

    def empty(self) -> bool:
        """Whether no line was taken yet."""
        return not self._added

    def room(self) -> int:
        """Tokens left under the budget (by the running count)."""
        return self.max_tokens - self._fixed - sum(self._costs.values())

    def room_for(self, memory: StoredMemory, passage: Passage) -> int:
        """Tokens left for the text of ``passage`` of ``memory`` (and its ``…`` mark) once its
        group's header, its speaker and its line break are paid."""
        line = line_of(memory, passage, 0.0, True)
        key = group_key(line)
        trial = Group(key)
        trial.lines = [*self._groups[key].lines, line] if key in self._groups else [line]
        frame = self.tokenizer.count(trial.header() + trial.closing()) + self._gap
        head = self.tokenizer.count(f"{speaker_text(line.speaker)}: ") if line.speaker else 0
        lines = sum(self._line_cost(other) for other in trial.lines[:-1])
        return self.room() + self._costs.get(key, 0) - frame - lines - head - 1

    def add(
        self, memory: StoredMemory, passage: Passage, score: float, *, cut: bool = False
    ) -> bool:
        """Take ``passage`` of ``memory`` (``cut``: its text goes on beyond it) if it fits;
        whether it did."""
        line = line_of(memory, passage, score, cut)
        key = group_key(line)
        # A bound first: most candidates of a full block fail it without a header counted.
        if self._line_cost(line) + (0 if key in self._groups else self._bare) > self.room():
            return False
        group = self._groups.get(key) or Group(key)
        group.lines.append(line)
        cost = self._group_cost(group)
        if self.room() + self._costs.get(key, 0) - cost < 0:
            group.lines.pop()
            return False
        self._groups[key] = group
        self._costs[key] = cost
        self._added.append(line)
        return True

    def _line_cost(self, line: Line) -> int:
        key = (line.memory.id, line.start, line.end, line.cut, line.speaker)
        cost = self._lines.get(key)
        if cost is None:
            cost = self.tokenizer.count(line.rendered())
            self._lines[key] = cost
        return cost

    def _group_cost(self, group: Group) -> int:
        frame = self.tokenizer.count(group.header() + group.closing())
        gaps = (len(group.runs()) - 1) * self._gap
        return frame + gaps + sum(self._line_cost(line) for line in group.lines)

    def finish(self, searched: int) -> Context:
        """The :class:`~memreader.stores.context.Context` of the lines taken, counted whole;
        while over the budget, the last line added is dropped."""
        while True:
            groups = self._ordered()
            text = OPEN + "".join(g.render() for g in groups) + CLOSE if groups else ""
            tokens = self.tokenizer.count(text) if text else 0
            if tokens <= self.max_tokens or not self._added:
                break
            line = self._added.pop()
            key = group_key(line)
            group = self._groups[key]
            group.lines = [other for other in group.lines if other is not line]
            if not group.lines:
                del self._groups[key], self._costs[key]
        parts = tuple(part for group in groups for part in group.parts())
        return Context(text, tokens, self.max_tokens, self.tokenizer.name, parts, searched)

    def _ordered(self) -> list[Group]:
        """The groups, oldest first or best first (each group's lines in order)."""

        def key(group: Group) -> tuple[object, ...]:
            best = max(line.score for line in group.lines)
            first = min(line.when for line in group.lines)
            lead = (first, -best) if self.order == "time" else (-best, first)
            return (*lead, group.key)

        return sorted((g for g in self._groups.values() if g.lines), key=key)
