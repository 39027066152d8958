"""Server CPU per search of two checkouts of memreader, measured side by side: both served at
once (``memreader serve --workers 2``, the hash embedder, a store of ``--memories`` memories of
one user, as ``service_load.py --op search`` makes it), then short bursts of one client's
searches on each in turn, the order alternating, the server's CPU (its workers, from psutil)
summed over its bursts.

On a shared machine whose speed changes from minute to minute, runs one after the other compare
minutes as much as code; bursts a few seconds apart see the same minutes. Run by hand::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/service_ab.py /path/to/before /path/to/after \
        --rounds 12 --seconds 2

Each checkout is served with its own code (``PYTHONPATH`` = the checkout); the clients are the
light generator of ``service_load.py``. One line per burst goes to stderr, the totals to stdout.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import service_load
from light_load import run_clients


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("checkouts", nargs=2, type=Path, help="two checkouts: before, after")
    parser.add_argument("--rounds", type=int, default=12)
    parser.add_argument("--seconds", type=float, default=2.0, help="one burst's length")
    parser.add_argument("--memories", type=int, default=2000)
    parser.add_argument("--port", type=int, default=8850, help="the first's; the second's +1")
    args = parser.parse_args()
    servers = []
    with tempfile.TemporaryDirectory() as tmp:
        try:
            for n, checkout in enumerate(args.checkouts):
                service_load.ROOT = checkout.resolve()  # the server's PYTHONPATH
                folder = Path(tmp) / str(n)
                folder.mkdir()
                port = args.port + n
                server, keys = service_load.start_server(
                    folder,
                    1,
                    port,
                    workers=2,
                    embedder="hash",
                    users="bench",
                    max_connections_per_client=1024,
                )
                url = f"http://127.0.0.1:{port}"
                servers.append((server, url, keys))
                warm = service_load.Client(url, 0, keys[0], threading.Event(), op="search")
                with httpx.Client(base_url=url, headers=warm.headers, timeout=120) as http:
                    service_load.fill(http, args.memories)
            cpu_s = [0.0 for _ in servers]
            searches = [0 for _ in servers]
            for round_ in range(args.rounds):
                order = (0, 1) if round_ % 2 == 0 else (1, 0)
                for n in order:
                    server, url, keys = servers[n]
                    before = service_load.server_cpu(server.pid)
                    clients = run_clients(url, keys, 1, args.seconds, service_load.distinct)
                    cpu = service_load.server_cpu(server.pid) - before
                    answered = sum(sum(client.statuses.values()) for client in clients)
                    cpu_s[n] += cpu
                    searches[n] += answered
                    print(
                        f"round {round_} {args.checkouts[n]}: {answered} searches", file=sys.stderr
                    )
        finally:
            for server, _, _ in servers:
                server.terminate()
                server.wait(30)
    for checkout, cpu, answered in zip(args.checkouts, cpu_s, searches, strict=True):
        per = cpu * 1000 / max(answered, 1)
        print(f"{checkout}: {answered} searches, {per:.3f} server CPU ms per search")


if __name__ == "__main__":
    main()
