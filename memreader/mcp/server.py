"""The MCP server: the SDK's low-level ``Server`` with memreader's tools and resources, over
stdio (:func:`run_stdio`) or streamable HTTP (:mod:`memreader.mcp.http`).

Each tool call is checked, scoped and bounded here, the same way for every tool:

1. its arguments are validated by the tool's model (an unknown field, a wrong type, a size over
   its limit: a tool error naming the field, never echoing its value);
2. its user is decided by who the caller is (:mod:`memreader.mcp.users`), never by the call;
3. its work runs within the call's deadline (``service.request_timeout_s`` of the config, or
   ``--timeout``): past it the work is stopped and the call fails with ``DeadlineExceeded``;
4. a library error becomes an MCP tool error (``isError``) holding the error's type and
   message (``UnknownMemoryError: user 'emily' has no memory 'x'``), never a traceback; an
   unexpected one is logged (stderr) and answered as ``InternalError`` in one line.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from typing import Any

import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from memreader._version import __version__
from memreader.answers.sizes import clipped
from memreader.calls.deadlines import Deadline, in_thread
from memreader.errors import InputError, MemReaderError
from memreader.mcp.deadlines import DEFAULT_TIMEOUT_S, within
from memreader.mcp.resources import (
    TEMPLATES,
    UnknownResourceError,
    list_resources,
    parse_uri,
    read_resource,
)
from memreader.mcp.scoping import scoped
from memreader.mcp.tools import TOOLS, Workbench
from memreader.mcp.users import owner_of
from memreader.service.keys import ANY_USER, Principal
from memreader.service.scope_walls import check_whole_owner

__all__ = ["INSTRUCTIONS", "CallerOf", "MemoryServer"]

logger = logging.getLogger(__name__)

#: Who sends a request (stdio: the one user; HTTP: the request's key).
CallerOf = Callable[[ServerRequestContext[Any]], Principal]

#: What a client shows its model about this server.
INSTRUCTIONS = (
    "Long-term memory of the user. Call `recall` (or `context`) before answering anything that "
    "may depend on what the user said before; call `remember` when the user tells you something "
    "worth keeping (a preference, a fact about their life, a decision). Memories come with "
    "their sources. The user's memory is also readable as Markdown resources (index.md first). "
    "Every tool takes user_id only when your key serves several users (leave it out "
    "otherwise). agent_id and task_id scope a call: an agent or task sees its own memories, "
    "those of none and the shared ones, never another task's private ones. erase: true erases "
    "for good, only when the user asks for it."
)
_ERROR_CHARS = 2_000
#: JSON-RPC's "resource not found" (the MCP specification's code for resources/read).
_RESOURCE_NOT_FOUND = -32002
_INVALID_PARAMS = -32602
_INTERNAL_ERROR = -32603


class MemoryServer:
    """memreader's tools and resources for the callers ``caller_of`` names.

    Args:
        bench: the memory the tools use.
        caller_of: who sends a request.
        timeout_s: the deadline of one tool call or resource read.
    """

    def __init__(
        self, bench: Workbench, caller_of: CallerOf, *, timeout_s: float = DEFAULT_TIMEOUT_S
    ) -> None:
        self.bench = bench
        self.caller_of = caller_of
        self.timeout_s = timeout_s
        self.server: Server[Any] = Server(
            "memreader",
            version=__version__,
            title="memreader: long-term memory",
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_list_resource_templates=self._list_templates,
            on_read_resource=self._read_resource,
        )

    async def _list_tools(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=[tool.listing() for tool in TOOLS.values()])

    async def _call_tool(
        self, ctx: ServerRequestContext[Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        tool = TOOLS.get(params.name)
        if tool is None:
            return _failed(f"InputError: no tool {params.name[:100]!r}; tools: {', '.join(TOOLS)}")
        try:
            args = tool.arguments.model_validate(params.arguments or {})
            caller = self.caller_of(ctx)
            owner = owner_of(caller, getattr(args, "user_id", None))
            args = await scoped(self.bench, caller, owner, tool.name, args)
            deadline = Deadline.after(self.timeout_s, what=f"the {tool.name} call")
            answer = await within(tool.work(self.bench, owner, args), deadline)
        except ValidationError as exc:
            return _failed(f"InputError: invalid arguments for {tool.name}: {_fields(exc)}")
        except MemReaderError as exc:
            logger.info("MCP tool %s failed: %s", tool.name, type(exc).__name__)
            return _failed(f"{type(exc).__name__}: {exc}")
        except Exception:
            # The last resort: the traceback goes to the log (stderr), one line to the client.
            logger.exception("MCP tool %s failed unexpectedly", tool.name)
            return _failed(
                f"InternalError: the {tool.name} tool failed unexpectedly (see the server's log)"
            )
        text = answer["text"] if tool.name == "context" else json.dumps(answer, ensure_ascii=False)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=text)], structured_content=answer
        )

    async def _list_resources(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        caller = self.caller_of(ctx)
        # An admin's users are not listed (there is no list of every user): the templates are.
        users = sorted(user for user in caller.users if user != ANY_USER)
        if caller.agents is not None or caller.tasks is not None:
            users = []  # categories span every task of the user (scope_walls)
        try:
            found = await self._bounded(
                lambda: list_resources(self.bench.memory.memory, users), "listing resources"
            )
        except MemReaderError as exc:
            raise MCPError(_INTERNAL_ERROR, clipped(f"{type(exc).__name__}: {exc}")) from None
        return types.ListResourcesResult(resources=found)

    async def _list_templates(
        self, ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourceTemplatesResult:
        return types.ListResourceTemplatesResult(resource_templates=TEMPLATES)

    async def _read_resource(
        self, ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        try:
            user, file = parse_uri(params.uri)
            caller = self.caller_of(ctx)
            owner = owner_of(caller, user)
            check_whole_owner(caller, "a user's categories")
            text = await self._bounded(
                lambda: read_resource(self.bench.memory.memory, owner, file), "reading " + file
            )
        except UnknownResourceError as exc:
            raise MCPError(_RESOURCE_NOT_FOUND, f"{type(exc).__name__}: {exc}") from None
        except MemReaderError as exc:
            # The caller's mistake (another user, a bad URI) or the server's (the store, time).
            code = _INVALID_PARAMS if isinstance(exc, InputError) else _INTERNAL_ERROR
            raise MCPError(code, clipped(f"{type(exc).__name__}: {exc}")) from None
        contents = types.TextResourceContents(uri=params.uri, text=text, mime_type="text/markdown")
        return types.ReadResourceResult(contents=[contents])

    async def _bounded(self, work: Callable[[], Any], what: str) -> Any:
        """``work()`` on a worker thread, within one call's deadline."""
        return await within(in_thread(work), Deadline.after(self.timeout_s, what=what))


def _failed(message: str) -> types.CallToolResult:
    """A tool error: one message, bounded, on one line."""
    text = " ".join(message.split())
    if len(text) > _ERROR_CHARS:
        text = text[: _ERROR_CHARS - 1] + "…"
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)], is_error=True)


def _fields(exc: ValidationError) -> str:
    """What was wrong with each field, without the values sent (they are the caller's data)."""
    problems = []
    for error in exc.errors()[:10]:
        where = ".".join(str(part) for part in error["loc"]) or "arguments"
        problems.append(f"{where}: {error['msg']}")
    return "; ".join(problems)
