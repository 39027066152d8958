"""``service_load.py``'s report: one Markdown row per client count and operation, with the CPU
milliseconds per answered request the server spent and the load generator (this process: its
clients, whichever kind) spent."""

from __future__ import annotations

import argparse
import json
import shlex
import sys
from typing import Any

from fast_mode import machine_info

__all__ = ["percentile", "report"]


def percentile(values: list[float], share: float) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def _pinned(pin: bool | None) -> str:
    return {None: "auto", True: "on", False: "off"}[pin]


def report(
    args: argparse.Namespace,
    rows: list[tuple[int, list[Any], float, int, float, tuple[float, float]]],
) -> None:
    """The Markdown table of ``rows`` (clients, the clients' records, wall seconds, memories
    lost, load average, (server CPU s, generator CPU s)) to stdout, failures to stderr."""
    backend = "postgresql" if args.postgres else "sqlite"
    lines = [
        f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/service_load.py "
        f"{shlex.join(sys.argv[1:])}`",
        f"Machine: `{json.dumps(machine_info())}`",
        f"Server: workers {args.workers or 'default'}"
        f" (pinned: {_pinned(getattr(args, 'pin_workers', None))}), "
        f"embedder {args.embedder}, store {backend}"
        + (f", {args.memories} memories, {args.queries} queries" if args.op == "search" else ""),
        "",
        "| clients | op | requests | req/s | p50 ms | p95 ms | server CPU ms/req "
        "| generator CPU ms/req | statuses | errors | lost | load |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|",
    ]
    failures: list[str] = []
    for count, clients, wall, lost, load, (cpu, own) in rows:
        answered = sum(len(v) for client in clients for v in client.latency.values())
        statuses: dict[int, int] = {}
        for client in clients:
            for status, n in client.statuses.items():
                statuses[status] = statuses.get(status, 0) + n
        errors = [f for client in clients for f in client.failures]
        failures += errors
        for kind in ("write", "search") if args.op == "mixed" else ("search",):
            values = [v for client in clients for v in client.latency[kind]]
            p50, p95 = percentile(values, 0.5), percentile(values, 0.95)
            lines.append(
                f"| {count} | {kind} | {len(values)} | {len(values) / wall:.1f} | "
                f"{(p50 or 0) * 1000:.0f} | {(p95 or 0) * 1000:.0f} | "
                f"{cpu * 1000 / max(1, answered):.2f} | {own * 1000 / max(1, answered):.2f} | "
                f"{dict(sorted(statuses.items()))} | "
                f"{len(errors)} | {lost} | {load:.2f} |"
            )
    print("\n".join(lines))
    for failure in failures[:10]:
        print(f"  failure: {failure}", file=sys.stderr)
