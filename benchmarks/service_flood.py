"""``service_load.py --flood N``: does one key's flood of reads that end in 504 slow another
key's searches, and does the server keep working after the 504s? (issue 27, class 1)

Key A (``user0``) sends ``N`` concurrent reads of a big chat (fast mode, the local embedder:
several seconds of CPU each), again and again, with ``request_timeout_s`` ``--timeout``, so
each ends in 504; key B (``user1``, a few memories written first) searches, one request after
another, for ``--seconds``. Reported: B's searches (count, statuses, p50/p95), A's statuses,
and the server process's CPU seconds in the 3 s after the flood stopped.
"""

from __future__ import annotations

import argparse
import json
import shlex
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import httpx
import psutil
from fast_mode import machine_info

__all__ = ["flood", "run_for"]

WORDS = ["river", "train", "piano", "Lisbon", "garden", "letter", "market", "window", "winter"]


def big_chat(n: int, words: int = 30_000) -> list[dict[str, str]]:
    """A long one-message chat (about 200 KB): hundreds of windows to embed."""
    text = " ".join(f"{WORDS[(i * 7 + n) % len(WORDS)]}{i % 97}" for i in range(words))
    return [{"role": "user", "content": text}]


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))] if ordered else 0.0


def flood(args: argparse.Namespace, start_server: Callable[..., Any]) -> None:
    """Run the flood (see the module docstring) and print its Markdown."""
    service = {"request_timeout_s": args.timeout, "max_concurrent_per_key": args.flood}
    with tempfile.TemporaryDirectory() as tmp:
        server, keys = start_server(Path(tmp), 2, args.port, **service)
        url = f"http://127.0.0.1:{args.port}"
        a, b = ({"Authorization": f"Bearer {key}"} for key in keys)
        try:
            for n in range(5):  # B's memories, and the model loaded, before the clock starts
                seed = {
                    "scenes": [[{"role": "user", "content": f"I take the {WORDS[n]} train."}]],
                    "info": {"user_id": "user1", "session_id": f"s{n}"},
                    "store": True,
                }
                httpx.post(f"{url}/v1/read", json=seed, headers=b, timeout=120).raise_for_status()
            result = _run(url, a, b, args)
            process = psutil.Process(server.pid)
            before = sum(process.cpu_times()[:2])
            time.sleep(3.0)
            result["cpu_after_s"] = sum(process.cpu_times()[:2]) - before
        finally:
            server.terminate()
            server.wait(60)
    _report(args, result)


def _run(url: str, a: dict[str, str], b: dict[str, str], args: argparse.Namespace) -> Any:
    stop = threading.Event()
    lock = threading.Lock()
    a_statuses: dict[int, int] = {}
    b_statuses: dict[int, int] = {}
    latencies: list[float] = []

    def reader(n: int) -> None:
        body = {"scenes": [big_chat(n)], "info": {"user_id": "user0", "session_id": f"f{n}"}}
        with httpx.Client(base_url=url, headers=a, timeout=300) as http:
            while not stop.is_set():
                status = http.post("/v1/read", json=body).status_code
                with lock:
                    a_statuses[status] = a_statuses.get(status, 0) + 1

    def searcher() -> None:
        query = {"user_id": "user1", "query": "which train?", "k": 5}
        with httpx.Client(base_url=url, headers=b, timeout=300) as http:
            while not stop.is_set():
                started = time.perf_counter()
                status = http.post("/v1/memories/search", json=query).status_code
                took = time.perf_counter() - started
                with lock:
                    b_statuses[status] = b_statuses.get(status, 0) + 1
                    if status == 200:
                        latencies.append(took)

    threads = [threading.Thread(target=reader, args=(n,)) for n in range(args.flood)]
    threads.append(threading.Thread(target=searcher))
    print(f"flood of {args.flood} reads for {args.seconds:g} s ...", file=sys.stderr)
    run_for(threads, stop, args.seconds, join_s=600)
    return {"a": a_statuses, "b": b_statuses, "latencies": latencies}


def run_for(
    threads: Sequence[threading.Thread], stop: threading.Event, seconds: float, join_s: float
) -> None:
    """Start ``threads``, let them run ``seconds``, set ``stop`` and wait for each (at most
    ``join_s``)."""
    for thread in threads:
        thread.start()
    time.sleep(seconds)
    stop.set()
    for thread in threads:
        thread.join(join_s)


def _report(args: argparse.Namespace, result: dict[str, Any]) -> None:
    latencies = result["latencies"]
    lines = [
        f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/service_load.py "
        f"{shlex.join(sys.argv[1:])}`",
        f"Machine: `{json.dumps(machine_info())}`",
        "",
        "| key B searches | statuses | p50 ms | p95 ms | key A reads (statuses) | "
        "server CPU s in the 3 s after |",
        "|---:|---|---:|---:|---|---:|",
        f"| {sum(result['b'].values())} | {dict(sorted(result['b'].items()))} | "
        f"{percentile(latencies, 0.5) * 1000:.0f} | {percentile(latencies, 0.95) * 1000:.0f} | "
        f"{dict(sorted(result['a'].items()))} | {result['cpu_after_s']:.2f} |",
    ]
    print("\n".join(lines))
