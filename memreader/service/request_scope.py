"""What admission (:mod:`memreader.service.admission`) decided about a request, kept in its
ASGI scope for the routes: who sent it and its deadline, counted from its first byte."""

from __future__ import annotations

from starlette.requests import HTTPConnection

from memreader.calls.deadlines import Deadline
from memreader.service.keys import Principal

__all__ = ["DEADLINE", "PRINCIPAL", "admitted_principal", "request_deadline"]

#: Scope keys of what admission decided.
PRINCIPAL = "memreader.principal"
DEADLINE = "memreader.deadline"


def admitted_principal(connection: HTTPConnection) -> Principal | None:
    """The principal admission found for this request (``None`` outside the middleware)."""
    found = connection.scope.get(PRINCIPAL)
    return found if isinstance(found, Principal) else None


def request_deadline(connection: HTTPConnection, seconds: float) -> Deadline:
    """The request's deadline (from its first byte); a new one of ``seconds`` outside the
    middleware."""
    found = connection.scope.get(DEADLINE)
    if isinstance(found, Deadline):
        return found
    deadline = Deadline.after(seconds, what="the request")
    connection.scope[DEADLINE] = deadline
    return deadline
