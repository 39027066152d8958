"""``memreader mcp``: the MCP server over stdio, as desktop clients start it.

stdout carries the protocol only. The memory (its reader config, its store) is opened first,
with file descriptor 1 pointed at stderr meanwhile, so a bad config or store fails before the
protocol starts (one line, exit 2) and nothing it prints can reach the client as a broken
message; while it serves, the SDK keeps fd 1 on stderr the same way (the local model loads on
the first call that embeds). Logs go to stderr. The server ends when the client closes stdin;
the memory is closed then.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, redirect_stdout

import anyio
from mcp.server.stdio import stdio_server

from memreader.mcp.server import MemoryServer

__all__ = ["run_stdio"]


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
                await server.run(read_stream, write_stream, server.create_initialization_options())

        anyio.run(main)
    finally:
        close()
