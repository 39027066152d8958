"""The text of the Markdown export's files, whatever the layout: a category's file (its
summary, then its active memories), an index's line per category, and the escaping that keeps
text from the store as text (see :mod:`memreader.categories.markdown`).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from memreader.categories.markdown_names import category_file
from memreader.categories.summaries import newest_first, parse, without_refs
from memreader.errors import StoreError
from memreader.scenes.clipping import one_line

if TYPE_CHECKING:
    from memreader.stores.base import MemoryStore
    from memreader.stores.category_types import StoredCategory
    from memreader.stores.records import StoredMemory

__all__ = [
    "READ_HINT",
    "active_memories",
    "category_text",
    "count_text",
    "escape_line",
    "has_file",
    "index_lines",
    "owned_categories",
    "preview",
    "source_labels",
]

# An id used as an HTML anchor as it is.
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_INLINE = re.compile(r"([\\`*_\[\]<>~|])")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_BLOCK_START = re.compile(r"^(?:[#>+=-]|\d{1,9}[.)])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_PREVIEW_CHARS = 160
_SOURCES_SHOWN = 3
READ_HINT = (
    "How to read: each line is one category (its file, what belongs in it, how many active "
    "memories it holds, the start of its summary). Open only the file you need. In a category "
    "file the summary cites memories as `[ref:ID]`; each memory below it is headed by its `ID`. "
    "Times are UTC."
)


def escape_line(text: str) -> str:
    """``text`` on one line, as Markdown that shows it and nothing else (see "Text is data" in
    :mod:`memreader.categories.markdown`).

    >>> escape_line("# not a [heading](javascript:x)\\n<b>")
    '\\\\# not a \\\\[heading\\\\](javascript:x) \\\\<b\\\\>'
    """
    text = " ".join(_CONTROL.sub(" ", text).split())
    text = _ENTITY.sub(r"\\&", _INLINE.sub(r"\\\1", text))
    match = _BLOCK_START.match(text)
    if match:
        mark = match.end() - 1  # before the mark itself ("#", or the "." of "1.")
        text = f"{text[:mark]}\\{text[mark:]}"
    return text


def _quote(text: str) -> list[str]:
    """``text`` as a blockquote, line by line, each line escaped."""
    lines = [escape_line(line) for line in text.splitlines()] or [""]
    return [f"> {line}" if line else ">" for line in lines]


def _anchor(item_id: str) -> str:
    if _PLAIN_ID.fullmatch(item_id):
        return item_id
    return "id-" + hashlib.sha256(item_id.encode("utf-8", "surrogatepass")).hexdigest()[:16]


def _time(value: datetime | None) -> str:
    if value is None:
        return "?"
    if value.tzinfo is not None:
        value = value.astimezone(timezone.utc)
    return value.strftime("%Y-%m-%d %H:%M")


def _cites(refs: Iterable[str]) -> str:
    return "".join(
        f"[ref:{r}]" if _PLAIN_ID.fullmatch(r) else escape_line(f"[ref:{r}]") for r in refs
    )


def _summary_lines(summary: str) -> list[str]:
    """The summary as a list, one sentence a line, its citations kept."""
    sentences = parse(summary)
    if not sentences:  # a summary that cites nothing: shown as quoted text
        return _quote(summary) if summary.strip() else ["_No summary yet._"]
    return [
        f"- {escape_line(s.text.removeprefix('- '))} {_cites(s.refs)}".rstrip() for s in sentences
    ]


def preview(summary: str) -> str:
    """The first sentence of ``summary``, without citations, on one short line."""
    sentences = parse(summary)
    first = sentences[0].text if sentences else without_refs(summary)
    return escape_line(one_line(first.removeprefix("- "), _PREVIEW_CHARS))


def _source_line(memory: StoredMemory) -> str:
    """Where the memory came from: ``doc PATH § Heading`` or ``session S · TIME``, the first
    few sources sorted, and how many more."""
    meta = memory.item.metadata
    seen: set[str] = set()
    for source in meta.sources:
        if source.doc_path:
            heading = f" § {source.heading}" if source.heading else ""
            seen.add(f"doc {source.doc_path}{heading}")
        else:
            when = _time(source.timestamp) if source.timestamp else source.chat_time
            seen.add(f"session {meta.session_id}" + (f" · {when}" if when else ""))
    shown = sorted(seen)[:_SOURCES_SHOWN] or [f"session {meta.session_id}"]
    more = f" (+{len(seen) - _SOURCES_SHOWN} more)" if len(seen) > _SOURCES_SHOWN else ""
    return "; ".join(escape_line(s) for s in shown) + more


def _memory_lines(memory: StoredMemory) -> list[str]:
    anchor, text_id = _anchor(memory.id), escape_line(memory.id)
    valid = (
        f"valid {_time(memory.valid_from)} → {_time(memory.valid_to) if memory.valid_to else 'now'}"
        if memory.valid_from
        else f"recorded {_time(memory.recorded_at)}"
    )
    parts = [valid]
    if memory.importance is not None:
        parts.append(f"importance {memory.importance:.2f}")
    parts.append(f"source: {_source_line(memory)}")
    return [
        f'### <a id="{anchor}"></a>{text_id}',
        "",
        *_quote(memory.item.memory),
        "",
        " · ".join(parts),
        "",
    ]


def category_text(category: StoredCategory, memories: Sequence[StoredMemory]) -> str:
    kind: str = category.summary_kind
    if category.summary_note:
        kind += f" ({escape_line(one_line(category.summary_note, _PREVIEW_CHARS))})"
    updated = f" · updated {_time(category.updated_at)}" if category.updated_at else ""
    lines = [
        f"# {category.name}",
        "",
        escape_line(category.description),
        "",
        f"{count_text(len(memories))} · summary: {kind}{updated}",
        "",
        "## Summary",
        "",
        *_summary_lines(category.summary),
        "",
        "## Memories",
        "",
    ]
    if not memories:
        lines += ["_None active._", ""]
    for memory in newest_first(memories):
        lines += _memory_lines(memory)
    return "\n".join(lines).rstrip("\n") + "\n"


def count_text(n: int) -> str:
    return f"{n} memor{'y' if n == 1 else 'ies'}"


def active_memories(
    store: MemoryStore, user_id: str, category: StoredCategory
) -> list[StoredMemory]:
    """The category's active memories (one query), each checked to be ``user_id``'s."""
    if not category.item_ids:
        return []
    limit = len(set(category.item_ids))
    memories = store.category_memories(user_id, category.name, limit=limit)
    for memory in memories:
        if memory.item.metadata.user_id != user_id:
            raise StoreError(f"the store answered another owner's memory {memory.id!r}")
    return memories


def owned_categories(store: MemoryStore, user_id: str) -> list[StoredCategory]:
    """``user_id``'s categories, sorted by name, each checked to be that owner's."""
    categories = sorted(store.categories(user_id), key=lambda c: c.name)
    for category in categories:
        if category.user_id != user_id:
            raise StoreError(f"the store answered another owner's category {category.name!r}")
    return categories


def has_file(category: StoredCategory) -> bool:
    return bool(category.item_ids) or bool(category.summary.strip())


def index_lines(
    categories: Sequence[StoredCategory], link: Callable[[str], str] = category_file
) -> list[str]:
    """A line per category: a link to its file (``link`` of its name; none when it has no
    file), what belongs in it, its count (from the ids of its active memories, so no memory is
    read) and the start of its summary."""
    entries = []
    for category in categories:
        description = escape_line(category.description)
        if not has_file(category):
            entries.append(f"- {category.name}: {description} (empty)")
            continue
        start = preview(category.summary)
        entries.append(
            f"- [{category.name}]({link(category.name)}): {description} "
            f"{count_text(len(set(category.item_ids)))}." + (f" {start}" if start else "")
        )
    return entries


def source_labels(memory: StoredMemory) -> set[str]:
    """Where ``memory`` came from, a label a source: ``doc PATH`` or ``session S`` (unescaped)."""
    meta = memory.item.metadata
    labels = {f"doc {s.doc_path}" for s in meta.sources if s.doc_path}
    if not labels or any(not s.doc_path for s in meta.sources):
        labels.add(f"session {meta.session_id}")
    return labels
