"""memU's layout of the Markdown memory: two entry files an agent reads first, then folders.

::

    <user folder>/
      memory.md               what is remembered: a line per category linking memory/<name>.md
      skill.md                the skills: a line per skill linking skill/<name>/SKILL.md
      index/sources.md        where the memories came from (each document and session), each
                              linking the category files holding its memories
      memory/<category>.md    a category's summary, then its active memories (as the flat
                              layout's <category>.md)
      skill/<name>/SKILL.md   a skill bundle (:mod:`memreader.categories.markdown_skills`)

Every link is relative, so the folder reads the same in any Markdown viewer, on disk or in a
repository, and an agent can follow it. Entry files are written last, after what they link.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from typing import TYPE_CHECKING

from memreader.categories.markdown_names import category_file
from memreader.categories.markdown_skills import MAX_SKILLS, SkillBundle, stored_skills
from memreader.categories.markdown_text import (
    active_memories,
    category_text,
    count_text,
    escape_line,
    has_file,
    index_lines,
    owned_categories,
    source_labels,
)
from memreader.scenes.clipping import one_line

if TYPE_CHECKING:
    from memreader.stores.base import MemoryStore
    from memreader.stores.category_types import StoredCategory
    from memreader.stores.records import StoredMemory

__all__ = ["MEMORY_ENTRY", "SKILL_ENTRY", "SOURCES_INDEX", "memory_path", "render_memu"]

#: The entry file of what is remembered.
MEMORY_ENTRY = "memory.md"
#: The entry file of the skills.
SKILL_ENTRY = "skill.md"
#: The index of where the memories came from.
SOURCES_INDEX = "index/sources.md"
_DESCRIPTION_CHARS = 160
_MEMORY_HINT = (
    "How to read: start here. Each line under Categories is one category (its file, what "
    "belongs in it, how many active memories it holds, the start of its summary): open only "
    "the file you need. In a category file the summary cites memories as `[ref:ID]`; each "
    "memory below it is headed by its `ID`. Times are UTC."
)
_SKILL_HINT = (
    "How to read: each line is one skill (its name, linking its `SKILL.md`, then what it does "
    "and when to use it). Open the `SKILL.md` of the skill you need: its inputs and steps."
)
_SOURCES_HINT = (
    "How to read: each line is one document or session the memories came from, how many "
    "active memories came from it, and the category files that hold them."
)


def memory_path(category: str) -> str:
    """The path of a category's file in the memU layout.

    >>> memory_path("work"), memory_path("index")
    ('memory/work.md', 'memory/index.category.md')
    """
    return f"memory/{category_file(category)}"


def _title(what: str, user_id: str) -> str:
    return f"# {what} of {escape_line(user_id) or '(no id)'}"


def _text(lines: Sequence[str]) -> bytes:
    return ("\n".join(lines).rstrip("\n") + "\n").encode("utf-8")


def _memory_entry(user_id: str, categories: Sequence[StoredCategory], skills: int) -> bytes:
    lines = [_title("Memory", user_id), "", _MEMORY_HINT, "", "## Categories", ""]
    lines += index_lines(categories, memory_path) or ["_No categories yet._"]
    lines += ["", "## Skills", ""]
    lines.append(
        f"{skills} skill{'' if skills == 1 else 's'}: [{SKILL_ENTRY}]({SKILL_ENTRY}) lists "
        "them, each linking its `skill/<name>/SKILL.md`."
    )
    lines += ["", "## Indexes", ""]
    lines.append(
        f"- [{SOURCES_INDEX}]({SOURCES_INDEX}): where the memories came from (documents and "
        "sessions), each linking the category files that hold them."
    )
    return _text(lines)


def _skill_entry(user_id: str, skills: Sequence[SkillBundle], more: bool) -> bytes:
    lines = [_title("Skills", user_id), "", _SKILL_HINT, ""]
    for bundle in skills:
        description = escape_line(one_line(bundle.description, _DESCRIPTION_CHARS))
        lines.append(f"- [{escape_line(bundle.name)}]({bundle.path}): {description}")
    if not skills:
        lines.append("_No skills yet._")
    if more:
        lines += ["", f"_Only the newest {MAX_SKILLS} skills are written._"]
    return _text(lines)


def _sources_index(
    user_id: str, categories: Sequence[StoredCategory], held: dict[str, list[StoredMemory]]
) -> bytes:
    """A line per source label: how many active memories came from it, and their files."""
    memories: dict[str, set[str]] = defaultdict(set)
    files: dict[str, set[str]] = defaultdict(set)
    for category in categories:
        for memory in held.get(category.name, ()):
            for label in source_labels(memory):
                memories[label].add(memory.id)
                files[label].add(category.name)
    lines = [_title("Sources of the memory", user_id), "", _SOURCES_HINT, ""]
    for label in sorted(memories):
        links = ", ".join(f"[{name}](../{memory_path(name)})" for name in sorted(files[label]))
        lines.append(f"- {escape_line(label)}: {count_text(len(memories[label]))}, in {links}")
    if not memories:
        lines.append("_No memories in categories yet._")
    return _text(lines)


def render_memu(store: MemoryStore, user_id: str, only: str | None = None) -> dict[str, bytes]:
    """The memU layout's files of ``user_id``'s memory: relative path -> UTF-8 bytes, in the
    order they are written (see the module docstring). ``only``: render just that file (and
    read only what it shows); the answer is then empty when there is no such file.

    Raises:
        StoreError: the store failed, or answered something of another owner.
    """
    categories = owned_categories(store, user_id)
    with_file = [c for c in categories if has_file(c)]
    if only is not None and only.startswith("memory/"):  # one category: nothing else is read
        with_file = [c for c in with_file if memory_path(c.name) == only]
    if only is not None and only != SOURCES_INDEX and not only.startswith("memory/"):
        with_file = []  # an entry or a skill: no memory is read
    held = {c.name: active_memories(store, user_id, c) for c in with_file}
    files = {memory_path(c.name): category_text(c, held[c.name]).encode("utf-8") for c in with_file}
    if only is None or only in (MEMORY_ENTRY, SKILL_ENTRY) or only.startswith("skill/"):
        skills, more = stored_skills(store, user_id)
        files.update({bundle.path: bundle.data for bundle in skills})
        files[SKILL_ENTRY] = _skill_entry(user_id, skills, more)
        files[MEMORY_ENTRY] = _memory_entry(user_id, categories, len(skills))
    if only is None or only == SOURCES_INDEX:
        files[SOURCES_INDEX] = _sources_index(user_id, categories, held)
    for entry in (SKILL_ENTRY, MEMORY_ENTRY):  # the entries last: after what they link
        if entry in files:
            files[entry] = files.pop(entry)
    if only is not None:
        return {only: files[only]} if only in files else {}
    return files
