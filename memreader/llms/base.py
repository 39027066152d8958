"""The shared call loop of every backend (the types it hands around are in
:mod:`memreader.llms.types`).

A backend subclasses :class:`BaseLLMClient` and implements only :meth:`BaseLLMClient._send` and
:meth:`BaseLLMClient._asend`: one request, and its answer as a
:class:`~memreader.llms.types.RawCompletion` (failures are raised as they come: the SDK's own
errors are read by the loop, or an :class:`~memreader.llms.errors.LLMError`). The base class
adds everything else, for sync and async calls alike: the concurrency budget, retries with
backoff, re-asks of unusable answers, JSON recovery, usage metering and hooks.

The loop is written once, as a plan (:class:`~memreader.llms.call_plan.CallPlan`) that yields
"send this request" and "sleep this long" steps; :meth:`complete` runs the steps with blocking
calls and :meth:`acomplete` with awaitables.

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
import contextvars
import logging
import time
import traceback
from abc import ABC, abstractmethod
from collections.abc import Generator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

from memreader.llms.call_plan import CallPlan, Feed, Intercept, Outcome, Send, Sleep, Step
from memreader.llms.config import LLMConfig
from memreader.llms.errors import LLMError, llm_error
from memreader.llms.hooks import LLMHooks
from memreader.llms.limiter import DEFAULT_MAX_CONCURRENCY, ConcurrencyLimiter
from memreader.llms.types import LLMResponse, Messages, RawCompletion, Validator, clean_schema_name
from memreader.llms.usage import UsageMeter
from memreader.secret_masking import mask_url
from memreader.transport.failures import classify
from memreader.transport.retry import RetryPolicy

if TYPE_CHECKING:
    from memreader.calls.deadlines import Deadline

__all__ = ["BaseLLMClient"]

logger = logging.getLogger(__name__)

#: How much of an unexpected error's text goes into an LLMError message.
_DETAIL_LIMIT = 500

#: The config of the request being sent, where an interceptor changed its sampling settings
#: (set around one ``_send``; each thread and each task sees its own).
_REQUEST_CONFIG: contextvars.ContextVar[LLMConfig | None] = contextvars.ContextVar(
    "memreader_llm_request_config", default=None
)


class BaseLLMClient(ABC):
    """The shared call loop; subclasses implement one request in :meth:`_send`/:meth:`_asend`.

    Args:
        config: the endpoint.
        limiter: the concurrency budget shared with the reader's other clients (a private one
            of :data:`~memreader.llms.limiter.DEFAULT_MAX_CONCURRENCY` if omitted). A permit is
            held per request, not during backoff waits.
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

    @property
    def request_config(self) -> LLMConfig:
        """The config to build the request being sent from: :attr:`config`, with the
        ``temperature`` and ``max_tokens`` an LLM interceptor set for this request. A backend
        reads its sampling settings here (one that reads :attr:`config` ignores such changes)."""
        return _REQUEST_CONFIG.get() or self.config

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
        profile: str | None = None,
        deadline: Deadline | None = None,
    ) -> LLMResponse:
        """Send ``messages`` (blocking); see :meth:`LLMClient.complete`. ``profile``: the named
        LLM profile this client serves the call for (its usage is recorded under it too);
        ``deadline``: the caller's, shown to the interceptors."""
        meter = meter if meter is not None else self.meter
        plan = self._plan(messages, schema, schema_name, slot, meter, validate, profile, deadline)
        try:
            step = next(plan)
            while True:
                feed: Feed = None
                if isinstance(step, Sleep):
                    if step.seconds > 0:
                        self.retry.sleep(step.seconds)
                elif isinstance(step, Intercept):
                    feed = step.run()
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
        profile: str | None = None,
        deadline: Deadline | None = None,
    ) -> LLMResponse:
        """Send ``messages`` without blocking the event loop; see :meth:`complete`."""
        meter = meter if meter is not None else self.meter
        plan = self._plan(messages, schema, schema_name, slot, meter, validate, profile, deadline)
        try:
            step = next(plan)
            while True:
                feed: Feed = None
                if isinstance(step, Sleep):
                    if step.seconds > 0:
                        await asyncio.sleep(step.seconds)
                elif isinstance(step, Intercept):
                    feed = await step.arun()
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

    def _run(self, step: Send) -> Outcome:
        with self.limiter.hold():
            started = time.perf_counter()
            changed = self._options_config(step)
            try:
                raw = self._send(step.messages, step.schema, step.schema_name)
            except LLMError as err:
                return Outcome(error=err, elapsed_s=time.perf_counter() - started)
            except Exception as exc:  # the SDK boundary: anything else becomes a typed LLMError
                error = self.error_for(exc)
                return Outcome(error=error, elapsed_s=time.perf_counter() - started)
            finally:
                if changed is not None:
                    _REQUEST_CONFIG.reset(changed)
            return Outcome(raw=raw, elapsed_s=time.perf_counter() - started)

    async def _arun(self, step: Send) -> Outcome:
        async with self.limiter.ahold():
            started = time.perf_counter()
            changed = self._options_config(step)
            try:
                raw = await self._asend(step.messages, step.schema, step.schema_name)
            except LLMError as err:
                return Outcome(error=err, elapsed_s=time.perf_counter() - started)
            except Exception as exc:  # the SDK boundary: anything else becomes a typed LLMError
                error = self.error_for(exc)
                return Outcome(error=error, elapsed_s=time.perf_counter() - started)
            finally:
                if changed is not None:
                    _REQUEST_CONFIG.reset(changed)
            return Outcome(raw=raw, elapsed_s=time.perf_counter() - started)

    def _options_config(self, step: Send) -> contextvars.Token[LLMConfig | None] | None:
        """Set :attr:`request_config` for ``step`` when an interceptor changed its settings."""
        if not step.options:
            return None
        return _REQUEST_CONFIG.set(self.config.model_copy(update=dict(step.options)))

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

    def _plan(
        self,
        messages: Messages,
        schema: Mapping[str, Any] | None,
        schema_name: str,
        slot: str,
        meter: UsageMeter,
        validate: Validator | None = None,
        profile: str | None = None,
        deadline: Deadline | None = None,
    ) -> Generator[Step, Feed, LLMResponse]:
        """The steps of one call (see :class:`~memreader.llms.call_plan.CallPlan`)."""
        plan = CallPlan(
            self.config.model,
            self.backend,
            self.hooks,
            self.retry,
            slot,
            meter,
            schema,
            validate,
            profile=profile,
            interceptors=self.hooks.active_interceptors(),
            temperature=self.config.temperature,
            max_tokens=self.config.max_tokens,
            deadline=deadline,
        )
        return plan.steps(messages, clean_schema_name(schema_name), self.schema_in_prompt())

    def __repr__(self) -> str:
        base_url = mask_url(self.config.base_url) if self.config.base_url else None
        return f"{type(self).__name__}(model={self.config.model!r}, base_url={base_url!r})"
