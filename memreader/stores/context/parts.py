"""What ``context()`` returns (see :mod:`memreader.stores.context`): :class:`Context`, the
block and its :class:`ContextPart`\\ s, and where a part came from and when.

>>> numbers([0, 1, 2, 5, 7, 8])
'0-2, 5, 7-8'
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:
    from memreader.stores.records import StoredMemory

__all__ = [
    "CONTEXT_ORDERS",
    "Context",
    "ContextOrder",
    "ContextPart",
    "aware",
    "numbers",
    "part_source",
    "part_when",
]

_HEADING_CHARS = 80

#: How groups are ordered in the block: ``time`` (oldest first) or ``score`` (best first).
ContextOrder = Literal["time", "score"]
CONTEXT_ORDERS: tuple[ContextOrder, ...] = ("time", "score")


@dataclass(frozen=True)
class ContextPart:
    """One span of one memory that the block shows: ``text`` is ``memory[start:end]`` of the
    memory's text, verbatim (``cut``: the passage went on, the budget did not).

    A chat message is one part: its content (the block shows it as ``speaker: text``, under
    its session's header); ``speaker`` is the message's name, else its role (``None`` for
    anything that is not a chat message). Other text (a document's, an extracted fact) is one
    part per run of adjacent passages of a memory, shown under the memory's header.

    ``score`` is the best of its passages' scores (``[0, 1]``); ``when`` its time (its
    messages' earliest, else the memory's ``valid_from``, else when it was recorded);
    ``session_id``, ``messages`` (the message numbers it holds), ``doc_path`` and ``heading``
    say where it came from, ``source`` says it in words, and ``source_indexes`` are the
    indexes of the memory's sources it holds."""

    memory_id: str
    start: int
    end: int
    text: str
    score: float
    when: datetime
    source: str
    session_id: str
    messages: tuple[int, ...] = ()
    doc_path: str | None = None
    heading: str | None = None
    source_indexes: tuple[int, ...] = ()
    cut: bool = False
    speaker: str | None = None


@dataclass(frozen=True)
class Context:
    """What ``context()`` returns: ``text``, the block (``""`` when nothing was found), which
    counts ``tokens`` with ``tokenizer`` (never more than ``max_tokens``), and ``parts``, the
    spans it shows, in the block's order; ``searched``: how many memories were considered;
    ``cold_start``: nothing was found and ``text`` is the configured cold-start templates
    (:mod:`memreader.stores.context.cold_start`), with no parts; ``reranked``: an LLM rerank
    ordered the memories packed (``context(..., rerank=True)``: :mod:`memreader.front.rerank`);
    ``rerank_fallback``: why the search's order stood instead (the LLM failed)."""

    text: str
    tokens: int
    max_tokens: int
    tokenizer: str
    parts: tuple[ContextPart, ...]
    searched: int = 0
    cold_start: bool = False
    reranked: bool = False
    rerank_fallback: str | None = None


def numbers(values: Iterable[int]) -> str:
    """Sorted integers as runs: ``0-2, 5``."""
    runs: list[list[int]] = []
    for value in sorted(set(values)):
        if runs and value == runs[-1][1] + 1:
            runs[-1][1] = value
        else:
            runs.append([value, value])
    return ", ".join(str(a) if a == b else f"{a}-{b}" for a, b in runs)


def aware(moment: datetime) -> datetime:
    """``moment`` with a zone: UTC when it had none (as the stores read chat times)."""
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=timezone.utc)


def part_when(memory: StoredMemory, sources: Iterable[int]) -> datetime:
    """A part's time: the earliest time of its messages (a chat time without a zone is UTC,
    as the stores read it), else the memory's ``valid_from``, else when it was recorded."""
    known = memory.item.metadata.sources
    times = [aware(t) for i in sources if (t := known[i].timestamp) is not None]
    if times:
        return min(times)
    return aware(memory.valid_from or memory.recorded_at)


def part_source(
    memory: StoredMemory, sources: Iterable[int]
) -> tuple[str, tuple[int, ...], str | None, str | None]:
    """Where sources ``sources`` of ``memory`` came from: in words (``session s1, messages
    3-5`` or ``notes.md › Heading``), their message numbers, document path and heading."""
    item = memory.item
    held = [item.metadata.sources[i] for i in sorted(set(sources))]
    docs = [s for s in held if s.doc_path or s.type == "doc"]
    if docs:
        path = next((s.doc_path for s in docs if s.doc_path), None)
        heading = next((s.heading for s in docs if s.heading), None)
        where = (
            " › ".join(bit for bit in (path, (heading or "")[:_HEADING_CHARS]) if bit)
            or f"document, session {item.metadata.session_id}"
        )
        return where, (), path, heading
    messages = tuple(sorted({s.message_index for s in held}))
    where = f"session {item.metadata.session_id}"
    if messages:
        word = "message" if len(messages) == 1 else "messages"
        where += f", {word} {numbers(messages)}"
    return where, messages, None, None
