"""The Ollama backend, via the official ``ollama`` client (``/api/chat``, non-streaming).

Structured output: ``json_schema`` and ``json_object_schema`` send the schema as ``format``;
``prompt`` puts it in the system prompt and sends ``format="json"``; ``tool_call`` offers one
tool (Ollama cannot force a tool; a plain answer is parsed instead). Usage comes from
``prompt_eval_count`` and ``eval_count``. The ``ollama`` client does not expose response
headers, so a 429 is retried with backoff, not ``Retry-After``. One ``AsyncClient`` is kept per
event loop. The HTTP client under it is memreader's (:mod:`memreader.transport`): ``timeout`` is
a deadline for the whole request, applied once around it (the ``ollama`` client and its
transport get no timeout of their own), and the answer is capped at ``max_response_bytes``; the
config's ``transport`` (an httpx transport) replaces the network under both.

Vision: a message whose ``content`` is a list of OpenAI content parts (``text`` and
``image_url`` with a ``data:`` URL) is sent in Ollama's shape, its texts joined as ``content``
and its images in ``images`` (see :func:`ollama_message`). Ollama cannot fetch an image URL, so
any other URL is refused before sending.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

import httpx
import ollama

from memreader.errors import DocumentError
from memreader.fetch.data_urls import decode_inline, is_data_url
from memreader.llms.backends import register_llm
from memreader.llms.base import BaseLLMClient
from memreader.llms.client_pool import ClientPool
from memreader.llms.config import LLMConfig
from memreader.llms.errors import LLMRequestError
from memreader.llms.hooks import LLMHooks
from memreader.llms.limiter import ConcurrencyLimiter
from memreader.llms.schema import grammar_schema
from memreader.llms.types import RawCompletion
from memreader.llms.usage import Usage, UsageMeter
from memreader.transport import deadline, deadline_transport, http_lib, split_credentials

__all__ = ["OllamaClient", "build_ollama_request", "ollama_message"]

#: ``extra_body`` keys that are request fields rather than model options.
_REQUEST_FIELDS = ("think", "keep_alive")


def _image_bytes(part: Mapping[str, Any]) -> bytes:
    """The image of an ``image_url`` part, which must hold a ``data:`` URL."""
    image_url = part.get("image_url")
    url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
    if not isinstance(url, str) or not is_data_url(url):
        shown = url.split(":", 1)[0] + ":..." if isinstance(url, str) else type(url).__name__
        raise LLMRequestError(
            f"the ollama backend takes images as data: URLs only, not {shown} (Ollama cannot "
            "fetch an image from a URL)",
            retryable=False,
        )
    try:  # the one inline decoder: ;BASE64, wrapped base64 and percent-encoding alike
        return decode_inline(url, None, what="an image data: URL for the ollama backend").data
    except DocumentError as exc:
        raise LLMRequestError(exc.reason, retryable=False) from None


def ollama_message(message: Mapping[str, Any]) -> dict[str, Any]:
    """``message`` in Ollama's shape: a ``content`` list of OpenAI content parts becomes the
    parts' texts joined by newlines, and its images (base64 ``data:`` URLs) go to ``images``.
    Other messages are returned as they are.

    The images are handed to the ``ollama`` client as raw bytes, which it sends base64-encoded:
    given a string, it would first try it as a local file path (and send that file), which an
    untrusted payload must never get to choose.

    Raises:
        LLMRequestError: a part that is not text or an image, or an image that is not a
            decodable ``data:`` URL (not retried: the same request would fail again).
    """
    content = message.get("content")
    if not isinstance(content, list):
        return dict(message)
    texts: list[str] = []
    images: list[Any] = list(message.get("images") or ())
    for part in content:
        if isinstance(part, str):
            texts.append(part)
            continue
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind == "text" and isinstance(part, Mapping):
            texts.append(str(part.get("text") or ""))
        elif kind == "image_url" and isinstance(part, Mapping):
            images.append(_image_bytes(part))
        else:
            raise LLMRequestError(
                f"a content part of type {str(kind)[:40]!r} cannot be sent to the ollama backend "
                "(only 'text' and 'image_url')",
                retryable=False,
            )
    converted = {**message, "content": "\n".join(text for text in texts if text)}
    if images:
        converted["images"] = images
    return converted


def build_ollama_request(
    config: LLMConfig,
    messages: list[dict[str, Any]],
    schema: Mapping[str, Any] | None,
    schema_name: str,
) -> dict[str, Any]:
    """The keyword arguments of ``ollama.Client.chat`` for one request (vision messages
    converted by :func:`ollama_message`)."""
    options: dict[str, Any] = {"temperature": config.temperature, "num_predict": config.max_tokens}
    extra = dict(config.extra_body)
    request_fields = {k: extra.pop(k) for k in _REQUEST_FIELDS if k in extra}
    nested = extra.pop("options", None)
    if isinstance(nested, Mapping):
        options.update(nested)
    options.update(extra)
    kwargs: dict[str, Any] = {
        "model": config.model,
        "messages": [ollama_message(message) for message in messages],
        "options": options,
        "stream": False,
        **request_fields,
    }
    if schema is not None:
        mode = config.structured_output
        if mode in ("json_schema", "json_object_schema"):
            kwargs["format"] = grammar_schema(schema)
        elif mode == "prompt":
            kwargs["format"] = "json"
        else:  # tool_call
            kwargs["tools"] = [
                {
                    "type": "function",
                    "function": {
                        "name": schema_name,
                        "description": "Record the answer. Call this with the complete answer.",
                        "parameters": grammar_schema(schema),
                    },
                }
            ]
    return kwargs


def _read_chat(response: Any, fallback_model: str) -> RawCompletion:
    message = getattr(response, "message", None)
    content = getattr(message, "content", None)
    arguments: str | None = None
    for call in getattr(message, "tool_calls", None) or ():
        args = getattr(getattr(call, "function", None), "arguments", None)
        if isinstance(args, Mapping):
            arguments = json.dumps(dict(args), ensure_ascii=False)
            break
        if isinstance(args, str):
            arguments = args
            break
    return RawCompletion(
        content=content if isinstance(content, str) else None,
        tool_arguments=arguments,
        usage=Usage.of(
            getattr(response, "prompt_eval_count", None), getattr(response, "eval_count", None)
        ),
        model=getattr(response, "model", None) or fallback_model,
        finish_reason=getattr(response, "done_reason", None),
    )


@register_llm("ollama")
class OllamaClient(BaseLLMClient):
    """An Ollama server (sync and async)."""

    backend = "ollama"

    def __init__(
        self,
        config: LLMConfig,
        *,
        limiter: ConcurrencyLimiter | None = None,
        meter: UsageMeter | None = None,
        hooks: LLMHooks | None = None,
    ) -> None:
        super().__init__(config, limiter=limiter, meter=meter, hooks=hooks)
        headers = dict(config.extra_headers)
        key = config.api_key_value()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        host, credentials = split_credentials(config.base_url) if config.base_url else (None, None)
        # No "timeout": the ollama client's default is none, and the deadline in _send bounds
        # the whole request.
        self._client_kwargs: dict[str, Any] = {"host": host, "headers": headers}
        if credentials is not None:
            user, password = credentials
            self._secrets.extend(s for s in (password or user,) if s)
            self._client_kwargs["auth"] = httpx.BasicAuth(user, password)
        self._clients: ClientPool[ollama.Client, ollama.AsyncClient] = ClientPool(
            lambda: ollama.Client(**self._client_kwargs, transport=self._transport(False)),
            lambda: ollama.AsyncClient(**self._client_kwargs, transport=self._transport(True)),
        )

    def _transport(self, asynchronous: bool) -> Any:
        return deadline_transport(
            http_lib("httpx"),
            timeout=None,  # the deadline in _send bounds each request
            max_response_bytes=self.config.max_response_bytes,
            asynchronous=asynchronous,
            inner=self.config.transport,
        )

    def _send(
        self, messages: list[dict[str, Any]], schema: Mapping[str, Any] | None, schema_name: str
    ) -> RawCompletion:
        kwargs = build_ollama_request(self.request_config, messages, schema, schema_name)
        with deadline(self.config.timeout):
            response = self._clients.sync().chat(**kwargs)
        return _read_chat(response, self.config.model)

    async def _asend(
        self, messages: list[dict[str, Any]], schema: Mapping[str, Any] | None, schema_name: str
    ) -> RawCompletion:
        kwargs = build_ollama_request(self.request_config, messages, schema, schema_name)
        with deadline(self.config.timeout):
            response = await self._clients.for_running_loop().chat(**kwargs)
        return _read_chat(response, self.config.model)

    def close(self) -> None:
        """Close the sync client; async clients are dropped (close them with :meth:`aclose`)."""
        self._clients.close()

    async def aclose(self) -> None:
        """Close the current event loop's async client and the sync client."""
        await self._clients.aclose()
