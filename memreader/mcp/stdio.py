"""``memreader mcp``: the MCP server over stdio, as desktop clients start it.

stdout carries the protocol only. The memory (its reader config, its store) is opened first,
with file descriptor 1 pointed at stderr meanwhile, so a bad config or store fails before the
protocol starts (one line, exit 2) and nothing it prints can reach the client as a broken
message; while it serves, the SDK keeps fd 1 on stderr the same way (the local model loads on
the first call that embeds). Logs go to stderr. The server ends when the client closes stdin;
the memory is closed then. A line that is not a JSON-RPC message is answered with a JSON-RPC
error (parse error or invalid request), never left unanswered.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterable, Callable, Iterator
from contextlib import contextmanager, redirect_stdout
from typing import Any

import anyio
import mcp_types as types
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from memreader.mcp.server import MemoryServer

__all__ = ["answer_bad_lines", "bad_line_answer", "run_stdio"]

logger = logging.getLogger(__name__)


@contextmanager
def _stdout_on_stderr() -> Iterator[None]:
    """fd 1 (and ``sys.stdout``) on stderr for the block: stray output misses the protocol."""
    sys.stdout.flush()
    saved = os.dup(1)
    try:
        os.dup2(2, 1)
        with redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)


def bad_line_answer(exc: Exception) -> SessionMessage:
    """The JSON-RPC error answering a line that is not a message: ``-32700`` (parse error,
    ``id`` null) for a line that is not JSON, else ``-32600`` (invalid request) with the
    line's ``id`` when it has a usable one.

    >>> bad_line_answer(ValueError("no")).message.error.code
    -32600
    """
    errors = exc.errors() if isinstance(exc, ValidationError) else []
    if errors and errors[0]["type"] == "json_invalid":
        error = types.ErrorData(code=types.PARSE_ERROR, message="Parse error: not JSON")
        return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=None, error=error))
    # The line as parsed is the input of some error (one per message shape tried).
    given: dict[str, Any] = next(
        (e["input"] for e in errors if isinstance(e.get("input"), dict)), {}
    )
    found = given.get("id")
    request_id = found if isinstance(found, (int, str)) and not isinstance(found, bool) else None
    message = "Invalid request: not a JSON-RPC 2.0 message"
    error = types.ErrorData(code=types.INVALID_REQUEST, message=message)
    return SessionMessage(types.JSONRPCError(jsonrpc="2.0", id=request_id, error=error))


async def answer_bad_lines(
    lines: AsyncIterable[SessionMessage | Exception],
    requests: MemoryObjectSendStream[SessionMessage],
    answers: Any,
) -> None:
    """Pass each message read to ``requests``; answer each line that is not one (the SDK
    reads it as an exception, which the server would only log) on ``answers``, so a client
    is never left waiting for an answer that will not come."""
    async with requests:
        async for line in lines:
            if isinstance(line, Exception):
                logger.warning("MCP stdio: a line is not a JSON-RPC message: %s", line)
                await answers.send(bad_line_answer(line))
                continue
            await requests.send(line)


def run_stdio(build: Callable[[], MemoryServer], close: Callable[[], None]) -> None:
    """Serve over stdin and stdout until the client closes stdin, then ``close()``.

    Args:
        build: makes the server (it opens the memory).
        close: closes the memory.

    Raises:
        MemReaderError: ``build`` failed (a bad config, a store that cannot be opened).
    """
    try:
        with _stdout_on_stderr():
            mcp = build()
        server = mcp.server

        async def main() -> None:
            async with stdio_server() as (read_stream, write_stream):
                send, requests = anyio.create_memory_object_stream[SessionMessage](0)
                async with anyio.create_task_group() as group:
                    group.start_soon(answer_bad_lines, read_stream, send, write_stream)
                    await server.run(requests, write_stream, server.create_initialization_options())
                    group.cancel_scope.cancel()

        anyio.run(main)
    finally:
        close()
