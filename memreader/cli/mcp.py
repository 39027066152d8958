"""``memreader mcp``: the MCP server (:mod:`memreader.mcp`) over stdio, or over streamable
HTTP with ``--http``; the reader and the store come from the config ``memreader serve`` reads
(``--config``, else the built-in local reader and the per-user store of ``Memory()``)."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memreader.errors import ConfigError, InputError

__all__ = ["DEFAULT_PORT", "add_mcp_parser", "run_mcp"]

#: The port of ``memreader mcp --http`` (``memreader serve`` has 8765).
DEFAULT_PORT = 8766


def add_mcp_parser(commands: Any) -> None:
    """Add ``mcp`` to the subcommands."""
    text = (
        "serve memory to agents over the Model Context Protocol (stdio, or --http): tools to "
        "remember, recall and forget, and the user's Markdown memory as resources"
    )
    mcp = commands.add_parser("mcp", help=text, description=text)
    mcp.add_argument(
        "--user-id",
        default=None,
        help="the user whose memory the server serves (required over stdio; over HTTP only "
        "without keys)",
    )
    mcp.add_argument(
        "--config",
        default=None,
        help="a reader YAML with an optional `service:` section, as memreader serve takes "
        "(default: the built-in local reader; store: $MEMREADER_HOME/memories.db)",
    )
    mcp.add_argument("--store", default=None, help="the store URL (wins over the config's)")
    mcp.add_argument(
        "--http",
        action="store_true",
        help="serve over streamable HTTP at http://HOST:PORT/mcp instead of stdio, with the "
        "config's API keys",
    )
    mcp.add_argument("--host", default=None, help="with --http: address (default 127.0.0.1)")
    mcp.add_argument(
        "--port", type=int, default=None, help=f"with --http: port (default {DEFAULT_PORT})"
    )
    mcp.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds one call may run (default: the config's service.request_timeout_s, 120)",
    )


def run_mcp(args: argparse.Namespace) -> int:
    """Serve until the client closes stdin (stdio) or until interrupted (HTTP)."""
    try:
        from memreader.mcp.http import callers, http_app, serve_http
        from memreader.mcp.server import MemoryServer
        from memreader.mcp.stdio import run_stdio
        from memreader.mcp.tools import Workbench
        from memreader.mcp.users import stdio_caller
    except ImportError as exc:
        raise ConfigError(
            f"memreader mcp needs the mcp extra ({exc.name} is missing): "
            "pip install 'memreader-ai[mcp]'"
        ) from None
    from memreader.factory import MemReaderConfigFactory
    from memreader.service.config import ServiceConfig, load_service_config
    from memreader.service.keys import KeyRing
    from memreader.service.reading import http_reader_config

    config = (
        load_service_config(args.config) if args.config else ServiceConfig(MemReaderConfigFactory())
    )
    settings = config.settings
    timeout = settings.request_timeout_s if args.timeout is None else args.timeout
    if not timeout > 0:
        raise InputError(f"--timeout must be a number of seconds > 0, got {args.timeout!r}")
    keys = KeyRing(config.keys)
    # Tool arguments are content, as a request body is over HTTP: the service's walls apply.
    reader = http_reader_config(config.reader, settings.content, config.store_url)
    opened: list[Workbench] = []

    def build(caller_of: Any) -> MemoryServer:
        bench = Workbench.open(reader, args.store)
        opened.append(bench)
        return MemoryServer(bench, caller_of, timeout_s=timeout)

    def close() -> None:
        for bench in opened:
            bench.close()

    if not args.http:
        if args.user_id is None:
            raise InputError(
                "memreader mcp needs --user-id ID over stdio: the user whose memory it serves"
            )
        caller = stdio_caller(args.user_id)
        run_stdio(lambda: build(lambda ctx: caller), close)
        return 0
    if keys and args.user_id is not None:
        raise ConfigError(
            "--user-id is for a server without keys: with service keys, each key names the "
            "users it may use"
        )
    if args.user_id is not None:
        stdio_caller(args.user_id)  # checks it
    host = args.host or settings.host
    port = DEFAULT_PORT if args.port is None else args.port
    config.check_listen(host)
    try:
        app = http_app(build(callers(keys, args.user_id)), keys, settings, host=host)
        print(f"memreader: MCP over streamable HTTP at http://{host}:{port}/mcp", file=sys.stderr)
        serve_http(app, settings, host=host, port=port)
    finally:
        close()
    return 0
