"""``memreader context``: the best memory text of one owner that fits a token budget, as one
block for a system prompt (:meth:`memreader.stores.MemoryStore.context`).

``context QUERY --store URL --user-id U [--max-tokens N] [--tokenizer NAME] [-k N]
[--order time|score] [--session-id S] [--memory-type T ...] [--since ISO] [--until ISO]
[--category NAME] [--mode hybrid|vector|text] [--config YAML] [--no-embedding] [--rerank]
[--json]``
prints the block itself (nothing when no memory matched: ``no memory found`` on stderr), or
with ``--json`` the object ``POST /v1/context`` answers (the block, its token count and its
parts: memory ids, spans, scores, times, sources). Only active memories are shown. The query
is embedded as ``search`` embeds it (``--config``'s embedder, default the built-in local one;
``--no-embedding`` or ``--mode text``: full-text only; ``--rerank``: packed in the order
``--config``'s LLM ranks the memories). Bad input exits 2 with one line.

Example:
    >>> from memreader.cli import parse_args
    >>> args = parse_args(["context", "cat name", "--user-id", "ana", "--max-tokens", "300"])
    >>> (args.command, args.query, args.max_tokens, args.tokenizer, args.order)
    ('context', 'cat name', 300, 'cl100k_base', 'time')
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memreader.cli.flags import add_alias, add_scope_flags, scope_args
from memreader.cli.stores import RERANK_HELP
from memreader.errors import InputError
from memreader.stores.base import SEARCH_MODES
from memreader.stores.context import (
    CONTEXT_ORDERS,
    DEFAULT_CONTEXT_K,
    DEFAULT_CONTEXT_TOKENS,
    DEFAULT_TOKENIZER,
    check_context_args,
    context_json,
)

__all__ = ["add_context_parser", "run_context"]


def add_context_parser(commands: Any) -> None:
    """Add ``context`` to the subcommands ``commands``."""
    from memreader.cli.store_access import add_store_flag

    command = commands.add_parser(
        "context", help="the best memory text within a token budget, as a block for a prompt"
    )
    command.add_argument("query", help="what the prompt is about")
    add_store_flag(command, env=True)
    command.add_argument("--user-id", help="the owner whose memories this reads (required)")
    add_alias(command, "--user", dest="user_id")
    command.add_argument(
        "--max-tokens",
        type=int,
        default=DEFAULT_CONTEXT_TOKENS,
        help=f"the block's budget, in tokens (default: {DEFAULT_CONTEXT_TOKENS})",
    )
    command.add_argument(
        "--tokenizer",
        default=DEFAULT_TOKENIZER,
        help=f"the tokenizer the budget is counted with (default: {DEFAULT_TOKENIZER})",
    )
    command.add_argument(
        "-k",
        type=int,
        default=DEFAULT_CONTEXT_K,
        help=f"how many memories are searched (default: {DEFAULT_CONTEXT_K})",
    )
    command.add_argument(
        "--order",
        choices=CONTEXT_ORDERS,
        default="time",
        help="memories oldest first (time, the default) or best first (score)",
    )
    command.add_argument("--session-id", help="memories of this session only")
    add_scope_flags(command)
    command.add_argument(
        "--memory-type", action="append", metavar="TYPE", dest="types", help="(repeatable)"
    )
    command.add_argument("--since", help="memories from this time on (ISO 8601; UTC if no zone)")
    command.add_argument("--until", help="memories up to this time (ISO 8601; UTC if no zone)")
    command.add_argument("--category", metavar="NAME", help="memories of this category only")
    command.add_argument("--mode", choices=SEARCH_MODES, default="hybrid", help="as search's")
    command.add_argument(
        "--config", help="reader config YAML whose `embedder` embeds the query (as search's)"
    )
    command.add_argument(
        "--no-embedding", action="store_true", help="full-text search only (no query vector)"
    )
    command.add_argument("--rerank", action="store_true", help=RERANK_HELP)
    command.add_argument("--json", action="store_true", help="print one JSON object")


def run_context(args: argparse.Namespace) -> int:
    """Run ``context``; 0 when done (bad input raises :class:`~memreader.errors.InputError`)."""
    from memreader.cli.store_access import open_cli_memory, parse_time, store_url

    url = store_url(args)
    if not args.user_id or not args.user_id.strip():
        raise InputError("context needs --user-id (every memory has an owner)")
    # Checked before a model is loaded.
    check_context_args(args.query, args.max_tokens, args.tokenizer, args.order)
    since, until = parse_time(args.since, "--since"), parse_time(args.until, "--until")
    if args.no_embedding and args.mode == "vector":
        raise InputError("--mode vector needs a query vector: drop --no-embedding")
    off = args.no_embedding or args.mode == "text"
    with open_cli_memory(url, args.config, embeds=not off) as memory:
        found = memory.context(
            args.query,
            user_id=args.user_id,
            max_tokens=args.max_tokens,
            tokenizer=args.tokenizer,
            k=args.k,
            order=args.order,
            types=args.types,
            since=since,
            until=until,
            session_id=args.session_id,
            mode=args.mode,
            category=args.category,
            rerank=args.rerank,
            **scope_args(args),
        )
    if found.rerank_fallback:
        print(f"memreader: the search's order stands: {found.rerank_fallback}", file=sys.stderr)
    if args.json:
        print(json.dumps(context_json(found), ensure_ascii=False, indent=1))
    elif found.text:
        print(found.text)
    else:
        print("memreader: no memory found", file=sys.stderr)
    return 0
