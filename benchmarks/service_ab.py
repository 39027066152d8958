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
light generator of ``service_load.py``. One line per burst goes to stderr, the totals to stdout
(each side's searches, their rate, server CPU per search and the clients' p50/p95 latency).
Two settings of one checkout compare the same way: name it twice, with ``--service-a`` /
``--service-b`` (JSON service settings of each side, e.g. ``'{"pin_workers": false}'``);
``--clients`` searches at once in each burst (default 1).
"""

from __future__ import annotations

import argparse
import json
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
    parser.add_argument("--clients", type=int, default=1, help="searching at once per burst")
    for side in ("a", "b"):
        parser.add_argument(
            f"--service-{side}", type=json.loads, default={}, help="JSON service settings"
        )
    args = parser.parse_args()
    settings = [args.service_a, args.service_b]
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
                    args.clients,
                    port,
                    workers=2,
                    embedder="hash",
                    users="bench",
                    **{"max_connections_per_client": 1024, **settings[n]},
                )
                url = f"http://127.0.0.1:{port}"
                servers.append((server, url, keys))
                warm = service_load.Client(url, 0, keys[0], threading.Event(), op="search")
                with httpx.Client(base_url=url, headers=warm.headers, timeout=120) as http:
                    service_load.fill(http, args.memories)
            cpu_s = [0.0 for _ in servers]
            waits: list[list[float]] = [[] for _ in servers]
            searches = [0 for _ in servers]
            for round_ in range(args.rounds):
                order = (0, 1) if round_ % 2 == 0 else (1, 0)
                for n in order:
                    server, url, keys = servers[n]
                    before = service_load.server_cpu(server.pid)
                    clients = run_clients(
                        url, keys, args.clients, args.seconds, service_load.distinct
                    )
                    cpu = service_load.server_cpu(server.pid) - before
                    answered = sum(sum(client.statuses.values()) for client in clients)
                    cpu_s[n] += cpu
                    waits[n] += [s for client in clients for s in client.latency["search"]]
                    searches[n] += answered
                    print(
                        f"round {round_} {args.checkouts[n]}: {answered} searches", file=sys.stderr
                    )
        finally:
            for server, _, _ in servers:
                server.terminate()
                server.wait(30)
    for n, (checkout, cpu, answered, took) in enumerate(
        zip(args.checkouts, cpu_s, searches, waits, strict=True)
    ):
        per = cpu * 1000 / max(answered, 1)
        rate = answered / (args.rounds * args.seconds)
        side = f" {json.dumps(settings[n])}" if settings[n] else ""
        print(
            f"{checkout}{side}: {answered} searches ({rate:.1f}/s), "
            f"{per:.3f} server CPU ms per search, p50 {_ms(took, 0.5)} p95 {_ms(took, 0.95)} ms"
        )


def _ms(seconds: list[float], share: float) -> str:
    """The ``share`` quantile of ``seconds``, in whole milliseconds."""
    if not seconds:
        return "-"
    ordered = sorted(seconds)
    return f"{ordered[min(len(ordered) - 1, int(share * len(ordered)))] * 1000:.0f}"


if __name__ == "__main__":
    main()
