"""The LLM client layer of fine mode: backends, slots, retries, JSON recovery, usage, hooks.

Typical use by a reader::

    from memreader.llms import LLMRouter, LLMSlots

    router = LLMRouter(LLMSlots(llm={"backend": "openai", "model": "gpt-4o-mini"}))
    call_usage = router.meter.child()
    answer = router.complete(
        "general_llm", messages, schema=schema, schema_name="memories", meter=call_usage
    )
    answer.parsed, answer.truncated, call_usage.snapshot().by_slot

Every client of one router shares one :class:`ConcurrencyLimiter`, one :class:`UsageMeter` and
one :class:`LLMHooks`. Failures raise :class:`LLMError` subclasses after retries. Named profiles
(``llm_profiles``) and interceptors that change, block or reject calls
(:class:`LLMInterceptor`, the built-in :class:`RateLimit`) sit on the same router.
"""

from memreader.llms.backends import LLM_BACKENDS, available_llm_backends, register_llm
from memreader.llms.base import BaseLLMClient
from memreader.llms.config import (
    SLOT_FALLBACKS,
    SLOT_NAMES,
    LLMConfig,
    LLMSlots,
    StructuredOutputMode,
)
from memreader.llms.errors import (
    LLMCallBlocked,
    LLMConnectionError,
    LLMEmptyResponseError,
    LLMError,
    LLMParseError,
    LLMRateLimitError,
    LLMRateLimitExceeded,
    LLMReplyRejected,
    LLMRequestError,
    LLMServerError,
    LLMTimeoutError,
)
from memreader.llms.hooks import AfterCallEvent, BeforeCallEvent, ErrorEvent, LLMHooks
from memreader.llms.interceptor_specs import LLM_INTERCEPTORS, register_llm_interceptor
from memreader.llms.interceptors import Block, LLMCall, LLMInterceptor, Reject
from memreader.llms.limiter import ConcurrencyLimiter
from memreader.llms.parsing import ParseResult, parse_json, strip_think
from memreader.llms.rate_limit import RateLimit
from memreader.llms.router import LLMRouter, build_llm
from memreader.llms.types import (
    LLMClient,
    LLMResponse,
    Messages,
    RawCompletion,
    Validator,
    schema_instructions,
)
from memreader.llms.usage import Usage, UsageMeter, UsageSnapshot
from memreader.transport.retry import RetryPolicy, parse_retry_after

__all__ = [
    "LLM_BACKENDS",
    "LLM_INTERCEPTORS",
    "SLOT_FALLBACKS",
    "SLOT_NAMES",
    "AfterCallEvent",
    "BaseLLMClient",
    "BeforeCallEvent",
    "Block",
    "ConcurrencyLimiter",
    "ErrorEvent",
    "LLMCall",
    "LLMCallBlocked",
    "LLMClient",
    "LLMConfig",
    "LLMConnectionError",
    "LLMEmptyResponseError",
    "LLMError",
    "LLMHooks",
    "LLMInterceptor",
    "LLMParseError",
    "LLMRateLimitError",
    "LLMRateLimitExceeded",
    "LLMReplyRejected",
    "LLMRequestError",
    "LLMResponse",
    "LLMRouter",
    "LLMServerError",
    "LLMSlots",
    "LLMTimeoutError",
    "Messages",
    "ParseResult",
    "RateLimit",
    "RawCompletion",
    "Reject",
    "RetryPolicy",
    "StructuredOutputMode",
    "Usage",
    "UsageMeter",
    "UsageSnapshot",
    "Validator",
    "available_llm_backends",
    "build_llm",
    "parse_json",
    "parse_retry_after",
    "register_llm",
    "register_llm_interceptor",
    "schema_instructions",
    "strip_think",
]
