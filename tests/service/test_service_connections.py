"""Slow and greedy clients against a real server (``memreader serve``'s uvicorn config on
127.0.0.1, raw sockets): headers and bodies sent too slowly are cut off, connections beyond the
per-address and total limits are refused, a normal client is answered meanwhile, and the access
log never shows a query string."""

from __future__ import annotations

import logging
import select
import socket
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import pytest

from memreader.factory import MemReaderConfigFactory
from memreader.service import ServiceConfig, ServiceSettings, create_app
from memreader.service.server import QueryOmitted
from tests.service_server import running

pytestmark = pytest.mark.timeout(60)

#: The most socket reads/writes a test makes while it waits for the server to act: a bound,
#: not a time the test asserts.
MAX_STEPS = 60
STEP_S = 0.25


@contextmanager
def serving(log_level: str = "warning", **service: Any) -> Iterator[tuple[str, int]]:
    settings = ServiceSettings(**service)
    app = create_app(ServiceConfig(MemReaderConfigFactory(config={"embedder": None}), settings))
    with running(app, settings=settings, log_level=log_level) as url:
        yield "127.0.0.1", int(url.rsplit(":", 1)[1])


def connect(address: tuple[str, int], source: str = "127.0.0.1") -> socket.socket:
    sock = socket.create_connection(address, timeout=5, source_address=(source, 0))
    sock.setblocking(False)
    return sock


def read_some(sock: socket.socket) -> bytes | None:
    """What the server sent within one step (``b""``: it closed; ``None``: nothing yet)."""
    ready, _, _ = select.select([sock], [], [], STEP_S)
    if not ready:
        return None
    try:
        return sock.recv(65536)
    except ConnectionResetError:
        return b""


def until_closed(sock: socket.socket, trickle: bytes = b"") -> tuple[bytes, int]:
    """Send ``trickle`` (one byte a step, when given) until the server closes ``sock``;
    returns what it answered and how many bytes were trickled (fails after MAX_STEPS)."""
    answer = b""
    sent = 0
    for _ in range(MAX_STEPS):
        # Read before each byte: an answer that came is read before a byte sent after the
        # close could make the peer reset the connection.
        got = read_some(sock)
        if got == b"":
            return answer, sent
        answer += got or b""
        if trickle and not got:
            try:
                sock.send(trickle[sent % len(trickle) : sent % len(trickle) + 1])
                sent += 1
            except (BrokenPipeError, ConnectionResetError):
                return answer, sent
    raise AssertionError(f"the server kept the connection open (it answered {answer[:80]!r})")


def normal_get(host: str, port: int, source: str = "127.0.0.1") -> int:
    transport = httpx.HTTPTransport(local_address=source)
    with httpx.Client(transport=transport, timeout=10) as client:
        return client.get(f"http://{host}:{port}/healthz").status_code


def test_headers_sent_a_line_at_a_time_are_cut_off_while_others_are_answered() -> None:
    with serving(header_timeout_s=1) as address:
        slow = [connect(address) for _ in range(3)]
        for sock in slow:
            sock.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
        assert normal_get(*address) == 200
        for sock in slow:
            answer, sent = until_closed(sock, trickle=b"X-Slow: 1\r\n")
            assert answer.startswith(b"HTTP/1.1 408 "), answer[:80]
            assert b"header-timeout" in answer and sent < MAX_STEPS
            sock.close()
        assert normal_get(*address) == 200


def test_a_connection_that_sends_nothing_is_closed() -> None:
    with serving(header_timeout_s=1) as address:
        sock = connect(address)
        answer, _ = until_closed(sock)
        assert answer == b""  # nothing was asked: closed without an answer
        sock.close()


def test_a_keep_alive_connection_must_send_its_next_headers_in_time() -> None:
    with serving(header_timeout_s=1) as address:
        sock = connect(address)
        sock.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
        first = b""
        for _ in range(MAX_STEPS):
            first += read_some(sock) or b""
            if first.endswith(b"}"):
                break
        assert first.startswith(b"HTTP/1.1 200 ")
        sock.send(b"GET /healthz HTTP/1.1\r\n")  # the next request, never finished
        answer, _ = until_closed(sock, trickle=b"X: 1\r\n")
        assert answer.startswith(b"HTTP/1.1 408 ")
        sock.close()


def test_a_trickled_body_is_408_and_closed() -> None:
    with serving(body_timeout_s=1) as address:
        sock = connect(address)
        body = b'{"user_id": "ana", "query": "lisbon"}'
        sock.send(
            b"POST /v1/memories/search HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
            b"Content-Length: %d\r\n\r\n" % len(body)
        )
        answer, sent = until_closed(sock, trickle=body[:-1])
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:120]
        assert b"body-timeout" in answer and b"connection: close" in answer.lower()
        assert sent < len(body) - 1  # cut off before the body was whole
        sock.close()
        assert normal_get(*address) == 200


def test_a_body_still_trickling_after_an_early_answer_is_closed() -> None:
    with serving(body_timeout_s=1) as address:
        sock = connect(address)
        # No such route: answered 404 without the body being read, which keeps coming.
        sock.send(b"POST /nowhere HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000\r\n\r\n")
        answer, sent = until_closed(sock, trickle=b"x")
        assert answer.startswith(b"HTTP/1.1 404 ") and sent < MAX_STEPS
        sock.close()


def refused(sock: socket.socket) -> bytes:
    answer, _ = until_closed(sock)
    sock.close()
    return answer


def test_connections_over_the_per_address_limit_are_refused_and_others_served() -> None:
    with serving(max_connections_per_client=3, header_timeout_s=30) as address:
        held = [connect(address) for _ in range(3)]
        extra = connect(address)
        answer = refused(extra)
        assert answer.startswith(b"HTTP/1.1 429 ") and b"max_connections_per_client" in answer
        # Another address is served meanwhile.
        assert normal_get(*address, source="127.0.0.2") == 200
        # Closing one makes room again (the server notices the close first).
        held.pop().close()
        for _ in range(MAX_STEPS):
            sock = connect(address)
            sock.send(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            answer, _ = until_closed(sock)
            sock.close()
            if answer.startswith(b"HTTP/1.1 200 "):
                break  # (a refusal is a 429, or a reset if our request raced it)
            time.sleep(STEP_S)
        assert answer.startswith(b"HTTP/1.1 200 ")
        for sock in held:
            sock.close()


def test_connections_over_the_total_limit_are_refused() -> None:
    with serving(max_connections=4, max_connections_per_client=2, header_timeout_s=30) as address:
        held = [connect(address, source) for source in ("127.0.0.1", "127.0.0.2") for _ in "ab"]
        answer = refused(connect(address, "127.0.0.3"))
        assert answer.startswith(b"HTTP/1.1 503 ") and b"max_connections" in answer
        for sock in held:
            sock.close()


def test_connection_limits_are_checked() -> None:
    with pytest.raises(ValueError, match="max_connections_per_client must not be over"):
        ServiceSettings(max_connections=2, max_connections_per_client=3)
    with pytest.raises(ValueError, match="header_timeout_s"):
        ServiceSettings(header_timeout_s=0)


def test_the_access_log_never_shows_a_query_string() -> None:
    lines: list[str] = []

    class Keep(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            lines.append(record.getMessage())

    with serving(log_level="info") as (host, port):
        handler = Keep()
        logging.getLogger("uvicorn.access").addHandler(handler)
        try:
            with httpx.Client(timeout=10) as client:
                got = client.get(f"http://{host}:{port}/healthz?api_key=mr_sekrit&user_id=ana")
            assert got.status_code == 200
        finally:
            logging.getLogger("uvicorn.access").removeHandler(handler)
    assert lines and all("sekrit" not in line and "ana" not in line for line in lines)
    assert any("/healthz?…" in line for line in lines)


def test_the_query_filter_leaves_other_records_alone() -> None:
    record = logging.LogRecord("uvicorn.access", 20, "", 0, "%s", ("plain",), None)
    assert QueryOmitted().filter(record) and record.args == ("plain",)


def test_memreader_serve_runs_the_guarded_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpython_switch_interval: float
) -> None:
    from memreader.cli import main
    from memreader.service import server

    served: list[Any] = []
    monkeypatch.setattr(server.uvicorn.Server, "run", lambda self: served.append(self.config))
    config = tmp_path / "reader.yaml"
    config.write_text("config: {embedder: null}\nservice: {max_connections_per_client: 7}\n")
    assert main(["serve", "--config", str(config), "--port", "0", "--workers", "1"]) == 0
    (uvicorn_config,) = served
    assert issubclass(uvicorn_config.http, server.GuardedH11Protocol)
    assert uvicorn_config.http.guard.max_per_client == 7
    assert uvicorn_config.log_config["loggers"]["uvicorn.access"]["filters"] == ["no_query"]
    # Each of N workers serves the shared socket on a guarded server with a guard of its own.
    from memreader.service import load_service_config
    from memreader.service.workers import run_worker

    monkeypatch.setattr(
        server.uvicorn.Server, "run", lambda self, sockets=None: served.append(self.config)
    )
    for _ in range(2):
        run_worker(load_service_config(config), None, host="127.0.0.1", port=0, log_level="info")  # type: ignore[arg-type]
    first, second = served[1:]
    assert (
        issubclass(first.http, server.GuardedH11Protocol) and first.http.guard.max_per_client == 7
    )
    assert first.http.guard is not second.http.guard


@pytest.fixture
def cpython_switch_interval() -> Iterator[float]:
    """CPython's own switch interval (5 ms) for the test, and the process's back after it:
    a served app sets its own (:func:`memreader.service.server.set_serving_switch_interval`)."""
    kept = sys.getswitchinterval()
    sys.setswitchinterval(0.005)
    yield 0.005
    sys.setswitchinterval(kept)


def test_a_serving_process_takes_the_interpreter_lock_back_within_1_ms(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, cpython_switch_interval: float
) -> None:
    # The event loop gives the lock away at each socket write; at CPython's 5 ms it waited
    # that long behind a search on a store thread, and every connection with it.
    from memreader.cli import main
    from memreader.service import load_service_config, server
    from memreader.service.workers import run_worker

    seen: list[float] = []
    monkeypatch.setattr(
        server.uvicorn.Server,
        "run",
        lambda self, sockets=None: seen.append(sys.getswitchinterval()),
    )
    config = tmp_path / "reader.yaml"
    config.write_text("config: {embedder: null}\n")
    assert main(["serve", "--config", str(config), "--port", "0", "--workers", "1"]) == 0
    sys.setswitchinterval(cpython_switch_interval)
    run_worker(load_service_config(config), None, host="127.0.0.1", port=0, log_level="info")  # type: ignore[arg-type]
    assert seen == [pytest.approx(server.SWITCH_INTERVAL_S)] * 2
    assert cpython_switch_interval > server.SWITCH_INTERVAL_S


def test_a_worker_accepts_one_connection_per_wake_up_and_keeps_the_parents_backlog(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Accepting every pending connection at once, the first worker woken took a whole burst
    # of clients and left the others idle (issue 31): a worker takes one per wake-up, and
    # asyncio's listen() with that backlog must not shrink the queue the parent set.
    from memreader.service import load_service_config, server
    from memreader.service.accept_share import SharedListener
    from memreader.service.workers import run_worker

    served: list[tuple[Any, Any]] = []
    monkeypatch.setattr(
        server.uvicorn.Server,
        "run",
        lambda self, sockets=None: served.append((self.config, sockets)),
    )
    config = tmp_path / "reader.yaml"
    config.write_text("config: {embedder: null}\n")
    parent = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    parent.bind(("127.0.0.1", 0))
    parent.listen(16)
    port = parent.getsockname()[1]
    run_worker(load_service_config(config), parent, host="127.0.0.1", port=port, log_level="info")
    ((uvicorn_config, (listener,)),) = served
    assert uvicorn_config.backlog == 1 and isinstance(listener, SharedListener)
    listener.listen(uvicorn_config.backlog)  # what asyncio does when it starts serving
    # Six connections wait unaccepted: with a queue of one, the kernel would hold two.
    clients = [socket.create_connection(("127.0.0.1", port), timeout=2) for _ in range(6)]
    try:
        accepted = []
        for _ in clients:
            readable, _, _ = select.select([listener], [], [], 5)
            assert readable, "a connection the queue should hold was dropped"
            accepted.append(listener.accept()[0])
        for conn in accepted:
            conn.close()
    finally:
        for client in clients:
            client.close()
        listener.close()
