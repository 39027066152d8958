"""The arguments of each MCP tool, as pydantic models: their JSON schemas are what a client
lists (every field described for a model to read), and the same models check what a call sends
(sizes from :mod:`memreader.mcp.limits`; an unknown field is refused, never ignored).

>>> sorted(Recall.model_json_schema()["properties"])
['agent_id', 'category', 'k', 'query', 'session_id', 'task_id', 'user_id']
>>> from pydantic import ValidationError
>>> try:
...     Recall.model_validate({"query": "tea", "k": 0})
... except ValidationError as exc:
...     refused = exc.errors()[0]["loc"]
>>> refused
('k',)
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from memreader.mcp.limits import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    MAX_K,
    MAX_MESSAGES,
    MAX_QUERY_CHARS,
    MAX_TEXT_CHARS,
    MAX_TOKENS,
)
from memreader.stores.context import DEFAULT_CONTEXT_TOKENS, MIN_CONTEXT_TOKENS

__all__ = [
    "Context",
    "DeleteMemory",
    "Forget",
    "GetMemory",
    "ListCategories",
    "MarkUsed",
    "MemoryHistory",
    "Message",
    "Recall",
    "Remember",
    "Scoped",
    "ToolArguments",
    "UpdateMemory",
]

_USER = (
    "Leave this out: the server knows whose memory it serves. Only a client whose key may "
    "use several users names one of them here; any other user is refused."
)
_MEMORY_ID = "The memory's id, as recall, remember or get_memory gave it."


def _optional(description: str) -> Any:
    """An optional name-like argument (a session, category, document, reason): absent, or
    1 to :data:`~memreader.mcp.limits.MAX_ID_CHARS` characters."""
    return Field(default=None, min_length=1, max_length=MAX_ID_CHARS, description=description)


def _id(description: str) -> Any:
    return Field(min_length=1, max_length=MAX_ID_CHARS, description=description)


class ToolArguments(BaseModel):
    """What every tool takes: ``user_id``, optional (see :mod:`memreader.mcp.users`)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    user_id: str | None = Field(
        default=None, min_length=1, max_length=MAX_ID_CHARS, description=_USER
    )


class Scoped(ToolArguments):
    """What a tool that reads or writes memories of one scope takes (:mod:`memreader.scopes`;
    a key limited to agents or tasks: :mod:`memreader.service.scope_walls`)."""

    agent_id: str | None = _optional(
        "The agent acting, e.g. 'planner': it sees its own memories, those of no agent and the "
        "shared ones. Left out: every agent (or the key's one agent)."
    )
    task_id: str | None = _optional(
        "The task at hand, e.g. 'trip-2026': it sees its own memories, those of no task and "
        "the shared ones, never another task's private ones. Left out: every task (or the "
        "key's one task)."
    )


class Message(BaseModel):
    """One chat message, as the chat APIs send it."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system", "tool"] = Field(
        description="Who said it: user, assistant, system or tool."
    )
    content: str | list[dict[str, Any]] = Field(
        description="What was said: text, or content parts as the chat APIs send them "
        "(files, images and URLs are read only when the server's operator allows them).",
    )
    chat_time: str | None = Field(
        default=None,
        max_length=100,
        description="When it was said, as text (e.g. '09:12 AM on 3 May, 2026'); optional.",
    )
    name: str | None = Field(
        default=None, max_length=200, description="The speaker's name, when there are several."
    )


class Remember(Scoped):
    """``remember``: exactly one of ``fact``, ``message`` or ``messages``."""

    fact: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description="A fact to keep exactly as written, e.g. 'Emily is vegetarian.' "
        "(stored as one memory, not read by a model).",
    )
    message: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description="One thing the user said, e.g. 'I moved to Lisbon.' (read into memories).",
    )
    messages: list[Message] | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_MESSAGES,
        description="A conversation (user and assistant turns, in order), read into memories.",
    )
    session_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=MAX_ID_CHARS,
        description="The conversation these come from, so forget(session_id=...) can remove "
        "them later. Left out: an id derived from the content (the same content, the same id).",
    )
    mode: Literal["fast", "fine"] | None = Field(
        default=None,
        description="fast: keep the text as memories; fine: a model extracts memories (only "
        "when the server has one). Left out: fine when the server has a model, else fast.",
    )
    visibility: Literal["private", "shared"] | None = Field(
        default=None,
        description="private (the default): only its task and agent recall it; shared: every "
        "task and agent of the user does.",
    )

    @model_validator(mode="after")
    def _one_input(self) -> Remember:
        given = [n for n in ("fact", "message", "messages") if getattr(self, n) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of fact, message or messages"
                + (f" (got {', '.join(given)})" if given else "")
            )
        total = sum(_chars(m.content) for m in self.messages or ())
        if total > MAX_CONTENT_CHARS:
            raise ValueError(
                f"messages hold {total:,} characters; at most {MAX_CONTENT_CHARS:,} per call"
            )
        return self


def _chars(content: str | list[dict[str, Any]]) -> int:
    if isinstance(content, str):
        return len(content)
    return sum(len(str(part)) for part in content)


class Recall(Scoped):
    """``recall``."""

    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="What to look for, in words (e.g. 'where does she live?').",
    )
    k: int = Field(default=5, ge=1, le=MAX_K, description="How many memories, best first.")
    category: str | None = _optional("Only memories of this category (list_categories names them).")
    session_id: str | None = _optional("Only memories of this conversation.")


class Context(Scoped):
    """``context``."""

    query: str = Field(
        min_length=1,
        max_length=MAX_QUERY_CHARS,
        description="What the coming answer is about (e.g. the user's question).",
    )
    max_tokens: int = Field(
        default=DEFAULT_CONTEXT_TOKENS,
        ge=MIN_CONTEXT_TOKENS,
        le=MAX_TOKENS,
        description="The most tokens the block may take in your prompt.",
    )
    category: str | None = _optional("Only memories of this category (list_categories names them).")
    session_id: str | None = _optional("Only memories of this conversation.")


class GetMemory(Scoped):
    """``get_memory``."""

    memory_id: str = _id(_MEMORY_ID)


class MarkUsed(ToolArguments):
    """``mark_used``."""

    memory_ids: list[Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]] = Field(
        min_length=1,
        max_length=MAX_K,
        description="The ids of the memories you used, as recall or context gave them.",
    )


class MemoryHistory(Scoped):
    """``memory_history``."""

    memory_id: str = _id(_MEMORY_ID)


class Forget(ToolArguments):
    """``forget``: exactly one source."""

    session_id: str | None = _optional(
        "Forget what this conversation said (remember's session_id)."
    )
    doc_path: str | None = _optional("Forget what this document said (as its sources name it).")
    message_id: str | None = _optional(
        "Forget what this one message said (as its sources name it)."
    )
    erase: StrictBool = Field(
        default=False,
        description="false: what only this source supports expires (its history stays). true: "
        "it is erased from every place its text lives, for good (irreversible; only when the "
        "user asks to erase it).",
    )

    @model_validator(mode="after")
    def _one_source(self) -> Forget:
        given = [n for n in ("session_id", "doc_path", "message_id") if getattr(self, n)]
        if len(given) != 1:
            raise ValueError("give exactly one of session_id, doc_path or message_id")
        return self


class DeleteMemory(Scoped):
    """``delete_memory``."""

    memory_id: str = _id(_MEMORY_ID)
    erase: StrictBool = Field(
        default=False,
        description="false: the memory expires now (its history stays). true: it is erased "
        "from every place its text lives, for good (irreversible; only when the user asks to "
        "erase it).",
    )


class UpdateMemory(Scoped):
    """``update_memory``."""

    memory_id: str = _id(_MEMORY_ID)
    text: str = Field(
        min_length=1,
        max_length=MAX_TEXT_CHARS,
        description="The memory's new text, whole (e.g. 'Emily is vegan.').",
    )
    reason: str | None = _optional(
        "Why it changed, kept in its history (e.g. 'she said so on 4 May')."
    )


class ListCategories(ToolArguments):
    """``list_categories``: no argument but ``user_id``."""
