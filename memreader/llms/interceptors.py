"""LLM interceptors: code around every request that can act on it, not only observe it.

An interceptor sees each request (each attempt of a call) before it is sent and each answer
before it is read, and decides:

* ``before(call)`` returns ``None`` (send it as it is), a changed :class:`LLMCall` (other
  ``messages``, ``temperature`` or ``max_tokens``: ``call.replace(...)``), or a :class:`Block`
  (nothing is sent; the call ends with :class:`~memreader.llms.errors.LLMCallBlocked`, not
  retried: the window or item falls back as for any failed call). Raising an
  :class:`~memreader.llms.errors.LLMCallBlocked` (or a subclass) blocks too.
* ``after(call, reply)`` returns ``None`` (keep the answer), a changed
  :class:`~memreader.llms.types.RawCompletion` (``dataclasses.replace(reply, content=...)``),
  or a :class:`Reject`: the answer is treated as an unusable one, asked again within
  ``max_retries`` and, once that budget is spent, the call raises
  :class:`~memreader.llms.errors.LLMReplyRejected` (a bad-answer fallback).

Interceptors fail closed: one that raises something else, returns something else, or makes the
request invalid (no messages, a temperature out of range) blocks the request (in ``before``) or
rejects the answer (in ``after``), logged with its name; a redaction that crashed never lets
the text through. Async calls run ``abefore``/``aafter`` (by default the sync methods), so an
interceptor can wait without blocking the event loop (the built-in ``rate_limit`` does); an
``async def before`` can only run in async calls, and blocks a sync one.

Register them in Python (``reader.llm_interceptors.append(MyInterceptor())``; they run in list
order, before those the config names), or the built-ins by name in the reader config
(``llm_interceptors: [{name: rate_limit, requests_per_minute: 60}]``, see
:mod:`memreader.llms.interceptor_specs`). The observe-only hooks (:mod:`memreader.llms.hooks`)
run as before, and see the request as the interceptors left it.

>>> class Shout(LLMInterceptor):
...     def before(self, call):
...         loud = [{**m, "content": m["content"].upper()} for m in call.messages]
...         return call.replace(messages=loud)
>>> call = LLMCall("llm", None, "m", "openai", 1, ({"role": "user", "content": "hi"},), 0.0, 16)
>>> intercept_before([Shout()], call).messages
({'role': 'user', 'content': 'HI'},)
"""

from __future__ import annotations

import dataclasses
import inspect
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memreader.errors import DeadlineExceeded
from memreader.llms.errors import LLMCallBlocked, LLMReplyRejected
from memreader.llms.types import RawCompletion

if TYPE_CHECKING:
    from memreader.calls.deadlines import Deadline

__all__ = [
    "Block",
    "LLMCall",
    "LLMInterceptor",
    "Reject",
    "aintercept_after",
    "aintercept_before",
    "intercept_after",
    "intercept_before",
    "interceptor_name",
]

logger = logging.getLogger(__name__)

#: How much of a rejection's reason goes into the error and the re-ask the model is sent.
REASON_LIMIT = 500
#: What an interceptor may change in a request (the others describe it).
CHANGEABLE = ("messages", "temperature", "max_tokens")


@dataclass(frozen=True)
class LLMCall:
    """One request as interceptors see it (each attempt of a call is one).

    Attributes:
        slot: the LLM slot the call is for (``llm``, ``general_llm``, ...).
        profile: the named profile that serves it (``llm_profiles``), ``None`` for a slot's own
            config.
        model, backend: the model and backend it goes to.
        attempt: counts from 1 (re-asks and retries are further attempts).
        messages: the chat messages to send.
        temperature, max_tokens: the sampling settings to send.
        deadline: when the call must end (the read's deadline), if it has one.
    """

    slot: str
    profile: str | None
    model: str
    backend: str
    attempt: int
    messages: tuple[Mapping[str, Any], ...]
    temperature: float
    max_tokens: int
    deadline: Deadline | None = None

    def replace(self, **changes: Any) -> LLMCall:
        """This request with ``messages``, ``temperature`` or ``max_tokens`` changed.

        Raises:
            TypeError: another field is named (it describes the call, it cannot be changed).
        """
        fixed = sorted(set(changes) - set(CHANGEABLE))
        if fixed:
            raise TypeError(f"an interceptor may change {', '.join(CHANGEABLE)}, not {fixed}")
        if "messages" in changes:
            changes["messages"] = tuple(changes["messages"])
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Block:
    """``before``'s decision: do not send this request (``reason`` goes into the error)."""

    reason: str


@dataclass(frozen=True)
class Reject:
    """``after``'s decision: this answer is not usable (``reason`` is told to the model when
    it is asked again, and goes into the error once no re-ask is left)."""

    reason: str


class LLMInterceptor:
    """A base to subclass: override what you need (every method passes by default).

    Any object with ``before`` and/or ``after`` methods of these signatures works as well.
    """

    def before(self, call: LLMCall) -> LLMCall | Block | None:
        """The request to send instead (``None``: as it is), or a :class:`Block`."""
        return None

    def after(self, call: LLMCall, reply: RawCompletion) -> RawCompletion | Reject | None:
        """The answer to read instead (``None``: as it is), or a :class:`Reject`."""
        return None

    async def abefore(self, call: LLMCall) -> LLMCall | Block | None:
        """:meth:`before` in async calls (override to wait without blocking the loop)."""
        return self.before(call)

    async def aafter(self, call: LLMCall, reply: RawCompletion) -> RawCompletion | Reject | None:
        """:meth:`after` in async calls."""
        return self.after(call, reply)


def interceptor_name(interceptor: object) -> str:
    """The name errors and logs give ``interceptor``: its ``name`` or its class's."""
    name = getattr(interceptor, "name", None)
    return name if isinstance(name, str) and name else type(interceptor).__qualname__


def intercept_before(interceptors: Sequence[object], call: LLMCall) -> LLMCall:
    """``call`` after every interceptor's ``before``, in order (sync calls).

    Raises:
        LLMCallBlocked: one blocked it, failed, or made it invalid.
        DeadlineExceeded: the read's deadline passed or it was cancelled while one waited.
    """
    for interceptor in interceptors:
        method = getattr(interceptor, "before", None)
        if method is None:
            continue
        try:
            decision = method(call)
        except Exception as exc:
            raise _blocked_by_error(interceptor, exc) from None
        if inspect.isawaitable(decision):
            _close(decision)
            raise LLMCallBlocked(
                f"LLM interceptor {interceptor_name(interceptor)!r} is async: it runs only in "
                "async calls (aget_memory, ...), and a sync call cannot go on without it",
                interceptor=interceptor_name(interceptor),
            )
        call = _checked_call(interceptor, call, decision)
    return call


async def aintercept_before(interceptors: Sequence[object], call: LLMCall) -> LLMCall:
    """The async twin of :func:`intercept_before` (``abefore`` where there is one)."""
    for interceptor in interceptors:
        method = getattr(interceptor, "abefore", None) or getattr(interceptor, "before", None)
        if method is None:
            continue
        try:
            decision = method(call)
            while inspect.isawaitable(decision):  # an async `before` behind the default abefore
                decision = await decision
        except Exception as exc:
            raise _blocked_by_error(interceptor, exc) from None
        call = _checked_call(interceptor, call, decision)
    return call


def intercept_after(
    interceptors: Sequence[object], call: LLMCall, reply: RawCompletion
) -> RawCompletion | Reject:
    """``reply`` after every interceptor's ``after``, or the first :class:`Reject` (sync)."""
    for interceptor in interceptors:
        method = getattr(interceptor, "after", None)
        if method is None:
            continue
        try:
            decision = method(call, reply)
        except Exception as exc:
            return _rejected_by_error(interceptor, exc)
        if inspect.isawaitable(decision):
            _close(decision)
            return Reject(
                f"interceptor {interceptor_name(interceptor)!r} is async and cannot run in a "
                "sync call"
            )
        checked = _checked_reply(interceptor, reply, decision)
        if isinstance(checked, Reject):
            return checked
        reply = checked
    return reply


async def aintercept_after(
    interceptors: Sequence[object], call: LLMCall, reply: RawCompletion
) -> RawCompletion | Reject:
    """The async twin of :func:`intercept_after` (``aafter`` where there is one)."""
    for interceptor in interceptors:
        method = getattr(interceptor, "aafter", None) or getattr(interceptor, "after", None)
        if method is None:
            continue
        try:
            decision = method(call, reply)
            while inspect.isawaitable(decision):  # an async `after` behind the default aafter
                decision = await decision
        except Exception as exc:
            return _rejected_by_error(interceptor, exc)
        checked = _checked_reply(interceptor, reply, decision)
        if isinstance(checked, Reject):
            return checked
        reply = checked
    return reply


def rejected_error(reject: Reject, text: str) -> LLMReplyRejected:
    """The error of an answer (``text``) an interceptor rejected."""
    return LLMReplyRejected(
        f"an LLM interceptor rejected the answer: {str(reject.reason)[:REASON_LIMIT]}",
        raw_text=text,
    )


def _checked_call(interceptor: object, call: LLMCall, decision: object) -> LLMCall:
    name = interceptor_name(interceptor)
    if decision is None:
        return call
    if isinstance(decision, Block):
        raise LLMCallBlocked(
            f"LLM interceptor {name!r} blocked the request: {decision.reason}", interceptor=name
        )
    if not isinstance(decision, LLMCall):
        raise LLMCallBlocked(
            f"LLM interceptor {name!r} returned {type(decision).__name__}; expected an LLMCall, "
            "a Block or None",
            interceptor=name,
        )
    problem = _call_problem(decision)
    if problem is not None:
        raise LLMCallBlocked(
            f"LLM interceptor {name!r} made the request invalid: {problem}", interceptor=name
        )
    # Only what CHANGEABLE names is taken: the call's slot, model and deadline stay its own.
    return call.replace(
        messages=decision.messages,
        temperature=decision.temperature,
        max_tokens=decision.max_tokens,
    )


def _call_problem(call: LLMCall) -> str | None:
    messages = call.messages
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence) or not messages:
        return "messages must be a non-empty list of {'role': ..., 'content': ...} mappings"
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or not isinstance(message.get("role"), str):
            return f"message {i} must be a mapping with a string 'role'"
    temperature = call.temperature
    if (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not math.isfinite(temperature)
        or not 0.0 <= temperature <= 2.0
    ):
        return f"temperature must be a number from 0 to 2, got {temperature!r}"
    if (
        isinstance(call.max_tokens, bool)
        or not isinstance(call.max_tokens, int)
        or call.max_tokens < 1
    ):
        return f"max_tokens must be a positive integer, got {call.max_tokens!r}"
    return None


def _checked_reply(
    interceptor: object, reply: RawCompletion, decision: object
) -> RawCompletion | Reject:
    if decision is None:
        return reply
    if isinstance(decision, Reject | RawCompletion):
        return decision
    return Reject(
        f"interceptor {interceptor_name(interceptor)!r} returned {type(decision).__name__}; "
        "expected a RawCompletion, a Reject or None"
    )


def _blocked_by_error(interceptor: object, exc: Exception) -> Exception:
    name = interceptor_name(interceptor)
    if isinstance(exc, DeadlineExceeded):
        return exc  # the read's deadline passed while it waited: the whole read stops
    if isinstance(exc, LLMCallBlocked):
        exc.interceptor = exc.interceptor or name
        return exc
    logger.warning("LLM interceptor %r raised; the request is blocked", name, exc_info=exc)
    return LLMCallBlocked(
        f"LLM interceptor {name!r} failed ({type(exc).__name__}: {str(exc)[:200]}); the request "
        "was not sent",
        interceptor=name,
    )


def _rejected_by_error(interceptor: object, exc: Exception) -> Reject:
    name = interceptor_name(interceptor)
    if isinstance(exc, LLMReplyRejected):
        return Reject(exc.reason)
    logger.warning("LLM interceptor %r raised; the answer is rejected", name, exc_info=exc)
    return Reject(f"interceptor {name!r} failed ({type(exc).__name__}: {str(exc)[:200]})")


def _close(awaitable: object) -> None:
    close = getattr(awaitable, "close", None)
    if callable(close):
        close()
