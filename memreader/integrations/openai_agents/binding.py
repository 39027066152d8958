"""What the session and the tools share: their error type, the checks of what a caller binds
them to (a user, a session id, a deadline) and the coroutine face of the memory they hold.

>>> check_id("chat-1", "session_id")
'chat-1'
>>> try:
...     check_id("", "session_id")
... except AgentsMemoryError as exc:
...     refused = str(exc)
>>> refused
"session_id must be a non-empty string without NUL characters, got ''"
"""

from __future__ import annotations

import math
from typing import Any, cast

from agents.exceptions import UserError

from memreader.answers.sizes import MAX_ID_CHARS
from memreader.errors import InputError
from memreader.front.async_memory import AsyncMemory
from memreader.front.memory import Memory
from memreader.modes import READ_MODES, ReadMode
from memreader.scopes import check_scope_id

__all__ = [
    "AgentsMemoryError",
    "async_face",
    "check_id",
    "check_mode",
    "check_scope",
    "check_timeout",
]

#: Seconds one memory call of a session or a tool may take (as an MCP call's default).
DEFAULT_TIMEOUT_S = 120.0


class AgentsMemoryError(UserError, InputError):
    """A memreader adapter of the OpenAI Agents SDK was given what it cannot take (a user or
    session id, an item, a setting): the SDK's own :class:`~agents.exceptions.UserError` and
    memreader's :class:`~memreader.errors.InputError` at once, so either ``except`` catches it.
    The message names the argument (and the item's index in the call)."""

    def __init__(self, message: str) -> None:
        # UserError keeps ``message``; InputError (next in the MRO) the location-free reason.
        super().__init__(message)

    def __reduce__(self) -> tuple[Any, ...]:
        # InputError's own reduce passes location keywords this error does not take.
        return (type(self), (self.message,))


def check_id(value: Any, name: str) -> str:
    """``value`` as a user or session id: a non-empty string of at most
    :data:`~memreader.answers.sizes.MAX_ID_CHARS` characters, without NUL or lone surrogates.

    Raises:
        AgentsMemoryError: anything else (the message names ``name``).
    """
    ok = isinstance(value, str) and bool(value.strip()) and "\0" not in value
    if ok and len(value) > MAX_ID_CHARS:
        raise AgentsMemoryError(f"{name} is longer than {MAX_ID_CHARS} characters")
    if ok:
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            ok = False
    if not ok:
        shown = repr(value)[:200]
        raise AgentsMemoryError(
            f"{name} must be a non-empty string without NUL characters, got {shown}"
        )
    return str(value)


def check_scope(value: Any, name: str) -> str | None:
    """``value`` as an ``agent_id`` or ``task_id`` (``None``: no scope), as memreader's stores
    take it (:func:`memreader.scopes.check_scope_id`).

    Raises:
        AgentsMemoryError: anything else (the message names ``name``).
    """
    try:
        return check_scope_id(value, name)
    except InputError as exc:
        raise AgentsMemoryError(exc.reason) from exc


def check_mode(memory: AsyncMemory, mode: Any) -> ReadMode:
    """``mode`` when ``memory`` can read in it: ``fast``, or ``fine`` with an LLM configured.

    Raises:
        AgentsMemoryError: another mode, or ``fine`` without an LLM.
    """
    if mode not in READ_MODES:
        raise AgentsMemoryError(f"mode must be one of {READ_MODES}, got {mode!r}")
    resolve = getattr(memory.memory.reader.config, "resolve", None)
    if mode == "fine" and not (callable(resolve) and resolve("llm") is not None):
        raise AgentsMemoryError("mode 'fine' needs an LLM in the memory's config (its 'llm')")
    return cast("ReadMode", mode)


def check_timeout(value: Any) -> float:
    """``value`` as a positive, finite number of seconds.

    Raises:
        AgentsMemoryError: anything else.
    """
    number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
    if number is None or not math.isfinite(number) or number <= 0:
        raise AgentsMemoryError(f"timeout_s must be a positive number of seconds, got {value!r}")
    return float(number)


def async_face(memory: Any) -> AsyncMemory:
    """``memory`` as an :class:`~memreader.front.async_memory.AsyncMemory`: itself, or a
    ``Memory`` behind the same coroutine verbs (the caller keeps owning and closing it).

    Raises:
        AgentsMemoryError: ``memory`` is neither.
    """
    if isinstance(memory, AsyncMemory):
        return memory
    if isinstance(memory, Memory):
        # AsyncMemory holds only the Memory it runs (``.memory``): building one around an
        # open Memory shares its store and reader instead of opening a second of each.
        face = AsyncMemory.__new__(AsyncMemory)
        face.memory = memory
        return face
    raise AgentsMemoryError(
        f"memory must be a memreader Memory or AsyncMemory, got {type(memory).__name__}"
    )
