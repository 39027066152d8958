"""The OpenAI-compatible backend (OpenAI, vLLM, llama.cpp, LM Studio, ...), via ``openai``.

The official client is built with ``max_retries=0``: retries, backoff and re-asks are done by
:class:`~memreader.llms.base.BaseLLMClient`, with the one policy of every remote call (the
SDK's errors are read by :func:`memreader.transport.failures.classify`). Async calls use one
``AsyncOpenAI`` per event loop, because an async HTTP connection pool cannot move between
loops (``asyncio.run`` called twice would otherwise fail on stale connections).

The SDK's HTTP client is memreader's (:mod:`memreader.transport`): ``timeout`` is a deadline
for the whole request, applied once around it (:meth:`OpenAICompatibleClient._send`; the SDK and
its HTTP client get no timeout of their own), the answer is capped at ``max_response_bytes``,
and credentials in
``base_url`` are sent as basic auth without ever being part of a URL the SDK logs. The
config's ``transport`` (a transport of the SDK's HTTP library) replaces the network under the
deadline and the cap.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Any

import openai
from openai.types.chat import ChatCompletion

from memreader.errors import ConfigError
from memreader.llms.backends import register_llm
from memreader.llms.base import BaseLLMClient
from memreader.llms.client_pool import ClientPool
from memreader.llms.config import LLMConfig
from memreader.llms.errors import LLMServerError
from memreader.llms.hooks import LLMHooks
from memreader.llms.limiter import ConcurrencyLimiter
from memreader.llms.schema import grammar_schema
from memreader.llms.types import RawCompletion
from memreader.llms.usage import Usage, UsageMeter
from memreader.transport import deadline, http_client, openai_http_lib, split_credentials

__all__ = ["OpenAICompatibleClient", "build_openai_request"]

# Requests go through the client's generic ``post`` with a plain JSON body: the typed
# ``chat.completions.create`` walks every parameter through its TypedDict transforms, which
# costs about 3 ms per request, a third of the SDK's CPU per call, for a body we already
# hold as JSON. Auth, headers, timeouts and the response model are the SDK's either way.
_PATH = "/chat/completions"

#: Sent as the key to servers that need none (llama.cpp, vLLM without auth).
PLACEHOLDER_KEY = "not-needed"


def build_openai_request(
    config: LLMConfig,
    messages: list[dict[str, Any]],
    schema: Mapping[str, Any] | None,
    schema_name: str,
) -> dict[str, Any]:
    """The JSON body of one ``POST /chat/completions`` request (``extra_body`` merged in)."""
    body: dict[str, Any] = {
        "model": config.model,
        "messages": messages,
        "temperature": config.temperature,
        "max_tokens": config.max_tokens,
    }
    mode = config.structured_output
    if schema is not None and mode == "json_schema":
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {"name": schema_name, "schema": dict(schema), "strict": False},
        }
    elif schema is not None and mode == "json_object_schema":
        body["response_format"] = {"type": "json_object", "schema": grammar_schema(schema)}
    elif schema is not None and mode == "tool_call":
        body["tools"] = [
            {
                "type": "function",
                "function": {
                    "name": schema_name,
                    "description": "Record the answer. Call this with the complete answer.",
                    "parameters": grammar_schema(schema),
                },
            }
        ]
        body["tool_choice"] = {"type": "function", "function": {"name": schema_name}}
    # "prompt": the schema is already in the system prompt (call_plan.prepare_messages).
    body.update(config.extra_body)
    return body


def _read_completion(completion: Any, fallback_model: str) -> RawCompletion:
    choices = getattr(completion, "choices", None)
    if choices is None:
        raise LLMServerError(
            "the server's answer is not a chat completion", retryable=True, status_code=200
        )
    usage_obj = getattr(completion, "usage", None)
    usage = Usage.of(
        getattr(usage_obj, "prompt_tokens", None), getattr(usage_obj, "completion_tokens", None)
    )
    total = getattr(usage_obj, "total_tokens", None)
    if isinstance(total, int) and total > usage.total_tokens:
        usage = Usage(usage.prompt_tokens, usage.completion_tokens, total)
    model = getattr(completion, "model", None) or fallback_model
    if not choices:
        return RawCompletion(content=None, usage=usage, model=model)
    choice = choices[0]
    message = getattr(choice, "message", None)
    content = getattr(message, "content", None)
    arguments: str | None = None
    for call in getattr(message, "tool_calls", None) or ():
        function = getattr(call, "function", None)
        args = getattr(function, "arguments", None)
        if isinstance(args, str):
            arguments = args
            break
    return RawCompletion(
        content=content if isinstance(content, str) else None,
        tool_arguments=arguments,
        usage=usage,
        model=model,
        finish_reason=getattr(choice, "finish_reason", None),
    )


@register_llm("openai")
class OpenAICompatibleClient(BaseLLMClient):
    """An OpenAI-compatible chat-completions endpoint (sync and async)."""

    backend = "openai"

    def __init__(
        self,
        config: LLMConfig,
        *,
        limiter: ConcurrencyLimiter | None = None,
        meter: UsageMeter | None = None,
        hooks: LLMHooks | None = None,
    ) -> None:
        super().__init__(config, limiter=limiter, meter=meter, hooks=hooks)
        key = config.api_key_value() or os.environ.get("OPENAI_API_KEY")
        if not key:
            if config.base_url is None:
                raise ConfigError(
                    "LLMConfig.api_key: required for the OpenAI API (set api_key or "
                    "OPENAI_API_KEY, or a base_url for a server that needs no key)"
                )
            key = PLACEHOLDER_KEY
        else:
            self._secrets.append(key)
        base_url, credentials = (
            split_credentials(config.base_url) if config.base_url else (None, None)
        )
        if credentials is not None:
            user, password = credentials
            self._secrets.extend(s for s in (password or user,) if s)
        self._credentials = credentials
        self._http_lib = openai_http_lib(openai)
        self._client_kwargs: dict[str, Any] = {
            "api_key": key,
            "base_url": base_url,
            # None, not omitted (the SDK would use its 10-minute default): the deadline in
            # _send bounds the whole request.
            "timeout": None,
            "max_retries": 0,
            "default_headers": dict(config.extra_headers) or None,
        }
        self._clients: ClientPool[openai.OpenAI, openai.AsyncOpenAI] = ClientPool(
            lambda: openai.OpenAI(**self._client_kwargs, http_client=self._http(False)),
            lambda: openai.AsyncOpenAI(**self._client_kwargs, http_client=self._http(True)),
        )

    def _http(self, asynchronous: bool) -> Any:
        return http_client(
            self._http_lib,
            timeout=None,  # the deadline in _send bounds each request
            max_response_bytes=self.config.max_response_bytes,
            asynchronous=asynchronous,
            credentials=self._credentials,
            inner=self.config.transport,
        )

    def _send(
        self, messages: list[dict[str, Any]], schema: Mapping[str, Any] | None, schema_name: str
    ) -> RawCompletion:
        body = build_openai_request(self.request_config, messages, schema, schema_name)
        with deadline(self.config.timeout):
            completion = self._clients.sync().post(_PATH, body=body, cast_to=ChatCompletion)
        return _read_completion(completion, self.config.model)

    async def _asend(
        self, messages: list[dict[str, Any]], schema: Mapping[str, Any] | None, schema_name: str
    ) -> RawCompletion:
        body = build_openai_request(self.request_config, messages, schema, schema_name)
        with deadline(self.config.timeout):
            completion = await self._clients.for_running_loop().post(
                _PATH, body=body, cast_to=ChatCompletion
            )
        return _read_completion(completion, self.config.model)

    def close(self) -> None:
        """Close the sync client; async clients are dropped (close them with :meth:`aclose`)."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close the current event loop's async client and the sync client."""
        await self._clients.aclose()
