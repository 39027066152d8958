"""``memreader add``, ``memreader update`` and ``memreader delete``: one memory written,
replaced or deleted from the command line (:mod:`memreader.stores.direct_writes`).

- ``add TEXT --store URL --user-id U [--session-id S] [--memory-type T] [--importance X]
  [--valid-from ISO] [--metadata JSON] [--json]``: store ``TEXT`` as one memory (``ADD``;
  ``REINFORCE`` when the owner has it already; ``NONE`` when this very memory is stored). A
  ``sqlite://`` file that does not exist yet is created, as ``read --store`` does;
- ``update ID TEXT --store URL --user-id U [--reason R] [--json]``: a new version of memory
  ``ID`` (a new id; the old one ``superseded``, its history kept);
- ``delete ID --store URL --user-id U [--erase] [--json]``: the memory expires (history
  kept); ``--erase`` erases it from every place its text lives, for good (irreversible,
  for erasure requests), and prints the erase receipt after the event
  (:mod:`memreader.cli.receipts`; with ``--json``, the event's ``receipt``).

Each prints the write event: one line (``EVENT MEMORY_ID  REASON``), or with ``--json`` the
JSON object the service answers (:func:`~memreader.stores.shapes.event_json`). The text is
embedded with the embedder ``search`` uses (``--config``'s, default the built-in local one;
``--no-embedding``: none). A memory id the owner does not have, or bad input, exits 2 with
one line.

Example:
    >>> from memreader.cli import parse_args
    >>> args = parse_args(["add", "Ana is vegetarian", "--user-id", "u1", "--importance", "0.9"])
    >>> (args.command, args.text, args.importance)
    ('add', 'Ana is vegetarian', 0.9)
"""

from __future__ import annotations

import argparse
import json
from typing import TYPE_CHECKING, Any

from memreader.cli.flags import add_alias, add_scope_flags, scope_args
from memreader.cli.receipts import print_receipt
from memreader.cli.store_access import (
    add_store_flag,
    open_cli_memory,
    parse_time,
    store_url,
)
from memreader.errors import InputError
from memreader.items import MEMORY_TYPES, MemoryType
from memreader.stores import EraseReceipt
from memreader.stores.shapes import event_json

if TYPE_CHECKING:
    from memreader.front import Memory
    from memreader.stores import WriteEvent

__all__ = ["WRITE_COMMANDS", "add_write_parsers", "run_write_command"]

#: The subcommands :func:`run_write_command` runs.
WRITE_COMMANDS = ("add", "update", "delete")


def add_write_parsers(commands: Any) -> None:
    """Add ``add``, ``update`` and ``delete`` to the subcommands ``commands``."""
    add = commands.add_parser("add", help="store one memory given as text")
    add.add_argument("text", metavar="TEXT", help="the memory, e.g. 'Ana is vegetarian'")
    add.add_argument(
        "--session-id", help="the session it is filed under (default: direct, when not given)"
    )
    add_alias(add, "--session", dest="session_id")
    add_scope_flags(add, visibility=True)
    add.add_argument(
        "--memory-type",
        choices=MEMORY_TYPES,
        default=MemoryType.LONG_TERM.value,
        help="the memory's type",
    )
    add.add_argument("--importance", type=float, help="how much it matters, in [0, 1]")
    add.add_argument(
        "--valid-from", metavar="ISO", help="when the fact began to hold (ISO 8601; UTC if no zone)"
    )
    add.add_argument("--metadata", metavar="JSON", help="a JSON object kept with the memory")
    update = commands.add_parser("update", help="replace one memory with a new version")
    update.add_argument("memory_id", metavar="ID", help="the active memory to replace")
    update.add_argument("text", metavar="TEXT", help="the new version's text")
    update.add_argument("--reason", help="why it changed, kept in its history")
    delete = commands.add_parser("delete", help="delete one memory (history kept)")
    delete.add_argument("memory_id", metavar="ID", help="the memory to delete")
    delete.add_argument(
        "--erase",
        action="store_true",
        help="erase it from every place its text lives (its row, history, text index, "
        "passages, links, use record; its text in its neighbours' history, its later versions' "
        "sources and its category summaries) and print the receipt: IRREVERSIBLE (without it "
        "the memory only expires and its history is kept)",
    )
    for command in (add, update, delete):
        _add_common(command)


def _add_common(command: argparse.ArgumentParser) -> None:
    add_store_flag(command, env=True)
    command.add_argument("--user-id", help="the owner of the memory (required)")
    add_alias(command, "--user", dest="user_id")
    command.add_argument("--json", action="store_true", help="print the write event as JSON")
    if command.prog.split()[-1] != "delete":
        command.add_argument(
            "--config",
            help="reader config YAML whose `embedder` embeds the text (default: the built-in "
            "local embedder; use the one search uses)",
        )
        command.add_argument(
            "--no-embedding", action="store_true", help="store the memory without a vector"
        )


def run_write_command(args: argparse.Namespace) -> int:
    """Run one of :data:`WRITE_COMMANDS`; 0 when done (errors are raised, typed: an unknown id
    is :class:`~memreader.errors.UnknownMemoryError`, bad input
    :class:`~memreader.errors.InputError`, both exit 2)."""
    url = store_url(args)
    if not args.user_id or not args.user_id.strip():
        raise InputError(f"{args.command} needs --user-id (every memory has an owner)")
    # Checked before a model is loaded or a store file created.
    if args.command != "delete" and not args.text.strip():
        raise InputError(f"{args.command}: a memory's text must not be empty")
    fields = _add_fields(args) if args.command == "add" else {}
    off = args.command == "delete" or args.no_embedding
    config = None if args.command == "delete" else args.config
    # add may start a store, as read --store does; update and delete need one that exists.
    create = args.command == "add"
    with open_cli_memory(url, config, embeds=not off, create=create) as memory:
        done = _write(args, memory, fields)
    event = done[0] if isinstance(done, EraseReceipt) else done
    if args.json:
        shown = event_json(event)
        if isinstance(done, EraseReceipt):
            shown["receipt"] = done.to_dict(events=False)
        print(json.dumps(shown, ensure_ascii=False, indent=1))
        return 0
    print(f"{event.event:<9} {event.memory_id}  {event.reason}")
    if isinstance(done, EraseReceipt):
        print_receipt(done)
    return 0


def _write(
    args: argparse.Namespace, memory: Memory, fields: dict[str, Any]
) -> WriteEvent | EraseReceipt:
    if args.command == "add":
        return memory.add_memory(args.text, user_id=args.user_id, **fields)
    if args.command == "update":
        return memory.update(args.memory_id, args.text, user_id=args.user_id, reason=args.reason)
    erase: bool = args.erase
    return memory.delete(args.memory_id, user_id=args.user_id, erase=erase)


def _add_fields(args: argparse.Namespace) -> dict[str, Any]:
    """``add``'s optional fields, checked (the store checks the rest, naming each)."""
    metadata = None
    if args.metadata is not None:
        try:
            metadata = json.loads(args.metadata)
        except json.JSONDecodeError as exc:
            raise InputError(f"--metadata is not JSON: {exc}") from None
        if not isinstance(metadata, dict):
            raise InputError(f"--metadata must be a JSON object, got {args.metadata!r}")
    if args.importance is not None and not 0.0 <= args.importance <= 1.0:
        raise InputError(f"--importance must be in [0, 1], got {args.importance}")
    return {
        "session_id": args.session_id,
        "memory_type": args.memory_type,
        "importance": args.importance,
        "valid_from": parse_time(args.valid_from, "--valid-from"),
        "metadata": metadata,
        **scope_args(args),
    }
