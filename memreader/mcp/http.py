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
  outlives its request (so no key's session can be reused by another key).
"""

from __future__ import annotations

import json
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from memreader.mcp.server import CallerOf, MemoryServer
from memreader.mcp.users import UnauthorizedError, http_caller
from memreader.service.config import ServiceSettings
from memreader.service.keys import KeyRing, Principal

__all__ = ["MCP_PATH", "KeyWall", "callers", "http_app", "serve_http"]

#: Where the MCP endpoint is.
MCP_PATH = "/mcp"


class KeyWall:
    """ASGI middleware: every HTTP request carries a key of ``keys`` (when there are keys),
    or is answered 401 before anything reads its body."""

    def __init__(self, app: ASGIApp, keys: KeyRing) -> None:
        self.app = app
        self.keys = keys

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and self.keys:
            headers = {
                name.decode("latin-1").lower(): value.decode("latin-1")
                for name, value in scope.get("headers", [])
            }
            try:
                http_caller(self.keys, headers, None)
            except UnauthorizedError as exc:
                await _refuse(send, str(exc))
                return
        await self.app(scope, receive, send)


async def _refuse(send: Send, detail: str) -> None:
    body = json.dumps(
        {
            "type": "urn:memreader:problem:unauthorized",
            "title": "Unauthorized",
            "status": 401,
            "detail": detail,
        }
    ).encode()
    await send(
        {
            "type": "http.response.start",
            "status": 401,
            "headers": [
                (b"content-type", b"application/problem+json"),
                (b"content-length", str(len(body)).encode()),
                (b"www-authenticate", b'Bearer realm="memreader"'),
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
    return KeyWall(app, keys)


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
