"""``service_load.py --op search``'s load generator: every client a coroutine on one asyncio
loop, each with its own keep-alive HTTP/1.1 connection written and read by hand.

Why not httpx in a thread per client (what the write+search mix still uses): the generator runs
on the same cores as the server, and 32 threads driving httpx cost about as much CPU per search
as the server spends answering it (issue 31: 5-6 ms of the 11 ms a search cost the machine), so
the generator, not the server, set the requests per second. One loop writing a fixed request and
reading ``Content-Length`` bytes costs a fraction of that. The server sees the same requests
(same headers that matter, same bodies, one connection per client, each waiting for its answer).

>>> parse_head(b"HTTP/1.1 200 OK\\r\\ncontent-length: 12\\r\\n\\r\\n")
(200, 12, False)
"""

from __future__ import annotations

import asyncio
import json
import random
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

__all__ = ["LightClient", "parse_head", "run_clients"]


def parse_head(head: bytes) -> tuple[int, int, bool]:
    """``(status, content length, whether the server closes the connection)`` of a response
    head (status line and headers, through the blank line).

    Raises:
        ValueError: no ``Content-Length`` (this generator reads no chunked answers).
    """
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ", 2)[1])
    length, close = None, False
    for line in lines[1:]:
        name, _, value = line.partition(":")
        name = name.strip().lower()
        if name == "content-length":
            length = int(value)
        elif name == "connection" and value.strip().lower() == "close":
            close = True
    if length is None:
        raise ValueError(f"an answer without Content-Length: {lines[0]}")
    return status, length, close


class LightClient:
    """One client: its key, its own connection, searches one after another until the end.

    Its fields are those the report reads of a threaded client (latency, statuses, failures).
    """

    def __init__(
        self,
        url: str,
        n: int,
        key: str,
        query: Callable[[random.Random], str],
        get: str | None = None,
    ) -> None:
        parts = urlsplit(url)
        self.get = get  # a path to GET instead of searching (what a request costs bare)
        self.host, self.port = parts.hostname or "127.0.0.1", parts.port or 80
        self.n, self.key, self.query = n, key, query
        self.rng = random.Random(n)
        self.latency: dict[str, list[float]] = {"write": [], "search": []}
        self.statuses: dict[int, int] = {}
        self.failures: list[str] = []
        self.acknowledged: set[str] = set()

    def lost(self, _http: Any) -> int:
        """Searches write nothing: nothing can be lost."""
        return 0

    def _request(self) -> bytes:
        if self.get is not None:
            head = f"GET {self.get} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            return (head + f"Authorization: Bearer {self.key}\r\n\r\n").encode("latin-1")
        body = json.dumps({"user_id": "bench", "query": self.query(self.rng)}).encode()
        head = (
            f"POST /v1/memories/search HTTP/1.1\r\nHost: {self.host}:{self.port}\r\n"
            f"Authorization: Bearer {self.key}\r\nContent-Type: application/json\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        )
        return head.encode("latin-1") + body

    async def run(self, until: float) -> None:
        """Search until the monotonic time ``until`` (a request started before it ends)."""
        reader = writer = None
        try:
            while time.monotonic() < until:
                if writer is None:
                    reader, writer = await asyncio.open_connection(self.host, self.port)
                assert reader is not None
                started = time.perf_counter()
                writer.write(self._request())
                try:
                    status, length, close = parse_head(await reader.readuntil(b"\r\n\r\n"))
                    body = await reader.readexactly(length)
                except (OSError, ValueError, asyncio.IncompleteReadError) as exc:
                    self.failures.append(f"search: {type(exc).__name__}: {exc}")
                    writer.close()
                    reader = writer = None
                    continue
                self.statuses[status] = self.statuses.get(status, 0) + 1
                if status == 200:
                    self.latency["search"].append(time.perf_counter() - started)
                elif status != 429:
                    self.failures.append(f"search: {status} {body[:200]!r}")
                if close:
                    writer.close()
                    reader = writer = None
        finally:
            if writer is not None:
                writer.close()


def run_clients(
    url: str,
    keys: list[str],
    count: int,
    seconds: float,
    query: Callable[[random.Random], str],
    get: str | None = None,
) -> list[LightClient]:
    """``count`` clients (client ``n`` with ``keys[n]``) searching for ``seconds`` (or asking
    ``GET get``, when given); returned with what each measured."""
    clients = [LightClient(url, n, keys[n], query, get) for n in range(count)]

    async def all_of_them() -> None:
        until = time.monotonic() + seconds
        await asyncio.gather(*(client.run(until) for client in clients))

    asyncio.run(all_of_them())
    return clients
