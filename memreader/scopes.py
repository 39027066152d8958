"""Scopes beyond the owner: which agent and which task a memory belongs to, and whether it is
private to them or shared across the owner's tasks (a leaf module: items, stores, the service
and the MCP server all check scopes here).

A memory may name an ``agent_id`` and a ``task_id`` (both optional, taken from the ``info`` of
the read that made it) and has a ``visibility``:

- ``private`` (the default): seen only where its task (and its agent) is, or where no task
  (no agent) is asked for;
- ``shared``: seen by every task and every agent of its owner.

What a search sees (:func:`visible`), for one owner (owners stay walls, whatever the scope):

- ``task_id=T``: memories with no task, memories of task ``T``, and shared memories of the
  owner's other tasks; never a private memory of another task.
- ``agent_id=A``: the same rule over agents (memories of no agent, of ``A``, shared ones).
- no ``task_id`` (no ``agent_id``): the owner-wide view, every memory of the owner whatever its
  task (its agent): the owner's own view of their memories. A service key limited to tasks
  or agents (:mod:`memreader.service.keys`) never gets that view: it always searches as one
  of its tasks.

MemOS has the same field on its item metadata, with values ``private`` (the user's only),
``public`` (every user) and ``session`` (that session only). memreader's ``private`` is
MemOS's ``session`` narrowed to a task (private to the task that wrote it), memreader's
``shared`` is MemOS's ``private`` (every task of the one owner); MemOS's ``public`` has no
counterpart: owners are walls.

>>> check_visibility("shared")
'shared'
>>> visible(("", "t1", "private"), agent_id=None, task_id="t2")
False
>>> visible(("", "t1", "shared"), agent_id=None, task_id="t2")
True
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any, Literal, cast

from memreader.errors import InputError

__all__ = [
    "DEFAULT_VISIBILITY",
    "MAX_SCOPE_ID_CHARS",
    "SCOPE_KEYS",
    "VISIBILITIES",
    "Visibility",
    "check_scope_id",
    "check_visibility",
    "info_scope",
    "scope_columns",
    "scoped_hash",
    "seen_in",
    "visible",
]

Visibility = Literal["private", "shared"]
#: The visibilities a memory may have (see the module docstring).
VISIBILITIES: tuple[Visibility, ...] = ("private", "shared")
DEFAULT_VISIBILITY: Visibility = "private"
#: The longest agent or task id a memory keeps (in characters).
MAX_SCOPE_ID_CHARS = 200
#: The keys of a read's ``info`` that name a scope (items keep them in their metadata, not
#: in ``metadata.info``).
SCOPE_KEYS = frozenset({"agent_id", "task_id", "visibility"})

#: A memory's scope as the stores keep it in columns: agent id, task id ("" for none) and
#: visibility.
ScopeColumns = tuple[str, str, str]


def check_scope_id(value: Any, what: str) -> str | None:
    """``value`` as an agent or task id (``what`` names it): ``None``, or a non-empty string of
    at most :data:`MAX_SCOPE_ID_CHARS` characters without a NUL.

    >>> check_scope_id("t1", "task_id"), check_scope_id(None, "task_id")
    ('t1', None)
    >>> check_scope_id("", "task_id")
    Traceback (most recent call last):
    memreader.errors.InputError: task_id must be a non-empty string or null, got ''

    Raises:
        InputError: it is something else (the message names ``what``).
    """
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise InputError(f"{what} must be a non-empty string or null, got {value!r}")
    if len(value) > MAX_SCOPE_ID_CHARS:
        raise InputError(
            f"{what} must be at most {MAX_SCOPE_ID_CHARS} characters, got {len(value)}"
        )
    if "\x00" in value:
        raise InputError(f"{what} holds a NUL character, which a store cannot keep")
    return value


def check_visibility(value: Any, what: str = "visibility") -> Visibility:
    """``value`` as a visibility (``None``: :data:`DEFAULT_VISIBILITY`).

    Raises:
        InputError: it is not one of :data:`VISIBILITIES` (the message lists them).
    """
    if value is None:
        return DEFAULT_VISIBILITY
    if value not in VISIBILITIES:
        raise InputError(f"{what} must be one of {', '.join(VISIBILITIES)}, got {value!r}")
    return cast(Visibility, value)


def info_scope(info: Mapping[str, Any], where: str = "info") -> dict[str, Any]:
    """The scope keys of a read's ``info``, checked (absent ones left out, so an unscoped read
    gives ``{}``).

    Raises:
        InputError: a bad agent or task id or visibility (the message names ``where[key]``,
            or the key alone when ``where`` is empty).
    """
    scope: dict[str, Any] = {}
    for key in ("agent_id", "task_id"):
        if info.get(key) is not None:
            scope[key] = check_scope_id(info[key], f"{where}[{key!r}]" if where else key)
    if info.get("visibility") is not None:
        name = f"{where}['visibility']" if where else "visibility"
        scope["visibility"] = check_visibility(info["visibility"], name)
    return scope


def scope_columns(meta: Any) -> ScopeColumns:
    """The scope of an item's metadata as the stores' columns hold it."""
    return (meta.agent_id or "", meta.task_id or "", meta.visibility)


def scoped_hash(digest: str, scope: ScopeColumns) -> str:
    """A memory's dedup key from its text's hash ``digest``: the hash itself for an unscoped
    private memory (what every memory stored before scopes has), else a hash of it and the
    scope, so the same text in two tasks (or private and shared) stays two memories: a task's
    private memory is never merged into another task's, where it could not be seen.

    >>> scoped_hash("ab", ("", "", "private"))
    'ab'
    >>> scoped_hash("ab", ("", "t1", "private")) != scoped_hash("ab", ("", "t2", "private"))
    True
    """
    if scope == ("", "", DEFAULT_VISIBILITY):
        return digest
    joined = "\x00".join((digest, *scope))
    return hashlib.sha256(joined.encode("utf-8", "surrogatepass")).hexdigest()


def visible(scope: ScopeColumns, *, agent_id: str | None, task_id: str | None) -> bool:
    """Whether a memory of ``scope`` is seen by a search for ``agent_id`` and ``task_id``
    (``None``: any), by the rules of the module docstring (the SQL filters say the same)."""
    agent, task, visibility = scope
    if visibility == "shared":
        return True
    return (agent_id is None or agent in ("", agent_id)) and (
        task_id is None or task in ("", task_id)
    )


def seen_in(memory: Any, scope: Mapping[str, Any]) -> bool:
    """Whether a stored memory (``None``: none) is seen by a reader of ``scope`` (its
    ``agent_id`` and ``task_id``; the rest of a ``get``'s keywords is refused).

    Raises:
        InputError: ``scope`` holds another key, or a bad id (the message names it).
    """
    unknown = sorted(set(scope) - {"agent_id", "task_id"})
    if unknown:
        raise InputError(f"get() takes agent_id and task_id, not {unknown[0]!r}")
    agent = check_scope_id(scope.get("agent_id"), "agent_id")
    task = check_scope_id(scope.get("task_id"), "task_id")
    if memory is None:
        return False
    return visible(scope_columns(memory.item.metadata), agent_id=agent, task_id=task)
