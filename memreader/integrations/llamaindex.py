"""LlamaIndex: memreader as a memory block of LlamaIndex's ``Memory``
(``pip install 'memreader-ai[llamaindex]'``).

LlamaIndex's ``llama_index.core.memory.Memory`` keeps a chat's recent messages and, when they
pass its token limit, flushes the oldest into its memory blocks; before each LLM call it asks
every block for what to add to the prompt. :class:`MemreaderMemoryBlock` is such a block:

- flushed messages are read into memories (``Memory.add``: one chat, the roles kept, in the
  LlamaIndex memory's ``session_id``), so each memory's sources name the session, the message,
  its speaker and the quoted span it came from;
- for the current messages it answers the memories that fit ``max_tokens``
  (``Memory.context``: a ``<memories>`` block naming each memory's session and date), or with
  ``recall="search"`` the ``k`` best memories, one a line, each with its session and message.

>>> from memreader import Memory
>>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
>>> block = MemreaderMemoryBlock(memory=m, user_id="ana")
>>> block.name, block.recall
('memreader', 'context')

The block is bound to one ``user_id`` (and optionally an ``agent_id`` and ``task_id``): a
LlamaIndex session id is a conversation, never a user. Text, tool calls (tool-call blocks, or
``additional_kwargs["tool_calls"]`` as older LLM integrations keep them) and tool results are
read; an image, audio, video or document block is kept as a marker (``[image]``) and logged,
never fetched or opened (content is not the operator); reasoning blocks are left out. A failing
store or a passed deadline raises memreader's typed error from LlamaIndex's ``put`` or ``get``.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, Literal

from llama_index.core.base.llms.types import (
    CachePoint,
    ChatMessage,
    TextBlock,
    ThinkingBlock,
    ToolCallBlock,
)
from llama_index.core.bridge.pydantic import Field, PrivateAttr, field_validator
from llama_index.core.memory import BaseMemoryBlock

from memreader.front.inputs import check_user
from memreader.integrations.awaited import DEFAULT_TIMEOUT_S, Verbs, check_memory, check_timeout
from memreader.modes import ReadMode
from memreader.scopes import check_scope_id
from memreader.stores import SearchHit
from memreader.stores.context import DEFAULT_CONTEXT_K, MIN_CONTEXT_TOKENS

__all__ = ["MemreaderMemoryBlock"]

logger = logging.getLogger(__name__)

#: LlamaIndex's roles that memreader calls by another name.
_ROLES = {"chatbot": "assistant", "model": "assistant"}
#: Blocks that hold nothing of the conversation itself (a cache mark, a model's reasoning).
_LEFT_OUT = (CachePoint, ThinkingBlock)
#: What a message's ``additional_kwargs`` may tell memreader: (memreader's key, the key there).
_KEPT = (
    ("name", "name"),
    ("message_id", "message_id"),
    ("message_id", "id"),
    ("chat_time", "chat_time"),
)


class MemreaderMemoryBlock(BaseMemoryBlock[str]):
    """A LlamaIndex memory block over memreader (see the module docstring).

    Args:
        memory: a :class:`~memreader.front.memory.Memory` or
            :class:`~memreader.front.async_memory.AsyncMemory` (opened and closed by the caller).
        user_id: whose memories it reads and writes.
        agent_id, task_id: their scope (:mod:`memreader.scopes`).
        mode: how flushed messages are read (``fast``, or ``fine`` with the reader's LLM).
        recall: ``context`` (one block within ``max_tokens``) or ``search`` (the ``k`` best).
        query_messages: how many of the latest messages make the query.
        timeout_s: the longest one put or get may take (``None``: only the caller's deadline).

    Raises:
        pydantic.ValidationError: a bad argument (its ``loc`` names it; the message says why).
    """

    name: str = Field(default="memreader", description="The name of the memory block.")
    memory: Any = Field(description="The memreader Memory or AsyncMemory it reads and writes.")
    user_id: str = Field(description="Whose memories the block reads and writes.")
    agent_id: str | None = Field(default=None, description="The agent scope, if any.")
    task_id: str | None = Field(default=None, description="The task scope, if any.")
    mode: ReadMode = Field(default="fast", description="How flushed messages are read.")
    recall: Literal["context", "search"] = Field(
        default="context", description="A context block within max_tokens, or the k best hits."
    )
    max_tokens: int = Field(default=500, ge=MIN_CONTEXT_TOKENS, description="For context.")
    k: int = Field(default=DEFAULT_CONTEXT_K, ge=1, le=100, description="Memories searched.")
    query_messages: int = Field(default=3, ge=1, description="Latest messages in the query.")
    timeout_s: float | None = Field(default=DEFAULT_TIMEOUT_S, description="Per put or get.")

    _verbs: Verbs = PrivateAttr()

    @field_validator("memory")
    @classmethod
    def _a_memory(cls, value: Any) -> Any:
        return check_memory(value, "MemreaderMemoryBlock")

    @field_validator("user_id")
    @classmethod
    def _a_user(cls, value: str) -> str:
        return check_user(value, "MemreaderMemoryBlock")

    @field_validator("agent_id", "task_id")
    @classmethod
    def _a_scope(cls, value: str | None) -> str | None:
        return check_scope_id(value, "agent_id or task_id")

    @field_validator("timeout_s")
    @classmethod
    def _a_timeout(cls, value: float | None) -> float | None:
        return check_timeout(value, "MemreaderMemoryBlock")

    def model_post_init(self, context: Any, /) -> None:
        self._verbs = Verbs(self.memory, timeout_s=self.timeout_s, where="MemreaderMemoryBlock")

    async def _aput(self, messages: list[ChatMessage]) -> None:
        """Read flushed ``messages`` into memories, in their LlamaIndex session."""
        chat = [message_dict(message, index) for index, message in enumerate(messages)]
        chat = [message for message in chat if message["content"]]
        if not chat:
            return
        session = next(
            (s for m in messages if isinstance(s := m.additional_kwargs.get("session_id"), str)),
            None,
        )
        result = await self._verbs.add(
            chat,
            user_id=self.user_id,
            session_id=session or None,
            mode=self.mode,
            type="chat",
            agent_id=self.agent_id,
            task_id=self.task_id,
        )
        logger.debug("memreader block %s: %s from %d messages", self.name, result.counts, len(chat))

    async def _aget(self, messages: list[ChatMessage] | None = None, **block_kwargs: Any) -> str:
        """The memories for the latest ``query_messages`` messages ("" when there are none)."""
        latest = (messages or [])[-self.query_messages :]
        query = "\n".join(_text(message) for message in latest).strip()
        if not query:
            return ""
        scope = {"agent_id": self.agent_id, "task_id": self.task_id}
        filters = {key: value for key, value in scope.items() if value is not None}
        if self.recall == "context":
            block = await self._verbs.context(
                query, user_id=self.user_id, max_tokens=self.max_tokens, k=self.k, filters=filters
            )
            return block.text if block.parts else ""
        hits = await self._verbs.search(query, user_id=self.user_id, k=self.k, filters=filters)
        return "\n".join(hit_line(hit) for hit in hits)


def message_dict(message: ChatMessage, index: int = 0) -> dict[str, Any]:
    """A LlamaIndex message as memreader reads a chat message: its role (``chatbot`` and
    ``model`` as ``assistant``), its text, and its ``name``, ``message_id`` (or ``id``) and
    ``chat_time`` when its ``additional_kwargs`` hold them as strings.

    >>> message_dict(ChatMessage(role="chatbot", content="Hi Ana."))
    {'role': 'assistant', 'content': 'Hi Ana.'}
    """
    shown: dict[str, Any] = {
        "role": _ROLES.get(message.role.value, message.role.value),
        "content": _text(message, index),
    }
    extra = message.additional_kwargs
    for key, source in _KEPT:
        if isinstance(extra.get(source), str) and extra[source] and key not in shown:
            shown[key] = extra[source]
    return shown


def _text(message: ChatMessage, index: int | None = None) -> str:
    """The text of ``message``'s blocks: text as is, a tool call as a line naming it, another
    media block as a marker (logged: its content is not read)."""
    lines: list[str] = []
    if not any(isinstance(block, ToolCallBlock) for block in message.blocks):
        lines.extend(_kwargs_tool_calls(message.additional_kwargs))
    for block in message.blocks:
        if isinstance(block, TextBlock):
            lines.append(block.text)
        elif isinstance(block, ToolCallBlock):
            arguments = json.dumps(block.tool_kwargs, ensure_ascii=False, default=str)
            lines.append(f"[called {block.tool_name} with {arguments}]")
        elif not isinstance(block, _LEFT_OUT):
            kind = str(getattr(block, "block_type", type(block).__name__))
            lines.append(f"[{kind}]")
            if index is not None:
                logger.warning("message %d: its %s block is kept as a marker only", index, kind)
    return "\n".join(line for line in lines if line)


def _kwargs_tool_calls(extra: Mapping[Any, Any]) -> list[str]:
    """The tool calls an older LlamaIndex LLM keeps in ``additional_kwargs["tool_calls"]``
    (OpenAI's shape, as dicts or the SDK's objects), each as a line naming it."""
    calls = extra.get("tool_calls")
    if not isinstance(calls, list):
        return []
    lines = []
    for call in calls:
        function = _field(call, "function")
        name, arguments = _field(function, "name"), _field(function, "arguments")
        if isinstance(name, str) and name:
            if not isinstance(arguments, str):
                arguments = json.dumps(arguments or {}, ensure_ascii=False, default=str)
            lines.append(f"[called {name} with {arguments}]")
    return lines


def _field(value: Any, name: str) -> Any:
    return value.get(name) if isinstance(value, Mapping) else getattr(value, name, None)


def hit_line(hit: SearchHit) -> str:
    """One recalled memory as a line of a prompt: its text and where it came from."""
    sources = hit.memory.item.metadata.sources
    where = [f"session {hit.session_id}"] if hit.session_id else []
    messages = [
        s.message_id or f"#{s.message_index}"
        for s in sources
        if s.message_id or s.message_index is not None
    ]
    if messages:
        where.append("message " + ", ".join(dict.fromkeys(messages)))
    text = " ".join(hit.text.split())
    return f"- {text} ({'; '.join(where)})" if where else f"- {text}"
