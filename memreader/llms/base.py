"""The shared call loop of every backend (the types it hands around are in
:mod:`memreader.llms.types`).

A backend subclasses :class:`BaseLLMClient` and implements only :meth:`BaseLLMClient._send` and
:meth:`BaseLLMClient._asend`: one request, and its answer as a
:class:`~memreader.llms.types.RawCompletion` (failures are raised as they come: the SDK's own
errors are read by the loop, or an :class:`~memreader.llms.errors.LLMError`). The base class
adds everything else, for sync and async calls alike: the concurrency budget, retries with
backoff, re-asks of unusable answers, JSON recovery, usage metering and hooks.

The loop is written once, as a generator (:meth:`BaseLLMClient._plan`) that yields "send this
request" and "sleep this long" steps; :meth:`complete` runs the steps with blocking calls and
:meth:`acomplete` with awaitables.

What is re-asked (all within the one ``max_retries`` budget; see
:func:`memreader.llms.reask.judge_answer`): an empty answer, an answer with no
recoverable JSON, an answer that the caller's ``validate`` rejects with a ``ValueError``, and a
cut-off answer (finish reason ``"length"`` or JSON that ends early), which is asked again for a
complete, shorter answer; once the budget is spent a cut-off answer is returned as it is
(``truncated=True``, its complete items parsed), the others raise.

Whatever a backend raises that is not an :class:`LLMError` (the SDK's errors, httpx's, a reply
the SDK could not decode) is turned into one at the single place where the loop calls the
backend (:meth:`BaseLLMClient.error_for`), by the one rule of every remote call
(:func:`memreader.transport.failures.classify`): timeouts, connection errors, 408/409/429/5xx and
unreadable replies are retried, with the waits of :class:`~memreader.transport.retry.RetryPolicy`.
The original exception is logged, secrets scrubbed, at debug level with its traceback, and is
not kept as the typed error's cause (an SDK error may quote a secret the server echoed back).
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar

from memreader.llms.config import LLMConfig
from memreader.llms.errors import (
    LLMEmptyResponseError,
    LLMError,
    llm_error,
    retry_after_of,
)
from memreader.llms.hooks import AfterCallEvent, BeforeCallEvent, ErrorEvent, LLMHooks
from memreader.llms.limiter import ConcurrencyLimiter
from memreader.llms.reask import judge_answer
from memreader.llms.types import (
    LLMResponse,
    Messages,
    RawCompletion,
    Validator,
    clean_schema_name,
    schema_instructions,
)
from memreader.llms.usage import Usage, UsageMeter
from memreader.redact import mask_url
from memreader.transport.failures import classify
from memreader.transport.retry import RetryPolicy

__all__ = ["DEFAULT_MAX_CONCURRENCY", "BaseLLMClient"]

logger = logging.getLogger(__name__)

#: How much of an unexpected error's text goes into an LLMError message.
_DETAIL_LIMIT = 500

#: The budget of a client built without a shared limiter.
DEFAULT_MAX_CONCURRENCY = 4


@dataclass(frozen=True)
class _Send:
    messages: list[dict[str, Any]]
    schema: Mapping[str, Any] | None
    schema_name: str


@dataclass(frozen=True)
class _Sleep:
    seconds: float


@dataclass(frozen=True)
class _Outcome:
    raw: RawCompletion | None = None
    error: LLMError | None = None
    elapsed_s: float = 0.0


_Step = _Send | _Sleep


class BaseLLMClient(ABC):
    """The shared call loop; subclasses implement one request in :meth:`_send`/:meth:`_asend`.

    Args:
        config: the endpoint.
        limiter: the concurrency budget shared with the reader's other clients (a private one
            of :data:`DEFAULT_MAX_CONCURRENCY` if omitted). A permit is held per request, not
            during backoff waits.
        meter: where usage is recorded (a private meter if omitted).
        hooks: observability callbacks.
    """

    #: The registry name of the backend.
    backend: ClassVar[str] = "base"

    def __init__(
        self,
        config: LLMConfig,
        *,
        limiter: ConcurrencyLimiter | None = None,
        meter: UsageMeter | None = None,
        hooks: LLMHooks | None = None,
    ) -> None:
        self.config = config
        self.limiter = (
            limiter if limiter is not None else ConcurrencyLimiter(DEFAULT_MAX_CONCURRENCY)
        )
        self.meter = meter if meter is not None else UsageMeter()
        self.hooks = hooks if hooks is not None else LLMHooks()
        self.retry = RetryPolicy(
            max_retries=config.max_retries,
            backoff_base=config.backoff_base,
            backoff_max=config.backoff_max,
        )
        self._secrets = [s for s in config.secrets() if s]

    # -- to implement -----------------------------------------------------------------------

    @abstractmethod
    def _send(
        self, messages: list[dict[str, Any]], schema: Mapping[str, Any] | None, schema_name: str
    ) -> RawCompletion:
        """Send one request; raise an :class:`LLMError` subclass on failure."""

    @abstractmethod
    async def _asend(
        self, messages: list[dict[str, Any]], schema: Mapping[str, Any] | None, schema_name: str
    ) -> RawCompletion:
        """The async twin of :meth:`_send`."""

    def close(self) -> None:  # noqa: B027 - optional override
        """Release connections (no-op by default)."""

    async def aclose(self) -> None:
        """Release connections, including async ones."""
        self.close()

    # -- helpers for subclasses -------------------------------------------------------------

    def scrub(self, text: str) -> str:
        """``text`` with every secret of the config replaced by ``***``."""
        for secret in self._secrets:
            text = text.replace(secret, "***")
        return text

    def schema_in_prompt(self) -> bool:
        """Whether the schema goes into the system prompt (``prompt`` mode)."""
        return self.config.structured_output == "prompt"

    # -- public API -------------------------------------------------------------------------

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
        """Send ``messages`` (blocking); see :meth:`LLMClient.complete`."""
        meter = meter if meter is not None else self.meter
        plan = self._plan(messages, schema, schema_name, slot, meter, validate)
        try:
            step = next(plan)
            while True:
                feed: _Outcome | None = None
                if isinstance(step, _Sleep):
                    if step.seconds > 0:
                        self.retry.sleep(step.seconds)
                else:
                    feed = self._run(step)
                try:
                    step = plan.send(feed)
                except StopIteration as stop:
                    result: LLMResponse = stop.value
                    return result
        finally:
            plan.close()

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
        """Send ``messages`` without blocking the event loop; see :meth:`LLMClient.complete`."""
        meter = meter if meter is not None else self.meter
        plan = self._plan(messages, schema, schema_name, slot, meter, validate)
        try:
            step = next(plan)
            while True:
                feed: _Outcome | None = None
                if isinstance(step, _Sleep):
                    if step.seconds > 0:
                        await asyncio.sleep(step.seconds)
                else:
                    feed = await self._arun(step)
                try:
                    step = plan.send(feed)
                except StopIteration as stop:
                    result: LLMResponse = stop.value
                    return result
        finally:
            plan.close()

    # -- the loop ---------------------------------------------------------------------------

    def _run(self, step: _Send) -> _Outcome:
        with self.limiter.hold():
            started = time.perf_counter()
            try:
                raw = self._send(step.messages, step.schema, step.schema_name)
            except LLMError as err:
                return _Outcome(error=err, elapsed_s=time.perf_counter() - started)
            except Exception as exc:  # the SDK boundary: anything else becomes a typed LLMError
                error = self.error_for(exc)
                return _Outcome(error=error, elapsed_s=time.perf_counter() - started)
            return _Outcome(raw=raw, elapsed_s=time.perf_counter() - started)

    async def _arun(self, step: _Send) -> _Outcome:
        async with self.limiter.ahold():
            started = time.perf_counter()
            try:
                raw = await self._asend(step.messages, step.schema, step.schema_name)
            except LLMError as err:
                return _Outcome(error=err, elapsed_s=time.perf_counter() - started)
            except Exception as exc:  # the SDK boundary: anything else becomes a typed LLMError
                error = self.error_for(exc)
                return _Outcome(error=error, elapsed_s=time.perf_counter() - started)
            return _Outcome(raw=raw, elapsed_s=time.perf_counter() - started)

    def error_for(self, exc: Exception) -> LLMError:
        """``exc``, raised by the backend but not an :class:`LLMError`, as one.

        Classified by :func:`memreader.transport.failures.classify` (what is retried is decided
        there, for every backend). ``exc`` is logged at debug level with its traceback, secrets
        scrubbed, and is *not* the cause of the returned error: an SDK error may quote what the
        server sent back, a secret included.
        """
        logger.debug(
            "LLM backend %s raised %s (model=%s):\n%s",
            self.backend,
            type(exc).__name__,
            self.config.model,
            self.scrub("".join(traceback.format_exception(exc))).rstrip(),
        )
        failure = classify(exc)
        error = llm_error(failure, timeout=self.config.timeout)
        if failure.kind == "other":
            error.reason = f"{error.reason} (in the {self.backend} client)"
        error.reason = self.scrub(error.reason)[:_DETAIL_LIMIT]
        error.args = (error.reason,)
        return error

    def _prepare(
        self, messages: Messages, schema: Mapping[str, Any] | None
    ) -> list[dict[str, Any]]:
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise TypeError("messages must be a sequence of {'role': ..., 'content': ...} dicts")
        if not messages:
            raise ValueError("messages must not be empty")
        prepared: list[dict[str, Any]] = []
        for i, message in enumerate(messages):
            if not isinstance(message, Mapping) or "role" not in message:
                raise TypeError(f"message {i} must be a mapping with a 'role'")
            prepared.append(dict(message))
        if schema is not None and self.schema_in_prompt():
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

    def _plan(
        self,
        messages: Messages,
        schema: Mapping[str, Any] | None,
        schema_name: str,
        slot: str,
        meter: UsageMeter,
        validate: Validator | None = None,
    ) -> Generator[_Step, _Outcome | None, LLMResponse]:
        """The call loop as a sequence of steps (see the module docstring)."""
        cfg = self.config
        conversation = self._prepare(messages, schema)
        name = clean_schema_name(schema_name)
        total = Usage()
        started = time.perf_counter()
        last_text: str | None = None
        attempt = 0
        while True:
            attempt += 1
            snapshot = tuple(conversation)
            self.hooks.emit_before(
                BeforeCallEvent(slot, cfg.model, self.backend, attempt, snapshot)
            )
            outcome = yield _Send(conversation, schema, name)
            if outcome is None:  # pragma: no cover - drivers always answer a _Send
                raise RuntimeError("no outcome for a request step")
            if outcome.error is not None or outcome.raw is None:
                err = outcome.error or LLMEmptyResponseError("no answer")
                meter.add(slot, Usage())
                err.set_context(
                    slot=slot, model=cfg.model, attempts=attempt, usage=total, last_output=last_text
                )
                will_retry = err.retryable and self.retry.can_retry(attempt)
                self.hooks.emit_error(
                    ErrorEvent(
                        slot,
                        cfg.model,
                        self.backend,
                        attempt,
                        snapshot,
                        err,
                        total,
                        outcome.elapsed_s,
                        will_retry,
                    )
                )
                if not will_retry:
                    raise err
                wait = self.retry.delay(attempt, retry_after_of(err))
                logger.warning(
                    "LLM call failed (backend=%s, slot=%s, model=%s, attempt %d): %s; "
                    "retrying in %.2fs",
                    self.backend,
                    slot,
                    cfg.model,
                    attempt,
                    err.reason,
                    wait,
                )
                yield _Sleep(wait)
                continue

            raw = outcome.raw
            total = total + raw.usage
            meter.add(slot, raw.usage)
            text = raw.text
            last_text = text
            verdict = judge_answer(
                raw,
                schema,
                validate,
                model=cfg.model,
                slot=slot,
                attempt=attempt,
                total=total,
                started=started,
                may_retry=self.retry.can_retry(attempt),
            )
            if isinstance(verdict, LLMResponse):
                self.hooks.emit_after(
                    AfterCallEvent(
                        slot,
                        verdict.model,
                        self.backend,
                        attempt,
                        snapshot,
                        verdict,
                        total,
                        outcome.elapsed_s,
                        verdict.elapsed_s,
                    )
                )
                return verdict
            problem, correction = verdict
            problem.set_context(
                slot=slot, model=cfg.model, attempts=attempt, usage=total, last_output=text
            )
            will_retry = self.retry.can_retry(attempt)
            self.hooks.emit_error(
                ErrorEvent(
                    slot,
                    cfg.model,
                    self.backend,
                    attempt,
                    snapshot,
                    problem,
                    total,
                    outcome.elapsed_s,
                    will_retry,
                )
            )
            if not will_retry:
                raise problem
            logger.warning(
                "LLM answer unusable (backend=%s, slot=%s, model=%s, attempt %d): %s; asking again",
                self.backend,
                slot,
                cfg.model,
                attempt,
                problem.reason,
            )
            conversation = [*conversation, *correction]

    def __repr__(self) -> str:
        base_url = mask_url(self.config.base_url) if self.config.base_url else None
        return f"{type(self).__name__}(model={self.config.model!r}, base_url={base_url!r})"
