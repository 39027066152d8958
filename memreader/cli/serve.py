"""``memreader serve`` (the HTTP service on uvicorn) and ``memreader key`` (a new API key and
the config entry that admits it)."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memreader.cli.flags import add_alias
from memreader.errors import ConfigError, InputError

__all__ = ["add_serve_parsers", "run_key", "run_serve"]


def add_serve_parsers(commands: Any) -> None:
    """Add ``serve`` and ``key`` to the subcommands."""
    text = "serve the reader and the store over HTTP (and the web page at /ui)"
    serve = commands.add_parser("serve", help=text, description=text)
    serve.add_argument(
        "--config",
        default=None,
        help="a reader YAML with an optional `service:` section (default: the built-in local "
        "reader); without a `store:`, the store is memories.db in $MEMREADER_HOME, else the "
        "user data folder (where Memory() and memreader mcp keep theirs)",
    )
    serve.add_argument("--host", default=None, help="address to listen on (default 127.0.0.1)")
    serve.add_argument("--port", type=int, default=None, help="port (default 8765)")
    serve.add_argument(
        "--workers",
        type=int,
        default=None,
        help="processes serving requests (default: service.workers, else the cores available); "
        "they share per-key limits, Idempotency-Key answers and jobs through service.state",
    )
    serve.add_argument(
        "--pin-workers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="give each worker cores of its own (default: service.pin_workers, else auto: "
        "when there are several workers and no more than the cores)",
    )
    serve.add_argument(
        "--log-level",
        default="info",
        choices=["critical", "error", "warning", "info", "debug"],
        help="the server's log level",
    )
    text = "make a new API key: prints the key once, and the entry for service.keys"
    key = commands.add_parser("key", help=text, description=text)
    key.add_argument("--name", required=True, help="the key's name (logs, metrics, jobs)")
    key.add_argument(
        "--user-ids",
        dest="users",
        metavar="IDS",
        help="comma-separated user ids it may use, or '*' for all (required)",
    )
    add_alias(key, "--users", dest="users")


def run_key(args: argparse.Namespace) -> int:
    """Print a new key (stderr says to keep it) and its config entry (stdout, YAML)."""
    from memreader.service.keys import ApiKey, hash_key, new_key

    users = [user.strip() for user in (args.users or "").split(",") if user.strip()]
    if not users:
        raise InputError("key needs --user-ids ID[,ID...] (or '*' for every user)")
    key = new_key()
    entry = ApiKey(name=args.name, sha256=hash_key(key), users=users)
    print(f"key (shown once; give it to the client): {key}", file=sys.stderr)
    print("keys:")
    print(f"  - name: {json.dumps(entry.name)}")
    print(f"    sha256: {entry.sha256}")
    print(f"    users: {json.dumps(entry.users)}")
    return 0


def run_serve(args: argparse.Namespace) -> int:
    """Build the app from the config and run it until interrupted."""
    try:
        from memreader.cores import available_cores
        from memreader.service import ServiceConfig, load_service_config
        from memreader.service.workers import serve_workers
    except ImportError as exc:
        raise ConfigError(
            f"memreader serve needs the service extra ({exc.name} is missing): "
            "pip install 'memreader-ai[service]'"
        ) from None
    from memreader.factory import MemReaderConfigFactory

    config = (
        load_service_config(args.config) if args.config else ServiceConfig(MemReaderConfigFactory())
    ).or_home_store()  # one home: what Memory() adds, the service shows
    settings = config.settings
    host = args.host or settings.host
    port = settings.port if args.port is None else args.port
    config.check_listen(host)
    workers = args.workers or settings.workers or available_cores()
    if args.pin_workers is not None:
        config.settings = settings = settings.model_copy(update={"pin_workers": args.pin_workers})
    if workers < 1:
        raise InputError("--workers must be at least 1")
    from memreader.stores.urls import public_url

    print(
        f"memreader: serving {public_url(config.store_url or '')} on http://{host}:{port}/ "
        f"(page: /ui/, API: /docs), {workers} worker(s)",
        file=sys.stderr,
    )
    serve_workers(config, host=host, port=port, log_level=args.log_level, workers=workers)
    return 0
