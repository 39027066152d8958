"""``memreader ingest job.yaml`` and ``memreader refine job.yaml``: a job with a progress bar
(inputs, windows, messages per second; off with ``--quiet`` or when stderr is not a terminal),
a summary on stderr (also written as JSON next to the output), and an exit status that says
whether anything failed, as every memreader command's does: 0 nothing, 1 an input, scene,
window or part failed or a window fell back to raw items (see the errors file and the summary),
2 the job file or an input could not be used at all, 130 the job was stopped by Ctrl-C.
Warnings that the windows' reports carry (their notes) are said once per input (see
:mod:`memreader.batch.window_notes`); ``--quiet`` says errors only (no bar, summary or warnings).

The first Ctrl-C cancels the job the way :func:`~memreader.batch.job_run.run_job`'s ``cancel`` does
(the input being read stops before its next batch, unpublished; the errors file, manifest and
summary are written; a rerun reads the rest); a second one interrupts at once."""

from __future__ import annotations

import argparse
import json
import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager

from memreader.batch.job import JobConfig, load_job
from memreader.batch.results import InputResult

__all__ = ["run_job_command"]


def run_job_command(args: argparse.Namespace) -> int:
    """Run the ``ingest`` or ``refine`` command of ``args``; the exit status. ``--quiet``: only
    errors are said (no progress bar, no summary, no warnings), and the exit status."""
    from memreader.batch.job_run import dry_run

    with _errors_only(args.quiet):
        job = load_job(args.job)
        if getattr(args, "dry_run", False):
            total = 0
            for row in dry_run(job):
                total += row["windows"]
                print(json.dumps(row, ensure_ascii=False))
            if not args.quiet:
                print(f"memreader: {total} windows in all", file=sys.stderr)
            return 0
        return _run(job, args)


def _run(job: JobConfig, args: argparse.Namespace) -> int:
    """Run ``job`` with a progress bar (unless quiet); the exit status."""
    from tqdm import tqdm

    from memreader.batch.job_run import run_job

    show = not args.quiet and sys.stderr.isatty()
    bar = tqdm(total=0, unit="input", disable=not show, file=sys.stderr)
    windows = messages = 0

    def on_plan(todo: int, skipped: int) -> None:
        bar.reset(total=todo)
        if skipped and not args.quiet:
            bar.write(f"memreader: {skipped} inputs finished before, skipped", file=sys.stderr)

    def on_result(result: InputResult) -> None:
        nonlocal windows, messages
        windows += result.counts.get("windows", 0)
        messages += result.counts.get("messages", 0)
        elapsed = bar.format_dict.get("elapsed") or 0.0
        rate = messages / elapsed if elapsed else 0.0
        bar.set_postfix(windows=windows, msg_s=f"{rate:.0f}", refresh=False)
        bar.update(1)

    cancel = threading.Event()
    try:
        with _ctrl_c_cancels(cancel, bar.write):
            summary = run_job(
                job,
                refine=args.command == "refine",
                restart=args.restart,
                on_plan=on_plan,
                on_result=on_result,
                cancel=cancel,
            )
    finally:
        bar.close()
    if not args.quiet:
        for line in summary.lines():
            print(f"memreader: {line}", file=sys.stderr)
    return summary.exit_code


@contextmanager
def _errors_only(quiet: bool) -> Iterator[None]:
    """While the block runs, with ``quiet``: only errors are logged (the root logger's level,
    and so memreader's, raised to ``ERROR``; worker processes get it too)."""
    root = logging.getLogger()
    previous = root.level
    if quiet:
        root.setLevel(max(previous, logging.ERROR))
    try:
        yield
    finally:
        root.setLevel(previous)


@contextmanager
def _ctrl_c_cancels(cancel: threading.Event, say: Callable[..., None]) -> Iterator[None]:
    """While the block runs, the first Ctrl-C sets ``cancel`` and the next raises
    ``KeyboardInterrupt`` as usual (only in the main thread: elsewhere signals stay as they are)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def first(signum: int, frame: object) -> None:
        cancel.set()
        signal.signal(signal.SIGINT, signal.default_int_handler)
        say("memreader: stopping after this batch (Ctrl-C again: at once)", file=sys.stderr)

    previous = signal.signal(signal.SIGINT, first)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
