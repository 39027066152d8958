"""Memory as Markdown files an agent can read: per owner, ``index.md`` (one line per category)
and one file per category (its summary, then its active memories), so an agent opens the index
first and then only the file it needs.

**Layout.** ``<out>/<user folder>/index.md`` and ``<out>/<user folder>/<category>.md``.

- The user folder is :func:`~memreader.categories.markdown_files.user_folder`: the user id
  itself when it is plain, else a readable slug, a dot and 16 hex digits of the id's SHA-256
  (``../x`` -> ``x.4f1b...``); a category's file is ``<name>.md``, except ``index``
  (``index.category.md``) and Windows device names (``con-category.md``): see
  :mod:`memreader.categories.markdown_files`, which also says what the export may touch.
- A category with neither active memories nor a summary gets no file: the index lists it as
  ``(empty)``.

**Order and bytes.** Categories by name; memories newest first (their ``valid_from``, else
``recorded_at``; ties by id); sources sorted. No "generated at" time: the bytes depend on the
store's content only (UTF-8, ``\\n``), so exporting twice gives the same files and a diff
shows what changed. Times are UTC, ``YYYY-MM-DD HH:MM``.

**Text is data.** Memory texts, descriptions, summaries, user ids and source names are escaped
(:func:`escape_line`): Markdown's inline marks (``\\ ` * _ [ ] < > ~ |``, ``&name;``) get a
backslash, and so does a mark that would open a block at a line's start (``#``, ``>``, ``-``,
``+``, ``=``, ``1.``); a memory's text is quoted (``> ``) line by line. So ``\\n# Heading`` or
``[x](javascript:...)`` in a memory stays text. Only the summary's ``[ref:ID]`` citations are
kept as they are (an ``ID`` of the usual characters).

**Writing** (:func:`export_markdown`): each file through a temporary file in the same folder,
fsynced, then renamed over the old one (a reader never sees half a file); a file whose bytes
are unchanged is left alone. Category files are written before the index and stale category
files (of categories gone) removed after it, so the index never names a missing file. Only
files the export wrote itself (its manifest says so, and they still hold what it wrote) are
ever replaced or removed; a folder holding others is refused unless told
(:mod:`memreader.categories.markdown_files`).
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING

from memreader.categories.markdown_files import (
    INDEX,
    ExportReport,
    ForeignFilesError,
    category_file,
    plan_folder,
    publish,
    user_folder,
)
from memreader.categories.summaries import newest_first, parse, without_refs
from memreader.errors import InputError, SinkError, StoreError
from memreader.scenes.clipping import one_line

if TYPE_CHECKING:
    from memreader.stores.base import MemoryStore
    from memreader.stores.category_types import StoredCategory
    from memreader.stores.records import StoredMemory

__all__ = [
    "INDEX",
    "ExportReport",
    "ForeignFilesError",
    "category_file",
    "escape_line",
    "export_markdown",
    "export_report",
    "render_file",
    "render_memory",
    "user_folder",
]

# A citation kept as it is, and an id used as an HTML anchor as it is.
_REF = re.compile(r"\[ref:([^\]\s]+)\]")
_PLAIN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]{0,127}")
_INLINE = re.compile(r"([\\`*_\[\]<>~|])")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_BLOCK_START = re.compile(r"^(?:[#>+=-]|\d{1,9}[.)])")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")
_PREVIEW_CHARS = 160
_SOURCES_SHOWN = 3
_READ_HINT = (
    "How to read: each line is one category (its file, what belongs in it, how many active "
    "memories it holds, the start of its summary). Open only the file you need. In a category "
    "file the summary cites memories as `[ref:ID]`; each memory below it is headed by its `ID`. "
    "Times are UTC."
)


def escape_line(text: str) -> str:
    """``text`` on one line, as Markdown that shows it and nothing else (see the module
    docstring).

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


def _preview(summary: str) -> str:
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


def _category_text(category: StoredCategory, memories: Sequence[StoredMemory]) -> str:
    kind: str = category.summary_kind
    if category.summary_note:
        kind += f" ({escape_line(one_line(category.summary_note, _PREVIEW_CHARS))})"
    updated = f" · updated {_time(category.updated_at)}" if category.updated_at else ""
    lines = [
        f"# {category.name}",
        "",
        escape_line(category.description),
        "",
        f"{_count(len(memories))} · summary: {kind}{updated}",
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


def _count(n: int) -> str:
    return f"{n} memor{'y' if n == 1 else 'ies'}"


def _active(store: MemoryStore, user_id: str, category: StoredCategory) -> list[StoredMemory]:
    """The category's active memories (one query), each checked to be ``user_id``'s."""
    if not category.item_ids:
        return []
    limit = len(set(category.item_ids))
    memories = store.category_memories(user_id, category.name, limit=limit)
    for memory in memories:
        if memory.item.metadata.user_id != user_id:
            raise StoreError(f"the store answered another owner's memory {memory.id!r}")
    return memories


def _owned(store: MemoryStore, user_id: str) -> list[StoredCategory]:
    """``user_id``'s categories, sorted by name, each checked to be that owner's."""
    categories = sorted(store.categories(user_id), key=lambda c: c.name)
    for category in categories:
        if category.user_id != user_id:
            raise StoreError(f"the store answered another owner's category {category.name!r}")
    return categories


def _has_file(category: StoredCategory) -> bool:
    return bool(category.item_ids) or bool(category.summary.strip())


def _index_bytes(user_id: str, categories: Sequence[StoredCategory]) -> bytes:
    """``index.md``: a line per category (its count from the ids of its active memories, so
    the index reads no memory)."""
    entries = []
    for category in categories:
        description = escape_line(category.description)
        if not _has_file(category):
            entries.append(f"- {category.name}: {description} (empty)")
            continue
        preview = _preview(category.summary)
        entries.append(
            f"- [{category.name}]({category_file(category.name)}): {description} "
            f"{_count(len(set(category.item_ids)))}." + (f" {preview}" if preview else "")
        )
    index = [f"# Memory of {escape_line(user_id) or '(no id)'}", "", _READ_HINT, ""]
    index += entries or ["_No categories yet._"]
    return ("\n".join(index) + "\n").encode("utf-8")


def _category_bytes(store: MemoryStore, user_id: str, category: StoredCategory) -> bytes:
    return _category_text(category, _active(store, user_id, category)).encode("utf-8")


def render_memory(store: MemoryStore, user_id: str) -> dict[str, bytes]:
    """The Markdown files of ``user_id``'s memory: file name -> UTF-8 bytes (``index.md`` and
    one file per category that has active memories or a summary; see the module docstring).

    Raises:
        StoreError: the store failed, or answered something of another owner.
    """
    categories = _owned(store, user_id)
    files = {
        category_file(c.name): _category_bytes(store, user_id, c)
        for c in categories
        if _has_file(c)
    }
    files[INDEX] = _index_bytes(user_id, categories)
    return files


def render_file(store: MemoryStore, user_id: str, file_name: str) -> bytes | None:
    """One file of :func:`render_memory` (``index.md`` or ``<category>.md``), reading only
    what that file shows; ``None`` when there is no such file.

    Raises:
        StoreError: the store failed, or answered something of another owner.
    """
    categories = _owned(store, user_id)
    if file_name == INDEX:
        return _index_bytes(user_id, categories)
    for category in categories:
        if category_file(category.name) == file_name and _has_file(category):
            return _category_bytes(store, user_id, category)
    return None


def export_markdown(
    store: MemoryStore,
    user_ids: Iterable[str],
    out_dir: str,
    *,
    allow_foreign_files: bool = False,
) -> list[str]:
    """Write the Markdown of each of ``user_ids`` under ``out_dir/<user folder>/`` (see the
    module docstring); returns the path of every file of the export, sorted.

    Raises:
        InputError: no user id, or an empty one.
        StoreError: the store failed.
        ForeignFilesError: a user folder holds files the export did not write (refused unless
            ``allow_foreign_files``), or one stands where the export must write; nothing was
            written.
        SinkError: a folder or file cannot be written.
    """
    report = export_report(store, user_ids, out_dir, allow_foreign_files=allow_foreign_files)
    return sorted(report.written)


def export_report(
    store: MemoryStore,
    user_ids: Iterable[str],
    out_dir: str,
    *,
    allow_foreign_files: bool = False,
) -> ExportReport:
    """:func:`export_markdown`, saying also which of its own stale files it removed and which
    foreign files it left alone. Every user folder is checked before any is written.

    Raises:
        The errors of :func:`export_markdown`.
    """
    users = sorted(set(user_ids))
    if not users or any(not user.strip() for user in users):
        raise InputError("export-md needs at least one user id, none of them empty")
    if os.path.lexists(out_dir) and not os.path.isdir(out_dir):
        raise SinkError(
            f"cannot write into {out_dir}: it is a file, not a folder (the owners' folders go "
            "in the folder --output names)"
        )
    plans = [
        plan_folder(
            os.path.join(out_dir, user_folder(user)),
            render_memory(store, user),
            allow_foreign=allow_foreign_files,
        )
        for user in users
    ]
    report = ExportReport()
    for plan in plans:
        publish(plan, report)
    return report
