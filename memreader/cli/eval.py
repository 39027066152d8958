"""``memreader eval FILE``: retrieval measured on your own data, offline
(:mod:`memreader.evaluation`).

``eval FILE [--config YAML] [--budgets 200,500,1000,2000] [--recall-at 1,3,10] [--no-names]
[--categories 1,2,3,4] [--conversations ID,ID] [--mode hybrid|vector|text] [--json PATH]
[--keep-store DIR] [--no-progress] [--miss-analysis]`` reads FILE (LoCoMo's shape, or the
simple one: :mod:`memreader.evaluation.load`) into a fresh store with the config's reader
(default: the built-in one, the bundled local embedder), asks every question and prints a
Markdown table to stdout: per conversation and pooled, recall@k (memory and message level),
context recall per budget, latencies; then the rates by category and notes (evidence ids that
named no message, questions skipped, the store's size). ``--json PATH`` writes everything,
each question's ranks included. A progress bar goes to stderr when it is a terminal. A bad
file or flag exits 2 with one line naming it.

Example:
    >>> from memreader.cli import parse_args
    >>> args = parse_args(["eval", "locomo10.json", "--budgets", "500,1000", "--no-names"])
    >>> (args.command, args.file, args.budgets, args.names, args.recall_at)
    ('eval', 'locomo10.json', '500,1000', False, '1,3,10')
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from typing import Any, ClassVar

from memreader.errors import InputError
from memreader.stores.base import SEARCH_MODES

__all__ = ["add_eval_parser", "run_eval"]


def add_eval_parser(commands: Any) -> None:
    """Add ``eval`` to the subcommands ``commands``."""
    text = (
        "measure retrieval on a file of conversations and questions with evidence (LoCoMo's "
        "shape or a simple one): recall@k and context recall per budget, offline"
    )
    command = commands.add_parser("eval", help=text, description=text)
    command.add_argument("file", help="the JSON file (see the docs' Measuring retrieval)")
    command.add_argument(
        "--config",
        metavar="YAML",
        help="reader config YAML: the reader and embedder measured (as read's)",
    )
    command.add_argument(
        "--budgets",
        metavar="N,N",
        default="200,500,1000,2000",
        help="context budgets, in tokens, comma-separated",
    )
    command.add_argument(
        "--recall-at", metavar="K,K", default="1,3,10", help="the ranks recall is measured at"
    )
    command.add_argument(
        "--no-names",
        dest="names",
        action="store_false",
        help="leave the speakers' names out of the messages",
    )
    command.add_argument(
        "--categories",
        metavar="C,C",
        help="the question categories asked, comma-separated (default: LoCoMo's 1,2,3,4, "
        "leaving out the adversarial 5; a simple-shape file: all)",
    )
    command.add_argument(
        "--conversations", metavar="ID,ID", help="only these conversations (ids, comma-separated)"
    )
    command.add_argument("--mode", choices=SEARCH_MODES, default="hybrid", help="the search mode")
    command.add_argument("--json", metavar="PATH", help="also write every result here as JSON")
    command.add_argument(
        "--keep-store",
        metavar="DIR",
        help="keep the store as DIR/eval.db (a new folder, or one without it; default: a "
        "temporary one, removed)",
    )
    progress = command.add_mutually_exclusive_group()
    progress.add_argument(
        "--progress",
        dest="progress",
        action="store_true",
        default=None,
        help="show a progress bar on stderr (default: when stderr is a terminal)",
    )
    progress.add_argument(
        "--no-progress", dest="progress", action="store_false", help="no progress bar"
    )
    command.add_argument(
        "--miss-analysis",
        action="store_true",
        help="for each question not found first, where its evidence ranks among 200 hits "
        "(deep_rank in --json; one more search per such question)",
    )


def _numbers(text: str, flag: str) -> list[int]:
    try:
        values = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        values = []
    if not values or min(values) <= 0:
        raise InputError(f"{flag} takes whole numbers > 0 separated by commas, got {text!r}")
    return values


def _names(text: str | None) -> list[str] | None:
    if text is None:
        return None
    names = [part.strip() for part in text.split(",") if part.strip()]
    return names or None


def run_eval(args: argparse.Namespace) -> int:
    """Run ``eval``; 0 when done (bad input raises :class:`~memreader.errors.InputError`)."""
    from memreader.cli.output import AtomicOutput
    from memreader.evaluation import evaluate, load_eval_file, report, to_json

    budgets = _numbers(args.budgets, "--budgets")
    recall_at = _numbers(args.recall_at, "--recall-at")
    categories = _names(args.categories)
    wanted: list[int | str] | None = None
    if categories is not None:
        wanted = [int(c) if c.isdigit() else c for c in categories]
    data = load_eval_file(args.file, names=args.names, categories=wanted)
    only = _names(args.conversations)
    if only is not None:
        data = data.only(only)
    show = sys.stderr.isatty() if args.progress is None else args.progress
    with ExitStack() as stack:
        output = None
        if args.json is not None:  # checked before the hours of work, not after
            output = AtomicOutput(args.json, "JSON")
            stack.callback(output.discard)
        bars = stack.enter_context(_Bars(show))
        result = evaluate(
            data,
            args.config,
            budgets=budgets,
            recall_at=recall_at,
            mode=args.mode,
            store_dir=args.keep_store,
            miss_analysis=args.miss_analysis,
            on_progress=bars.update,
        )
        bars.close()
        print(report(result))
        if output is not None:
            output.handle.write(to_json(result))
            output.commit()
    return 0


class _Bars:
    """One tqdm bar per stage of :func:`memreader.evaluation.evaluate` on stderr (none when
    not ``show``)."""

    _UNITS: ClassVar[dict[str, tuple[str, str]]] = {
        "ingest": ("reading", "msg"),
        "questions": ("asking", "q"),
    }

    def __init__(self, show: bool) -> None:
        self.show = show
        self.bars: dict[str, Any] = {}

    def __enter__(self) -> _Bars:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def update(self, stage: str, done: int, total: int) -> None:
        if not self.show:
            return
        from tqdm import tqdm

        bar = self.bars.get(stage)
        if bar is None:
            for other in self.bars.values():
                other.close()
            desc, unit = self._UNITS.get(stage, (stage, "it"))
            bar = self.bars[stage] = tqdm(total=total, desc=desc, unit=unit, file=sys.stderr)
        bar.update(done - bar.n)

    def close(self) -> None:
        for bar in self.bars.values():
            bar.close()
