"""What the index check on open costs (issue 44): ``store.index_health()`` (two aggregate
queries over the active rows) on stores of ``--sizes`` memories, beside the cost of opening
the store itself and of a ``Memory`` opened with ``index: {on_open: warn}`` (the default) and
``ignore``.

Run by hand (not in the test suite)::

    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/index_check.py --sizes 10000,100000
    HF_HUB_OFFLINE=1 PYTHONPATH=. python benchmarks/index_check.py --pg   # PostgreSQL too

The stores are loaded by SQL as ``benchmarks/maintain.py`` loads them (its ``plan``): 10 owners,
5% of the memories without a vector, 5% with another model's, 10% expired, vectors of ``--dim``
floats (384 by default: the bundled model's, so a row is as wide as a real one). Each figure is
the median of ``--repeats`` runs after one warm-up (the page cache warm, as on a server that
just wrote the store), wall and CPU (``time.process_time``, this process only) milliseconds.
Markdown to stdout, progress to stderr.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import maintain as loader
from fast_mode import ROOT, machine_info

sys.path.insert(0, str(ROOT))


class _Named:
    """An embedder that only needs its name here (no text is embedded)."""

    name = "hash:16"

    def embed(self, texts: list[str]) -> list[list[float]]:
        raise AssertionError("the index check embeds nothing")


def _timed(call: Callable[[], Any], repeats: int) -> dict[str, float]:
    call()  # warm-up
    walls, cpus = [], []
    for _ in range(repeats):
        wall, cpu = time.perf_counter(), time.process_time()
        call()
        walls.append(1000 * (time.perf_counter() - wall))
        cpus.append(1000 * (time.process_time() - cpu))
    return {
        "wall_ms": round(statistics.median(walls), 1),
        "cpu_ms": round(statistics.median(cpus), 1),
    }


def measure(url: str, repeats: int) -> dict[str, Any]:
    from memreader import Memory
    from memreader.stores import open_store

    def opened() -> None:
        open_store(url, embedder=_Named()).close()

    out: dict[str, Any] = {"open_store": _timed(opened, repeats)}
    with open_store(url, embedder=_Named()) as store:
        out["index_health"] = _timed(store.index_health, repeats)
        out["health"] = store.index_health().to_dict()
    for on_open in ("ignore", "warn"):
        config = {"config": {"embedder": {"backend": "hash"}, "index": {"on_open": on_open}}}
        out[f"memory_{on_open}"] = _timed(lambda c=config: Memory(c, store=url).close(), repeats)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--pg", action="store_true", help="PostgreSQL too (pgserver)")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    loader.DIM = args.dim  # the loaders' vector width
    results: dict[str, Any] = {"machine": machine_info(), "dim": args.dim, "runs": []}
    for size in [int(s) for s in args.sizes.split(",")]:
        plan = argparse.Namespace(memories=size, owners=10, expired=0.10, bare=0.05, foreign=0.05)
        with tempfile.TemporaryDirectory() as folder:
            path = str(Path(folder) / "m.db")
            print(f"loading {size:,} into SQLite", file=sys.stderr, flush=True)
            load_s = loader.load_sqlite(path, plan)
            run = {"store": "SQLite", "memories": size, "load_s": round(load_s, 1)}
            run.update(measure(f"sqlite:///{path}", args.repeats))
            results["runs"].append(run)
            print(markdown({"runs": [run]}), file=sys.stderr, flush=True)
        if args.pg:
            from tests.pg_server import create_database, running_server

            with running_server() as admin:
                url = create_database(admin, f"index{size}")
                print(f"loading {size:,} into PostgreSQL", file=sys.stderr, flush=True)
                load_s = loader.load_pg(url, plan)
                run = {"store": "PostgreSQL", "memories": size, "load_s": round(load_s, 1)}
                run.update(measure(url, args.repeats))
                results["runs"].append(run)
                print(markdown({"runs": [run]}), file=sys.stderr, flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(results, indent=1))
    print(markdown(results))


def markdown(results: dict[str, Any]) -> str:
    lines = [
        "| store | memories | open_store ms | index_health ms (CPU) | Memory, ignore ms | "
        "Memory, warn ms | counted: missing / foreign |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in results["runs"]:
        health = r["health"]
        lines.append(
            f"| {r['store']} | {r['memories']:,} | {r['open_store']['wall_ms']} | "
            f"{r['index_health']['wall_ms']} ({r['index_health']['cpu_ms']}) | "
            f"{r['memory_ignore']['wall_ms']} | {r['memory_warn']['wall_ms']} | "
            f"{health['missing']:,} / {sum(health['foreign'].values()):,} |"
        )
    return "\n".join(lines)


if __name__ == "__main__":
    main()
