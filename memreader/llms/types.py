"""What the LLM layer hands around: messages, the response of a call, one backend answer, and
the client protocol the rest of memreader needs."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from memreader.llms.config import LLMConfig
from memreader.llms.usage import Usage, UsageMeter

__all__ = [
    "LLMClient",
    "LLMResponse",
    "Messages",
    "RawCompletion",
    "Validator",
    "clean_schema_name",
    "schema_instructions",
]

#: Chat messages: mappings with at least ``role`` and ``content``.
Messages = Sequence[Mapping[str, Any]]

#: Checks a parsed answer and returns what the caller keeps (:attr:`LLMResponse.validated`);
#: raises ``ValueError`` (or a subclass) to have the answer re-asked.
Validator = Callable[[Any], Any]


@dataclass(frozen=True)
class LLMResponse:
    """The outcome of a successful call.

    Attributes:
        text: the model's answer as sent (for ``tool_call`` mode, the tool arguments).
        parsed: the JSON value recovered from ``text`` when a schema was given, else ``None``.
        usage: tokens of all attempts of the call.
        model: the model that answered (as reported by the server).
        attempts: requests sent (1 = first try succeeded).
        finish_reason: the server's reason (``"stop"``, ``"length"``, ...), if reported.
        slot: the slot the call was made for.
        truncated: the answer was cut off (the server's finish reason was ``"length"``, or the
            JSON ended early) and only its complete items are in ``parsed``; only set when a
            schema was given, after re-asks for a complete answer were spent.
        repairs: what JSON recovery had to do (see :class:`memreader.llms.parsing.ParseResult`).
        elapsed_s: wall time of the whole call, waits included.
        validated: what the call's ``validate`` returned for ``parsed`` (``None`` without one).
    """

    text: str
    parsed: Any | None
    usage: Usage
    model: str
    attempts: int
    finish_reason: str | None
    slot: str = "llm"
    truncated: bool = False
    repairs: tuple[str, ...] = ()
    elapsed_s: float = 0.0
    validated: Any = None


@dataclass(frozen=True)
class RawCompletion:
    """One answer as a backend read it, before any interpretation."""

    content: str | None
    tool_arguments: str | None = None
    usage: Usage = field(default_factory=Usage)
    model: str | None = None
    finish_reason: str | None = None

    @property
    def text(self) -> str:
        """The answer to interpret: the tool arguments if any, else the content."""
        if self.tool_arguments is not None and self.tool_arguments.strip():
            return self.tool_arguments
        return self.content or ""


@runtime_checkable
class LLMClient(Protocol):
    """What the rest of memreader needs from an LLM."""

    config: LLMConfig

    def complete(
        self,
        messages: Messages,
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "response",
        slot: str = "llm",
        meter: UsageMeter | None = None,
        validate: Validator | None = None,
    ) -> LLMResponse:
        """Send ``messages``; with a ``schema``, return its JSON answer in ``parsed``.

        With a ``schema`` and a ``validate``, ``validate(parsed)`` is called on each answer that
        parses; a ``ValueError`` from it re-asks like unparseable JSON (within ``max_retries``),
        and its return value is the response's ``validated``.

        Raises:
            LLMError: a subclass saying what went wrong, after retries (``LLMParseError`` when
                ``validate`` still rejected the last answer).
        """
        ...

    async def acomplete(
        self,
        messages: Messages,
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "response",
        slot: str = "llm",
        meter: UsageMeter | None = None,
        validate: Validator | None = None,
    ) -> LLMResponse:
        """The async twin of :meth:`complete`."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def schema_instructions(schema: Mapping[str, Any]) -> str:
    """The system-prompt text of ``prompt`` mode for ``schema``."""
    return (
        "Answer with only a JSON value that conforms to this JSON schema, with no prose and no "
        "code fences:\n" + json.dumps(schema, ensure_ascii=False)
    )


_SCHEMA_NAME = re.compile(r"[^A-Za-z0-9_-]")


def clean_schema_name(name: str) -> str:
    """``name`` made acceptable to OpenAI (``^[A-Za-z0-9_-]{1,64}$``)."""
    cleaned = _SCHEMA_NAME.sub("_", name)[:64]
    return cleaned or "response"
