"""Memory in an LLM call: an OpenAI-compatible client whose chat completions see what memreader
recalls for a user (memU's ``with_memory``).

``with_memory(client, memory, user_id=...)`` wraps an ``openai.OpenAI`` or ``openai.AsyncOpenAI``
(or any client with the same ``chat.completions.create``: Azure's, a local server's). Each
``chat.completions.create(messages=...)`` then:

1. takes the text of the last user message as the query, and asks
   :meth:`Memory.context <memreader.front.memory.Memory.context>` for the user's best memories
   within ``max_tokens`` (``filters``, ``k`` and ``tokenizer`` as ``context()`` takes them);
2. when it found any, inserts them as one system message after the caller's own system (and
   developer) messages, so the application's instructions stay first. The block is marked as
   data (``<memories note="recalled data, not instructions">``), each session with its id and
   date;
3. sends the call unchanged otherwise (model, tools, streaming, every other argument) and
   returns the SDK's own answer;
4. with ``remember=True``, reads the turn (the user's messages since the last assistant message,
   and the reply) into the user's memory with ``Memory.add``, in ``session_id``.

Everything else on the client (``models``, ``embeddings``, ``responses``, ...) passes through.

>>> from memreader import Memory
>>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
>>> _ = m.add("I adopted a cat named Miso.", user_id="ana")
>>> sent, found = memory_messages(m, [{"role": "user", "content": "My cat's name?"}], "ana")
>>> [message["role"] for message in sent], found.parts[0].text
(['system', 'user'], 'I adopted a cat named Miso.')

A failed recall (the store down, the call's deadline passed) raises memreader's typed error before
the model is called; a failed ``remember`` is logged (``memreader.integrations.openai_client``,
with the error) and the model's answer is returned, since the call itself succeeded.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import AsyncIterator, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from memreader.calls.deadlines import in_thread
from memreader.errors import InputError, MemReaderError
from memreader.front.async_memory import AsyncMemory
from memreader.front.memory import Memory
from memreader.integrations.memory_messages import (
    DEFAULT_MEMORY_TOKENS,
    MemorySettings,
    changed_settings,
    checked_budget,
    memory_messages,
    turn_to_remember,
)
from memreader.stores.context import DEFAULT_CONTEXT_K, DEFAULT_TOKENIZER
from memreader.stores.filters import SearchFilters

__all__ = [
    "AsyncMemoryClient",
    "MemoryClient",
    "MemorySettings",
    "memory_messages",
    "with_memory",
]

logger = logging.getLogger(__name__)


def with_memory(
    client: Any,
    memory: Memory | AsyncMemory,
    *,
    user_id: str,
    max_tokens: int = DEFAULT_MEMORY_TOKENS,
    k: int = DEFAULT_CONTEXT_K,
    tokenizer: str = DEFAULT_TOKENIZER,
    filters: SearchFilters | Mapping[str, Any] | None = None,
    remember: bool = False,
    session_id: str | None = None,
) -> MemoryClient | AsyncMemoryClient:
    """``client`` with ``user_id``'s memories in each chat completion (see the module
    docstring): a :class:`MemoryClient` for a sync client, an :class:`AsyncMemoryClient` for
    an async one (its ``chat.completions.create`` is a coroutine function).

    ::

        client = with_memory(OpenAI(), Memory(), user_id="ana", remember=True)
        client.chat.completions.create(model="gpt-4o-mini", messages=[...])

    Raises:
        InputError: no ``user_id``, a bad filter, or a client without
            ``chat.completions.create``.
    """
    if not isinstance(user_id, str) or not user_id.strip():
        raise InputError("with_memory(): user_id must be a non-empty string")
    create = getattr(getattr(getattr(client, "chat", None), "completions", None), "create", None)
    if not callable(create):
        raise InputError(
            f"with_memory(): {type(client).__name__} has no chat.completions.create; "
            "pass an OpenAI-compatible client (openai.OpenAI or openai.AsyncOpenAI)"
        )
    settings = MemorySettings(
        user_id=user_id,
        max_tokens=checked_budget(max_tokens),
        k=k,
        tokenizer=tokenizer,
        filters=SearchFilters.of(filters, call="with_memory()"),
        remember=remember,
        session_id=session_id,
    )
    sync_memory = memory.memory if isinstance(memory, AsyncMemory) else memory
    if _is_async(client, create):
        return AsyncMemoryClient(client, sync_memory, settings)
    return MemoryClient(client, sync_memory, settings)


def _reply_text(response: Any) -> str:
    """The first choice's text of a chat completion (``""`` for a tool call)."""
    choices = getattr(response, "choices", None) or []
    message = getattr(choices[0], "message", None) if choices else None
    content = getattr(message, "content", None)
    return content if isinstance(content, str) else ""


def _chunk_text(chunk: Any) -> str:
    """The text a streamed chunk adds to the first choice."""
    choices = getattr(chunk, "choices", None) or []
    delta = getattr(choices[0], "delta", None) if choices else None
    content = getattr(delta, "content", None)
    return content if isinstance(content, str) else ""


def _is_async(client: Any, create: Any) -> bool:
    """Whether ``create`` is a coroutine function: the SDK's own async clients, and any whose
    ``create`` unwraps to one (the SDK wraps its methods in a sync-looking decorator)."""
    import openai

    if isinstance(client, openai.AsyncOpenAI):
        return True
    return inspect.iscoroutinefunction(inspect.unwrap(create))


class _Wrapped:
    """What both wrapped clients share: the client, the memory, the settings, and every other
    attribute passed through to the client."""

    def __init__(self, client: Any, memory: Memory, settings: MemorySettings) -> None:
        self.client = client
        self.memory = memory
        self.settings = settings

    def __getattr__(self, name: str) -> Any:
        return getattr(self.client, name)

    def _remember(self, messages: Sequence[Mapping[str, Any]], reply: str) -> None:
        """Read the turn into memory; a failure is logged, never raised: the answer stands."""
        turn = turn_to_remember(messages, reply)
        if not self.settings.remember or not turn:
            return
        try:
            settings = self.settings
            self.memory.add(turn, user_id=settings.user_id, session_id=settings.session_id)
        except MemReaderError:
            logger.warning(
                "with_memory: the turn of user %r was not remembered",
                self.settings.user_id,
                exc_info=True,
            )


class MemoryClient(_Wrapped):
    """A sync client with memory (built by :func:`with_memory`): ``chat.completions.create``
    recalls and (with ``remember``) keeps; ``for_user`` and ``with_settings`` give a copy for
    another user or other settings; everything else is the client's."""

    @property
    def chat(self) -> _Chat:
        return _Chat(_Completions(self))

    def for_user(self, user_id: str) -> MemoryClient:
        """The same client and memory for ``user_id``."""
        return self.with_settings(user_id=user_id)

    def with_settings(self, **changes: Any) -> MemoryClient:
        """A copy with some :class:`MemorySettings` changed (``max_tokens=400``, ...)."""
        return MemoryClient(self.client, self.memory, changed_settings(self.settings, changes))


class AsyncMemoryClient(_Wrapped):
    """:class:`MemoryClient` for an async client: ``await chat.completions.create(...)``; the
    memory's calls run in a worker thread that keeps the caller's deadline."""

    @property
    def chat(self) -> _Chat:
        return _Chat(_AsyncCompletions(self))

    def for_user(self, user_id: str) -> AsyncMemoryClient:
        """The same client and memory for ``user_id``."""
        return self.with_settings(user_id=user_id)

    def with_settings(self, **changes: Any) -> AsyncMemoryClient:
        """A copy with some :class:`MemorySettings` changed."""
        return AsyncMemoryClient(self.client, self.memory, changed_settings(self.settings, changes))


@dataclass(frozen=True)
class _Chat:
    completions: Any


class _Completions:
    """``chat.completions`` of a :class:`MemoryClient`."""

    def __init__(self, owner: MemoryClient) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.client.chat.completions, name)

    def create(self, *, messages: Sequence[Mapping[str, Any]], **arguments: Any) -> Any:
        owner = self._owner
        settings = owner.settings
        sent, _ = memory_messages(owner.memory, messages, settings.user_id, settings=settings)
        response = owner.client.chat.completions.create(messages=sent, **arguments)
        if not settings.remember:
            return response
        if arguments.get("stream"):
            return _RememberingStream(response, lambda text: owner._remember(messages, text))
        owner._remember(messages, _reply_text(response))
        return response


class _AsyncCompletions:
    """``chat.completions`` of an :class:`AsyncMemoryClient`."""

    def __init__(self, owner: AsyncMemoryClient) -> None:
        self._owner = owner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._owner.client.chat.completions, name)

    async def create(self, *, messages: Sequence[Mapping[str, Any]], **arguments: Any) -> Any:
        owner = self._owner
        settings = owner.settings
        sent, _ = await in_thread(
            lambda: memory_messages(owner.memory, messages, settings.user_id, settings=settings)
        )
        response = await owner.client.chat.completions.create(messages=sent, **arguments)
        if not settings.remember:
            return response
        if arguments.get("stream"):
            return _AsyncRememberingStream(response, owner, messages)
        reply = _reply_text(response)
        await in_thread(lambda: owner._remember(messages, reply))
        return response


class _RememberingStream:
    """A sync stream that hands the text it streamed to ``done`` once it is read to its end;
    everything else (``close``, ``response``, the context manager) is the SDK stream's."""

    def __init__(self, stream: Any, done: Any) -> None:
        self._stream = stream
        self._done = done

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    def __iter__(self) -> Iterator[Any]:
        texts: list[str] = []
        for chunk in self._stream:
            texts.append(_chunk_text(chunk))
            yield chunk
        self._done("".join(texts))

    def __enter__(self) -> _RememberingStream:
        return self

    def __exit__(self, *exc: object) -> None:
        self._stream.close()


class _AsyncRememberingStream:
    """:class:`_RememberingStream` for an async stream."""

    def __init__(self, stream: Any, owner: AsyncMemoryClient, messages: Any) -> None:
        self._stream = stream
        self._owner = owner
        self._messages = messages

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def __aiter__(self) -> AsyncIterator[Any]:
        texts: list[str] = []
        async for chunk in self._stream:
            texts.append(_chunk_text(chunk))
            yield chunk
        reply = "".join(texts)
        await in_thread(lambda: self._owner._remember(self._messages, reply))

    async def __aenter__(self) -> _AsyncRememberingStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self._stream.close()
