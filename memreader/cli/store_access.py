"""How the store commands (:mod:`memreader.cli.stores`, :mod:`memreader.cli.direct_writes`)
reach a store: ``--store`` (or ``$MEMREADER_STORE``), the embedder ``--config`` names, the store
opened with it (:func:`open_cli_store`), and ISO times given as flags.

Example:
    >>> parse_time("2026-01-31T12:00", "--since").isoformat()
    '2026-01-31T12:00:00+00:00'
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from memreader.errors import InputError

if TYPE_CHECKING:
    from memreader.stores import MemoryStore

__all__ = [
    "STORE_ENV",
    "add_store_flag",
    "open_cli_store",
    "parse_time",
    "query_embedder",
    "store_url",
]

#: The environment variable ``--store`` defaults to.
STORE_ENV = "MEMREADER_STORE"


def add_store_flag(command: argparse.ArgumentParser, *, env: bool) -> None:
    """Add ``--store URL`` to ``command`` (``env``: it defaults to ``$MEMREADER_STORE``)."""
    default = f" (default: ${STORE_ENV})" if env else ""
    command.add_argument(
        "--store", help=f"memory store URL: sqlite:///memories.db or postgresql://...{default}"
    )


def store_url(args: argparse.Namespace) -> str:
    """The store ``args`` name: ``--store``, else ``$MEMREADER_STORE``.

    Raises:
        InputError: neither is set (the message names the command).
    """
    url: str | None = args.store or os.environ.get(STORE_ENV)
    if not url:
        raise InputError(f"{args.command} needs --store URL (or ${STORE_ENV})")
    return url


def open_cli_store(url: str, embedder: Any = None, *, create: bool = False) -> MemoryStore:
    """The store ``url`` names, searching with ``embedder``; ``None`` opens it text only, which
    a command asks for by flag (``--no-embedding``, ``--mode text``), by config
    (``embedder: null``) or by never searching. A ``sqlite://`` file must exist unless
    ``create`` (``add`` may start a store, as ``read --store`` does).

    Raises:
        InputError: the SQLite file does not exist (and not ``create``).
        ConfigError, StoreError: as :func:`memreader.stores.open_store`.
    """
    from memreader.batch.job import sqlite_file
    from memreader.stores import open_store
    from memreader.stores.urls import public_url

    file = sqlite_file(url)
    if not create and file is not None and file != ":memory:" and not os.path.exists(file):
        raise InputError(f"no memory store at {public_url(url)} (no such file)")
    return open_store(url, embedder=embedder, text_only=embedder is None)


def query_embedder(config_path: str | None) -> Any:
    """The embedder of the reader config at ``config_path`` (default: the built-in one), or
    ``None`` when that config has ``embedder: null``."""
    from memreader.config import read_yaml_config
    from memreader.embedders import build_embedder
    from memreader.factory import MemReaderConfigFactory

    raw = read_yaml_config(config_path) if config_path else {}
    settings = MemReaderConfigFactory.from_dict(raw).config.embedder
    return build_embedder(settings) if settings is not None else None


@contextmanager
def cli_embedder(config_path: str | None, *, off: bool) -> Iterator[Any]:
    """:func:`query_embedder` (``None`` when ``off``), closed when the block ends."""
    embedder = None if off else query_embedder(config_path)
    try:
        yield embedder
    finally:
        close = getattr(embedder, "close", None)
        if callable(close):
            close()


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
