"""``memreader mcp``: the MCP server (:mod:`memreader.mcp`) over stdio, or over streamable
HTTP with ``--http``; the reader and the store come from the config ``memreader serve`` reads
(``--config``, else ``$MEMREADER_CONFIG``, else the built-in local reader and the per-user store
of ``Memory()``).

``$MEMREADER_CONFIG`` is there for MCP clients: each starts its servers from a JSON or TOML entry
whose ``env`` is the idiomatic place for a server's settings (see
``docs/integrations/coding-agents.md``). Clients do not as a rule expand ``~`` in their entries,
so a config path given either way has its ``~`` expanded here, as ``$MEMREADER_HOME`` has.
"""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from memreader.errors import ConfigError, InputError

if TYPE_CHECKING:
    from memreader.service.config import ServiceConfig

__all__ = ["CONFIG_ENV", "DEFAULT_PORT", "add_mcp_parser", "config_path", "run_mcp"]

#: The port of ``memreader mcp --http`` (``memreader serve`` has 8765).
DEFAULT_PORT = 8766
#: The environment variable ``--config`` defaults to.
CONFIG_ENV = "MEMREADER_CONFIG"


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
        f"(default: ${CONFIG_ENV}, else the built-in local reader; store: "
        "$MEMREADER_HOME/memories.db)",
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


def config_path(args: argparse.Namespace) -> str | None:
    """The reader config to serve: ``--config``, else ``$MEMREADER_CONFIG`` (an empty value is
    unset), ``~`` expanded; ``None``: the built-in one.

    >>> named = config_path(argparse.Namespace(config="~/reader.yaml"))
    >>> named == os.path.expanduser("~/reader.yaml") and not named.startswith("~")
    True
    """
    named: str | None = args.config or os.environ.get(CONFIG_ENV) or None
    return None if named is None else os.path.expanduser(named)


def _load_config(args: argparse.Namespace) -> ServiceConfig:
    """The service config :func:`config_path` names (a failure to read one the environment
    named says so: a client's config file is where to look)."""
    from memreader.factory import MemReaderConfigFactory
    from memreader.service.config import ServiceConfig, load_service_config

    path = config_path(args)
    if path is None:
        return ServiceConfig(MemReaderConfigFactory())
    if args.config:
        return load_service_config(path)
    try:
        return load_service_config(path)
    except ConfigError as exc:
        raise ConfigError(f"${CONFIG_ENV}: {exc}") from None


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
    from memreader.service.keys import KeyRing
    from memreader.service.reading import http_reader_config

    config = _load_config(args)
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
