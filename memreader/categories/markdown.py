"""Memory as Markdown files an agent can read: per owner, an entry file (one line per
category) and one file per category (its summary, then its active memories), so an agent opens
the entry first and then only the file it needs.

**Layouts** (:data:`LAYOUTS`, chosen by ``layout``):

- ``flat`` (the default, as before): ``<out>/<user folder>/index.md`` and
  ``<out>/<user folder>/<category>.md``.
- ``memu``: memU's entry files and folders, ``memory.md`` (the categories), ``skill.md`` (the
  skills, each a ``skill/<name>/SKILL.md`` bundle), ``index/sources.md`` and
  ``memory/<category>.md`` (:mod:`memreader.categories.markdown_memu`). Exporting a folder in
  the other layout than before replaces the old layout's files (they are the export's own).

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

import os
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal, get_args

from memreader.categories.markdown_files import (
    ExportReport,
    ForeignFilesError,
    plan_folder,
    publish,
)
from memreader.categories.markdown_memu import render_memu
from memreader.categories.markdown_names import INDEX, category_file, user_folder
from memreader.categories.markdown_text import (
    READ_HINT,
    active_memories,
    category_text,
    escape_line,
    has_file,
    index_lines,
    owned_categories,
)
from memreader.errors import InputError, SinkError

if TYPE_CHECKING:
    from memreader.stores.base import MemoryStore
    from memreader.stores.category_types import StoredCategory

__all__ = [
    "INDEX",
    "LAYOUTS",
    "ExportReport",
    "ForeignFilesError",
    "MarkdownLayout",
    "category_file",
    "check_layout",
    "escape_line",
    "export_markdown",
    "export_report",
    "render_file",
    "render_memory",
    "user_folder",
]

#: How the files of an owner's folder are laid out (see the module docstring).
MarkdownLayout = Literal["flat", "memu"]
LAYOUTS: tuple[str, ...] = get_args(MarkdownLayout)


def check_layout(layout: object) -> MarkdownLayout:
    """``layout`` checked.

    >>> check_layout("memu")
    'memu'

    Raises:
        InputError: it is not one of :data:`LAYOUTS`.
    """
    if layout == "flat" or layout == "memu":
        return layout
    raise InputError(f"layout must be one of {', '.join(LAYOUTS)}, got {str(layout)[:100]!r}")


def _index_bytes(user_id: str, categories: Sequence[StoredCategory]) -> bytes:
    """``index.md``: a line per category (its count from the ids of its active memories, so
    the index reads no memory)."""
    index = [f"# Memory of {escape_line(user_id) or '(no id)'}", "", READ_HINT, ""]
    index += index_lines(categories) or ["_No categories yet._"]
    return ("\n".join(index) + "\n").encode("utf-8")


def _category_bytes(store: MemoryStore, user_id: str, category: StoredCategory) -> bytes:
    return category_text(category, active_memories(store, user_id, category)).encode("utf-8")


def render_memory(
    store: MemoryStore, user_id: str, layout: MarkdownLayout = "flat"
) -> dict[str, bytes]:
    """The Markdown files of ``user_id``'s memory: relative path -> UTF-8 bytes, in the order
    they are written (flat: one file per category that has active memories or a summary, then
    ``index.md``; memu: :func:`~memreader.categories.markdown_memu.render_memu`).

    Raises:
        StoreError: the store failed, or answered something of another owner.
        InputError: an unknown ``layout``.
    """
    if check_layout(layout) == "memu":
        return render_memu(store, user_id)
    categories = owned_categories(store, user_id)
    files = {
        category_file(c.name): _category_bytes(store, user_id, c) for c in categories if has_file(c)
    }
    files[INDEX] = _index_bytes(user_id, categories)
    return files


def render_file(
    store: MemoryStore, user_id: str, file_name: str, layout: MarkdownLayout = "flat"
) -> bytes | None:
    """One file of :func:`render_memory` (flat: ``index.md`` or ``<category>.md``; memu:
    ``memory.md``, ``skill.md``, ``index/sources.md``, ``memory/<category>.md`` or
    ``skill/<name>/SKILL.md``), reading only what that file shows; ``None`` when there is no
    such file.

    Raises:
        StoreError: the store failed, or answered something of another owner.
        InputError: an unknown ``layout``.
    """
    if check_layout(layout) == "memu":
        return render_memu(store, user_id, only=file_name).get(file_name)
    categories = owned_categories(store, user_id)
    if file_name == INDEX:
        return _index_bytes(user_id, categories)
    for category in categories:
        if category_file(category.name) == file_name and has_file(category):
            return _category_bytes(store, user_id, category)
    return None


def export_markdown(
    store: MemoryStore,
    user_ids: Iterable[str],
    out_dir: str,
    *,
    allow_foreign_files: bool = False,
    layout: MarkdownLayout = "flat",
) -> list[str]:
    """Write the Markdown of each of ``user_ids`` under ``out_dir/<user folder>/`` (see the
    module docstring), in ``layout``; returns the path of every file of the export, sorted.

    Raises:
        InputError: no user id, or an empty one; an unknown ``layout``.
        StoreError: the store failed.
        ForeignFilesError: a user folder holds files the export did not write (refused unless
            ``allow_foreign_files``), or one stands where the export must write; nothing was
            written.
        SinkError: a folder or file cannot be written.
    """
    report = export_report(
        store, user_ids, out_dir, allow_foreign_files=allow_foreign_files, layout=layout
    )
    return sorted(report.written)


def export_report(
    store: MemoryStore,
    user_ids: Iterable[str],
    out_dir: str,
    *,
    allow_foreign_files: bool = False,
    layout: MarkdownLayout = "flat",
) -> ExportReport:
    """:func:`export_markdown`, saying also which of its own stale files it removed and which
    foreign files it left alone. Every user folder is checked before any is written.

    Raises:
        The errors of :func:`export_markdown`.
    """
    check_layout(layout)
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
            render_memory(store, user, layout),
            allow_foreign=allow_foreign_files,
        )
        for user in users
    ]
    report = ExportReport()
    for plan in plans:
        publish(plan, report)
    return report
