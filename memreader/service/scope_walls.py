"""Keys limited to agents or tasks (``agents:`` and ``tasks:`` of a key,
:mod:`memreader.service.keys`): what a call of such a key may see and change, on every route
of the HTTP service and the MCP server.

- A search, a context, a lookup (``get``, ``history``) runs as one of the key's agents and
  tasks (:func:`scope_of`): the one asked for, which must be among them, or the key's only one
  when none is asked for. It sees what that task sees (:mod:`memreader.scopes`: the memories
  of no task, of that task, and the shared ones), never another task's private memories, and
  never the owner-wide view; a memory it does not see is "not found", as another owner's is.
- A write (a read stored, a memory added) is written into one of the key's tasks (and
  agents), the same way.
- A change of a stored memory (update, delete) needs the memory to be of one of the key's
  tasks and agents (:func:`check_change`): an untasked memory or another task's shared one is
  the owner's, seen but not changed (403); another task's private one is not seen, so it is
  "not found" (404), word for word as an id the owner does not have.
- What spans every task of the owner (forgetting a source, categories and their summaries,
  refining stored items, batch jobs) is refused (:func:`check_whole_owner`).

A key with neither list is as before: the owner-wide view, any scope it names.
"""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from memreader.errors import ForbiddenScopeError, InputError, UnknownMemoryError
from memreader.scopes import check_scope_id, scope_columns
from memreader.service.keys import Principal

__all__ = ["ForbiddenScopeError", "check_change", "check_whole_owner", "key_sees", "scope_of"]


def scope_of(principal: Principal, agent_id: Any, task_id: Any) -> tuple[str | None, str | None]:
    """The agent and task a call of ``principal`` runs as (see the module docstring).

    Raises:
        InputError: a bad id, or none given to a key limited to several.
        ForbiddenScopeError: one the key is not limited to.
    """
    return (
        _one(principal.agents, agent_id, "agent_id", "agents"),
        _one(principal.tasks, task_id, "task_id", "tasks"),
    )


def _one(wall: Collection[str] | None, given: Any, what: str, plural: str) -> str | None:
    checked = check_scope_id(given, what)
    if wall is None:
        return checked
    names = ", ".join(repr(name) for name in sorted(wall))
    if checked is None:
        if len(wall) == 1:
            return next(iter(wall))
        raise InputError(f"{what} is required: this key is limited to {plural} {names}")
    if checked not in wall:
        raise ForbiddenScopeError(
            f"this key may not use {what} {checked!r}: it is limited to {plural} {names}"
        )
    return checked


def check_change(principal: Principal, memory: Any) -> None:
    """Refuse a change of the stored ``memory`` outside the key's agents and tasks. A memory
    the key does not even see (another task's private one) is refused exactly as an unknown
    id is: ids derive from text, and a different answer would confirm a guessed memory.

    Raises:
        UnknownMemoryError: the key does not see the memory (as the store says of an id the
            owner does not have).
        ForbiddenScopeError: the key sees the memory (untasked, or shared by another task)
            but its agent or task (none counts) is not the key's.
    """
    if not key_sees(principal, memory):
        owner = memory.item.metadata.user_id
        raise UnknownMemoryError(f"user {owner!r} has no memory {memory.id!r}")
    agent, task, _ = scope_columns(memory.item.metadata)
    for wall, mine, what in ((principal.agents, agent, "agent"), (principal.tasks, task, "task")):
        if wall is not None and mine not in wall:
            owned = f"{what} {mine!r}" if mine else f"no {what}"
            raise ForbiddenScopeError(
                f"this key may not change memory {memory.id!r}: it is of {owned}, and the key "
                f"is limited to {what}s {', '.join(repr(name) for name in sorted(wall))}"
            )


def key_sees(principal: Principal, memory: Any) -> bool:
    """Whether a stored ``memory`` (``None``: none) is one the key's agents and tasks may see:
    a shared one, or one of no agent (task) or of one of the key's (an unlimited key: any)."""
    if memory is None:
        return False
    agent, task, visibility = scope_columns(memory.item.metadata)
    if visibility == "shared":
        return True
    walls = ((principal.agents, agent), (principal.tasks, task))
    return all(wall is None or mine == "" or mine in wall for wall, mine in walls)


def check_whole_owner(principal: Principal, what: str) -> None:
    """Refuse ``what`` (a call that spans every task of the owner) to a limited key.

    Raises:
        ForbiddenScopeError: the key is limited to agents or tasks.
    """
    if principal.agents is not None or principal.tasks is not None:
        raise ForbiddenScopeError(
            f"{what} spans every agent and task of the owner: this key is limited to some"
        )
