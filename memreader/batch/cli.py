"""``memreader ingest job.yaml`` and ``memreader refine job.yaml``: a job with a progress bar
(inputs, windows, messages per second; off with ``--quiet`` or when stderr is not a terminal),
a summary on stderr (also written as JSON next to the output), and an exit status that says
whether anything failed: 0 nothing, 1 an input, scene or window failed (see the errors file),
2 the job file or an input could not be used at all."""

from __future__ import annotations

import argparse
import json
import sys

from memreader.batch.job import load_job
from memreader.batch.runner import InputResult

__all__ = ["run_job_command"]


def run_job_command(args: argparse.Namespace) -> int:
    """Run the ``ingest`` or ``refine`` command of ``args``; the exit status."""
    from tqdm import tqdm

    from memreader.batch.run import dry_run, run_job

    job = load_job(args.job)
    if getattr(args, "dry_run", False):
        total = 0
        for row in dry_run(job):
            total += row["windows"]
            print(json.dumps(row, ensure_ascii=False))
        print(f"memreader: {total} windows in all", file=sys.stderr)
        return 0
    show = not args.quiet and sys.stderr.isatty()
    bar = tqdm(total=0, unit="input", disable=not show, file=sys.stderr)
    windows = messages = 0

    def on_plan(todo: int, skipped: int) -> None:
        bar.reset(total=todo)
        if skipped:
            bar.write(f"memreader: {skipped} inputs finished before, skipped", file=sys.stderr)

    def on_result(result: InputResult) -> None:
        nonlocal windows, messages
        windows += result.counts.get("windows", 0)
        messages += result.counts.get("messages", 0)
        elapsed = bar.format_dict.get("elapsed") or 0.0
        rate = messages / elapsed if elapsed else 0.0
        bar.set_postfix(windows=windows, msg_s=f"{rate:.0f}", refresh=False)
        bar.update(1)

    try:
        summary = run_job(
            job,
            refine=args.command == "refine",
            restart=args.restart,
            on_plan=on_plan,
            on_result=on_result,
        )
    finally:
        bar.close()
    if not args.quiet:
        for line in summary.lines():
            print(f"memreader: {line}", file=sys.stderr)
    return summary.exit_code
