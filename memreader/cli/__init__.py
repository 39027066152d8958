"""The ``memreader`` command line.

One subcommand per module that runs it: ``read`` (:mod:`memreader.cli.read`: scenes or a
document into one JSON item per line), ``models`` (:mod:`memreader.embedders.cli`: the local
embedder's files), ``ingest`` and ``refine`` (:mod:`memreader.batch.cli`: batch jobs),
``search``, ``history``, ``forget`` and ``export-md`` (:mod:`memreader.cli.stores`: a memory
store), ``serve`` and ``key`` (:mod:`memreader.cli.serve`: the HTTP service).

Every command exits with one line on stderr and status 2 for any error memreader raises on
purpose (bad input, config, output path), or status 1 for an unexpected one (its traceback only
with ``-v``). Never a traceback otherwise.
"""

from __future__ import annotations

import argparse
import logging
import os
import re
import sys
from collections.abc import Sequence
from typing import Any

from memreader.cli.read import add_read_parser, run_read
from memreader.cli.serve import add_serve_parsers, run_key, run_serve
from memreader.cli.stores import STORE_COMMANDS, add_store_parsers, run_store_command
from memreader.embedders.cli import add_models_parser, run_models
from memreader.errors import MemReaderError

__all__ = ["EXIT_BAD_INPUT", "EXIT_FAILURE", "build_parser", "main"]

logger = logging.getLogger(__name__)

EXIT_BAD_INPUT = 2
EXIT_FAILURE = 1


def build_parser() -> argparse.ArgumentParser:
    """The parser of every ``memreader`` subcommand."""
    parser = argparse.ArgumentParser(prog="memreader", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="count", default=0, help="log more (-vv: debug)")
    commands = parser.add_subparsers(dest="command", required=True)
    add_read_parser(commands)
    add_models_parser(commands)
    _add_job_parsers(commands)
    add_store_parsers(commands)
    add_serve_parsers(commands)
    return parser


def _add_job_parsers(commands: Any) -> None:
    """``ingest`` and ``refine``: the batch jobs, run by :mod:`memreader.batch.cli`."""
    for name, text in (
        ("ingest", "run a batch job: read every input of a job file into items (resumable)"),
        ("refine", "run a refinement job: fine items from JSONL of fast items (resumable)"),
    ):
        job = commands.add_parser(name, help=text, description=text)
        job.add_argument("job", help="the job file (YAML; see the README's Batch ingestion)")
        job.add_argument(
            "--restart", action="store_true", help="ignore the manifest: read every input again"
        )
        job.add_argument("--quiet", action="store_true", help="no progress bar and no summary")
        if name == "ingest":
            job.add_argument(
                "--dry-run",
                action="store_true",
                help="list the inputs and the windows they make, without LLM calls or embeddings",
            )


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``memreader`` console script: 0 on success, 2 with one line on stderr
    for any :class:`MemReaderError`, 1 with one line for anything unexpected."""
    args = build_parser().parse_args(argv)
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

            return run_job_command(args)
        if args.command in STORE_COMMANDS:
            return run_store_command(args)
        if args.command == "serve":
            return run_serve(args)
        if args.command == "key":
            return run_key(args)
        return run_read(args)
    except MemReaderError as exc:
        _fail(f"error: {exc}")
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        return 130
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
