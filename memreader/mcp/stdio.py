"""``memreader mcp``: the MCP server over stdio, as desktop clients start it.

stdout carries the protocol only: the SDK points file descriptor 1 at stderr while it serves,
and the memory (its reader, its embedder) is built after that, so nothing it prints can reach
the client as a broken message. Logs go to stderr. The server ends when the client closes
stdin; the memory is closed then.
"""

from __future__ import annotations

from collections.abc import Callable

import anyio
from mcp.server.stdio import stdio_server

from memreader.mcp.server import MemoryServer

__all__ = ["run_stdio"]


def run_stdio(build: Callable[[], MemoryServer], close: Callable[[], None]) -> None:
    """Serve over stdin and stdout until the client closes stdin, then ``close()``.

    Args:
        build: makes the server (it opens the memory: blocking, run on a worker thread).
        close: closes the memory.
    """

    async def main() -> None:
        async with stdio_server() as (read_stream, write_stream):
            mcp = await anyio.to_thread.run_sync(build)
            server = mcp.server
            await server.run(read_stream, write_stream, server.create_initialization_options())

    try:
        anyio.run(main)
    finally:
        close()
