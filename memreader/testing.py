"""Test seams that ship with memreader: a scripted LLM and a deterministic embedder, no network.

Both are registered through the real registries, so a reader builds them from an ordinary
config the way it builds the real ones:

* the ``scripted`` LLM backend answers from a :class:`ScriptedLLM`: a list of answers, used in
  order, or a function of each request (:class:`ScriptedRequest`: the messages, the JSON schema
  and its name). It records every request. Answers go through the same call loop as a real
  backend's (JSON recovery, re-asks, retries, usage, hooks); an exception in the script is a
  failed request (an :class:`~memreader.llms.errors.LLMTimeoutError` instance, say, is retried).
  A :class:`ScriptedLLM` is also an httpx-style transport that speaks the OpenAI and Ollama chat
  APIs, so ``LLMConfig(backend="openai", transport=llm, ...)`` runs the real SDK against it.
* the ``hash`` embedder turns a text into a unit vector from its sha256: identical texts give
  identical vectors, and each call is recorded (:attr:`HashEmbedder.calls`).

A fine-mode read with both (the function tells the three passes apart by the schema name):

>>> from memreader import SimpleStructMemReader, SimpleStructMemReaderConfig
>>> from memreader.testing import ScriptedLLM
>>> def answer(request):
...     if request.schema_name == "memory_extraction":
...         return {"memory_list": [{"key": "home", "memory_type": "UserMemory",
...                                  "value": "Ana lives in Porto.", "source_ids": [1]}],
...                 "summary": "Ana lives in Porto."}
...     return {"results": [{"id": 1, "supported": True}]}  # filter; rewrite: no changes
>>> llm = ScriptedLLM(answer)
>>> config = SimpleStructMemReaderConfig(embedder={"backend": "hash"}, llm=llm.config())
>>> reader = SimpleStructMemReader(config)
>>> chat = [[{"role": "user", "content": "I live in Porto.", "chat_time": "2026-01-02"}]]
>>> info = {"user_id": "u1", "session_id": "s1"}
>>> items = reader.get_memory(chat, type="chat", info=info, mode="fine")
>>> [item.memory for item in items[0]]
['Ana lives in Porto.']
>>> [request.schema_name for request in llm.requests]
['memory_extraction', 'memory_filter', 'memory_rewrite']
>>> len(items[0][0].metadata.embedding)
16
"""

from __future__ import annotations

import hashlib
import json
import logging
import math
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from memreader.embedders.backends import register_embedder
from memreader.embedders.base import EmbedderDefaults
from memreader.embedders.languages import LATIN, unreadable_share
from memreader.errors import ConfigError
from memreader.llms.backends import register_llm
from memreader.llms.base import BaseLLMClient
from memreader.llms.config import LLMConfig
from memreader.llms.errors import LLMError
from memreader.llms.hooks import LLMHooks
from memreader.llms.limiter import ConcurrencyLimiter
from memreader.llms.types import RawCompletion
from memreader.llms.usage import Usage, UsageMeter

__all__ = [
    "HashEmbedder",
    "HashEmbedderConfig",
    "ScriptedAnswer",
    "ScriptedClient",
    "ScriptedLLM",
    "ScriptedRequest",
]

logger = logging.getLogger(__name__)


@dataclass(frozen=True)
class ScriptedRequest:
    """One request the scripted LLM received.

    Attributes:
        messages: the chat messages sent (re-asks included: they grow the conversation).
        schema: the JSON schema of the answer, if one was asked for.
        schema_name: the schema's name (``"memory_extraction"``, ``"memory_filter"``,
            ``"memory_rewrite"`` in fine mode; ``"response"`` by default, and over the Ollama
            API, which sends no name).
        model: the model named in the config.
    """

    messages: list[dict[str, Any]]
    schema: Mapping[str, Any] | None = None
    schema_name: str = "response"
    model: str = "scripted"

    @property
    def prompt(self) -> str:
        """The text of the last message (the window or the items to check, in fine mode); for
        a message of content parts (the vision shape), its text parts joined by newlines."""
        content = self.messages[-1].get("content") if self.messages else None
        if isinstance(content, list):
            texts: list[str] = []
            for part in content:
                text = part.get("text") if isinstance(part, Mapping) else part
                if isinstance(text, str) and text:
                    texts.append(text)
            return "\n".join(texts)
        return content if isinstance(content, str) else ""


#: What a script answers: text, a JSON value (sent as JSON text), a whole
#: :class:`~memreader.llms.base.RawCompletion` (finish reason, usage, tool arguments), or an
#: exception to raise for this request.
ScriptedAnswer = str | Mapping[str, Any] | list[Any] | RawCompletion | BaseException


@dataclass(eq=False)
class ScriptedLLM:
    """The answers of the ``scripted`` backend, and the requests it received.

    Args:
        answers: answers used one per request, in order, or a function of the request
            (called under a lock, so it may keep state). Running out of answers is an
            :class:`~memreader.llms.errors.LLMError` naming how many there were.
        model: the model name of :meth:`config`.
        usage: the ``(prompt, completion)`` tokens reported for each answer that is not a
            :class:`~memreader.llms.base.RawCompletion`.
    """

    answers: Sequence[ScriptedAnswer] | Callable[[ScriptedRequest], ScriptedAnswer] = ()
    model: str = "scripted"
    usage: tuple[int, int] = (0, 0)
    requests: list[ScriptedRequest] = field(default_factory=list, init=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, init=False, repr=False)

    def config(self, **settings: Any) -> LLMConfig:
        """An :class:`~memreader.llms.config.LLMConfig` of the ``scripted`` backend answered by
        this script (``settings`` override its fields; retries wait no time by default)."""
        values: dict[str, Any] = {
            "backend": "scripted",
            "model": self.model,
            "backoff_base": 0.0,
            "transport": self,
        }
        values.update(settings)
        return LLMConfig(**values)

    def answer(self, request: ScriptedRequest) -> RawCompletion:
        """Record ``request`` and return its answer (raising a scripted exception)."""
        with self._lock:
            self.requests.append(request)
            if callable(self.answers):
                reply = self.answers(request)
            elif len(self.requests) <= len(self.answers):
                reply = self.answers[len(self.requests) - 1]
            else:
                raise LLMError(
                    f"the scripted LLM has no answer for request {len(self.requests)} "
                    f"({len(self.answers)} answers were scripted)",
                    retryable=False,
                )
        if isinstance(reply, BaseException):
            raise reply
        if isinstance(reply, RawCompletion):
            return reply
        text = reply if isinstance(reply, str) else json.dumps(reply, ensure_ascii=False)
        return RawCompletion(
            content=text, usage=Usage.of(*self.usage), model=self.model, finish_reason="stop"
        )

    # -- the transport: the OpenAI and Ollama chat APIs over httpx(2) -------------------------

    def handle_request(self, request: Any) -> Any:
        """Answer an httpx or httpx2 request to ``/chat/completions`` or ``/api/chat``."""
        lib = sys.modules[type(request).__module__.partition(".")[0]]
        request.read()
        return self._respond(lib, request)

    async def handle_async_request(self, request: Any) -> Any:
        """The async twin of :meth:`handle_request`."""
        lib = sys.modules[type(request).__module__.partition(".")[0]]
        await request.aread()
        return self._respond(lib, request)

    def _respond(self, lib: Any, request: Any) -> Any:
        body = json.loads(request.content or b"{}")
        ollama = str(request.url.path).endswith("/api/chat")
        schema, name = _schema_of(body, ollama)
        scripted = ScriptedRequest(
            list(body.get("messages") or []), schema, name, str(body.get("model") or "")
        )
        try:
            raw = self.answer(scripted)
        except LLMError as exc:
            return lib.Response(500, json={"error": {"message": exc.reason}})
        return lib.Response(200, json=_ollama_reply(raw) if ollama else _openai_reply(raw))

    def reset(self) -> None:
        """Forget the recorded requests (a list script starts again from its first answer)."""
        with self._lock:
            self.requests.clear()


def _schema_of(body: Mapping[str, Any], ollama: bool) -> tuple[Mapping[str, Any] | None, str]:
    tools = body.get("tools") or []
    if tools:
        function = tools[0].get("function") or {}
        return function.get("parameters"), str(function.get("name") or "response")
    if ollama:
        fmt = body.get("format")
        return (fmt if isinstance(fmt, Mapping) else None), "response"
    fmt = body.get("response_format") or {}
    if "json_schema" in fmt:
        return fmt["json_schema"].get("schema"), str(fmt["json_schema"].get("name"))
    return fmt.get("schema"), "response"


def _openai_reply(raw: RawCompletion) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": raw.content}
    if raw.tool_arguments is not None:
        function = {"name": "response", "arguments": raw.tool_arguments}
        message["tool_calls"] = [{"id": "call_1", "type": "function", "function": function}]
    usage = raw.usage
    return {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": 0,
        "model": raw.model or "scripted",
        "choices": [{"index": 0, "message": message, "finish_reason": raw.finish_reason}],
        "usage": {
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "total_tokens": usage.total_tokens,
        },
    }


def _ollama_reply(raw: RawCompletion) -> dict[str, Any]:
    return {
        "model": raw.model or "scripted",
        "created_at": "2026-01-01T00:00:00Z",
        "message": {"role": "assistant", "content": raw.content or ""},
        "done": True,
        "done_reason": raw.finish_reason or "stop",
        "prompt_eval_count": raw.usage.prompt_tokens,
        "eval_count": raw.usage.completion_tokens,
    }


@register_llm("scripted")
class ScriptedClient(BaseLLMClient):
    """The ``scripted`` backend: each request is answered by the config's :class:`ScriptedLLM`
    (its ``transport``), with no network.

    Raises:
        ConfigError: the config's ``transport`` is not a :class:`ScriptedLLM`.
    """

    backend = "scripted"

    def __init__(
        self,
        config: LLMConfig,
        *,
        limiter: ConcurrencyLimiter | None = None,
        meter: UsageMeter | None = None,
        hooks: LLMHooks | None = None,
    ) -> None:
        super().__init__(config, limiter=limiter, meter=meter, hooks=hooks)
        if not isinstance(config.transport, ScriptedLLM):
            raise ConfigError(
                "LLMConfig.transport: the scripted backend answers from a "
                "memreader.testing.ScriptedLLM (use ScriptedLLM(...).config()), got "
                f"{type(config.transport).__name__}"
            )
        self.script: ScriptedLLM = config.transport

    def _send(
        self, messages: list[dict[str, Any]], schema: Mapping[str, Any] | None, schema_name: str
    ) -> RawCompletion:
        request = ScriptedRequest(list(messages), schema, schema_name, self.config.model)
        return self.script.answer(request)

    async def _asend(
        self, messages: list[dict[str, Any]], schema: Mapping[str, Any] | None, schema_name: str
    ) -> RawCompletion:
        return self._send(messages, schema, schema_name)


class HashEmbedderConfig(BaseModel):
    """Settings of the ``hash`` embedder: the length of its vectors (at most 32), and whether
    it acts as an English-only model (``english_only``: it then reports, like the bundled
    local model, the share of a text's letters outside Latin script as unreadable)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    dimension: int = Field(default=16, ge=1, le=32)
    english_only: bool = False


@register_embedder("hash")
class HashEmbedder(EmbedderDefaults):
    """Vectors from a text's sha256: identical texts, identical unit vectors; no model, no
    network. ``name`` is ``"hash:<dimension>"``; every ``embed`` call is recorded in
    :attr:`calls`; tokens are counted as whitespace-separated words. With ``english_only``,
    :meth:`unreadable_share` says how much of a text is not in Latin script.

    >>> embedder = HashEmbedder(HashEmbedderConfig(dimension=4))
    >>> embedder.embed(["tea"]) == embedder.embed(["tea"]), embedder.calls
    (True, [['tea'], ['tea']])
    """

    config_class = HashEmbedderConfig
    max_input_tokens = 100_000

    def __init__(self, config: HashEmbedderConfig | None = None) -> None:
        config = config if config is not None else HashEmbedderConfig()
        self.dimension = config.dimension
        self.name = f"hash:{config.dimension}"
        self.english_only = config.english_only
        self.calls: list[list[str]] = []

    def count_tokens(self, text: str) -> int:
        """Whitespace-separated words of ``text``."""
        return len(text.split())

    def unreadable_share(self, text: str) -> float | None:
        """With ``english_only``: the share of ``text``'s letters outside Latin script (see
        :mod:`memreader.embedders.languages`); otherwise ``None`` (not checked)."""
        if not self.english_only:
            return None
        return unreadable_share(text, scripts=LATIN)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit vector per text, from its sha256."""
        self.calls.append(list(texts))
        out = []
        for text in texts:
            digest = hashlib.sha256(text.encode("utf-8", "surrogatepass")).digest()
            vector = [b - 127.5 for b in digest[: self.dimension]]
            norm = math.sqrt(sum(x * x for x in vector))
            out.append([x / norm for x in vector])
        return out
