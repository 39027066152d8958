"""``memreader maintain``, ``pin``, ``unpin`` and ``restore``: a store's life cycle from the
command line (:mod:`memreader.stores.lifecycle`).

- ``maintain --store URL [--config YAML] [--max-active N] [--purge-after-days D]
  [--dry-run] [--check] [--json] [--no-embedding]``: purge what expired or was superseded more than
  ``purge_after_days`` ago, bring every owner past the watermark down to the target, and embed
  again the active memories without a vector or with another model's than ``--config``'s
  embedder (``--no-embedding``: no repair). The settings are the config's ``lifecycle:``
  section, the flags winning. ``--dry-run`` counts what it would do and writes nothing. It
  prints one line per step and per owner, or ``--json`` the report. Safe to run twice, and to
  kill: what a run did is committed batch by batch, the next run does the rest. ``--check``
  only counts the active memories the vector search cannot find (no vector, or another
  model's than ``--config``'s embedder: :mod:`memreader.stores.lifecycle.index_check`),
  writes nothing, and exits 1 when there are some.
- ``pin ID... --store URL --user-id U`` (``unpin``): the budget never expires a pinned memory.
- ``restore ID --store URL --user-id U``: bring back a memory the budget expired.

Example:
    >>> from memreader.cli import parse_args
    >>> args = parse_args(["maintain", "--store", "sqlite:///m.db", "--dry-run", "--json"])
    >>> (args.command, args.dry_run, args.json, args.max_active)
    ('maintain', True, True, None)
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from memreader.cli.flags import add_alias
from memreader.cli.store_access import add_store_flag, open_cli_memory, store_url
from memreader.errors import InputError
from memreader.stores.lifecycle import IndexHealth
from memreader.stores.shapes import event_json

__all__ = ["LIFECYCLE_COMMANDS", "add_lifecycle_parsers", "run_lifecycle_command"]

#: The subcommands :func:`run_lifecycle_command` runs.
LIFECYCLE_COMMANDS = ("maintain", "pin", "unpin", "restore")


def add_lifecycle_parsers(commands: Any) -> None:
    """Add :data:`LIFECYCLE_COMMANDS` to the subcommands ``commands``."""
    maintain = commands.add_parser(
        "maintain",
        help="purge old expired memories, enforce the budgets, repair the vector index",
        description="purge what expired more than purge_after_days ago, bring owners past "
        "the watermark down to the target, embed again what has no usable vector, none named "
        "or another model's (see the docs' 'The life of a memory'); exits 1 when rows "
        "could not be read or repaired (the report names them)",
    )
    maintain.add_argument(
        "--config",
        help="reader config YAML: its `lifecycle:` settings and its `embedder` (the model the "
        "index is repaired with; default: the built-in local embedder)",
    )
    maintain.add_argument("--max-active", type=int, help="the budget per owner (over --config)")
    maintain.add_argument(
        "--purge-after-days", type=float, help="the purge delay in days (over --config)"
    )
    maintain.add_argument(
        "--dry-run", action="store_true", help="count what it would do; write nothing"
    )
    maintain.add_argument(
        "--no-embedding", action="store_true", help="no embedder: do not repair the index"
    )
    maintain.add_argument(
        "--check",
        action="store_true",
        help="only count the memories missing from the vector index (no vector, or another "
        "model's than --config's embedder); write nothing; exit 1 when there are some",
    )
    pin = commands.add_parser("pin", help="pin memories: the budget never expires them")
    unpin = commands.add_parser("unpin", help="unpin memories")
    for command in (pin, unpin):
        command.add_argument("ids", nargs="+", metavar="ID", help="memory ids")
    restore = commands.add_parser("restore", help="bring back a memory the budget expired")
    restore.add_argument("memory_id", metavar="ID", help="the expired memory")
    for command in (maintain, pin, unpin, restore):
        add_store_flag(command, env=True)
        command.add_argument("--json", action="store_true", help="print the result as JSON")
    for command in (pin, unpin, restore):
        command.add_argument("--user-id", help="the owner of the memories (required)")
        add_alias(command, "--user", dest="user_id")


def run_lifecycle_command(args: argparse.Namespace) -> int:
    """Run one of :data:`LIFECYCLE_COMMANDS`; 0 when done (errors are raised, typed, and exit
    2: a bad setting is a :class:`~memreader.errors.ConfigError`, an unknown memory an
    :class:`~memreader.errors.UnknownMemoryError`)."""
    url = store_url(args)
    if args.command == "maintain":
        return _maintain(args, url)
    if not args.user_id or not args.user_id.strip():
        raise InputError(f"{args.command} needs --user-id (every memory has an owner)")
    with open_cli_memory(url, embeds=False) as memory:
        if args.command == "restore":
            event = memory.restore(args.memory_id, user_id=args.user_id)
            out: Any = event_json(event)
            line = f"{event.event:<9} {event.memory_id}  {event.reason}"
        else:
            call = memory.pin if args.command == "pin" else memory.unpin
            changed = call(args.ids, user_id=args.user_id)
            out = {"changed": changed, "pinned": memory.store.pinned(user_id=args.user_id)}
            line = f"{args.command}ned {changed} of {len(set(args.ids))} memories"
    print(json.dumps(out, ensure_ascii=False, indent=1) if args.json else line)
    return 0


def _maintain(args: argparse.Namespace, url: str) -> int:
    from memreader.config_files import read_yaml_config
    from memreader.factory import MemReaderConfigFactory
    from memreader.stores.lifecycle import LifecycleConfig

    raw = read_yaml_config(args.config) if args.config else {}
    reader = MemReaderConfigFactory.from_dict(raw).config
    settings = reader.lifecycle.model_dump() if reader.lifecycle is not None else {}
    if args.max_active is not None:
        settings["max_active"] = args.max_active
    if args.purge_after_days is not None:
        settings["purge_after_days"] = args.purge_after_days
    LifecycleConfig.model_validate(settings)  # a bad flag fails before the store is opened
    embeds = not args.no_embedding and reader.embedder is not None
    opened = open_cli_memory(url, args.config, embeds=embeds, lifecycle=settings, check_index=False)
    with opened as memory:
        if args.check:
            return _check(memory.index_health(), args.json)
        report = memory.maintain(dry_run=args.dry_run)
    if args.json:
        print(json.dumps(report.to_dict(), ensure_ascii=False, indent=1))
    else:
        print("\n".join(report.lines()))
    return 0 if report.complete else 1  # rows left unrepaired are not a success


def _check(health: IndexHealth, as_json: bool) -> int:
    if as_json:
        print(json.dumps(health.to_dict(), ensure_ascii=False, indent=1))
    elif health.text_only:
        print(f"{health.store}: {health.active} active memories; opened text only (no index)")
    elif health.ok:
        print(f"{health.store}: all {health.active} active memories are in the vector index")
    else:
        print(health.message())
    return 0 if health.ok else 1
