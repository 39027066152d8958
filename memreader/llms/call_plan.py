"""The call loop of every LLM client, written once as a plan of steps.

A :class:`CallPlan` decides what one call does next: it yields :class:`Send` ("send this
request") and :class:`Sleep` ("wait this long") steps and is answered with each request's
:class:`Outcome`; :class:`~memreader.llms.base.BaseLLMClient` runs the steps with blocking calls
(``complete``) or awaitables (``acomplete``), so sync and async calls share every decision: which
failures are retried and after how long, which answers are re-asked, what is metered and which
hooks fire.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from memreader.llms.errors import LLMCallBlocked, LLMEmptyResponseError, LLMError, retry_after_of
from memreader.llms.hooks import AfterCallEvent, BeforeCallEvent, ErrorEvent, LLMHooks
from memreader.llms.interceptors import (
    REASON_LIMIT,
    LLMCall,
    Reject,
    aintercept_after,
    aintercept_before,
    intercept_after,
    intercept_before,
    rejected_error,
)
from memreader.llms.reask import format_reask_messages, judge_answer
from memreader.llms.types import (
    LLMResponse,
    Messages,
    RawCompletion,
    Validator,
    schema_instructions,
)
from memreader.llms.usage import Usage, UsageMeter
from memreader.transport.retry import RetryPolicy

if TYPE_CHECKING:
    from memreader.calls.deadlines import Deadline

__all__ = ["CallPlan", "Intercept", "Outcome", "Send", "Sleep", "Step", "prepare_messages"]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class Send:
    """Send this request and answer the plan with its :class:`Outcome`."""

    messages: list[dict[str, Any]]
    schema: Mapping[str, Any] | None
    schema_name: str
    #: Sampling settings an interceptor changed (``temperature``, ``max_tokens``).
    options: Mapping[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Sleep:
    """Wait this long before the next step (a retry's backoff)."""

    seconds: float


@dataclass(frozen=True)
class Outcome:
    """What one request gave: an answer or a typed error, and how long it took."""

    raw: RawCompletion | None = None
    error: LLMError | None = None
    elapsed_s: float = 0.0


@dataclass(frozen=True)
class Intercept:
    """Run the interceptors on the request ``call`` (``before``), or on its ``reply``
    (``after``), and answer the plan with what they made of it: the request to send or an
    :class:`~memreader.llms.errors.LLMCallBlocked`; the answer to read or a
    :class:`~memreader.llms.interceptors.Reject`."""

    interceptors: tuple[object, ...]
    call: LLMCall
    reply: RawCompletion | None = None

    def run(self) -> Feed:
        """The decision, in a sync call."""
        if self.reply is not None:
            return intercept_after(self.interceptors, self.call, self.reply)
        try:
            return intercept_before(self.interceptors, self.call)
        except LLMCallBlocked as blocked:
            return blocked

    async def arun(self) -> Feed:
        """The decision, in an async call."""
        if self.reply is not None:
            return await aintercept_after(self.interceptors, self.call, self.reply)
        try:
            return await aintercept_before(self.interceptors, self.call)
        except LLMCallBlocked as blocked:
            return blocked


Step = Send | Sleep | Intercept
#: What a driver answers a step with.
Feed = Outcome | LLMCall | RawCompletion | Reject | LLMCallBlocked | None


def prepare_messages(
    messages: Messages, schema: Mapping[str, Any] | None, schema_in_prompt: bool
) -> list[dict[str, Any]]:
    """``messages`` checked and copied, with the schema's instructions added to the system
    prompt when the schema goes there (``schema_in_prompt``: the ``prompt`` mode).

    Raises:
        TypeError: ``messages`` is not a sequence of mappings with a ``role``.
        ValueError: ``messages`` is empty.
    """
    if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
        raise TypeError("messages must be a sequence of {'role': ..., 'content': ...} dicts")
    if not messages:
        raise ValueError("messages must not be empty")
    prepared: list[dict[str, Any]] = []
    for i, message in enumerate(messages):
        if not isinstance(message, Mapping) or "role" not in message:
            raise TypeError(f"message {i} must be a mapping with a 'role'")
        prepared.append(dict(message))
    if schema is not None and schema_in_prompt:
        instructions = schema_instructions(schema)
        first = prepared[0]
        content = first.get("content")
        if first.get("role") == "system" and isinstance(content, str):
            prepared[0] = {**first, "content": f"{content}\n\n{instructions}"}
        elif first.get("role") == "system" and isinstance(content, list):
            # A system message of content parts (OpenAI's vision shape): one more text part,
            # so the parts already there (and their order) are kept as they are.
            part = {"type": "text", "text": instructions}
            prepared[0] = {**first, "content": [*content, part]}
        else:
            prepared.insert(0, {"role": "system", "content": instructions})
    return prepared


@dataclass
class CallPlan:
    """One call to one client: its settings, and what it has used so far.

    ``model`` and ``backend`` name the client in errors, logs and hook events; ``retry`` is the
    one budget shared by retries of failed requests and re-asks of unusable answers; usage is
    recorded under ``slot`` (and ``profile``, the named profile serving it) in ``meter``.
    ``interceptors`` act on each request and answer (:mod:`memreader.llms.interceptors`);
    ``temperature`` and ``max_tokens`` are the config's, which they may change; ``deadline``
    is the caller's, which they are shown.
    """

    model: str
    backend: str
    hooks: LLMHooks
    retry: RetryPolicy
    slot: str
    meter: UsageMeter
    schema: Mapping[str, Any] | None
    validate: Validator | None = None
    profile: str | None = None
    interceptors: tuple[object, ...] = ()
    temperature: float = 0.0
    max_tokens: int = 1
    deadline: Deadline | None = None
    total: Usage = field(default_factory=Usage, init=False)
    started: float = field(default=0.0, init=False)
    last_text: str | None = field(default=None, init=False)

    def steps(
        self, messages: Messages, schema_name: str, schema_in_prompt: bool
    ) -> Generator[Step, Feed, LLMResponse]:
        """The call as steps; returns the accepted answer, or raises the last error once the
        budget is spent."""
        conversation = prepare_messages(messages, self.schema, schema_in_prompt)
        self.started = time.perf_counter()
        attempt = 0
        while True:
            attempt += 1
            snapshot: tuple[Mapping[str, Any], ...] = tuple(conversation)
            # Without interceptors the conversation is sent as it is (no copy per request).
            sent, options, call = conversation, {}, None
            if self.interceptors:
                call = self._call(attempt, snapshot)
                decided = yield Intercept(self.interceptors, call)
                if isinstance(decided, LLMCallBlocked):
                    raise self._blocked(decided, attempt, snapshot)
                if isinstance(decided, LLMCall):
                    call = decided
                snapshot = call.messages
                sent, options = [dict(m) for m in snapshot], self._options(call)
            self.hooks.emit_before(
                BeforeCallEvent(self.slot, self.model, self.backend, attempt, snapshot)
            )
            outcome = yield Send(sent, self.schema, schema_name, options)
            if not isinstance(outcome, Outcome):  # pragma: no cover - drivers answer a Send
                raise RuntimeError("no outcome for a request step")
            if outcome.error is not None or outcome.raw is None:
                yield Sleep(self._after_failure(outcome, attempt, snapshot))
                continue
            raw = outcome.raw
            if call is not None:
                checked = yield Intercept(self.interceptors, call, raw)
                if isinstance(checked, Reject):
                    reask = self._rejected(raw, checked, outcome.elapsed_s, attempt, snapshot)
                    conversation = [*conversation, *reask]
                    continue
                if isinstance(checked, RawCompletion):
                    raw = checked
            verdict = self._judge(raw, outcome.elapsed_s, attempt, snapshot)
            if isinstance(verdict, LLMResponse):
                return verdict
            conversation = [*conversation, *verdict]

    def _call(self, attempt: int, messages: tuple[Mapping[str, Any], ...]) -> LLMCall:
        """The request of ``attempt`` as the interceptors see it."""
        return LLMCall(
            self.slot,
            self.profile,
            self.model,
            self.backend,
            attempt,
            messages,
            self.temperature,
            self.max_tokens,
            self.deadline,
        )

    def _options(self, call: LLMCall) -> dict[str, Any]:
        """The sampling settings ``call`` changes from the config's."""
        options: dict[str, Any] = {}
        if call.temperature != self.temperature:
            options["temperature"] = float(call.temperature)
        if call.max_tokens != self.max_tokens:
            options["max_tokens"] = call.max_tokens
        return options

    def _blocked(self, error: LLMCallBlocked, attempt: int, snapshot: Messages) -> LLMCallBlocked:
        """``error``, with the call's context, after the ``on_error`` hooks were told."""
        error.retryable = False
        error.set_context(
            slot=self.slot,
            model=self.model,
            attempts=attempt - 1,
            usage=self.total,
            last_output=self.last_text,
        )
        self._emit_error(error, attempt, snapshot, 0.0, False)
        logger.warning(
            "LLM call blocked (backend=%s, slot=%s, model=%s): %s",
            self.backend,
            self.slot,
            self.model,
            error.reason,
        )
        return error

    def _rejected(
        self, raw: RawCompletion, reject: Reject, elapsed_s: float, attempt: int, snapshot: Messages
    ) -> list[dict[str, Any]]:
        """The re-ask after an answer an interceptor rejected; raises the rejection when the
        budget allows no re-ask."""
        self.total = self.total + raw.usage
        self.meter.add(self.slot, raw.usage, profile=self.profile)
        self.last_text = raw.text
        problem = rejected_error(reject, raw.text)
        problem.set_context(
            slot=self.slot,
            model=self.model,
            attempts=attempt,
            usage=self.total,
            last_output=raw.text,
        )
        will_retry = self.retry.can_retry(attempt)
        self._emit_error(problem, attempt, snapshot, elapsed_s, will_retry)
        if not will_retry:
            raise problem
        logger.warning(
            "LLM answer rejected by an interceptor (slot=%s, model=%s, attempt %d): %s; asking "
            "again",
            self.slot,
            self.model,
            attempt,
            reject.reason,
        )
        return format_reask_messages(raw.text, str(reject.reason)[:REASON_LIMIT])

    def _after_failure(self, outcome: Outcome, attempt: int, snapshot: Messages) -> float:
        """The wait before retrying a failed request; raises its error when it is not retried."""
        err = outcome.error or LLMEmptyResponseError("no answer")
        self.meter.add(self.slot, Usage(), profile=self.profile)
        err.set_context(
            slot=self.slot,
            model=self.model,
            attempts=attempt,
            usage=self.total,
            last_output=self.last_text,
        )
        will_retry = err.retryable and self.retry.can_retry(attempt)
        self._emit_error(err, attempt, snapshot, outcome.elapsed_s, will_retry)
        if not will_retry:
            raise err
        wait = self.retry.delay(attempt, retry_after_of(err))
        logger.warning(
            "LLM call failed (backend=%s, slot=%s, model=%s, attempt %d): %s; retrying in %.2fs",
            self.backend,
            self.slot,
            self.model,
            attempt,
            err.reason,
            wait,
        )
        return wait

    def _judge(
        self, raw: RawCompletion, elapsed_s: float, attempt: int, snapshot: Messages
    ) -> LLMResponse | list[dict[str, Any]]:
        """The accepted answer, or the messages that re-ask for a usable one; raises the
        problem when the budget allows no re-ask."""
        self.total = self.total + raw.usage
        self.meter.add(self.slot, raw.usage, profile=self.profile)
        text = raw.text
        self.last_text = text
        verdict = judge_answer(
            raw,
            self.schema,
            self.validate,
            model=self.model,
            slot=self.slot,
            attempt=attempt,
            total=self.total,
            started=self.started,
            may_retry=self.retry.can_retry(attempt),
        )
        if isinstance(verdict, LLMResponse):
            self.hooks.emit_after(
                AfterCallEvent(
                    self.slot,
                    verdict.model,
                    self.backend,
                    attempt,
                    snapshot,
                    verdict,
                    self.total,
                    elapsed_s,
                    verdict.elapsed_s,
                )
            )
            return verdict
        problem, correction = verdict
        problem.set_context(
            slot=self.slot, model=self.model, attempts=attempt, usage=self.total, last_output=text
        )
        will_retry = self.retry.can_retry(attempt)
        self._emit_error(problem, attempt, snapshot, elapsed_s, will_retry)
        if not will_retry:
            raise problem
        logger.warning(
            "LLM answer unusable (backend=%s, slot=%s, model=%s, attempt %d): %s; asking again",
            self.backend,
            self.slot,
            self.model,
            attempt,
            problem.reason,
        )
        return correction

    def _emit_error(
        self,
        error: LLMError,
        attempt: int,
        snapshot: Messages,
        elapsed_s: float,
        will_retry: bool,
    ) -> None:
        self.hooks.emit_error(
            ErrorEvent(
                self.slot,
                self.model,
                self.backend,
                attempt,
                snapshot,
                error,
                self.total,
                elapsed_s,
                will_retry,
            )
        )
