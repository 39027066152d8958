"""The passages of a stored memory: the pieces of its text that search scores one by one and
``context()`` packs, each an exact span of the memory's text.

A memory is still stored whole (a window of a chat, a chunk of a document, one extracted
fact); its passages are read from its sources: each source whose ``content`` appears in the
memory's text is one passage, from the start of the line it sits on (so a chat passage keeps
its ``user: [time]:`` prefix) to the end of that content. Text no source accounts for (an
extracted fact, a heading) forms passages of whole sentences. A passage longer than ``max_chars``
is cut at sentence ends (consecutive sentences grouped up to ``max_chars``), else at spaces,
else at ``max_chars``.

Every non-space character of the text lies in exactly one passage; passages are ordered and
do not overlap.

>>> text = "user: [9:12]: I moved to Lisbon.\\nassistant: [9:13]: Welcome! Lisbon is lovely."
>>> contents = ["I moved to Lisbon.", "Welcome! Lisbon is lovely."]
>>> [text[p.start:p.end] for p in passages_in(text, contents)]
['user: [9:12]: I moved to Lisbon.', 'assistant: [9:13]: Welcome! Lisbon is lovely.']
>>> fact = "Ana lives in Porto. She likes tea."
>>> [fact[p.start:p.end] for p in passages_in(fact, [], max_chars=20)]
['Ana lives in Porto.', 'She likes tea.']
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from memreader.items import TextualMemoryItem

__all__ = [
    "DEFAULT_MAX_PASSAGE_CHARS",
    "LineHead",
    "Passage",
    "PassageHit",
    "embedding_text",
    "line_head",
    "passages_in",
    "passages_of",
    "vector_text",
]

#: The longest passage, in characters (~ 150-250 tokens of English): long enough to hold a
#: chat message or a paragraph's worth of sentences, short enough to be one point.
DEFAULT_MAX_PASSAGE_CHARS = 800

# A chat line's head as windows render it: ``role (Name): [time]: `` or ``role: [time]: ``
# (:func:`memreader.windowing.parsers.line_prefix`), for the roles a chat message may have.
_CHAT_HEAD = re.compile(
    r"^(system|developer|user|assistant|tool|function)(?: \(([^)\n]*)\))?: (?:\[([^\]\n]*)\]: )?"
)

# A sentence ends at . ! ? (and their CJK forms) followed by space or the end, or at a newline.
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？；])\s*|\n+")


@dataclass(frozen=True)
class Passage:
    """One passage of a memory's text: ``text[start:end]``; ``source_index`` is the index of
    the memory's source it holds, ``None`` for text no source accounts for."""

    start: int
    end: int
    source_index: int | None = None


@dataclass(frozen=True)
class PassageHit:
    """How well one passage of a hit's memory matched a query: ``text[start:end]`` of the
    memory's text, the source it holds (``None``: text no source accounts for) and its score
    in ``[0, 1]`` (higher is better)."""

    start: int
    end: int
    score: float
    source_index: int | None = None


def _trimmed(text: str, start: int, end: int) -> tuple[int, int] | None:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return (start, end) if start < end else None


def _sentences(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    cursor = start
    for match in _SENTENCE_END.finditer(text, start, end):
        if (span := _trimmed(text, cursor, match.start())) is not None:
            spans.append(span)
        cursor = match.end()
    if (span := _trimmed(text, cursor, end)) is not None:
        spans.append(span)
    return spans


def _cut_long(text: str, start: int, end: int, max_chars: int) -> list[tuple[int, int]]:
    """``[start, end)`` in pieces of at most ``max_chars``: whole sentences grouped, a longer
    sentence cut at its last space before the limit, else at the limit itself."""
    if end - start <= max_chars:
        return [(start, end)]
    pieces: list[tuple[int, int]] = []
    group: tuple[int, int] | None = None
    for s, e in _sentences(text, start, end):
        if group is not None and e - group[0] <= max_chars:
            group = (group[0], e)
            continue
        if group is not None:
            pieces.append(group)
        group = None
        while e - s > max_chars:
            cut = text.rfind(" ", s + 1, s + max_chars)
            if cut <= s:
                cut = s + max_chars
            pieces.append((s, cut))
            s = cut
            while s < e and text[s].isspace():
                s += 1
        if s < e:
            group = (s, e)
    if group is not None:
        pieces.append(group)
    return [p for p in (_trimmed(text, s, e) for s, e in pieces) if p is not None]


def _locate(text: str, content: str, start: int) -> int:
    """Where ``content`` sits in ``text`` from ``start``: the first place it ends a line (a
    message ends its line as windows render it, so a short message such as ``a`` is not found
    inside the ``user (Ana):`` before it), else its first place; -1 when it is not there."""
    first = at = text.find(content, start)
    while at >= 0:
        end = at + len(content)
        if end == len(text) or text[end] == "\n":
            return at
        at = text.find(content, at + 1)
    return first


def passages_in(
    text: str,
    contents: Sequence[str | None],
    *,
    max_chars: int = DEFAULT_MAX_PASSAGE_CHARS,
) -> list[Passage]:
    """The passages of ``text`` whose sources had ``contents`` (one per source, in source
    order; ``None`` or empty for a source with no text): see the module."""
    located: list[tuple[int, int, int]] = []  # start, end, source index
    cursor = 0
    for index, content in enumerate(contents):
        if not content:
            continue
        at = _locate(text, content, cursor)
        if at < 0:
            at = _locate(text, content, 0)
            if at < 0 or any(s < at + len(content) and at < e for s, e, _ in located):
                continue
        line_start = text.rfind("\n", 0, at) + 1
        start = max(line_start, max((e for _, e, _ in located if e <= at), default=0))
        located.append((start, at + len(content), index))
        cursor = at + len(content)
    located.sort()
    spans: list[tuple[int, int, int | None]] = []
    position = 0
    for start, end, source in located:
        spans.append((position, start, None))
        spans.append((start, end, source))
        position = end
    spans.append((position, len(text), None))
    passages: list[Passage] = []
    for start, end, held in spans:
        trimmed = _trimmed(text, start, end)
        if trimmed is None:
            continue
        for s, e in _cut_long(text, *trimmed, max_chars):
            passages.append(Passage(s, e, held))
    return passages


def passages_of(
    item: TextualMemoryItem, *, max_chars: int = DEFAULT_MAX_PASSAGE_CHARS
) -> list[Passage]:
    """The passages of a memory item (see the module).

    >>> from memreader.items import TextualMemoryItem
    >>> item = TextualMemoryItem.model_validate({"id": "m",
    ...     "memory": "user: Hi.\\nassistant: Hello!",
    ...     "metadata": {"user_id": "u", "session_id": "s", "sources": [
    ...         {"scene_index": 0, "message_index": 0, "content": "Hi.", "span": [0, 3]},
    ...         {"scene_index": 0, "message_index": 1, "content": "Hello!", "span": [0, 6]}]}})
    >>> [(p.start, p.end, p.source_index) for p in passages_of(item)]
    [(0, 9, 0), (10, 27, 1)]
    """
    contents = [source.content for source in item.metadata.sources]
    return passages_in(item.memory, contents, max_chars=max_chars)


def embedding_text(item: TextualMemoryItem, passage: Passage) -> str:
    """What a passage is embedded as: a chat message as ``Name: content`` (its role when it
    has no name), without its time, which a small model reads as noise and which no question
    repeats; anything else (a document's text, a fact) as it reads.

    Measured with ``context()`` on benchmarks/evidence_retrieval.py's ``synthetic-en`` (share
    of questions whose block holds an evidence message at 200/500/1,000/2,000 tokens): the
    message contents alone 0.39/0.60/0.83/0.91, ``Name: content`` 0.59/0.74/0.78/0.89 (the
    name in a question finds its speaker's messages).

    >>> from memreader.items import TextualMemoryItem
    >>> item = TextualMemoryItem.model_validate({"id": "m",
    ...     "memory": "user (Ana): [9:12]: I moved to Porto.", "metadata": {"user_id": "u",
    ...     "session_id": "s", "sources": [{"scene_index": 0, "message_index": 0,
    ...     "content": "I moved to Porto.", "span": [0, 17]}]}})
    >>> embedding_text(item, passages_of(item)[0])
    'Ana: I moved to Porto.'
    """
    text = item.memory[passage.start : passage.end]
    sources = item.metadata.sources
    if passage.source_index is None or sources[passage.source_index].type == "doc":
        return text
    return _CHAT_HEAD.sub(lambda m: f"{m.group(2) or m.group(1)}: ", text, count=1)


@dataclass(frozen=True)
class LineHead:
    """What a chat line's head says (``role (Name): [time]: ``, as windows render a message):
    its ``role``, the speaker's ``name`` (``None`` when the message had none), its ``chat_time``
    as given (``None`` when none) and where its content starts (``content``, an offset)."""

    role: str
    name: str | None
    chat_time: str | None
    content: int

    @property
    def speaker(self) -> str:
        """Who said it: the name, else the role."""
        return self.name or self.role


def line_head(text: str) -> LineHead | None:
    """The head of the chat line ``text`` starts with, ``None`` when it starts with none.

    >>> line_head("user (Ana): [9:12 am on 8 May, 2023]: I moved to Porto.")
    LineHead(role='user', name='Ana', chat_time='9:12 am on 8 May, 2023', content=38)
    >>> line_head("Introduction: a document's text") is None
    True
    """
    found = _CHAT_HEAD.match(text)
    if found is None:
        return None
    return LineHead(found[1], found[2] or None, found[3], found.end())


def _is_chat(item: TextualMemoryItem, passage: Passage) -> bool:
    """Whether ``passage`` holds one chat message (a source that is not a document's)."""
    index = passage.source_index
    return index is not None and item.metadata.sources[index].type != "doc"


def vector_text(item: TextualMemoryItem, passages: Sequence[Passage], index: int) -> str:
    """The second text a store embeds for ``passages[index]`` (the memory's passages, in
    order): a chat message with the chat messages before and after it in the memory, each as
    :func:`embedding_text` makes it (``Name: content``), one per line; anything else (a
    document's text, a fact) as it reads. Its neighbours say what a message answers ("Crux
    Hall, the one by the station." after "Which gym did you pick?") or what "it" is; the
    passage still names its one message. Search blends this text's match with the message's
    own (:mod:`memreader.stores.passages.scoring`).

    >>> from memreader.items import TextualMemoryItem
    >>> item = TextualMemoryItem.model_validate({"id": "m",
    ...     "memory": "user (Ana): [9:12]: Which gym?\\nuser (Bo): [9:13]: Crux Hall.",
    ...     "metadata": {"user_id": "u", "session_id": "s", "sources": [
    ...         {"scene_index": 0, "message_index": 0, "content": "Which gym?", "span": [0, 10]},
    ...         {"scene_index": 0, "message_index": 1, "content": "Crux Hall.", "span": [0, 10]}]}})
    >>> vector_text(item, passages_of(item), 1)
    'Ana: Which gym?\\nBo: Crux Hall.'
    """
    passage = passages[index]
    if not _is_chat(item, passage):
        return embedding_text(item, passage)
    around = range(max(0, index - 1), min(len(passages), index + 2))
    return "\n".join(
        embedding_text(item, passages[i])
        for i in around
        if i == index or _is_chat(item, passages[i])
    )
