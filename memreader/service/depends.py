"""What a route needs, as FastAPI dependencies: the service (:data:`State`), who calls
(:data:`Caller`: the API key's principal, its users and limits), the request's deadline
(:data:`RequestDeadline`), the :class:`~memreader.Memory` the service holds
(:data:`HeldMemory`), and the owner whose memories a call reads or writes, checked against the
key (:data:`QueryOwner`, :data:`PathOwner`, :func:`body_owner`) with the scope walls of a key
limited to agents or tasks (:data:`QueryScope`, :func:`body_scope`;
:mod:`memreader.service.scope_walls`); :func:`body_call` hands a hot route all of these at once
(:class:`BodyCall`). A route names them as parameters::

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
body the route reads (one body, one schema). Each dependency that names the body validates it
again, and each costs its solving: a route served many times a second (search) takes one
:func:`body_call` instead, which validates the body once and looks the principal up once.

>>> from memreader.service.models import SearchRequest
>>> import inspect
>>> inspect.signature(body_owner(SearchRequest)).parameters["body"].annotation is SearchRequest
True
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Annotated, Any, Generic, TypeVar

from fastapi import Depends, Query, Request
from pydantic import BaseModel

from memreader.calls.deadlines import Deadline
from memreader.front.memory import Memory
from memreader.service.keys import Principal
from memreader.service.problems import ProblemError
from memreader.service.scope_walls import scope_of
from memreader.service.state import ServiceState

__all__ = [
    "BodyCall",
    "Caller",
    "HeldMemory",
    "PathOwner",
    "QueryOwner",
    "QueryScope",
    "RequestDeadline",
    "Scope",
    "State",
    "body_call",
    "body_owner",
    "body_scope",
    "owner_or_only_user",
    "service_of",
]

#: The agent and the task a call runs as (``None``: any, for an unlimited key).
Scope = tuple[str | None, str | None]

B = TypeVar("B", bound=BaseModel)


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
    return _checked_owner(state, state.principal(request), user_id)


def _checked_owner(state: ServiceState, principal: Principal, user_id: object) -> str:
    """:func:`owner_or_only_user` for the request's ``principal``."""
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


@dataclass(frozen=True)
class BodyCall(Generic[B]):
    """What a route with a ``B`` body needs, solved by one dependency (:func:`body_call`)."""

    #: The service.
    state: ServiceState
    #: The request's deadline (as :data:`RequestDeadline`).
    deadline: Deadline
    #: The body, validated once.
    body: B
    #: The owner the body names, which the key may use (as :func:`body_owner`).
    owner: str
    #: The agent and task the body names, within the key's walls (as :func:`body_scope`).
    scope: Scope


def body_call(model: type[B]) -> Callable[..., Awaitable[BodyCall[B]]]:
    """The dependency of a ``model`` body (``user_id``, ``agent_id``, ``task_id``) with what
    :data:`State`, :data:`RequestDeadline`, :func:`body_owner` and :func:`body_scope` give, in
    that order (the owner's 403 before the scope's), as one :class:`BodyCall`.

    Name :data:`HeldMemory` after it: an invalid body is then still 409 on a service without
    a store, as on the routes that name each dependency.

    >>> from memreader.service.models import SearchRequest
    >>> body_call(SearchRequest).__name__
    'call_of_SearchRequest'
    """

    async def call(body: Any, request: Request) -> BodyCall[Any]:
        state = service_of(request)
        deadline = state.deadline(request)
        principal = state.principal(request)
        owner = _checked_owner(state, principal, body.user_id)
        return BodyCall(
            state, deadline, body, owner, scope_of(principal, body.agent_id, body.task_id)
        )

    return _reading(call, model)


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
