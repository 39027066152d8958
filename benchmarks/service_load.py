"""Load test of ``memreader serve`` (issue 20): N concurrent clients reading and writing for a
fixed time against a real server on 127.0.0.1, then a check that nothing acknowledged was lost.

Run by hand (not in the test suite), on an otherwise idle machine::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/service_load.py --clients 8 --seconds 30

The server is ``memreader serve`` in its own process (the bundled local embedder, int8; a
fresh SQLite store; one API key per client, each walled to its own user;
``max_concurrent_per_key`` 4). Each client loops: 70% writes (``POST /v1/read`` with
``"store": true``: a new 4-message chat, fast mode) and 30% searches (``POST
/v1/memories/search``, k=10, hybrid), each request waiting for the last. Afterwards every
memory id a write acknowledged (its events) is fetched with ``GET /v1/memories/{id}``: "lost"
counts those not there, active. Markdown goes to stdout, progress to stderr.

``--op search`` measures searches alone (issue 31): the store holds ``--memories`` memories of
one user (2,000 by default, distinct word salads written through ``POST /v1/read`` before the
clock starts), and every client (its own key, the same user) searches it, k=10. ``--clients``
takes a list (``1,8,32,128``: one row each, on the same server); ``--workers N`` runs
``memreader serve --workers N``; ``--embedder hash`` the hash embedder instead of the local
one; ``--postgres`` a throwaway PostgreSQL (pgserver) for the store and the shared state
instead of SQLite. Each row carries the load average when it started::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/service_load.py --op search --embedder hash \
        --workers 2 --clients 1,8,32 --seconds 10

The searches' clients are the light generator (:mod:`light_load`: every client a coroutine
on one asyncio loop with its own keep-alive connection, the request written and the answer read
by hand), not a thread per client driving httpx (``--generator httpx``, what the write+search
mix still uses): the generator shares the cores with the server, and the threads cost 0.6-0.8
CPU ms per search where the loop costs 0.1 (issue 31). Each row reports both: the server's CPU
ms per answered request (its workers, from psutil) and the generator's (this process,
``time.process_time``). On a machine other work shares, those hold where req/s and latency do
not.

``--flood N`` measures instead whether one key can slow another's searches (issue 27): key A
sends N concurrent big reads at once, again and again, each past ``request_timeout_s`` (504),
while key B searches (one request after another); it reports B's search latency and statuses,
A's statuses, and the server's CPU seconds in the 3 s after the flood stopped (work still
running behind answers already sent)::

    HF_HUB_OFFLINE=1 .venv/bin/python benchmarks/service_load.py --flood 4 --seconds 20
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fast_mode import ROOT
from light_load import run_clients
from service_flood import run_for
from service_report import report

from memreader.service.keys import hash_key

PLACES = ["Lisbon", "Porto", "Kyoto", "Oslo", "Lima", "Cairo", "Quito", "Riga", "Accra", "Hanoi"]
HOBBIES = ["piano", "chess", "climbing", "pottery", "sailing", "tango", "cycling", "baking"]
PEOPLE = ["Ana", "Ben", "Chen", "Dara", "Emil", "Fatou", "Goran", "Hana"]


VOCABULARY = [
    f"{a}{b}"
    for a in ("sol", "mar", "tin", "vel", "quo", "ran", "dev", "pul", "cas", "nor")
    for b in ("a", "eo", "ix", "um", "ora", "ent", "ide", "alo", "usk", "iet")
]


def salad(rng: random.Random) -> str:
    """Twelve words from a 100-word vocabulary: distinct memories, not near duplicates."""
    return " ".join(rng.choice(VOCABULARY) for _ in range(12)) + "."


def distinct(rng: random.Random) -> str:
    """A search of three words: a million combinations, so practically never repeated."""
    return " ".join(rng.choice(VOCABULARY) for _ in range(3))


#: ``--queries repeated``: 80 searches every client draws from (as the write+search mix's
#: "hobby in place" queries), so clients often ask what another asked a moment ago.
REPEATED = [distinct(random.Random(n)) for n in range(80)]


def chat(rng: random.Random, client: int, seq: int) -> list[dict[str, str]]:
    """A new chat: different words each time, so writes are ADDs, not reinforcements."""
    place, hobby, person = rng.choice(PLACES), rng.choice(HOBBIES), rng.choice(PEOPLE)
    return [
        {
            "role": "user",
            "content": f"Note {client}-{seq}: I moved to {place} and took up {hobby}.",
        },
        {"role": "assistant", "content": f"How is {hobby} in {place} going?"},
        {"role": "user", "content": f"My friend {person} joins me on day {seq % 28 + 1}."},
        {"role": "assistant", "content": f"Say hello to {person} from me."},
    ]


class Client(threading.Thread):
    """One client: its own key and user, requests one after another until ``stop``."""

    def __init__(
        self,
        url: str,
        n: int,
        key: str,
        stop: threading.Event,
        *,
        op: str = "mixed",
        repeat: bool = False,
    ) -> None:
        super().__init__(name=f"client-{n}")
        self.url, self.n, self.stop, self.op = url, n, stop, op
        self.user = "bench" if op == "search" else f"user{n}"
        self.repeat = repeat
        self.headers = {"Authorization": f"Bearer {key}"}
        self.rng = random.Random(n)
        self.latency: dict[str, list[float]] = {"write": [], "search": []}
        self.statuses: dict[int, int] = {}
        self.acknowledged: set[str] = set()
        self.failures: list[str] = []

    def run(self) -> None:
        with httpx.Client(base_url=self.url, headers=self.headers, timeout=120) as http:
            seq = 0
            while not self.stop.is_set():
                seq += 1
                if self.op == "mixed" and self.rng.random() < 0.7:
                    self._write(http, seq)
                else:
                    self._search(http)

    def _request(
        self, http: httpx.Client, kind: str, path: str, body: Any
    ) -> httpx.Response | None:
        started = time.perf_counter()
        try:
            response = http.post(path, json=body)
        except httpx.HTTPError as exc:
            self.failures.append(f"{kind}: {type(exc).__name__}: {exc}")
            return None
        self.statuses[response.status_code] = self.statuses.get(response.status_code, 0) + 1
        if response.status_code == 200:
            self.latency[kind].append(time.perf_counter() - started)
            return response
        if response.status_code != 429:
            self.failures.append(f"{kind}: {response.status_code} {response.text[:200]}")
        return None

    def _write(self, http: httpx.Client, seq: int) -> None:
        body = {
            "scenes": [chat(self.rng, self.n, seq)],
            "info": {"user_id": self.user, "session_id": f"s{seq}"},
            "store": True,
            "include_embeddings": False,
        }
        response = self._request(http, "write", "/v1/read", body)
        if response is not None:
            self.acknowledged.update(e["memory_id"] for e in response.json()["events"])

    def _search(self, http: httpx.Client) -> None:
        query = f"{self.rng.choice(HOBBIES)} in {self.rng.choice(PLACES)}"
        if self.op == "search":
            query = self.rng.choice(REPEATED) if self.repeat else distinct(self.rng)
        self._request(http, "search", "/v1/memories/search", {"user_id": self.user, "query": query})

    def lost(self, http: httpx.Client) -> int:
        """Acknowledged memories not in the store (or not active)."""
        missing = 0
        for memory_id in sorted(self.acknowledged):
            answer = http.get(
                f"/v1/memories/{memory_id}", params={"user_id": self.user}, headers=self.headers
            )
            if answer.status_code != 200 or answer.json()["status"] != "active":
                missing += 1
        return missing


def start_server(
    folder: Path,
    clients: int,
    port: int,
    *,
    workers: int | None = None,
    embedder: str = "local",
    store: str = "sqlite:///load.db",
    users: str | None = None,
    **service: Any,
) -> tuple[subprocess.Popen[bytes], list[str]]:
    """``memreader serve`` (this checkout's code) on ``port`` with one key per client, each
    walled to ``users`` (default: its own ``userN``)."""
    keys = [f"mr_load_{n}_{os.urandom(8).hex()}" for n in range(clients)]
    config = {
        "backend": "simple_struct",
        "config": {"embedder": {"backend": embedder}, "store": store},
        "service": {
            "port": port,
            "keys": [
                {"name": f"client{n}", "sha256": hash_key(key), "users": [users or f"user{n}"]}
                for n, key in enumerate(keys)
            ],
            **service,
        },
    }
    (folder / "service.yaml").write_text(json.dumps(config))
    command = [sys.executable, "-m", "memreader.cli", "serve", "--config"]
    command += [str(folder / "service.yaml"), "--log-level", "warning"]
    if workers is not None:
        command += ["--workers", str(workers)]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT)}
    # Run in ``folder``: ``python -m`` puts the working folder first on the path, ahead of
    # PYTHONPATH, so a checkout run from there would serve its own code, not ROOT's.
    server = subprocess.Popen(command, env=env, cwd=folder)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return server, keys
        except httpx.HTTPError:
            time.sleep(0.2)
    server.kill()
    raise SystemExit("the server did not start")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", default="8", help="a count, or a list: 1,8,32,128")
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--port", type=int, default=8791)
    parser.add_argument(
        "--op",
        choices=["mixed", "search", "healthz"],
        default="mixed",
        help="healthz: GET /healthz over the search's store, what a request costs bare",
    )
    parser.add_argument("--workers", type=int, default=None, help="memreader serve --workers")
    parser.add_argument(
        "--pin-workers",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="service.pin_workers (default: the service's, auto)",
    )
    parser.add_argument("--embedder", choices=["local", "hash"], default="local")
    parser.add_argument("--memories", type=int, default=2000, help="the store's (--op search)")
    parser.add_argument(
        "--queries",
        choices=["distinct", "repeated"],
        default="distinct",
        help="--op search: random three-word searches, or 80 fixed ones",
    )
    parser.add_argument("--postgres", action="store_true", help="a throwaway PostgreSQL store")
    parser.add_argument(
        "--generator", choices=["light", "httpx"], default="light", help="--op search's clients"
    )
    parser.add_argument("--flood", type=int, default=0, help="key A's concurrent 504ing reads")
    parser.add_argument("--timeout", type=float, default=2.0, help="request_timeout_s (--flood)")
    args = parser.parse_args()
    if args.flood:
        from service_flood import flood

        args.clients = int(args.clients)
        flood(args, start_server)
        return
    counts = [int(n) for n in str(args.clients).split(",")]
    with tempfile.TemporaryDirectory() as tmp, _store(args, Path(tmp)) as store:
        server, keys = start_server(
            Path(tmp),
            max(counts),
            args.port,
            workers=args.workers,
            embedder=args.embedder,
            store=store,
            users="bench" if args.op in ("search", "healthz") else None,
            # Every client connects from 127.0.0.1: one address stands for many clients here.
            max_connections_per_client=1024,
            **({} if args.pin_workers is None else {"pin_workers": args.pin_workers}),
        )
        url = f"http://127.0.0.1:{args.port}"
        try:
            op = "search" if args.op == "healthz" else args.op
            warm = Client(url, 0, keys[0], threading.Event(), op=op)
            with httpx.Client(base_url=url, headers=warm.headers, timeout=120) as http:
                if op == "search":
                    fill(http, args.memories)
                else:  # warm the embedder (its first batch loads the model)
                    warm._write(http, 0)
            rows = []
            for count in counts:
                load = os.getloadavg()[0]
                cpu_before, own_before = server_cpu(server.pid), time.process_time()
                print(f"{count} clients for {args.seconds:g} s ...", file=sys.stderr)
                started = time.perf_counter()
                clients = run_row(args, url, keys, count)
                wall = time.perf_counter() - started
                cpu = server_cpu(server.pid) - cpu_before
                cpu = (cpu, time.process_time() - own_before)
                with httpx.Client(base_url=url, timeout=60) as http:
                    lost = sum(client.lost(http) for client in clients)
                rows.append((count, clients, wall, lost, load, cpu))
        finally:
            server.terminate()
            server.wait(30)
    report(args, rows)


def run_row(args: argparse.Namespace, url: str, keys: list[str], count: int) -> list[Any]:
    """``count`` clients for ``args.seconds``: searches on the light generator (one asyncio
    loop, :mod:`light_load`) unless ``--generator httpx``; the mix on threads with httpx."""
    repeat = args.queries == "repeated"
    if args.op == "healthz":
        return run_clients(url, keys, count, args.seconds, _query(repeat), get="/healthz")
    if args.op == "search" and args.generator == "light":
        return run_clients(url, keys, count, args.seconds, _query(repeat))
    stop = threading.Event()
    clients = [Client(url, n, keys[n], stop, op=args.op, repeat=repeat) for n in range(count)]
    run_for(clients, stop, args.seconds, join_s=180)
    return clients


def _query(repeat: bool) -> Any:
    return (lambda rng: rng.choice(REPEATED)) if repeat else distinct


@contextmanager
def _store(args: argparse.Namespace, folder: Path) -> Iterator[str]:
    """The store URL: a SQLite file in ``folder``, or a database on a throwaway PostgreSQL."""
    if not args.postgres:
        yield "sqlite:///load.db"
        return
    sys.path.insert(0, str(ROOT))
    from tests.pg_server import create_database, running_server

    with running_server() as admin:
        yield create_database(admin, "load")


def server_cpu(pid: int) -> float:
    """CPU seconds (user + system) the server and its workers have used so far."""
    import psutil

    process = psutil.Process(pid)
    total = 0.0
    for each in [process, *process.children(recursive=True)]:
        try:
            times = each.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


def fill(http: httpx.Client, memories: int) -> None:
    """Write ``memories`` distinct one-message chats of user ``bench`` (100 per request)."""
    rng = random.Random(31)
    added = 0
    while added < memories:
        scenes = [
            [{"role": "user", "content": salad(rng)}] for _ in range(min(100, memories - added))
        ]
        body = {
            "scenes": scenes,
            "info": {"user_id": "bench", "session_id": f"s{added}"},
            "store": True,
        }
        body["include_embeddings"] = False
        answer = http.post("/v1/read", json=body)
        if answer.status_code != 200:
            raise SystemExit(f"filling the store: {answer.status_code} {answer.text[:300]}")
        added += sum(event["event"] == "ADD" for event in answer.json()["events"])
    print(f"store: {added} memories of user bench", file=sys.stderr)


if __name__ == "__main__":
    main()
