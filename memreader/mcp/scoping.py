"""A call's scope on the MCP server (:mod:`memreader.scopes`): the agent and task each tool
runs as, decided with the caller's key as the HTTP service decides it
(:mod:`memreader.service.scope_walls`: a key limited to agents or tasks runs as one of them,
never changes a memory outside them, and never gets what spans the user's tasks)."""

from __future__ import annotations

from typing import Any

from memreader.mcp import arguments as a
from memreader.service.keys import Principal
from memreader.service.scope_walls import check_change, check_whole_owner, key_sees, scope_of

__all__ = ["WHOLE_OWNER", "scoped"]

#: The tools that span every task of the user, and what they are called in a refusal.
WHOLE_OWNER = {"forget": "forgetting a source", "list_categories": "a user's categories"}


async def scoped(bench: Any, caller: Principal, owner: str, tool: str, args: Any) -> Any:
    """``args`` of ``tool`` with the scope the call runs as (``bench``: the server's
    :class:`~memreader.mcp.tools.Workbench`, where a change's memory is looked up).

    Raises:
        InputError: a bad scope, or none given to a key limited to several.
        ForbiddenScopeError: a scope, a change or a tool the caller's key is not allowed.
    """
    one_memory = isinstance(args, a.Forget) and args.memory_id is not None
    if tool in WHOLE_OWNER and not one_memory:  # forgetting a source spans the user's tasks
        check_whole_owner(caller, WHOLE_OWNER[tool])
    if isinstance(args, a.MarkUsed) and (caller.agents is not None or caller.tasks is not None):
        # A limited key marks only what it may see: no probing another task's memories.
        seen = [
            memory_id
            for memory_id in args.memory_ids
            if key_sees(caller, await bench.memory.get(memory_id, user_id=owner, used=False))
        ]
        return args.model_copy(update={"memory_ids": seen})
    if not isinstance(args, a.Scoped):
        return args
    agent_id, task_id = scope_of(caller, args.agent_id, args.task_id)
    if isinstance(args, (a.Forget, a.UpdateMemory)) and args.memory_id is not None:
        found = await bench.memory.get(args.memory_id, user_id=owner, used=False)
        if found is not None:
            check_change(caller, found)
    return args.model_copy(update={"agent_id": agent_id, "task_id": task_id})
