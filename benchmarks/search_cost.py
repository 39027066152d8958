"""CPU milliseconds one search costs, layer by layer (issue 31): the store's search alone, the
same search through the service's app (ASGI: admission, validation, the route, JSON; no HTTP
server), and where each goes (``--profile``). CPU time, not wall time: it holds on a machine
other work shares. The HTTP server's own part is ``service_load.py``'s "server CPU ms/req"
minus the app's. Each layer is measured ``--rounds`` times and the least is reported (other
work on the machine only ever adds to a CPU time).

The store: ``--memories`` distinct memories of one user (``service_load.py``'s word salads,
written through ``POST /v1/read`` in the app), the hash embedder, a SQLite file; each search is
a new three-word query (the search cache never answers). Markdown to stdout::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/search_cost.py --searches 400 --profile
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import json
import pstats
import random
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fast_mode import machine_info
from service_load import distinct, salad

from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, ServiceSettings, create_app
from memreader.service.keys import ApiKey, hash_key

KEY = "mr_search_cost_key"


async def call(app: Any, path: str, body: dict[str, Any]) -> tuple[int, bytes]:
    """One POST through the app as uvicorn would make it: ``(status, body)``."""
    data = json.dumps(body).encode()
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": path,
        "raw_path": path.encode(),
        "query_string": b"",
        "root_path": "",
        "headers": [
            (b"host", b"127.0.0.1"),
            (b"authorization", f"Bearer {KEY}".encode()),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(data)).encode()),
        ],
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
    }
    sent = False
    status, chunks = 0, []

    async def receive() -> dict[str, Any]:
        nonlocal sent
        if sent:
            await asyncio.sleep(3600)
        sent = True
        return {"type": "http.request", "body": data, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        nonlocal status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message["type"] == "http.response.body":
            chunks.append(message.get("body", b""))

    await app(scope, receive, send)
    return status, b"".join(chunks)


def cpu_ms(run: Callable[[], None], times: int) -> float:
    """CPU ms (this process, every thread) per call of ``run``."""
    started = time.process_time()
    for _ in range(times):
        run()
    return (time.process_time() - started) * 1000 / times


def profile(run: Callable[[], None], times: int, top: int) -> str:
    """The ``top`` functions by own time over ``times`` calls of ``run`` (this thread)."""
    profiler = cProfile.Profile()
    profiler.enable()
    for _ in range(times):
        run()
    profiler.disable()
    out = io.StringIO()
    pstats.Stats(profiler, stream=out).sort_stats("tottime").print_stats(top)
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--searches", type=int, default=400, help="per round and layer")
    parser.add_argument("--rounds", type=int, default=5, help="the least round is reported")
    parser.add_argument("--profile", action="store_true", help="cProfile tables (stderr)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        config = {"embedder": {"backend": "hash"}, "store": f"sqlite:///{tmp}/cost.db"}
        key = ApiKey(name="cost", sha256=hash_key(KEY), users=["bench"])
        settings = ServiceSettings(keys=[key])
        app = create_app(
            ServiceConfig(MemReaderConfigFactory.from_dict({"config": config}), settings)
        )
        state = app.state.service
        loop = asyncio.new_event_loop()
        rng = random.Random(31)
        for start in range(0, args.memories, 100):
            scenes = [
                [{"role": "user", "content": salad(rng)}]
                for _ in range(min(100, args.memories - start))
            ]
            info = {"user_id": "bench", "session_id": f"s{start}"}
            body = {"scenes": scenes, "info": info, "store": True, "include_embeddings": False}
            status, _ = loop.run_until_complete(call(app, "/v1/read", body))
            assert status == 200, status
        queries = random.Random(7)

        def store_search() -> None:
            state.store.search(distinct(queries), user_id="bench", k=10)

        def app_search() -> None:
            body = {"user_id": "bench", "query": distinct(queries)}
            status, answer = loop.run_until_complete(call(app, "/v1/memories/search", body))
            assert status == 200, answer[:300]

        for run in (store_search, app_search):  # warm: caches, first connections
            cpu_ms(run, 20)
        # The least of a few rounds: other work on the machine only ever adds to CPU time.
        rounds = [
            (cpu_ms(store_search, args.searches), cpu_ms(app_search, args.searches))
            for _ in range(args.rounds)
        ]
        store_ms, app_ms = min(r[0] for r in rounds), min(r[1] for r in rounds)
        if args.profile:
            print(profile(store_search, args.searches, 25), file=sys.stderr)
            print(profile(app_search, args.searches, 40), file=sys.stderr)
        state.close()
        loop.close()
    print(
        f"Command: `HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/search_cost.py "
        f"--memories {args.memories} --searches {args.searches}`"
    )
    print(f"Machine: `{json.dumps(machine_info())}`\n")
    print("| layer | CPU ms per search |\n|---|---:|")
    print(f"| store.search (query embedding, SQL, vectors, scoring) | {store_ms:.2f} |")
    print(f"| the app around it (admission, validation, route, JSON) | {app_ms - store_ms:.2f} |")
    print(f"| the app in all (ASGI, no HTTP server) | {app_ms:.2f} |")


if __name__ == "__main__":
    main()
