"""Category summaries: one sentence per line, each ending in the ``[ref:ITEM_ID]`` citations
of the items it rests on.

The deterministic summary lists the category's items, newest first, within a size limit; the
LLM's answer (:mod:`memreader.categories.llm_summary`) is checked here: it may cite only the
items it was shown, and may not drop a fact the old summary cited while that item still holds.

>>> render([Sentence("Ana lives in Lisbon.", ("m1",))])
'Ana lives in Lisbon. [ref:m1]'
>>> parse("Ana lives in Lisbon. [ref:m1][ref:m2]\\n- Tea [ref:m3]")[0].refs
('m1', 'm2')
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone

from memreader.scenes.clipping import one_line
from memreader.stores.records import StoredMemory

__all__ = [
    "MAX_LINE_CHARS",
    "Sentence",
    "cited_ids",
    "deterministic_summary",
    "newest_first",
    "parse",
    "render",
    "without_refs",
]

_REFS_AT_END = re.compile(r"((?:\s*\[ref:[^\]\s]+\])+)\s*$")
_REF = re.compile(r"\[ref:([^\]\s]+)\]")
_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)
#: The longest item text one line of the deterministic summary quotes.
MAX_LINE_CHARS = 300


@dataclass(frozen=True)
class Sentence:
    """One line of a summary: its text and the ids of the items it cites (at least one)."""

    text: str
    refs: tuple[str, ...]


def render(sentences: Iterable[Sentence]) -> str:
    """The summary text: one sentence per line, its citations after it."""
    return "\n".join(f"{s.text} {''.join(f'[ref:{ref}]' for ref in s.refs)}" for s in sentences)


def parse(summary: str) -> list[Sentence]:
    """The sentences of a stored summary (lines without citations are left out: every line a
    summary holds cites)."""
    sentences = []
    for line in summary.splitlines():
        match = _REFS_AT_END.search(line)
        if match is None:
            continue
        refs = tuple(_REF.findall(match.group(1)))
        sentences.append(Sentence(line[: match.start()].rstrip(), refs))
    return sentences


def cited_ids(summary: str) -> set[str]:
    """Every item id ``summary`` cites."""
    return set(_REF.findall(summary))


def without_refs(text: str) -> str:
    """``text`` with its citations taken out (the index's one-line preview)."""
    return " ".join(_REF.sub("", text).split())


def _time_of(memory: StoredMemory) -> datetime:
    return memory.valid_from or memory.recorded_at or _EPOCH


def newest_first(memories: Iterable[StoredMemory]) -> list[StoredMemory]:
    """``memories`` by the time each began to hold (else was recorded), newest first; ties by
    id, so the order is the same every time."""
    return sorted(memories, key=lambda m: (-_time_of(m).timestamp(), m.id))


def deterministic_summary(memories: Sequence[StoredMemory], max_chars: int) -> str:
    """The category's items as a list, newest first, each line citing its item, as many as fit
    in ``max_chars`` (the newest are kept)."""
    lines: list[str] = []
    size = 0
    for memory in newest_first(memories):
        line = render([Sentence(f"- {one_line(memory.item.memory, MAX_LINE_CHARS)}", (memory.id,))])
        if size + len(line) + 1 > max_chars and lines:
            break
        lines.append(line)
        size += len(line) + 1
    return "\n".join(lines)
