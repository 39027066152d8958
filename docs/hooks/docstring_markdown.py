"""The code's docstrings as Markdown: reStructuredText roles and literals become code spans, and
doctest examples become fenced ``pycon`` blocks (else Markdown reads ``x["a"][0]`` as a link).

Used twice: by the configuration reference for model docstrings, and as a griffe extension
(``DocstringMarkdown``, named in ``mkdocs.yml``) for the Python API pages.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

__all__ = ["DocstringMarkdown", "fence_doctests", "plain"]

_ROLE = re.compile(r":\w+:`([^`]+)`")


def _role(match: re.Match[str]) -> str:
    """A role's text as Sphinx shows it: the title of ``Title <target>``, the last name of
    ``~a.b.c``, else the target as written (on one line)."""
    text = " ".join(match.group(1).split())
    titled = re.fullmatch(r"(.+?)\s*<[^>]+>", text)
    if titled:
        return f"`{titled.group(1)}`"
    if text.startswith("~"):
        return f"`{text.rsplit('.', 1)[-1]}`"
    return f"`{text}`"


def fence_doctests(text: str) -> str:
    """Each run of ``>>>`` lines and their output in a fenced block.

    >>> fence_doctests("Say:\\n\\n>>> 1 + 1\\n2\\n\\nDone.").splitlines()
    ['Say:', '', '```pycon', '>>> 1 + 1', '2', '```', '', 'Done.']
    """
    out: list[str] = []
    inside = False
    for line in text.splitlines():
        starts = line.lstrip().startswith(">>>")
        if starts and not inside:
            out.append("```pycon")
            inside = True
        elif inside and not line.strip():
            out.append("```")
            inside = False
        out.append(line.strip() if inside else line)
    if inside:
        out.append("```")
    return "\n".join(out)


def plain(text: str) -> str:
    """A docstring's roles and literals as Markdown code spans, its doctests fenced.

    >>> plain("see :class:`~memreader.config.WindowConfig` and ``max_tokens``")
    'see `WindowConfig` and `max_tokens`'
    >>> plain(":meth:`Memory.add <memreader.front.memory.Memory.add>`, :func:`a.b`")
    '`Memory.add`, `a.b`'
    """
    parts = fence_doctests(text).split("```")
    # Odd parts are inside fences: doctest text stays as written.
    return "```".join(
        part if index % 2 else _ROLE.sub(_role, part).replace("``", "`")
        for index, part in enumerate(parts)
    )


class DocstringMarkdown(griffe.Extension):
    """Rewrites every docstring griffe loads with :func:`plain`."""

    def on_instance(self, *, obj: Any, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
