"""A user's Markdown memory as MCP resources: ``index.md`` and one file per category, the
bytes ``memreader export-md`` writes (:func:`memreader.categories.markdown.render_file`), read
from the store when asked (nothing is written to disk).

The URIs are stable: ``memreader://users/<user>/memory/index.md`` and
``memreader://users/<user>/memory/<category>.md``, the user id percent-encoded (the paths of
``memreader serve``'s ``/v1/users/<user>/memory/...``). memU's layout
(:mod:`memreader.categories.markdown_memu`) is under ``memreader://users/<user>/memu/``:
``memory.md`` and ``skill.md`` are listed, and their relative links resolve to the files they
name (``memu/memory/work.md``, ``memu/skill/<name>/SKILL.md``). A client may read only its own
users' files (:mod:`memreader.mcp.users`).

>>> resource_uri("team/ana", "index.md")
'memreader://users/team%2Fana/memory/index.md'
>>> parse_uri("memreader://users/team%2Fana/memory/work.md")
('team/ana', 'work.md')
>>> parse_uri("memreader://users/ana/memu/skill/deploy/SKILL.md")
('ana', 'memu/skill/deploy/SKILL.md')
"""

from __future__ import annotations

import re
from urllib.parse import quote, unquote

import mcp_types as types

from memreader.answers.sizes import MAX_RESOURCE_CHARS, clipped
from memreader.categories.markdown import INDEX, render_file, render_memory
from memreader.categories.markdown_memu import MEMORY_ENTRY, SKILL_ENTRY
from memreader.errors import InputError
from memreader.front.memory import Memory

__all__ = [
    "MARKDOWN",
    "MEMU",
    "TEMPLATES",
    "UnknownResourceError",
    "list_resources",
    "parse_uri",
    "read_resource",
    "resource_uri",
]

MARKDOWN = "text/markdown"
_PREFIX = "memreader://users/"
_URI = re.compile(r"memreader://users/([^/?#]+)/memory/([^/?#]+)")
_MEMU_URI = re.compile(r"memreader://users/([^/?#]+)/(memu/[^?#]+)")
#: What a memU file's name starts with, as :func:`parse_uri` gives it.
MEMU = "memu/"

#: The two URI templates a client can fill in.
TEMPLATES = [
    types.ResourceTemplate(
        name="memory-index",
        title="A user's memory: the index",
        uri_template=_PREFIX + "{user_id}/memory/index.md",
        description="One line per category of the user's memory, each linking its file: read "
        "it first, then only the category file you need.",
        mime_type=MARKDOWN,
    ),
    types.ResourceTemplate(
        name="memory-category",
        title="A user's memory: one category",
        uri_template=_PREFIX + "{user_id}/memory/{file}",
        description="One category of the user's memory (its summary, then its active memories "
        "with their sources), as index.md links it.",
        mime_type=MARKDOWN,
    ),
    types.ResourceTemplate(
        name="memory-memu",
        title="A user's memory in memU's layout",
        uri_template=_PREFIX + "{user_id}/memu/{+path}",
        description="memory.md (the categories) and skill.md (the skills) first; their "
        "relative links lead to memory/<name>.md and skill/<name>/SKILL.md.",
        mime_type=MARKDOWN,
    ),
]


class UnknownResourceError(InputError):
    """A resource URI this server does not serve, or a file the user's memory lacks."""


def resource_uri(user_id: str, file: str) -> str:
    """The URI of ``user_id``'s Markdown file ``file`` (``memu/<path>``: in memU's layout)."""
    if file.startswith(MEMU):
        return f"{_PREFIX}{quote(user_id, safe='')}/{quote(file, safe='/')}"
    return f"{_PREFIX}{quote(user_id, safe='')}/memory/{quote(file, safe='')}"


def parse_uri(uri: str) -> tuple[str, str]:
    """The user id and the file name a memory URI names (``memu/<path>`` for memU's layout).

    Raises:
        UnknownResourceError: not a URI of this server.
    """
    found = _URI.fullmatch(uri) or _MEMU_URI.fullmatch(uri)
    if found is None:
        raise UnknownResourceError(
            f"no resource {uri[:200]!r}: this server serves "
            f"{_PREFIX}<user>/memory/index.md and <category>.md, and <user>/memu/memory.md"
        )
    return unquote(found.group(1)), unquote(found.group(2))


def list_resources(memory: Memory, users: list[str]) -> list[types.Resource]:
    """The Markdown files of each of ``users`` (blocking: it reads the store)."""
    listed = []
    for user in users:
        files = render_memory(memory.store, user)
        for name in sorted(files, key=lambda n: (n != INDEX, n)):
            what = "index" if name == INDEX else f"category {name.removesuffix('.md')}"
            listed.append(
                types.Resource(
                    uri=resource_uri(user, name),
                    name=f"{user}/{name}",
                    title=f"Memory of {user}: {what}",
                    description="Read index.md first: it links each category's file."
                    if name == INDEX
                    else "This category's summary and its active memories, with sources.",
                    mime_type=MARKDOWN,
                    size=len(files[name]),
                )
            )
        for name, what in ((MEMORY_ENTRY, "the categories"), (SKILL_ENTRY, "the skills")):
            data = render_file(memory.store, user, name, "memu") or b""
            listed.append(
                types.Resource(
                    uri=resource_uri(user, MEMU + name),
                    name=f"{user}/{MEMU}{name}",
                    title=f"Memory of {user} in memU's layout: {what}",
                    description="An entry file: its relative links lead to the files it lists.",
                    mime_type=MARKDOWN,
                    size=len(data),
                )
            )
    return listed


def read_resource(memory: Memory, user_id: str, file: str) -> str:
    """The Markdown text of ``user_id``'s ``file`` (blocking: it reads the store), at most
    :data:`~memreader.answers.sizes.MAX_RESOURCE_CHARS` characters.

    Raises:
        UnknownResourceError: the user's memory has no such file.
    """
    if file.startswith(MEMU):
        body = render_file(memory.store, user_id, file.removeprefix(MEMU), "memu")
    else:
        body = render_file(memory.store, user_id, file)
    if body is None:
        raise UnknownResourceError(
            f"the memory of user {user_id[:200]!r} has no file {file[:200]!r} (index.md lists "
            "the category files)"
        )
    # A category of thousands of memories is clipped, with a marker saying how much.
    return clipped(body.decode("utf-8"), MAX_RESOURCE_CHARS)
