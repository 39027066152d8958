"""Who an MCP call is, and whose memories it may touch.

The user is never what a tool call says it is:

- over stdio the server serves the one user named at start (``memreader mcp --user-id
  emily``): every call is that user's, and a ``user_id`` argument naming anyone else is refused;
- over HTTP the request's key decides, with the keys and the walls of ``memreader serve``
  (:mod:`memreader.service.keys`: a key names the users it may read and write, or ``*``). A key
  of one user may leave ``user_id`` out; a key of several (or an admin's) must name one of
  them. Without keys (loopback only) the server serves the ``--user-id`` user, or any user when
  none was named.

>>> caller = stdio_caller("emily")
>>> owner_of(caller, None), owner_of(caller, "emily")
('emily', 'emily')
>>> try:
...     owner_of(caller, "bob")
... except ForbiddenUserError as exc:
...     refused = str(exc)
>>> refused
"this MCP server serves user 'emily' only; user_id 'bob' is not allowed"
"""

from __future__ import annotations

from collections.abc import Mapping

from memreader.errors import ForbiddenUserError, InputError, MemReaderError
from memreader.service.keys import LOCAL_PRINCIPAL, KeyRing, Principal

__all__ = [
    "ForbiddenUserError",
    "UnauthorizedError",
    "http_caller",
    "owner_of",
    "stdio_caller",
]

#: The name of the principal of a stdio server (and of a keyless HTTP one with ``--user-id``).
STDIO = "stdio"
_ECHO = 200


class UnauthorizedError(MemReaderError):
    """An HTTP request without a key of this server, or with an unknown one."""


def _shown(value: str) -> str:
    return repr(value if len(value) <= _ECHO else value[: _ECHO - 1] + "…")


def stdio_caller(user_id: str) -> Principal:
    """The caller of a server that serves ``user_id`` only.

    Raises:
        InputError: ``user_id`` is empty.
    """
    if not isinstance(user_id, str) or not user_id.strip() or "\0" in user_id:
        raise InputError(f"--user-id must be a non-empty user id, got {user_id!r}")
    return Principal(STDIO, frozenset({user_id}))


def http_caller(keys: KeyRing, headers: Mapping[str, str], fixed_user: str | None) -> Principal:
    """Who sends ``headers`` (``Authorization: Bearer KEY``) to an HTTP server with ``keys``.
    Without keys: the ``fixed_user`` (``--user-id``), else any user (as ``memreader serve``
    without keys, which listens on loopback only).

    Raises:
        UnauthorizedError: keys are configured and the request has none of them.
    """
    if not keys:
        return stdio_caller(fixed_user) if fixed_user is not None else LOCAL_PRINCIPAL
    scheme, _, presented = headers.get("authorization", "").partition(" ")
    found = keys.find(presented.strip()) if scheme.lower() == "bearer" else None
    if found is None:
        raise UnauthorizedError(
            "send an API key of this server as `Authorization: Bearer KEY` (memreader key)"
        )
    return found


def owner_of(caller: Principal, user_id: str | None) -> str:
    """The user a call of ``caller`` touches: ``user_id`` when ``caller`` may, else the
    caller's one user when ``user_id`` is left out.

    Raises:
        ForbiddenUserError: ``user_id`` is not one of the caller's users.
        InputError: ``user_id`` is left out and the caller may use several users.
    """
    if user_id is None:
        only = caller.only_user()
        if only is None:
            raise InputError(
                "user_id is required: this key may read and write more than one user's memories"
            )
        return only
    if caller.may_use(user_id):
        return user_id
    if caller.name == STDIO:
        (served,) = caller.users
        raise ForbiddenUserError(
            f"this MCP server serves user {_shown(served)} only; user_id {_shown(user_id)} "
            "is not allowed"
        )
    raise ForbiddenUserError(
        f"this key may not read or write the memories of user_id {_shown(user_id)}"
    )
