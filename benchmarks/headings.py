"""The heading trail of a large converted document: how long :func:`heading_trail` takes to index
it and how long lookups take, at growing sizes (the figures a test used to assert, and failed
to on a loaded machine: tests count work instead, this measures it).

Run by hand (results go to benchmarks/RESULTS.md with machine, CPU flags, load, command and
date)::

    .venv/bin/python benchmarks/headings.py [--sizes 12500,25000,50000] [--lookups 10000]
"""

from __future__ import annotations

import argparse
import os
import platform
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from memreader.documents.headings import heading_trail


def document(parts: int) -> str:
    """``parts`` headings (levels 1-4), each followed by a 40-word paragraph."""
    return "".join(f"{'#' * (1 + i % 4)} Part {i}\n{'word ' * 40}\n" for i in range(parts))


def measure(parts: int, lookups: int, rounds: int) -> dict[str, float]:
    """Median seconds to build the index and to answer ``lookups`` random offsets."""
    text = document(parts)
    offsets = [random.Random(1).randrange(len(text)) for _ in range(lookups)]
    builds, looks = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        index = heading_trail(text)
        builds.append(time.perf_counter() - start)
        start = time.perf_counter()
        for offset in offsets:
            index.context(offset)
        looks.append(time.perf_counter() - start)
    return {
        "chars": len(text),
        "build_s": statistics.median(builds),
        "lookups_s": statistics.median(looks),
    }


def main() -> None:
    """Print one Markdown table row per size."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="12500,25000,50000")
    parser.add_argument("--lookups", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    print(f"python {platform.python_version()}, {platform.machine()}, load {os.getloadavg()}")
    print("| headings | characters | build (median) | per MB | lookups (median) | per lookup |")
    print("|---:|---:|---:|---:|---:|---:|")
    for parts in (int(size) for size in args.sizes.split(",")):
        row = measure(parts, args.lookups, args.rounds)
        per_mb = row["build_s"] / (row["chars"] / 1e6)
        per_lookup = row["lookups_s"] / args.lookups * 1e6
        print(
            f"| {parts:,} | {row['chars']:,} | {row['build_s'] * 1000:.0f} ms "
            f"| {per_mb * 1000:.0f} ms | {row['lookups_s'] * 1000:.1f} ms | {per_lookup:.2f} µs |"
        )


if __name__ == "__main__":
    main()
