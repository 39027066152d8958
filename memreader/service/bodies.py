"""What a request body may be: at most ``max_request_bytes`` (413), and whole within
``body_timeout_s`` of the app starting to read it (408) and within the request's own deadline
(``request_timeout_s`` from its first byte: 504); either way the connection is closed. A client
trickling a body must not hold a connection, nor its key's slot, past either."""

from __future__ import annotations

import asyncio
import math
import sys
import time

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memreader.calls.deadlines import Deadline
from memreader.service.problems import ProblemError, problem_response
from memreader.service.request_scope import DEADLINE

__all__ = ["BodyLimit", "too_large", "too_late", "too_slow"]


class _Refused(Exception):
    """The body broke a limit: the middleware answers its problem."""


def too_large(limit: int) -> ProblemError:
    """The 413 problem of a body over ``limit`` bytes."""
    return ProblemError(
        413,
        "too-large",
        "Request body too large",
        f"the request body is over the service's max_request_bytes ({limit} bytes)",
        extra={"max_request_bytes": limit},
    )


def too_slow(seconds: float) -> ProblemError:
    """The 408 problem of a body that did not arrive within ``seconds``; the connection is
    closed after it (the rest of the body is never read)."""
    return ProblemError(
        408,
        "body-timeout",
        "Request body too slow",
        f"the request body did not arrive within the service's body_timeout_s ({seconds:g} s)",
        extra={"body_timeout_s": seconds},
        headers={"Connection": "close"},
    )


def too_late(deadline: Deadline) -> ProblemError:
    """The 504 problem of a body still arriving when the request's ``deadline`` passed; the
    connection is closed after it (the rest of the body is never read)."""
    limit = f" ({deadline.seconds:g} s)" if deadline.seconds is not None else ""
    return ProblemError(
        504,
        "deadline",
        "Deadline exceeded",
        f"the request body did not arrive within the service's request_timeout_s{limit}; "
        "nothing was read or stored",
        headers={"Connection": "close"},
    )


def _declared_length(scope: Scope) -> int:
    for name, value in scope.get("headers", []):
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return 0
    return 0


if sys.version_info >= (3, 11):

    async def _within(receive: Receive, seconds: float) -> Message:
        """``await receive()``, else :class:`TimeoutError` after ``seconds`` (none left: at
        once, ``receive`` never called), as ``asyncio.wait_for``, which before Python 3.12
        runs it as a task of its own (three times the cost, for every request)."""
        if seconds <= 0:
            raise TimeoutError
        async with asyncio.timeout(seconds):
            return await receive()

else:  # pragma: no cover - Python 3.10 has no asyncio.timeout

    async def _within(receive: Receive, seconds: float) -> Message:
        return await asyncio.wait_for(receive(), max(0.0, seconds))


class BodyLimit:
    """ASGI middleware answering 413 to a body over ``limit`` bytes (at once when
    ``Content-Length`` says so, else as soon as the bytes read pass it: a chunked body is never
    read further) and 408 to one not whole ``timeout_s`` after the middleware was called
    (``None``: no deadline)."""

    def __init__(self, app: ASGIApp, limit: int, timeout_s: float | None = None) -> None:
        self.app = app
        self.limit = limit
        self.timeout_s = timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        if _declared_length(scope) > self.limit:
            await problem_response(too_large(self.limit))(scope, receive, send)
            return
        deadline = math.inf if self.timeout_s is None else time.monotonic() + self.timeout_s
        # The request's own deadline (admission's, from its first byte) bounds the body too.
        request = scope.get(DEADLINE)
        request = request if isinstance(request, Deadline) else None
        seen = 0
        whole = False
        failure: ProblemError | None = None

        async def counted_receive() -> Message:
            nonlocal seen, whole, failure
            request_at = math.inf if request is None else time.monotonic() + request.remaining
            until = min(deadline, request_at)
            if whole or until == math.inf:
                # Past the body, receive waits for a disconnect: no deadline on that.
                return await receive()
            try:
                message = await _within(receive, until - time.monotonic())
            except TimeoutError:
                if request is not None and request_at <= deadline:
                    failure = too_late(request)
                else:
                    assert self.timeout_s is not None  # the body's own limit came first
                    failure = too_slow(self.timeout_s)
                raise _Refused from None
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                whole = not message.get("more_body", False)
                if seen > self.limit:
                    failure = too_large(self.limit)
                    raise _Refused
            return message

        refused = False

        async def guarded_send(message: Message) -> None:
            # However the app answered the body it could not read (FastAPI makes it a 400),
            # the client gets the 413 or the 408.
            nonlocal refused
            if failure is None:
                await send(message)
                return
            if not refused:
                refused = True
                await problem_response(failure)(scope, receive, send)

        try:
            await self.app(scope, counted_receive, guarded_send)
        except _Refused:
            if not refused and failure is not None:
                refused = True
                await problem_response(failure)(scope, receive, send)
