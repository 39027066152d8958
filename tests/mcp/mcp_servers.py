"""What the MCP tests share: ``memreader mcp`` as a subprocess (stdio, or ``--http`` on a free
port), driven by the SDK's own client, with the ``hash`` embedder config unless a test wants
the default one; every wait bounded."""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Awaitable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TypeVar

import httpx2
import yaml
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from memreader.service.keys import hash_key

ROOT = Path(__file__).resolve().parents[2]
T = TypeVar("T")

#: Seconds a whole test conversation with a server may take (a loaded two-core machine).
CONVERSATION_S = 120.0
#: Seconds one client read may wait for the server.
READ_S = 60.0


def run(work: Awaitable[T], timeout: float = CONVERSATION_S) -> T:
    """``work`` to its end, within ``timeout`` seconds."""
    return asyncio.run(asyncio.wait_for(work, timeout))  # type: ignore[arg-type]


def environment(home: Path) -> dict[str, str]:
    """The server's environment: this checkout's code, a data folder of the test's own,
    nothing downloaded."""
    return {
        "PYTHONPATH": str(ROOT),
        "MEMREADER_HOME": str(home),
        "HF_HUB_OFFLINE": "1",
        "TRANSFORMERS_OFFLINE": "1",
    }


def hash_config(
    folder: Path,
    service: dict[str, Any] | None = None,
    *,
    backend: str = "simple_struct",
    **settings: Any,
) -> Path:
    """A reader YAML with the ``hash`` embedder and a SQLite store in ``folder`` (and a
    ``service:`` section when given, and the reader ``settings``)."""
    data: dict[str, Any] = {
        "backend": backend,
        "config": {
            "embedder": {"backend": "hash"},
            "store": f"sqlite:///{folder / 'm.db'}",
            **settings,
        },
    }
    if service is not None:
        data["service"] = service
    path = folder / "mcp.yaml"
    path.write_text(yaml.safe_dump(data), encoding="utf-8")
    return path


def stdio_client(home: Path, *args: str) -> Client:
    """A client of ``memreader mcp ARGS`` over stdio."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "memreader.cli", "mcp", *args],
        env=environment(home),
        cwd=str(home.parent),
    )
    return Client(params, read_timeout_seconds=READ_S)


def answer(result: Any) -> dict[str, Any]:
    """A successful tool call's JSON answer."""
    assert not result.is_error, result.content[0].text
    data: dict[str, Any] = json.loads(result.content[0].text)
    assert data == result.structured_content
    return data


def error(result: Any) -> str:
    """A failed tool call's message."""
    assert result.is_error, result.content
    text: str = result.content[0].text
    return text


def keys_file(folder: Path, keys: dict[str, list[str]]) -> Path:
    """A keys file admitting the key ``mr_test_<name>`` for each name's users."""
    entries = [
        {"name": name, "sha256": hash_key(f"mr_test_{name}"), "users": users}
        for name, users in keys.items()
    ]
    path = folder / "keys.yaml"
    path.write_text(yaml.safe_dump({"keys": entries}), encoding="utf-8")
    return path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextmanager
def http_server(home: Path, *args: str, timeout: float = 90.0) -> Iterator[str]:
    """``memreader mcp --http ARGS`` on a free port; yields its MCP URL."""
    port = free_port()
    log = (home.parent / f"mcp_http_{port}.log").open("w")
    server = subprocess.Popen(
        [sys.executable, "-m", "memreader.cli", "mcp", "--http", "--port", str(port), *args],
        env={**os.environ, **environment(home)},
        cwd=str(home.parent),
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    try:
        deadline = time.monotonic() + timeout
        while True:
            if server.poll() is not None:
                log.flush()
                raise AssertionError(
                    f"memreader mcp --http exited {server.returncode}: "
                    + Path(log.name).read_text(encoding="utf-8")[-2000:]
                )
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AssertionError("memreader mcp --http did not listen") from None
                time.sleep(0.2)
        yield f"http://127.0.0.1:{port}/mcp"
    finally:
        server.terminate()
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait(timeout=30)
        log.close()


def http_client(url: str, key: str | None) -> Client:
    """A client of the MCP server at ``url`` sending ``key``."""
    headers = {"Authorization": f"Bearer {key}"} if key is not None else {}
    http = httpx2.AsyncClient(headers=headers, timeout=httpx2.Timeout(READ_S))
    return Client(streamable_http_client(url, http_client=http), read_timeout_seconds=READ_S)
