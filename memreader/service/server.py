"""The service on uvicorn, with what uvicorn does not bound itself: the time a client takes to
send a request's headers, the time it takes to send a body the app answered without reading,
and the number of connections open per client address and in all.

- A connection must complete a request's headers within ``header_timeout_s`` of opening, or of
  the previous answer ending (keep-alive); past it, a client that sent part of a request gets
  408 and the connection is closed (an idle one is closed silently).
- The body is bounded by the app (:class:`~memreader.service.limits.BodyLimit`: 408 once
  ``body_timeout_s`` passes); a body the app did not wait for (an early 401 or 413) that is
  still arriving ``body_timeout_s`` after its headers gets the connection closed.
- Past ``max_connections_per_client`` open connections from one address, a new one is answered
  429 and closed; past ``max_connections`` in all, 503.
- The access log never shows a query string (it may hold a secret: ``?api_key=``).

:func:`uvicorn_config` builds the uvicorn config ``memreader serve`` runs (h11, whatever else is
installed: the limits are h11's subclass :class:`GuardedH11Protocol`).
"""

from __future__ import annotations

import asyncio
import copy
import json
import logging
import sys
from collections import Counter
from collections.abc import Callable
from typing import Any, ClassVar

import h11
import uvicorn
from uvicorn.config import LOGGING_CONFIG
from uvicorn.protocols.http.h11_impl import H11Protocol

from memreader.service.config import ServiceSettings

__all__ = [
    "SWITCH_INTERVAL_S",
    "ConnectionGuard",
    "GuardedH11Protocol",
    "QueryOmitted",
    "guarded_protocol",
    "serve",
    "set_serving_switch_interval",
]

logger = logging.getLogger(__name__)

#: Seconds between two looks at a body still arriving while the app has not answered yet.
_BODY_RECHECK_S = 1.0
#: How long a thread of a serving process may keep the interpreter lock while another waits
#: for it (CPython's default: 5 ms); see :func:`set_serving_switch_interval`.
SWITCH_INTERVAL_S = 0.001


class ConnectionGuard:
    """The limits of one server and its open connections, by client address (one event loop
    touches it: no lock)."""

    def __init__(self, settings: ServiceSettings) -> None:
        self.header_timeout_s = settings.header_timeout_s
        self.body_timeout_s = settings.body_timeout_s
        self.max_connections = settings.max_connections
        self.max_per_client = settings.max_connections_per_client
        self.open: Counter[str] = Counter()
        self.total = 0
        self.refused = 0
        #: Told ``total`` whenever it changes (a worker's share of the connections,
        #: :mod:`memreader.service.accept_share`).
        self.watch: Callable[[int], None] | None = None

    def admit(self, peer: str) -> tuple[int, str] | None:
        """Count a new connection from ``peer``; ``(status, why)`` when it is refused."""
        if self.total >= self.max_connections:
            return 503, f"the service has {self.total} open connections (max_connections)"
        if self.open[peer] >= self.max_per_client:
            return 429, (
                f"this address has {self.open[peer]} open connections "
                "(max_connections_per_client); close one first"
            )
        self.open[peer] += 1
        self.total += 1
        if self.watch is not None:
            self.watch(self.total)
        return None

    def release(self, peer: str) -> None:
        """Forget one connection of ``peer``."""
        self.total -= 1
        self.open[peer] -= 1
        if self.open[peer] <= 0:
            del self.open[peer]
        if self.watch is not None:
            self.watch(self.total)


def _raw_answer(status: int, reason: str, detail: str) -> bytes:
    """A whole HTTP/1.1 problem answer that closes the connection, written before (or instead
    of) h11's own state machine: there may be no request to answer yet."""
    body = json.dumps(
        {"type": f"urn:memreader:problem:{reason}", "status": status, "detail": detail}
    ).encode()
    phrase = {408: "Request Timeout", 429: "Too Many Requests", 503: "Service Unavailable"}
    head = (
        f"HTTP/1.1 {status} {phrase[status]}\r\ncontent-type: application/problem+json\r\n"
        f"content-length: {len(body)}\r\nconnection: close\r\n"
    )
    if status != 408:
        head += "retry-after: 1\r\n"
    return head.encode() + b"\r\n" + body


class GuardedH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with the guard's limits (see the module docstring). A subclass
    bound to one guard is made by :func:`guarded_protocol`."""

    guard: ClassVar[ConnectionGuard]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._peer: str | None = None  # set once the connection is counted
        self._header_timer: asyncio.TimerHandle | None = None
        self._body_timer: asyncio.TimerHandle | None = None
        self._waiting_after: Any = None  # the cycle before the request whose headers we await
        self._partial = False  # bytes of the awaited request arrived

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        client = transport.get_extra_info("peername")
        peer = str(client[0]) if isinstance(client, tuple) and client else ""
        refusal = self.guard.admit(peer)
        if refusal is not None:
            self.guard.refused += 1
            status, detail = refusal
            logger.warning("connection from %s refused: %s", peer or "a local socket", detail)
            self.transport = transport
            transport.write(_raw_answer(status, "too-many-connections", detail))
            transport.close()
            return
        self._peer = peer
        super().connection_made(transport)
        self._await_headers()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._peer is None:  # refused: never counted, never served
            return
        self._cancel_timers()
        self.guard.release(self._peer)
        self._peer = None
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._peer is None:
            return
        if self._header_timer is not None and data:
            self._partial = True
        super().data_received(data)
        self._check_started()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        self._check_started()
        if self.conn.their_state is h11.IDLE and self._header_timer is None:
            self._await_headers()

    def _await_headers(self) -> None:
        """Start the wait for the next request's headers."""
        self._waiting_after = self.cycle
        self._partial = False
        self._header_timer = self.loop.call_later(
            self.guard.header_timeout_s, self._headers_expired
        )

    def _check_started(self) -> None:
        """Once the awaited request's headers are in (a new cycle), time its body instead."""
        if self._header_timer is None or self.cycle is self._waiting_after:
            return
        self._header_timer.cancel()
        self._header_timer = None
        if self._body_timer is not None:
            self._body_timer.cancel()
        self._body_timer = self.loop.call_later(self.guard.body_timeout_s, self._body_expired)

    def _headers_expired(self) -> None:
        self._header_timer = None
        if self.transport.is_closing() or self.cycle is not self._waiting_after:
            return
        if self._partial:
            logger.info("closing a connection from %s: headers too slow", self._peer)
            detail = "the request's headers took longer than the service's header_timeout_s"
            self.transport.write(_raw_answer(408, "header-timeout", detail))
        self.transport.close()

    def _body_expired(self) -> None:
        self._body_timer = None
        if self.transport.is_closing() or self.conn.their_state is not h11.SEND_BODY:
            return
        if self.cycle is not None and not self.cycle.response_complete:
            # The app is answering: it bounds the body it reads (BodyLimit); look again later,
            # in case it answers without reading the rest.
            self._body_timer = self.loop.call_later(_BODY_RECHECK_S, self._body_expired)
            return
        logger.info("closing a connection from %s: body too slow", self._peer)
        self.transport.close()

    def _cancel_timers(self) -> None:
        for timer in (self._header_timer, self._body_timer):
            if timer is not None:
                timer.cancel()
        self._header_timer = self._body_timer = None


def guarded_protocol(settings: ServiceSettings) -> type[GuardedH11Protocol]:
    """A :class:`GuardedH11Protocol` class with its own guard (one per server)."""

    class Guarded(GuardedH11Protocol):
        guard = ConnectionGuard(settings)

    return Guarded


class QueryOmitted(logging.Filter):
    """Drops the query string from uvicorn's access log lines (``/path?…``): it may hold a
    secret (``?api_key=``) or a user's words."""

    def filter(self, record: logging.LogRecord) -> bool:
        args = record.args
        if isinstance(args, tuple) and len(args) >= 3 and isinstance(args[2], str):
            path, mark, _ = args[2].partition("?")
            record.args = (*args[:2], path + ("?…" if mark else ""), *args[3:])
        return True


def log_config() -> dict[str, Any]:
    """uvicorn's logging config, with :class:`QueryOmitted` on its access log."""
    config = copy.deepcopy(LOGGING_CONFIG)
    config.setdefault("filters", {})["no_query"] = {"()": f"{__name__}.QueryOmitted"}
    config["loggers"]["uvicorn.access"]["filters"] = ["no_query"]
    return config


def uvicorn_config(
    app: Any, settings: ServiceSettings, *, host: str, port: int, log_level: str = "info"
) -> uvicorn.Config:
    """The uvicorn config serving ``app`` with ``settings``' connection limits."""
    return uvicorn.Config(
        app,
        host=host,
        port=port,
        log_level=log_level,
        log_config=log_config(),
        server_header=False,
        http=guarded_protocol(settings),
        ws="none",  # the service has no WebSocket route: no upgrade is accepted
        lifespan="on",
    )


def set_serving_switch_interval() -> None:
    """Let the event loop get the interpreter lock back within :data:`SWITCH_INTERVAL_S`.

    The loop gives the lock away at every socket write and every statement on the shared
    state file; while a search ran on a store thread, the loop waited up to CPython's whole
    5 ms to get it back, and every connection of the worker waited with it. With 1 ms,
    under 32 clients on a loaded 2-core machine: 1.1-2x the requests per second in four
    pairs, the CPU per search no higher (benchmarks/RESULTS.md, issue 42). Called by each
    serving process (:func:`serve`, the workers), never on import: a library does not
    change its host's interpreter.
    """
    sys.setswitchinterval(SWITCH_INTERVAL_S)


def serve(app: Any, settings: ServiceSettings, *, host: str, port: int, log_level: str) -> None:
    """Serve ``app`` until interrupted (:func:`set_serving_switch_interval` first)."""
    set_serving_switch_interval()
    uvicorn.Server(uvicorn_config(app, settings, host=host, port=port, log_level=log_level)).run()
