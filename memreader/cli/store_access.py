"""How the store commands (:mod:`memreader.cli.stores`, :mod:`memreader.cli.direct_writes`,
:mod:`memreader.cli.context`, :mod:`memreader.cli.lifecycle`) reach a store: through a
:class:`~memreader.Memory` (:func:`open_cli_memory`) on the store ``--store`` names, else
``$MEMREADER_STORE``, else the home store every surface shares (:mod:`memreader.front.home`:
``$MEMREADER_HOME/memories.db``); and ISO times given as flags.

Example:
    >>> parse_time("2026-01-31T12:00", "--since").isoformat()
    '2026-01-31T12:00:00+00:00'
"""

from __future__ import annotations

import argparse
import os
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from memreader.errors import InputError

if TYPE_CHECKING:
    from memreader.front import Memory

__all__ = [
    "STORE_ENV",
    "add_store_flag",
    "open_cli_memory",
    "parse_time",
    "store_url",
]

#: The environment variable ``--store`` defaults to.
STORE_ENV = "MEMREADER_STORE"


def add_store_flag(command: argparse.ArgumentParser, *, env: bool) -> None:
    """Add ``--store URL`` to ``command`` (``env``: it defaults to ``$MEMREADER_STORE``, then
    the home store)."""
    default = f" (default: ${STORE_ENV}, else $MEMREADER_HOME/memories.db)" if env else ""
    command.add_argument(
        "--store", help=f"memory store URL: sqlite:///memories.db or postgresql://...{default}"
    )


def store_url(args: argparse.Namespace) -> str:
    """The store ``args`` name: ``--store``, else ``$MEMREADER_STORE``, else the home store
    that ``Memory()`` and ``memreader mcp`` use (:func:`~memreader.front.home.default_store_url`).
    """
    from memreader.front.home import default_store_url

    url: str | None = args.store or os.environ.get(STORE_ENV)
    return url or default_store_url()


def open_cli_memory(
    url: str,
    config_path: str | None = None,
    *,
    embeds: bool = True,
    create: bool = False,
    lifecycle: dict[str, Any] | None = None,
    check_index: bool = True,
) -> Memory:
    """A :class:`~memreader.Memory` on the store ``url``, with the reader config at
    ``config_path`` (default: the built-in one): its embedder embeds queries and texts, its
    categories and lifecycle are kept as ``Memory`` keeps them. ``embeds=False`` opens it text
    only, which a command asks for by flag (``--no-embedding``, ``--mode text``) or by never
    searching; ``lifecycle`` replaces the config's; ``check_index=False``: no index check on
    open (``maintain`` counts and repairs it itself). A ``sqlite://`` file must exist unless
    ``create`` (``add`` may start a store, as ``read --store`` does).

    Raises:
        InputError: the SQLite file does not exist (and not ``create``).
        ConfigError, StoreError: as :class:`~memreader.Memory`.
    """
    from memreader.config_files import read_yaml_config
    from memreader.front import Memory
    from memreader.stores.urls import public_url, sqlite_file

    file = sqlite_file(url)
    if not create and file is not None and file != ":memory:" and not os.path.exists(file):
        raise InputError(f"no memory store at {public_url(url)} (no such file)")
    raw = read_yaml_config(config_path) if config_path else {}
    settings = dict(raw.get("config") or {})
    if not embeds:
        settings["embedder"] = None
    if lifecycle is not None:
        settings["lifecycle"] = lifecycle
    if not check_index:
        settings["index"] = {"on_open": "ignore"}
    return Memory({**raw, "config": settings}, store=url)


def parse_time(text: str | None, flag: str) -> datetime | None:
    """``text`` (ISO 8601; UTC when it has no zone) as a datetime; ``None`` stays ``None``.

    Raises:
        InputError: not an ISO 8601 time (the message names ``flag``).
    """
    if text is None:
        return None
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise InputError(f"{flag} {text!r} is not an ISO 8601 time (2026-01-31T12:00Z)") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=timezone.utc)
