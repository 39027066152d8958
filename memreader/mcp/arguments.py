"""The arguments of each MCP tool, as pydantic models: their JSON schemas are what a client
lists (every field described for a model to read), and the same models check what a call sends
(sizes from :mod:`memreader.answers.sizes`; an unknown field is refused, never ignored).

>>> sorted(Recall.model_json_schema()["properties"])  # doctest: +NORMALIZE_WHITESPACE
['agent_id', 'category', 'cursor', 'k', 'query', 'rerank', 'session_id', 'since', 'task_id',
 'until', 'user_id']
>>> from pydantic import ValidationError
>>> try:
...     Recall.model_validate({"query": "tea", "k": 0})
... except ValidationError as exc:
...     refused = exc.errors()[0]["loc"]
>>> refused
('k',)
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, StrictBool, model_validator

from memreader.answers.sizes import (
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
    "MCP_FILTERS",
    "Context",
    "Filtered",
    "Forget",
    "GetMemory",
    "ListCategories",
    "MarkUsed",
    "Message",
    "Recall",
    "Remember",
    "Scoped",
    "TimeFiltered",
    "ToolArguments",
    "UpdateMemory",
]

# user_id (only for a key serving several users) and the scope (agent_id, task_id) are
# described once, in the server's instructions (memreader.mcp.server.INSTRUCTIONS), not in
# every tool: a client loads the tool list into its model's context every session.
_MEMORY_ID = "As recall or remember gave it."
_ERASE = "true: erased for good, irreversible: only when the user asks to erase."


def _optional(description: str | None = None) -> Any:
    """An optional name-like argument (a session, category, document, reason): absent, or
    1 to :data:`~memreader.answers.sizes.MAX_ID_CHARS` characters."""
    return Field(default=None, min_length=1, max_length=MAX_ID_CHARS, description=description)


def _id(description: str) -> Any:
    return Field(min_length=1, max_length=MAX_ID_CHARS, description=description)


class ToolArguments(BaseModel):
    """What every tool takes: ``user_id``, optional (see :mod:`memreader.mcp.users`)."""

    model_config = ConfigDict(extra="forbid", str_strip_whitespace=False)

    user_id: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)


class Scoped(ToolArguments):
    """What a tool that reads or writes memories of one scope takes (:mod:`memreader.scopes`;
    a key limited to agents or tasks: :mod:`memreader.service.scope_walls`)."""

    agent_id: str | None = _optional()
    task_id: str | None = _optional()


class Message(BaseModel):
    """One chat message, as the chat APIs send it."""

    model_config = ConfigDict(extra="forbid")

    role: Literal["user", "assistant", "system", "tool"]
    content: str | list[dict[str, Any]]
    chat_time: str | None = Field(default=None, max_length=100)
    name: str | None = Field(default=None, max_length=200)


class Remember(Scoped):
    """``remember``: exactly one of ``fact``, ``message`` or ``messages``."""

    fact: str | None = Field(
        default=None, min_length=1, max_length=MAX_TEXT_CHARS, description="Kept as written."
    )
    message: str | None = Field(
        default=None, min_length=1, max_length=MAX_TEXT_CHARS, description="One user message."
    )
    messages: list[Message] | None = Field(
        default=None, min_length=1, max_length=MAX_MESSAGES, description="A conversation."
    )
    session_id: str | None = _optional()
    mode: Literal["fast", "fine"] | None = Field(
        default=None, description="fine: a model extracts (default when the server has one)."
    )
    visibility: Literal["private", "shared"] | None = None

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


class Filtered(Scoped):
    """The search filters a ``context`` call may give: the scope, a conversation, a category
    (:class:`~memreader.stores.filters.SearchFilters`' fields, a subset)."""

    session_id: str | None = _optional()
    category: str | None = _optional()

    def filters(self) -> dict[str, Any]:
        """The filters given, as ``Memory.search`` takes them."""
        given = {name: getattr(self, name, None) for name in MCP_FILTERS}
        return {name: value for name, value in given.items() if value is not None}


class TimeFiltered(Filtered):
    """And a time range: what ``recall`` may give (:data:`MCP_FILTERS`)."""

    since: datetime | None = None
    until: datetime | None = None


#: The filters of :class:`~memreader.stores.filters.SearchFilters` an MCP call may give.
MCP_FILTERS = ("session_id", "category", "since", "until", "agent_id", "task_id")


class Recall(TimeFiltered):
    """``recall``: a search, or with no ``query`` the newest memories (``Memory.get_all``)."""

    query: str | None = Field(
        default=None, min_length=1, max_length=MAX_QUERY_CHARS, description="Omit to list newest."
    )
    k: int = Field(default=5, ge=1, le=MAX_K)
    cursor: str | None = Field(default=None, max_length=64, description="A listing's next_cursor.")
    #: Memory.search's rerank (by the server's LLM); no description: the tool list's budget.
    rerank: StrictBool = False


class Context(Filtered):
    """``context``."""

    query: str = Field(min_length=1, max_length=MAX_QUERY_CHARS)
    max_tokens: int = Field(default=DEFAULT_CONTEXT_TOKENS, ge=MIN_CONTEXT_TOKENS, le=MAX_TOKENS)


class GetMemory(Scoped):
    """``get_memory``: one memory, and with ``history`` its changes."""

    memory_id: str = _id(_MEMORY_ID)
    history: StrictBool = Field(default=False, description="Also its changes.")


class MarkUsed(ToolArguments):
    """``mark_used``."""

    memory_ids: list[Annotated[str, Field(min_length=1, max_length=MAX_ID_CHARS)]] = Field(
        min_length=1, max_length=MAX_K
    )


class Forget(Scoped):
    """``forget``: exactly one of a memory (``memory_id``: it expires, as ``Memory.delete``) or
    a source (what only it supports expires, as ``Memory.forget``)."""

    memory_id: str | None = _optional(_MEMORY_ID)
    session_id: str | None = _optional()
    doc_path: str | None = _optional()
    message_id: str | None = _optional()
    erase: StrictBool = Field(default=False, description=_ERASE)

    @model_validator(mode="after")
    def _one_source(self) -> Forget:
        given = [n for n in _FORGETTABLE if getattr(self, n)]
        if len(given) != 1:
            raise ValueError("give exactly one of memory_id, session_id, doc_path or message_id")
        if self.memory_id is None and (self.agent_id or self.task_id):
            # Not ignored: forgetting a source spans every agent and task of the user.
            raise ValueError("agent_id and task_id scope a forget of one memory_id, not a source")
        return self


_FORGETTABLE = ("memory_id", "session_id", "doc_path", "message_id")


class UpdateMemory(Scoped):
    """``update_memory``."""

    memory_id: str = _id(_MEMORY_ID)
    text: str = Field(min_length=1, max_length=MAX_TEXT_CHARS)
    reason: str | None = _optional()


class ListCategories(ToolArguments):
    """``list_categories``: no argument but ``user_id``."""
