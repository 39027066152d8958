"""The simple shape of an evaluation file, read as an
:class:`~memreader.evaluation.data.EvalSet`: for data that is not LoCoMo's.

One conversation is ``{"id"?, "sessions": [...], "questions": [...]}``; a file holds one, a list
of them, or ``{"conversations": [...]}``. A session is a list of messages, or ``{"id"?,
"date"? (or "chat_time"?), "messages": [...]}``; a message is ``{"id" (or "message_id"),
"role"? (default "user"), "content", "name"?, "chat_time"? (default: the session's date)}``;
a question is ``{"question", "evidence": [message ids], "answer"?, "category"?, "id"?}``.
Ids are strings or integers; a message id is unique in its conversation.

>>> conv = simple_conversations([{"sessions": [[{"id": 1, "role": "user", "content": "hi"}]],
...     "questions": [{"question": "what was said?", "evidence": [1, 9]}]}],
...     "f.json", names=True, categories=None)[0]
>>> conv.id, conv.sessions[0].id, conv.questions[0].evidence, conv.unknown_evidence
('conv-1', 'session_1', ('1',), ('9',))
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from memreader.errors import InputError
from memreader.evaluation.data import Category, EvalConversation, EvalMessage, EvalSession
from memreader.evaluation.fields import (
    category,
    identifier,
    mapping,
    optional_text,
    required,
    sequence,
    text,
)
from memreader.evaluation.questions import RawQuestion, conversation
from memreader.scenes.scene import ROLES

__all__ = ["is_simple", "simple_conversations"]


def is_simple(value: Any) -> bool:
    """Whether ``value`` looks like one conversation of the simple shape (it has
    ``sessions``)."""
    return isinstance(value, Mapping) and "sessions" in value


def simple_conversations(
    conversations: list[Any],
    name: str,
    *,
    names: bool,
    categories: Collection[Category] | None,
) -> tuple[EvalConversation, ...]:
    """The ``conversations`` of the file ``name`` in the simple shape (see the module).

    Raises:
        InputError: a conversation, session, message or question of the wrong shape; a
            message without id or content; an id used twice.
    """
    out: list[EvalConversation] = []
    for n, raw in enumerate(conversations, 1):
        where = f"{name}: conversation {n}"
        obj = mapping(raw, where)
        conv_id = identifier(obj.get("id", f"conv-{n}"), '"id"', where)
        where = f"{where} ({conv_id})"
        if any(c.id == conv_id for c in out):
            raise InputError(f'{where}: "id" {conv_id!r} is used twice')
        sessions = _sessions(sequence(required(obj, "sessions", where), where), where, names)
        asked = sequence(required(obj, "questions", where), f'{where}: "questions"')
        questions = [
            _question(q, f"{where}: question {i}", f"{conv_id}#q{i}")
            for i, q in enumerate(asked, 1)
        ]
        out.append(conversation(conv_id, sessions, questions, categories=categories))
    return tuple(out)


def _sessions(raw: list[Any], where: str, names: bool) -> tuple[EvalSession, ...]:
    if not raw:
        raise InputError(f'{where}: "sessions" is empty')
    seen: dict[str, str] = {}
    sessions: list[EvalSession] = []
    for j, value in enumerate(raw, 1):
        at = f"{where}: session {j}"
        if isinstance(value, list):
            session_id, date, messages = f"session_{j}", None, value
        else:
            obj = mapping(value, at)
            session_id = identifier(obj.get("id", f"session_{j}"), '"id"', at)
            date = optional_text(obj, "date", at) or optional_text(obj, "chat_time", at)
            messages = sequence(required(obj, "messages", at), f'{at}: "messages"')
        if any(s.id == session_id for s in sessions):
            raise InputError(f"{at}: session id {session_id!r} is used twice")
        read = [
            _message(m, f"{at} message {t}", date, names, seen) for t, m in enumerate(messages, 1)
        ]
        if read:
            sessions.append(EvalSession(session_id, tuple(read), date))
    return tuple(sessions)


def _message(
    raw: Any, where: str, date: str | None, names: bool, seen: dict[str, str]
) -> EvalMessage:
    obj = mapping(raw, where)
    written = obj.get("id", obj.get("message_id"))
    if written is None:
        raise InputError(f'{where}: no "id" (or "message_id")')
    message_id = identifier(written, '"id"', where)
    if message_id in seen:
        raise InputError(f"{where}: id {message_id!r} is also {seen[message_id]}'s")
    seen[message_id] = where.rsplit(": ", 1)[-1]
    role = obj.get("role", "user")
    if not isinstance(role, str) or role not in ROLES:
        raise InputError(f'{where}: "role" {role!r} is not one of {", ".join(sorted(ROLES))}')
    content = text(obj, "content", where)
    name = optional_text(obj, "name", where)
    chat_time = optional_text(obj, "chat_time", where) or date
    return EvalMessage(message_id, role, content, name if names else None, chat_time)


def _question(raw: Any, where: str, default_id: str) -> RawQuestion:
    item = mapping(raw, where)
    evidence = []
    for entry in sequence(required(item, "evidence", where), f'{where}: "evidence"'):
        message_id = identifier(entry, "an evidence id", where)
        evidence.append((message_id, (message_id,)))
    return RawQuestion(
        identifier(item.get("id", default_id), '"id"', where),
        text(item, "question", where),
        tuple(evidence),
        optional_text(item, "answer", where),
        category(item, where),
    )
