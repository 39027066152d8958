"""The ``memreader`` command line.

One subcommand per module that runs it: ``read`` (:mod:`memreader.cli.read`: scenes or a
document into one JSON item per line), ``models`` (:mod:`memreader.embedders.cli`: the local
embedder's files), ``ingest`` and ``refine`` (:mod:`memreader.batch.cli`: batch jobs),
``search``, ``history``, ``forget`` and ``export-md`` (:mod:`memreader.cli.stores`: a memory
store), ``context`` (:mod:`memreader.cli.context`: the best memory text within a token budget),
``recall`` (:mod:`memreader.cli.recall`: categories, then items, then their sources),
``add``, ``update`` and ``delete`` (:mod:`memreader.cli.direct_writes`: one memory),
``maintain``, ``pin``, ``unpin`` and ``restore`` (:mod:`memreader.cli.lifecycle`: purge, budgets,
index repair),
``serve`` and ``key`` (:mod:`memreader.cli.serve`: the HTTP service), ``mcp``
(:mod:`memreader.cli.mcp`: the MCP server, stdio or HTTP), ``eval`` (:mod:`memreader.cli.eval`:
retrieval measured on a file of conversations and questions with evidence).

The global flags (``-v``/``--verbose``: ``-v`` info, ``-vv`` debug) go before or after the
subcommand: ``memreader -v read chat.json`` and ``memreader read chat.json -v`` are the same.

Every command's exit status says what a script needs to know:

===  ==========================================================================================
0    nothing failed
1    something failed, and stderr says what: ``read``, the windows that fell back to raw items
     or gave no item, the parts (files, images, audio) that could not be read, the images
     that could not be described, the items left without a vector; ``ingest`` and ``refine``,
     the inputs, scenes and windows that failed (see the job's errors file); any command, an
     unexpected error (one line; its traceback only with ``-v``)
2    the call itself was wrong: bad flags, a bad config or job file, an input file that cannot
     be read or has the wrong shape, an output that cannot be written, a store that does not
     exist, a memory id the owner does not have (one line on stderr)
130  interrupted (Ctrl-C); ``ingest`` and ``refine`` were cancelled: run them again for the rest
===  ==========================================================================================

By command: ``read`` 0, 1, 2; ``ingest`` and ``refine`` 0, 1, 2, 130 (``--dry-run``: 0 or 2);
``search``, ``context`` and ``recall`` 0 (also when nothing matches: ``no memory found`` on
stderr) or 2;
``history`` 0 or 2; ``forget`` 0 (also when nothing came from that source) or 2; ``export-md``
0 or 2; ``add``, ``update`` and ``delete`` 0 or 2 (2 also for a memory id the owner does not have);
``maintain``, ``pin``, ``unpin`` and ``restore`` 0 or 2;
``models build`` and ``models info`` 0 or 2 (an int8 check that fails is not a failure: fp32 is
used); ``serve`` and ``mcp`` 0 once stopped, 2 for a bad config or a missing extra; ``key`` 0;
``eval`` 0 or 2 (2: a file or flag it cannot use, a kept store already there).
Never a traceback, unless ``-v``.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from memreader._version import __version__
from memreader.cli.context import add_context_parser, run_context
from memreader.cli.direct_writes import WRITE_COMMANDS, add_write_parsers, run_write_command
from memreader.cli.eval import add_eval_parser, run_eval
from memreader.cli.flags import HelpFormatter
from memreader.cli.lifecycle import (
    LIFECYCLE_COMMANDS,
    add_lifecycle_parsers,
    run_lifecycle_command,
)
from memreader.cli.mcp import add_mcp_parser, run_mcp
from memreader.cli.read import add_read_parser, run_read
from memreader.cli.recall import add_recall_parser, run_recall
from memreader.cli.serve import add_serve_parsers, run_key, run_serve
from memreader.cli.stores import STORE_COMMANDS, add_store_parsers, run_store_command
from memreader.embedders.cli import add_models_parser, run_models
from memreader.errors import MemReaderError

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILURE", "EXIT_INTERRUPTED", "build_parser", "main"]

logger = logging.getLogger(__name__)

EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1
EXIT_INTERRUPTED = 130

#: The exit codes, as ``memreader --help`` shows them.
EXIT_CODES_HELP = """\
exit status (every command):
  0    nothing failed
  1    something failed; stderr says what (read: windows that fell back or gave no item,
       parts not read, images not described, items without a vector; ingest/refine: inputs,
       scenes or windows that failed, see the errors file), or an unexpected error
  2    the call itself was wrong: bad flags, config or job file, an unreadable input or
       output, a store that does not exist (one line on stderr)
  130  interrupted (Ctrl-C; ingest/refine: cancelled, run again for the rest)
search, history, forget, export-md, add, update, delete, maintain, pin, unpin, restore, models,
serve, mcp, key and eval fail only with 2 (or 1 for an unexpected error; 2 also for a memory id the
owner does not have): a search that finds nothing, or a forget that matches nothing, exits 0.

global flags (before or after the subcommand): -v info, -vv debug"""

#: The exit codes each subcommand's ``--help`` shows.
_COMMAND_EXIT_CODES = {
    "read": "exit status: 0 nothing failed; 1 a window fell back or gave no item, a part could "
    "not be read, an image could not be described or an item has no vector (stderr counts "
    "each); 2 the call was wrong (flags, config, input, output)",
    "ingest": "exit status: 0 nothing failed; 1 an input, scene or window failed (see the "
    "errors file); 2 the job file or an input could not be used; 130 cancelled",
    "*": "exit status: 0 done; 2 the call was wrong (flags, config, store); 1 an unexpected error",
}
_COMMAND_EXIT_CODES["refine"] = _COMMAND_EXIT_CODES["ingest"]

_HELP_VERBOSE = "log more (-vv: debug); also after the subcommand"
# Where -v after a subcommand goes (summed with the one before it by parse_args).
_VERBOSE_AFTER = "verbose_after_command"


class _CommandParser(argparse.ArgumentParser):
    """A subcommand's parser: it takes the global flags too, so ``memreader read x.json -v``
    works as ``memreader -v read x.json`` does. Its ``-v`` counts into its own field (absent
    unless given), so it neither resets nor hides the one given before the subcommand."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kwargs)
        self.add_argument(
            "-v",
            "--verbose",
            action="count",
            dest=_VERBOSE_AFTER,
            default=argparse.SUPPRESS,
            help=_HELP_VERBOSE,
        )


def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``memreader`` subcommand (use :func:`parse_args`, which sums ``-v``
    before and after the subcommand)."""
    parser = argparse.ArgumentParser(
        prog="memreader",
        description="memreader: conversations and documents into memory items, and a memory "
        "store to search (memreader COMMAND --help for each command)",
        epilog=EXIT_CODES_HELP,
        formatter_class=HelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"memreader {__version__}")
    parser.add_argument("-v", "--verbose", action="count", default=0, help=_HELP_VERBOSE)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_CommandParser)
    add_read_parser(commands)
    add_models_parser(commands)
    _add_job_parsers(commands)
    add_store_parsers(commands)
    add_context_parser(commands)
    add_recall_parser(commands)
    add_write_parsers(commands)
    add_lifecycle_parsers(commands)
    add_serve_parsers(commands)
    add_mcp_parser(commands)
    add_eval_parser(commands)
    for name, sub in commands.choices.items():
        sub.epilog = _COMMAND_EXIT_CODES.get(name, _COMMAND_EXIT_CODES["*"])
    return parser


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    """The parsed command line; ``verbose`` counts ``-v`` before and after the subcommand."""
    args = build_parser().parse_args(argv)
    args.verbose += vars(args).pop(_VERBOSE_AFTER, 0)
    return args


def _add_job_parsers(commands: Any) -> None:
    """``ingest`` and ``refine``: the batch jobs, run by :mod:`memreader.batch.cli`."""
    for name, text in (
        ("ingest", "run a batch job: read every input of a job file into items (resumable)"),
        ("refine", "run a refinement job: fine items from JSONL of fast items (resumable)"),
    ):
        job = commands.add_parser(name, help=text, description=text)
        job.add_argument("job", help="the job file (YAML; see the docs' Batch ingestion)")
        job.add_argument(
            "--restart", action="store_true", help="ignore the manifest: read every input again"
        )
        job.add_argument(
            "--quiet", action="store_true", help="errors only: no progress bar, warnings or summary"
        )
        job.add_argument(
            "--no-check",
            action="store_true",
            help="do not check the reader's LLM first (by default, for a fine job or refine, "
            "each slot answers one tiny request before any input, or the job exits 2 naming "
            "the slot and URL)",
        )
        if name == "ingest":
            job.add_argument(
                "--dry-run",
                action="store_true",
                help="list the inputs and the windows they make, without LLM calls or embeddings",
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memreader`` console script: the exit status (see the module
    docstring): 0 nothing failed, 1 something failed (the command says what on stderr) or an
    unexpected error (one line), 2 with one line on stderr for any :class:`MemReaderError`
    (and argparse's own 2 for bad flags), 130 when interrupted."""
    args = parse_args(argv)
    logging.basicConfig(
        level=[logging.WARNING, logging.INFO, logging.DEBUG][min(args.verbose, 2)],
        format="%(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    try:
        if args.command == "models":
            return run_models(args)
        if args.command in ("ingest", "refine"):
            from memreader.batch.cli import run_job_command
            from memreader.cli.llm_check import check_job_llm

            if not args.no_check and not getattr(args, "dry_run", False):
                check_job_llm(args.job, refine=args.command == "refine")
            return run_job_command(args)
        if args.command in STORE_COMMANDS:
            return run_store_command(args)
        if args.command == "context":
            return run_context(args)
        if args.command == "recall":
            return run_recall(args)
        if args.command in WRITE_COMMANDS:
            return run_write_command(args)
        if args.command in LIFECYCLE_COMMANDS:
            return run_lifecycle_command(args)
        if args.command == "serve":
            return run_serve(args)
        if args.command == "key":
            return run_key(args)
        if args.command == "mcp":
            return run_mcp(args)
        if args.command == "eval":
            return run_eval(args)
        return run_read(args)
    except MemReaderError as exc:
        _fail(f"error: {exc}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader of stdout went away (`| head`): stop quietly, and keep Python from
        # complaining again when it flushes stdout at exit.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_FAILURE
    except Exception as exc:
        # The last resort of a command line tool: one line and status 1, never a traceback
        # (unless asked for with -v), whatever went wrong.
        hint = "" if args.verbose else " (run with -v for the traceback)"
        _fail(f"internal error: {type(exc).__name__}: {exc}{hint}")
        if args.verbose:
            logger.error("traceback of the internal error", exc_info=exc)
        return EXIT_FAILURE


def _fail(message: str) -> None:
    """Write ``message`` to stderr as exactly one line (messages may quote multi-line text)."""
    line = re.sub(r"\s*[\r\n\v\f\x85\u2028\u2029]+\s*", " ", message).strip()
    print(f"memreader: {line}", file=sys.stderr)
