"""What a chat completion with memory sends and keeps, apart from any client: the settings
(:class:`MemorySettings`), the messages with the user's memories inserted
(:func:`memory_messages`), and the turn read back into memory (:func:`turn_to_remember`).
:mod:`memreader.integrations.openai_client` puts them around an OpenAI-compatible client.

>>> from memreader import Memory
>>> m = Memory({"config": {"embedder": {"backend": "hash"}}}, store="sqlite://:memory:")
>>> _ = m.add("I adopted a cat named Miso.", user_id="ana")
>>> sent, found = memory_messages(m, [{"role": "user", "content": "My cat's name?"}], "ana")
>>> [message["role"] for message in sent], found.parts[0].text
(['system', 'user'], 'I adopted a cat named Miso.')
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from memreader.errors import InputError
from memreader.front.memory import Memory
from memreader.stores.context import (
    DEFAULT_CONTEXT_K,
    DEFAULT_TOKENIZER,
    Context,
    check_budget,
)
from memreader.stores.filters import SearchFilters

__all__ = [
    "DEFAULT_MEMORY_TOKENS",
    "MemorySettings",
    "changed_settings",
    "checked_budget",
    "last_user_text",
    "memory_messages",
    "message_text",
    "turn_to_remember",
]

#: The memory block's budget in tokens when the caller names none: a fraction of a small
#: model's window, so the recalled data never crowds out the conversation.
DEFAULT_MEMORY_TOKENS = 800
#: Roles that instruct the model: the memory block goes after the leading ones.
_INSTRUCTING = frozenset({"system", "developer"})


@dataclass(frozen=True)
class MemorySettings:
    """What a wrapped client recalls and keeps: whose memories (``user_id``), how much
    (``max_tokens``, counted with ``tokenizer``; ``k`` memories searched), which
    (``filters``: a :class:`~memreader.stores.filters.SearchFilters`), and whether each turn
    is read into memory (``remember``, in ``session_id``; a digest of the turn when ``None``)."""

    user_id: str
    max_tokens: int = DEFAULT_MEMORY_TOKENS
    k: int = DEFAULT_CONTEXT_K
    tokenizer: str = DEFAULT_TOKENIZER
    filters: SearchFilters = field(default_factory=SearchFilters)
    remember: bool = False
    session_id: str | None = None


def memory_messages(
    memory: Memory,
    messages: Sequence[Mapping[str, Any]],
    user_id: str,
    *,
    settings: MemorySettings | None = None,
) -> tuple[list[dict[str, Any]], Context | None]:
    """``messages`` as a wrapped client sends them: with ``user_id``'s memories for the last
    user message inserted as a system message after the leading system and developer
    messages, and the :class:`~memreader.stores.context.Context` they came from (its
    ``parts``: memory ids, sessions, messages and spans). No user text, or nothing recalled:
    the messages unchanged and ``None`` / an empty context."""
    chosen = settings or MemorySettings(user_id=user_id)
    sent = [dict(message) for message in messages]
    query = last_user_text(sent)
    if not query:
        return sent, None
    found = memory.context(
        query,
        user_id=user_id,
        max_tokens=chosen.max_tokens,
        tokenizer=chosen.tokenizer,
        k=chosen.k,
        filters=chosen.filters,
    )
    if not found.text:
        return sent, found
    at = 0
    while at < len(sent) and sent[at].get("role") in _INSTRUCTING:
        at += 1
    sent.insert(at, {"role": "system", "content": found.text})
    return sent, found


def last_user_text(messages: Sequence[Mapping[str, Any]]) -> str:
    """The text of the last user message: its string content, or its text parts joined
    (images and files carry no query)."""
    for message in reversed(messages):
        if message.get("role") == "user":
            return message_text(message.get("content"))
    return ""


def message_text(content: Any) -> str:
    """A chat message's text: a string, or the ``text`` of its ``{"type": "text"}`` parts."""
    if isinstance(content, str):
        return content.strip()
    if isinstance(content, list):
        texts = [
            part.get("text", "")
            for part in content
            if isinstance(part, Mapping) and part.get("type") in ("text", "input_text")
        ]
        return "\n".join(text for text in texts if isinstance(text, str)).strip()
    return ""


def turn_to_remember(messages: Sequence[Mapping[str, Any]], reply: str) -> list[dict[str, str]]:
    """The turn a call adds to memory: the user messages after the last assistant message
    (their text), then the assistant's ``reply`` when it has text."""
    start = 0
    for index, message in enumerate(messages):
        if message.get("role") == "assistant":
            start = index + 1
    turn = [
        {"role": "user", "content": text}
        for message in messages[start:]
        if message.get("role") == "user" and (text := message_text(message.get("content")))
    ]
    if turn and reply.strip():
        turn.append({"role": "assistant", "content": reply})
    return turn


def checked_budget(max_tokens: Any) -> int:
    """``max_tokens`` as ``context()`` takes it, checked when the client is made."""
    return check_budget(max_tokens, "with_memory()")


def changed_settings(settings: MemorySettings, changes: Mapping[str, Any]) -> MemorySettings:
    unknown = set(changes) - set(MemorySettings.__dataclass_fields__)
    if unknown:
        raise InputError(f"with_settings(): unknown setting(s) {sorted(unknown)}")
    if "max_tokens" in changes:
        checked_budget(changes["max_tokens"])
    if "filters" in changes:
        changes = {**changes, "filters": SearchFilters.of(changes["filters"], call="with_memory()")}
    if "user_id" in changes and (
        not isinstance(changes["user_id"], str) or not changes["user_id"].strip()
    ):
        raise InputError("with_settings(): user_id must be a non-empty string")
    return replace(settings, **changes)
