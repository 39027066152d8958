"""An owner's skills as ``SKILL.md`` bundles for the memU layout of the Markdown export, from
the store alone: each active ``SkillMemory`` item becomes ``skill/<folder>/SKILL.md`` (the
Agent Skills layout the skill writer uses, :func:`~memreader.extraction.skills.render_skill_md`).

- The name is the item's ``key`` (the skill pass stores the skill's name there), else the name
  its text starts with (``Skill NAME: ...``), else its first words; the description is its
  ``background``, else the one in its text, else its text; the steps and inputs are read back
  from its text (:func:`~memreader.extraction.skill_text.read_skill_text`; a text of another
  shape is one step, as it is), the tools from its ``tool:`` tags.
- The folder is :func:`~memreader.extraction.skills.skill_slug` of the name (``[a-z0-9-]``,
  never a device name, at most 64 characters): nothing a model or a user writes can name a
  path outside ``skill/`` (nor ``memu``, which names the layout in the service's paths:
  ``skill-memu``). Two skills whose names give the same slug each get the slug, ``-``
  and 8 hex digits of their item id's SHA-256, so neither hides the other.
- Text from the store is data: every entry is escaped as the export escapes memory text
  (:func:`~memreader.categories.markdown_text.escape_line`), so a step cannot become a link
  or a heading.
- At most :data:`MAX_SKILLS` (the newest); ``skill.md`` says when more were left out.
"""

from __future__ import annotations

import hashlib
from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memreader.categories.markdown_text import escape_line
from memreader.errors import StoreError
from memreader.extraction.skill_text import read_skill_text
from memreader.extraction.skills import Skill, render_skill_md, skill_slug
from memreader.items import MemoryType
from memreader.stores.paging import MAX_PAGE

if TYPE_CHECKING:
    from memreader.stores.base import MemoryStore
    from memreader.stores.records import StoredMemory

__all__ = ["MAX_SKILLS", "SkillBundle", "stored_skills"]

#: The most skills one owner's export writes (the newest).
MAX_SKILLS = 1000
_NAME_WORDS = 8


@dataclass(frozen=True)
class SkillBundle:
    """One skill of the export: its ``folder`` under ``skill/``, its name and description as
    stored (not escaped), the id of its item and the ``SKILL.md`` bytes."""

    folder: str
    name: str
    description: str
    memory_id: str
    data: bytes

    @property
    def path(self) -> str:
        """Its path in the user folder."""
        return f"skill/{self.folder}/SKILL.md"


def _skill_of(memory: StoredMemory) -> tuple[str, str, Skill]:
    """The skill an item holds: its name and description as stored, and the skill to render
    (every entry escaped)."""
    meta, text = memory.item.metadata, memory.item.memory
    key, background = (meta.key or "").strip(), meta.background.strip()
    parts = read_skill_text(text, key or None, background or None)
    if parts is not None:
        name, description = key or parts.name, background or parts.description
        steps, inputs = parts.steps, parts.inputs
    else:  # stored by hand: the text is the procedure
        name = key or " ".join(text.split()[:_NAME_WORDS])
        description, steps, inputs = background or text, [text], []
    tools = sorted({t.removeprefix("tool:") for t in meta.tags if t.startswith("tool:")})
    skill = Skill(
        name=escape_line(name),
        description=escape_line(description),
        steps=[escape_line(step) for step in steps],
        inputs=[escape_line(entry) for entry in inputs],
        tools=[escape_line(tool) for tool in tools],
        source=escape_line(f"memory {memory.id}, session {meta.session_id}"),
    )
    return name, description, skill


def _active_skills(store: MemoryStore, user_id: str) -> tuple[list[StoredMemory], bool]:
    """``user_id``'s active skill items, the newest first, at most :data:`MAX_SKILLS`; and
    whether there were more."""
    found: list[StoredMemory] = []
    cursor: str | None = None
    while True:
        page = store.get_all(
            user_id=user_id,
            types=[MemoryType.SKILL.value],
            limit=min(MAX_PAGE, MAX_SKILLS + 1 - len(found)),
            cursor=cursor,
        )
        for memory in page:
            if memory.item.metadata.user_id != user_id:
                raise StoreError(f"the store answered another owner's memory {memory.id!r}")
        found.extend(page)
        cursor = page.next_cursor
        if cursor is None or len(found) > MAX_SKILLS:
            return found[:MAX_SKILLS], len(found) > MAX_SKILLS


def stored_skills(store: MemoryStore, user_id: str) -> tuple[list[SkillBundle], bool]:
    """``user_id``'s skills as bundles, sorted by folder (see the module docstring); and
    whether more than :data:`MAX_SKILLS` were left out.

    Raises:
        StoreError: the store failed, or answered something of another owner.
    """
    memories, more = _active_skills(store, user_id)
    skills = [(memory, _skill_of(memory)) for memory in memories]
    by_slug: dict[str, list[int]] = defaultdict(list)
    for n, (_, (name, _, _)) in enumerate(skills):
        slug = skill_slug(name)
        # "skill/memu/SKILL.md" would read as another user id's files over HTTP (/memu/).
        by_slug["skill-memu" if slug == "memu" else slug].append(n)
    bundles, taken = [], set(by_slug)
    for slug, members in sorted(by_slug.items()):
        for n in members:
            memory, (name, description, skill) = skills[n]
            folder = slug
            if len(members) > 1:  # the same slug twice: each told apart by its item id
                digest = hashlib.sha256(memory.id.encode("utf-8", "surrogatepass")).hexdigest()
                folder = f"{slug}-{digest[:8]}"
                if folder in taken:  # another skill is called that very name
                    folder = f"{slug}-{digest[:16]}"
                taken.add(folder)
            bundles.append(
                SkillBundle(
                    folder,
                    name,
                    description,
                    memory.id,
                    render_skill_md(skill).encode("utf-8"),
                )
            )
    return sorted(bundles, key=lambda b: b.folder), more
