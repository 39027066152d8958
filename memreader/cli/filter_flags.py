"""A search's filters as command-line flags, for ``memreader search`` and ``memreader list``:
one flag per field of :class:`~memreader.stores.filters.SearchFilters` (the ranking ones only
where something is ranked), read back into one ``SearchFilters``.

>>> import argparse
>>> parser = argparse.ArgumentParser()
>>> add_filter_flags(parser, ranking=True)
>>> args = parser.parse_args(["--memory-type", "UserMemory", "--since", "2030-01-01"])
>>> f = filters_of(args)
>>> f.types, f.since.isoformat(), f.min_score
(('UserMemory',), '2030-01-01T00:00:00+00:00', None)
"""

from __future__ import annotations

import argparse
from typing import Any

from memreader.cli.flags import add_alias, add_scope_flags
from memreader.cli.store_access import parse_time
from memreader.stores.filters import DEFAULT_MIN_SCORE, SearchFilters
from memreader.stores.hits import SEARCH_MODES

__all__ = ["add_filter_flags", "filters_of"]


def add_filter_flags(parser: Any, *, ranking: bool) -> None:
    """The filter flags on ``parser``; with ``ranking``, also ``--min-score``,
    ``--heat-weight`` and ``--mode``."""
    parser.add_argument(
        "--memory-type",
        action="append",
        metavar="TYPE",
        dest="types",
        help="memory type to keep (repeatable; default: every type)",
    )
    add_alias(parser, "--type", dest="types", action="append")
    parser.add_argument("--since", help="memories from this time on (ISO 8601; UTC if no zone)")
    parser.add_argument("--until", help="memories up to this time (ISO 8601; UTC if no zone)")
    parser.add_argument("--session-id", help="memories of this session only")
    add_alias(parser, "--session", dest="session_id")
    add_scope_flags(parser)
    parser.add_argument(
        "--category", metavar="NAME", help="memories linked to this category of the owner only"
    )
    parser.add_argument(
        "--all", action="store_true", help="superseded and expired memories too (default: active)"
    )
    if not ranking:
        return
    parser.add_argument(
        "--min-score",
        type=float,
        default=DEFAULT_MIN_SCORE,
        help="least relevance a hit keeps, 0-1 (default: no cut, as on every surface; "
        "0.08 is the measured cut for the bundled model)",
    )
    parser.add_argument(
        "--heat-weight", type=float, help="how much recorded use lifts a hit, 0-1 (the store's)"
    )
    parser.add_argument(
        "--mode",
        choices=SEARCH_MODES,
        default="hybrid",
        help="which rankings are fused: hybrid (default: text and vectors), vector or text",
    )


def filters_of(args: argparse.Namespace) -> SearchFilters:
    """The filters the flags of :func:`add_filter_flags` give.

    Raises:
        InputError: a bad time or value (the message names the flag or the filter).
    """
    ranking = {
        name: getattr(args, name)
        for name in ("min_score", "heat_weight", "mode")
        if getattr(args, name, None) is not None
    }
    return SearchFilters(
        types=args.types,
        since=parse_time(args.since, "--since"),
        until=parse_time(args.until, "--until"),
        session_id=args.session_id,
        category=args.category,
        agent_id=args.agent_id,
        task_id=args.task_id,
        include_inactive=args.all,
        **ranking,
    )
