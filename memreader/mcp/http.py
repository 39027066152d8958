"""``memreader mcp --http``: the MCP server over the SDK's streamable HTTP transport, behind
the keys of ``memreader serve``.

- A request without a key of the service (``Authorization: Bearer KEY``, the keys and
  ``keys_file`` of the config's ``service:`` section) is 401 from its headers alone, before
  the SDK reads its body; a key then decides whose memories each call may touch
  (:mod:`memreader.mcp.users`).
- Without keys it listens on a loopback address only (``ServiceConfig.check_listen``), as
  ``memreader serve`` does; the SDK's DNS-rebinding check then admits only local ``Host``
  headers.
- It runs on ``memreader serve``'s guarded uvicorn (:mod:`memreader.service.server`): slow
  headers and bodies are cut off, connections per client and in all are bounded. Bodies over
  ``service.max_request_bytes`` are refused by the SDK (413).
- Stateless JSON answers: each POST is one call, answered with one JSON body; no session
  outlives its request (so no key's session can be reused by another key). A ``GET`` (the
  SDK's event stream, which would stay open for ever) or ``DELETE`` is 405.
- The keys' limits of the config's ``service:`` section hold per key as in ``memreader
  serve``: ``requests_per_minute_per_key`` and ``max_concurrent_per_key`` (429 with
  ``Retry-After``).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from memreader.mcp.server import CallerOf, MemoryServer
from memreader.mcp.users import UnauthorizedError, http_caller
from memreader.service.config import ServiceSettings
from memreader.service.keys import KeyRing, Principal
from memreader.service.limits import KeyRates, KeySlots
from memreader.service.problems import ProblemError
from memreader.service.shared import open_shared_state

__all__ = ["MCP_PATH", "KeyWall", "callers", "http_app", "serve_http"]

#: Where the MCP endpoint is.
MCP_PATH = "/mcp"


class KeyWall:
    """ASGI middleware: every HTTP request carries a key of ``keys`` (when there are keys),
    or is answered 401 before anything reads its body; then the key's limits of
    ``settings`` hold as in ``memreader serve`` (``requests_per_minute_per_key``, and
    ``max_concurrent_per_key`` requests in flight, held until the answer has gone): past
    them, 429 with ``Retry-After``. Only ``POST`` reaches the endpoint: a stateless server
    has no stream to open (``GET``) and no session to end (``DELETE``): 405."""

    def __init__(self, app: ASGIApp, keys: KeyRing, settings: ServiceSettings) -> None:
        self.app = app
        self.keys = keys
        shared = open_shared_state("memory")  # one process: its own slots and buckets
        self.rates = KeyRates(settings.requests_per_minute_per_key, shared)
        self.slots = KeySlots(settings.max_concurrent_per_key, shared)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {
            name.decode("latin-1").lower(): value.decode("latin-1")
            for name, value in scope.get("headers", [])
        }
        try:
            caller = http_caller(self.keys, headers, None)
        except UnauthorizedError as exc:
            await _refuse(send, 401, "unauthorized", "Unauthorized", str(exc), _BEARER)
            return
        if scope.get("method") != "POST":
            detail = "this MCP server is stateless: send each call as a POST (no GET stream)"
            await _refuse(send, 405, "method-not-allowed", "Method not allowed", detail, _POST)
            return
        try:
            self.rates.take(caller.name)
            release = self.slots.acquire(caller.name)
        except ProblemError as problem:
            retry = [(b"retry-after", str(problem.headers.get("Retry-After", "1")).encode())]
            await _refuse(send, problem.status, problem.kind, problem.title, problem.detail, retry)
            return
        try:
            await self.app(scope, receive, send)
        finally:
            release()


_BEARER = [(b"www-authenticate", b'Bearer realm="memreader"')]
_POST = [(b"allow", b"POST")]


async def _refuse(
    send: Send,
    status: int,
    kind: str,
    title: str,
    detail: str,
    headers: list[tuple[bytes, bytes]],
) -> None:
    body = json.dumps(
        {
            "type": f"urn:memreader:problem:{kind}",
            "title": title,
            "status": status,
            "detail": detail,
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
                *headers,
            ],
        }
    )
    await send({"type": "http.response.body", "body": body})


def http_app(mcp: MemoryServer, keys: KeyRing, settings: ServiceSettings, *, host: str) -> ASGIApp:
    """The ASGI app: the MCP endpoint at :data:`MCP_PATH` behind :class:`KeyWall`."""
    app = mcp.server.streamable_http_app(
        streamable_http_path=MCP_PATH,
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.max_request_bytes,
        host=host,
    )
    return KeyWall(app, keys, settings)


def callers(keys: KeyRing, fixed_user: str | None) -> CallerOf:
    """Who sends each request: its key, or the ``--user-id`` user of a keyless server."""

    def caller_of(ctx: Any) -> Principal:
        request = getattr(ctx, "request", None)
        headers = getattr(request, "headers", None) or {}
        return http_caller(keys, headers, fixed_user)

    return caller_of


def serve_http(app: ASGIApp, settings: ServiceSettings, *, host: str, port: int) -> None:
    """Serve ``app`` on ``memreader serve``'s guarded uvicorn until interrupted."""
    from memreader.service.server import serve

    serve(app, settings, host=host, port=port, log_level="warning")
