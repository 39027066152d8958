"""``memreader recall``: tiered recall from the command line (:mod:`memreader.front.recall`).

``recall QUERY --store URL --user-id U [-k N] [--tiers category,item,resource]
[--no-sufficiency] [--rerank] [--config YAML] [--json]`` recalls the owner's categories, then
the items of the chosen categories, then the messages and document spans those items came
from, asking ``--config``'s LLM after each tier whether what was recalled answers the query
(no LLM, or ``--no-sufficiency``: every tier runs). It prints each tier with its verdict and
what it recalled, or with ``--json`` the object ``POST /v1/recall`` answers. Bad input exits 2
with one line.

Example:
    >>> from memreader.cli import parse_args
    >>> args = parse_args(["recall", "cat name", "--user-id", "ana", "--tiers", "item,resource"])
    >>> (args.command, args.query, args.tiers, args.sufficiency, args.rerank)
    ('recall', 'cat name', 'item,resource', True, False)
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from memreader.cli.store_access import add_store_flag, open_cli_memory, store_url
from memreader.errors import InputError
from memreader.scenes.clipping import one_line

__all__ = ["add_recall_parser", "run_recall"]


def add_recall_parser(commands: Any) -> None:
    """Add ``recall`` to the subcommands ``commands``."""
    command = commands.add_parser(
        "recall", help="tiered recall: categories, then items, then their sources"
    )
    command.add_argument("query", help="what to recall")
    add_store_flag(command, env=True)
    command.add_argument("--user-id", help="the owner whose memories this reads (required)")
    command.add_argument("-k", type=int, default=10, help="how many items at most")
    command.add_argument(
        "--tiers",
        default="category,item,resource",
        help="the tiers to run, comma-separated, in order (resource needs item)",
    )
    command.add_argument(
        "--no-sufficiency",
        dest="sufficiency",
        action="store_false",
        help="run every tier: do not ask the LLM after each whether it suffices",
    )
    command.add_argument("--rerank", action="store_true", help="rerank the items by the LLM")
    command.add_argument(
        "--config", help="reader config YAML: its embedder embeds the query, its LLM checks"
    )
    command.add_argument("--json", action="store_true", help="print one JSON object")


def run_recall(args: argparse.Namespace) -> int:
    """Run ``recall``; 0 when done (bad input raises :class:`~memreader.errors.InputError`)."""
    from memreader.front.recall import recall_json

    if not args.user_id or not args.user_id.strip():
        raise InputError("recall needs --user-id (every memory has an owner)")
    tiers = [tier.strip() for tier in args.tiers.split(",") if tier.strip()]
    with open_cli_memory(store_url(args), args.config) as memory:
        found = memory.recall(
            args.query,
            user_id=args.user_id,
            k=args.k,
            tiers=tiers,  # checked by recall (an InputError)
            sufficiency=args.sufficiency,
            rerank=args.rerank,
        )
    if args.json:
        print(json.dumps(recall_json(found), ensure_ascii=False, indent=1))
        return 0
    for tier in found.tiers:
        verdict = {True: "sufficient", False: "not sufficient", None: "-"}[tier.sufficient]
        print(f"[{tier.tier}] {tier.recalled} recalled, {verdict}: {tier.note}")
    for category in found.categories:
        print(f"  category {category.name}: {one_line(category.summary or '', 160)}")
    for hit in found.items:
        print(f"  item {hit.id}: {one_line(hit.text, 160)}")
    for resource in found.resources:
        print(
            f"  source {resource.memory_id}#{resource.source_index}: {one_line(resource.text, 160)}"
        )
    if not (found.categories or found.items):
        print("memreader: no memory found", file=sys.stderr)
    return 0
