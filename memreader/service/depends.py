"""What a route needs, as FastAPI dependencies: the service (:data:`State`), who calls
(:data:`Caller`: the API key's principal, its users and limits), the request's deadline
(:data:`RequestDeadline`), the :class:`~memreader.Memory` the service holds
(:data:`HeldMemory`), and the owner whose memories a call reads or writes, checked against the
key (:data:`QueryOwner`, :data:`PathOwner`, :func:`body_owner`) with the scope walls of a key
limited to agents or tasks (:data:`QueryScope`, :func:`body_scope`;
:mod:`memreader.service.scope_walls`). A route names them as parameters::

    @router.post("/v1/memories/search")
    async def search(
        body: SearchRequest,
        state: State,
        owner: Annotated[str, Depends(body_owner(SearchRequest))],
        memory: HeldMemory,
        ...

FastAPI solves them in the order of the parameters: the owner before the memory, so another
key's user is 403 before a service without a store says 409. It solves each once per
request. Each is a coroutine that only looks things up (no hop to a worker thread) and depends
on nothing but the request (no chain of sub-dependencies to solve: the principal is
admission's, kept in the request's scope); a dependency naming the route's ``body`` reads the
body the route reads (one body, one schema).

>>> from memreader.service.models import SearchRequest
>>> import inspect
>>> inspect.signature(body_owner(SearchRequest)).parameters["body"].annotation is SearchRequest
True
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from typing import Annotated, Any

from fastapi import Depends, Query, Request
from pydantic import BaseModel

from memreader.calls.deadlines import Deadline
from memreader.front.memory import Memory
from memreader.service.keys import Principal
from memreader.service.problems import ProblemError
from memreader.service.scope_walls import scope_of
from memreader.service.state import ServiceState

__all__ = [
    "Caller",
    "HeldMemory",
    "PathOwner",
    "QueryOwner",
    "QueryScope",
    "RequestDeadline",
    "Scope",
    "State",
    "body_owner",
    "body_scope",
    "owner_or_only_user",
    "service_of",
]

#: The agent and the task a call runs as (``None``: any, for an unlimited key).
Scope = tuple[str | None, str | None]


def service_of(request: Request) -> ServiceState:
    """The service of ``request``'s app."""
    state: ServiceState = request.app.state.service
    return state


async def _state(request: Request) -> ServiceState:
    return service_of(request)


#: The service every route of the app shares.
State = Annotated[ServiceState, Depends(_state)]


async def _principal(request: Request) -> Principal:
    return service_of(request).principal(request)


#: Who sent the request (admission's finding: 401 came before any route).
Caller = Annotated[Principal, Depends(_principal)]


async def _deadline(request: Request) -> Deadline:
    return service_of(request).deadline(request)


#: The request's deadline, from its first byte (``request_timeout_s``).
RequestDeadline = Annotated[Deadline, Depends(_deadline)]


async def _memory(request: Request) -> Memory:
    return service_of(request).memory


#: The service's ``Memory`` (409 ``no-store`` when the config names no store).
HeldMemory = Annotated[Memory, Depends(_memory)]


def owner_or_only_user(request: Request, user_id: object) -> str:
    """``user_id`` (the key's one user when ``None``), which the request's key may use.

    Raises:
        ProblemError: 422 none given to a key of several users, or not a non-empty string;
            403 another key's user.
    """
    state = service_of(request)
    principal = state.principal(request)
    if user_id is None:
        user_id = principal.only_user()
    if user_id is None:
        raise ProblemError(
            422,
            "invalid-input",
            "Invalid input",
            "user_id is required: this key may use more than one user",
        )
    return state.check_user(principal, user_id)


async def _query_owner(request: Request, user_id: Annotated[str | None, Query()] = None) -> str:
    return owner_or_only_user(request, user_id)


#: ``?user_id=`` (the key's one user when left out), which the key may use.
QueryOwner = Annotated[str, Depends(_query_owner)]


async def _path_owner(request: Request, user_id: str) -> str:
    state = service_of(request)
    return state.check_user(state.principal(request), user_id)


#: The path's ``{user_id}``, which the key may use.
PathOwner = Annotated[str, Depends(_path_owner)]


async def _query_scope(
    request: Request,
    agent_id: Annotated[str | None, Query()] = None,
    task_id: Annotated[str | None, Query()] = None,
) -> Scope:
    return scope_of(service_of(request).principal(request), agent_id, task_id)


#: ``?agent_id=`` and ``?task_id=`` within the key's walls (a limited key's one task when
#: left out).
QueryScope = Annotated[Scope, Depends(_query_scope)]


def body_owner(model: type[BaseModel]) -> Callable[..., Awaitable[str]]:
    """The dependency of the owner a ``model`` body names in ``user_id`` (the key's one user
    when the body leaves it out), which the key may use."""

    async def owner(body: Any, request: Request) -> str:
        return owner_or_only_user(request, body.user_id)

    return _reading(owner, model)


def body_scope(model: type[BaseModel]) -> Callable[..., Awaitable[Scope]]:
    """The dependency of the agent and task a ``model`` body names (``agent_id``,
    ``task_id``), within the key's walls."""

    async def scope(body: Any, request: Request) -> Scope:
        return scope_of(service_of(request).principal(request), body.agent_id, body.task_id)

    return _reading(scope, model)


def _reading(dependency: Callable[..., Any], model: type[BaseModel]) -> Callable[..., Any]:
    """``dependency`` with its ``body`` parameter typed ``model``: FastAPI then hands it the
    route's own body (same name, same type: one body in the schema)."""
    signature = inspect.signature(dependency)
    parameters = [
        parameter.replace(annotation=model) if name == "body" else parameter
        for name, parameter in signature.parameters.items()
    ]
    dependency.__signature__ = signature.replace(parameters=parameters)  # type: ignore[attr-defined]
    dependency.__name__ = f"{dependency.__name__}_of_{model.__name__}"
    return dependency
