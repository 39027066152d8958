"""Admission: who a request is and whether it may start, decided from its headers alone.

The middleware runs before anything reads a body. A request to ``/v1/`` without a valid key is
401 at once (a 7 MB body is never read, a malformed one never parsed); a valid one gets its
principal and its deadline (``request_timeout_s``, counted from here) in the ASGI scope, where
the routes read them. A request to a route that does heavy work (reads, refinements, the store
routes) takes one of its key's slots here and holds it until its answer's last part is handed
to the server (then its work has ended: the routes never answer before their work has
stopped), or its ASGI call ends without one: a body still arriving counts (until
``body_timeout_s`` or the request's deadline, whichever comes first), and so does a streamed
answer until its last line or the client went away. The slot is free before the last bytes go
out, so a client that sends its next request the moment it reads an answer finds it free.
All slots taken, or the key's ``requests_per_minute_per_key`` used: 429 with ``Retry-After``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from starlette.datastructures import Headers
from starlette.routing import BaseRoute, Match
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from memreader.calls.deadlines import Deadline
from memreader.service.problems import ProblemError, problem_response
from memreader.service.request_scope import DEADLINE, PRINCIPAL

if TYPE_CHECKING:
    from memreader.service.state import ServiceState

__all__ = ["Admission", "takes_slot"]

#: Routes whose requests hold one of their key's slots (``max_concurrent_per_key``).
_SLOT_PATHS = ("/v1/read", "/v1/refine", "/v1/context", "/v1/recall")
_SLOT_PREFIX = "/v1/memories"


def takes_slot(path: str) -> bool:
    """Whether a request to ``path`` holds one of its key's slots while it runs.

    >>> takes_slot("/v1/read"), takes_slot("/v1/memories/search"), takes_slot("/v1/jobs")
    (True, True, False)
    """
    return path in _SLOT_PATHS or path == _SLOT_PREFIX or path.startswith(_SLOT_PREFIX + "/")


class Admission:
    """ASGI middleware (see the module docstring)."""

    def __init__(self, app: ASGIApp, state: ServiceState, routes: Sequence[BaseRoute]) -> None:
        self.app = app
        self.state = state
        self.routes = tuple(routes)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        route = self._route(scope) if scope["type"] == "http" and path.startswith("/v1/") else None
        if route is None:
            await self.app(scope, receive, send)  # an unknown path is 404, key or none
            return
        try:
            principal = self.state.authenticate(Headers(scope=scope))
        except ProblemError as problem:
            await _refuse(problem, route, scope, receive, send)
            return
        try:
            self.state.rates.take(principal.name)
        except ProblemError as problem:
            await _refuse(problem, route, scope, receive, send)
            return
        scope[PRINCIPAL] = principal
        # Named by its route template: a path may hold a client's 10,000-character id.
        template = getattr(route, "path", "/v1/...")
        scope[DEADLINE] = Deadline.after(self.state.timeout_s, what=f"{scope['method']} {template}")
        if not takes_slot(path):
            await self.app(scope, receive, send)
            return
        try:
            release = self.state.slots.acquire(principal.name)
        except ProblemError as problem:
            await _refuse(problem, route, scope, receive, send)
            return

        async def send_releasing(message: Message) -> None:
            # The slot is given back before the answer's last bytes go out: the work has ended
            # by then, and a client that sends its next request the moment it reads this answer
            # must find its slot free (were it given back after, that request could be 429).
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                release()
            await send(message)

        try:
            await self.app(scope, receive, send_releasing)
        finally:
            release()

    def _route(self, scope: Scope) -> BaseRoute | None:
        """The route serving this path (under any method: a wrong one is 405), if any."""
        partial = None
        for route in self.routes:
            match, _ = route.matches(scope)
            if match is Match.FULL:
                return route
            if match is Match.PARTIAL and partial is None:
                partial = route
        return partial


async def _refuse(
    problem: ProblemError, route: BaseRoute, scope: Scope, receive: Receive, send: Send
) -> None:
    """Answer ``problem`` without reading the body; the metrics count it under its route."""
    scope["route"] = route
    await problem_response(problem, scope.get("path", ""))(scope, receive, send)
