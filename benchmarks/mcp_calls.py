"""What MCP costs per call: ``memreader mcp`` over stdio (a subprocess driven by the SDK's
client, as a desktop client runs it) against the same calls on ``AsyncMemory`` in-process, on
the same kind of store.

For each config (``hash``: the deterministic test embedder, so the protocol's cost shows;
``local``: the bundled model, what users run), it measures the time from starting the server
to its first answer (``tools/list``), then ``--calls`` ``remember`` calls (distinct facts) and
``--calls`` ``recall`` calls, each alone, and reports the median and the 95th percentile.

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/mcp_calls.py --calls 50
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml
from mcp import Client, StdioServerParameters

from memreader import AsyncMemory

ROOT = Path(__file__).resolve().parents[1]
CONFIGS: dict[str, dict[str, Any]] = {
    "hash": {"embedder": {"backend": "hash"}},
    "local": {},
}


def _fact(i: int) -> str:
    return f"Fact number {i}: the user's friend {i} lives in city {i * 7 % 101}."


async def _timed(calls: int, call: Callable[[int], Awaitable[Any]]) -> list[float]:
    took = []
    for i in range(calls):
        start = time.perf_counter()
        await call(i)
        took.append(time.perf_counter() - start)
    return took


def _ms(samples: list[float]) -> str:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]
    return f"{statistics.median(ordered) * 1000:.1f} / {p95 * 1000:.1f}"


async def over_mcp(config: Path, calls: int) -> tuple[float, list[float], list[float]]:
    env = {"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "MEMREADER_HOME": str(config.parent)}
    args = ["-m", "memreader.cli", "mcp", "--user-id", "bench", "--config", str(config)]
    params = StdioServerParameters(command=sys.executable, args=args, env=env)
    start = time.perf_counter()
    async with Client(params, read_timeout_seconds=120) as client:
        await client.list_tools()
        ready = time.perf_counter() - start

        async def remember(i: int) -> None:
            result = await client.call_tool("remember", {"fact": _fact(i)})
            assert not result.is_error, result.content

        async def recall(i: int) -> None:
            result = await client.call_tool("recall", {"query": f"friend {i}", "k": 5})
            assert not result.is_error, result.content

        return ready, await _timed(calls, remember), await _timed(calls, recall)


async def in_process(config: Path, calls: int) -> tuple[float, list[float], list[float]]:
    start = time.perf_counter()
    async with AsyncMemory(str(config)) as memory:
        await memory.search("warm up", user_id="bench")
        ready = time.perf_counter() - start

        async def remember(i: int) -> None:
            await memory.add_memory(_fact(i), user_id="bench")

        async def recall(i: int) -> None:
            await memory.search(f"friend {i}", user_id="bench", k=5)

        return ready, await _timed(calls, remember), await _timed(calls, recall)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--calls", type=int, default=50)
    parser.add_argument("--configs", default="hash,local")
    args = parser.parse_args()
    print("| config | path | ready s | remember ms (median / p95) | recall ms (median / p95) |")
    print("|---|---|---|---|---|")
    for name in args.configs.split(","):
        for path, run in (("MCP over stdio", over_mcp), ("AsyncMemory", in_process)):
            with tempfile.TemporaryDirectory() as folder:
                config = Path(folder) / "bench.yaml"
                settings = {**CONFIGS[name], "store": f"sqlite:///{Path(folder) / 'm.db'}"}
                config.write_text(yaml.safe_dump({"config": settings}), encoding="utf-8")
                ready, remember, recall = asyncio.run(run(config, args.calls))
            print(f"| {name} | {path} | {ready:.2f} | {_ms(remember)} | {_ms(recall)} |")
    load = os.getloadavg()
    print(f"\nload average at the end: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")


if __name__ == "__main__":
    main()
